"""Cost of `oversmooth analyze` on all-MiniLM-L6-v2, 64 sequences x 256 tokens, vs the bare forward.

Batch: the built-in Austen sample cut into 256-token chunks, repeated to 64 sequences. Each
repeat runs every case once, in turn; printed are the best time of each and the median over
repeats of its ratio to the same repeat's forward (a shared machine's speed drifts from minute to
minute). Compared:

- bare forward: ``model(**inputs)`` under no_grad (the model's default attention);
- analyze, baseline only, default settings (``--methods none``): capture of the stream, every
  metric (effective / stable rank on the first 8 sequences), W_V W_O spectra, attention measures
  and predicted mode (2 sequences x 128 tokens); the target is <= 1.3x the bare forward;
- the same with the ranks over all 64 sequences (``rank_sequences=None``), with the attention
  sample cut to 64 tokens (``attention_tokens=64``), and without attention measures
  (``attention_sequences=0``): what each sample costs;
- analyze, all four methods: five patched / unpatched passes, vs five bare forwards.

Run: python benchmarks/bench_analyze.py [--repeats 3] [--skip-methods]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from oversmooth.analyze.analysis import AnalysisSettings, run_analysis
from oversmooth.analyze.inputs import read_text, text_batch
from oversmooth.hf.load import load

SEQUENCES, TOKENS = 64, 256


def batch(loaded) -> dict[str, torch.Tensor]:
    text, _ = read_text(None)
    chunks = text_batch(loaded.tokenizer, text, TOKENS, 1000)
    full = chunks["attention_mask"].all(dim=1)
    repeat = -(-SEQUENCES // int(full.sum()))
    return {k: v[full].repeat(repeat, 1)[:SEQUENCES].to(loaded.device) for k, v in chunks.items()}


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-methods", action="store_true", help="leave out the 4-method run (long)")
    args = parser.parse_args()
    loaded = load(None, SEQUENCES, TOKENS)
    model, inputs = loaded.model, batch(loaded)
    assert inputs["input_ids"].shape == (SEQUENCES, TOKENS)

    def forward():
        with torch.no_grad():
            model(**inputs)

    every_rank = f"  ranks on all {SEQUENCES}"
    variants = {"analyze (baseline)": {}, every_rank: {"rank_sequences": None},
                "  attention 64 tokens": {"attention_tokens": 64},
                "  no attention": {"attention_sequences": 0}}
    runs = {"bare forward": forward}
    for name, overrides in variants.items():
        settings = AnalysisSettings(methods=(), **overrides)
        runs[name] = lambda settings=settings: run_analysis(model, inputs, settings)
    if not args.skip_methods:
        runs["analyze (4 methods)"] = lambda: run_analysis(model, inputs, AnalysisSettings())
    forward()  # warm-up
    seconds = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            seconds[name].append(timed(fn))
    bare = seconds["bare forward"]
    # The machine's speed drifts between minutes: pair each run with the forward of its repeat.
    paired = {name: statistics.median(t / f for t, f in zip(times, bare)) for name, times in seconds.items()}
    print(f"all-MiniLM-L6-v2, {SEQUENCES} x {TOKENS} tokens, {torch.get_num_threads()} threads, "
          f"{args.repeats} interleaved repeats")
    print(f"{'run':<22}{'best s':>8}{'best/best':>11}{'paired median':>15}")
    for name, times in seconds.items():
        extra = "  (x five forwards)" if name == "analyze (4 methods)" else ""
        scale = 5 if extra else 1
        print(f"{name:<22}{min(times):>8.2f}{min(times) / (scale * min(bare)):>11.2f}"
              f"{paired[name] / scale:>15.2f}{extra}")
    print(f"ratio analyze / forward (paired median): {paired['analyze (baseline)']:.2f} (target <= 1.3); "
          f"with the ranks on all {SEQUENCES} sequences {paired[every_rank]:.2f}")


if __name__ == "__main__":
    main()
