"""Cost of `oversmooth analyze` on all-MiniLM-L6-v2, 64 sequences x 256 tokens, vs the bare forward.

Batch: the built-in Austen sample cut into 256-token chunks, repeated to 64 sequences. Each case
runs in a worker process that loaded the model once; the driver runs every case once per round,
in an order shuffled afresh each round (``oversmooth.bench.timing`` explains why), and reports the
median over rounds of each case's ratio to the same round's bare forward, with a bootstrap 95 %
CI. A worker times its calls in **process CPU time** (every thread of the worker, the analysis's
background threads included): the CPU is shared with other jobs, whose time slices wall time
would count. The wall-time ratio of the same rounds is printed beside it (what a user waits;
noisy on a shared machine), and the CPU time of the worker's main thread alone (what the user
waits for where a core is free for the background threads: the spectra, the attention sample's
eigen-work and the rank measures). Cases:

- ``forward``: ``model(**inputs)`` under no_grad (the model's default attention);
- ``analyze``: baseline only, default settings (``--methods none``): capture of the stream, every
  metric (effective / stable rank on the first 8 sequences), W_V W_O spectra, attention measures
  and predicted mode (2 sequences x 128 tokens); the target is <= 1.2x the bare forward in wall time;
- ``ranks-all``, ``attention-64``, ``no-attention``: the same with the ranks over all 64
  sequences, the attention sample cut to 64 tokens, and no attention sample (what each costs);
- ``methods``: every method that patches the model, one pass each beside the unpatched one (its
  ratio is to as many forwards as passes: 1 + the methods, which the worker reports);
- ``floor``: what no analysis can avoid, the forward with the hooks ``analyze`` takes its states
  from (the stream and the sublayer stages), each state let go as it comes: no measure, no check.

``--against SRC`` adds a second worker that imports the package from another checkout's ``src``
(e.g. ``git worktree add /tmp/before <commit>``), so that old and new code are timed in the same
rounds on the same machine.

Run: python benchmarks/bench_analyze.py [--rounds 7] [--threads 1] [--cases analyze,floor] [--against SRC]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

SEQUENCES, TOKENS = 64, 256
CASES = {
    "analyze": {},
    "ranks-all": {"rank_sequences": None},
    "attention-64": {"attention_tokens": 64},
    "no-attention": {"attention_sequences": 0},
    "methods": None,
}  # None: every method
FLOOR = "floor"


def serve(threads: int) -> None:
    """Worker: load the model, then for each case name read on stdin print its process CPU, wall and
    main-thread CPU seconds."""
    import torch

    from oversmooth.hf.load import load

    try:
        from oversmooth.analyze.analysis import AnalysisSettings, run_analysis
        from oversmooth.analyze.inputs import read_text, text_batch
        from oversmooth.analyze.sublayers import stage_hooks
    except ImportError:  # --against a checkout from before the analysis left hf/
        from oversmooth.hf.analysis import AnalysisSettings, run_analysis
        from oversmooth.hf.inputs import read_text, text_batch
        from oversmooth.hf.sublayers import stage_hooks
    from oversmooth.hf import capture, layout

    torch.set_num_threads(threads)
    loaded = load(None, SEQUENCES, TOKENS)
    text, _ = read_text(None)
    chunks = text_batch(loaded.tokenizer, text, TOKENS, 1000)
    full = chunks["attention_mask"].all(dim=1)
    repeat = -(-SEQUENCES // int(full.sum()))
    inputs = {k: v[full].repeat(repeat, 1)[:SEQUENCES].to(loaded.device) for k, v in chunks.items()}
    model = loaded.model

    def forward():
        with torch.no_grad():
            model(**inputs)

    hooks = ("resid_pre", "resid_post", *stage_hooks(layout(model).family))
    runs = {"forward": forward, FLOOR: lambda: capture(model, inputs, hooks=hooks, sink=lambda name, state: None)}
    for name, overrides in CASES.items():
        settings = AnalysisSettings() if overrides is None else AnalysisSettings(methods=(), **overrides)
        runs[name] = lambda settings=settings: run_analysis(model, inputs, settings)
    forward()  # warm-up
    print("ready", 1 + len(AnalysisSettings().for_model(model).methods), flush=True)  # the passes of `methods`
    for line in sys.stdin:
        cpu, wall, main = time.process_time(), time.perf_counter(), time.thread_time()
        runs[line.strip()]()
        print(time.process_time() - cpu, time.perf_counter() - wall, time.thread_time() - main, flush=True)


class Worker:
    """A ``serve`` process importing ``oversmooth`` from ``src``."""

    def __init__(self, src: Path, threads: int):
        env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--threads", str(threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        ready, passes = self.process.stdout.readline().split()
        assert ready == "ready", f"worker on {src} did not start"
        self.forwards = {"methods": int(passes)}  # bare forwards a case's ratio is taken to (default 1)

    def seconds(self, case: str) -> tuple[float, float, float]:
        """(process CPU, wall, main-thread CPU) seconds of one call of ``case``."""
        self.process.stdin.write(case + "\n")
        self.process.stdin.flush()
        return tuple(float(s) for s in self.process.stdout.readline().split())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each worker")
    parser.add_argument("--cases", default="analyze", help=f"comma list of {', '.join([*CASES, FLOOR])}")
    parser.add_argument("--against", type=Path, help="another checkout's src/, timed in the same rounds")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.threads)
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in (*CASES, FLOOR)]
    if unknown:
        sys.exit(f"--cases: unknown case {unknown[0]!r}; choose from {', '.join([*CASES, FLOOR])}")
    from oversmooth.bench.timing import bootstrap_median  # after the worker check: the driver needs no model

    sources = {"this": Path(__file__).resolve().parents[1] / "src"}
    if args.against:
        sources["against"] = args.against.resolve()
    workers = {label: Worker(src, args.threads) for label, src in sources.items()}
    contenders = [(label, case) for label in workers for case in ("forward", *cases)]
    seconds = {c: [] for c in contenders}
    order = random.Random(0)
    for r in range(1 + args.rounds):  # round 0 warms up and is dropped
        order.shuffle(contenders)
        for label, case in contenders:
            took = workers[label].seconds(case)
            if r:
                seconds[label, case].append(took)
        print(f"round {r} of {args.rounds} done", file=sys.stderr, flush=True)
    for worker in workers.values():
        worker.close()
    print(
        f"all-MiniLM-L6-v2, {SEQUENCES} x {TOKENS} tokens, {args.threads} torch thread(s), process CPU time, "
        f"{args.rounds} interleaved rounds; median [95 % CI] of the per-round ratio to the bare forward "
        "(wall time and the main thread's CPU time: the same rounds)"
    )
    for label, src in sources.items():
        forward = seconds[label, "forward"]
        cpu, wall = (sorted(f[i] for f in forward)[len(forward) // 2] for i in (0, 1))
        print(f"{label} ({src}): bare forward {cpu:.2f} CPU-s, {wall:.2f} wall-s (median)")
        for case in cases:
            times = workers[label].forwards.get(case, 1)
            ratios = [[t[i] / (times * f[i]) for t, f in zip(seconds[label, case], forward)] for i in (0, 1, 2)]
            per = f" x {times} forwards" if times > 1 else ""
            print(
                f"  {case:<14}{bootstrap_median(ratios[0]).format('.3f')}{per}  (min {min(ratios[0]):.3f}, "
                f"max {max(ratios[0]):.3f}); wall {bootstrap_median(ratios[1]).format('.3f')}; "
                f"main thread {bootstrap_median(ratios[2]).format('.3f')}"
            )


if __name__ == "__main__":
    main()
