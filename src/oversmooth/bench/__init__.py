"""What the benchmarks measure with: interleaved timing rounds with paired ratios (``timing``), and
the FLOPs, memory traffic and activation memory of a call (``cost``)."""
