"""Cost of `oversmooth analyze` on all-MiniLM-L6-v2, 64 sequences x 256 tokens, vs the bare forward.

Batch: the built-in Austen sample cut into 256-token chunks, repeated to 64 sequences. Timings
are the best of ``--repeats`` interleaved runs (the machine may be shared). Compared:

- bare forward: ``model(**inputs)`` under no_grad (the model's default attention);
- analyze, baseline only: capture of the stream + every metric + W_V W_O spectra + attention
  measures and predicted mode (2 sequences x 128 tokens), i.e. ``--methods none``;
- the same with ``rank_sequences=8``: effective / stable rank on the first 8 sequences only;
- analyze, all four methods: five patched / unpatched passes, vs five bare forwards.

Run: python benchmarks/bench_analyze.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import torch

from oversmooth.hf.analysis import AnalysisSettings, run_analysis
from oversmooth.hf.inputs import read_text, text_batch
from oversmooth.hf.load import load

SEQUENCES, TOKENS = 64, 256
RANK_SAMPLE = 8


def batch(loaded) -> dict[str, torch.Tensor]:
    text, _ = read_text(None)
    chunks = text_batch(loaded.tokenizer, text, TOKENS, 1000)
    full = chunks["attention_mask"].all(dim=1)
    repeat = -(-SEQUENCES // int(full.sum()))
    return {k: v[full].repeat(repeat, 1)[:SEQUENCES] for k, v in chunks.items()}


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    loaded = load(None, SEQUENCES, TOKENS)
    model, inputs = loaded.model, batch(loaded)
    assert inputs["input_ids"].shape == (SEQUENCES, TOKENS)

    def forward():
        with torch.no_grad():
            model(**inputs)

    baseline_only = AnalysisSettings(methods=())
    rank_sample = AnalysisSettings(methods=(), rank_sequences=RANK_SAMPLE)
    every_method = AnalysisSettings()
    runs = {"bare forward": forward,
            "analyze (baseline)": lambda: run_analysis(model, inputs, baseline_only),
            f"  ranks on {RANK_SAMPLE} seqs": lambda: run_analysis(model, inputs, rank_sample),
            "analyze (4 methods)": lambda: run_analysis(model, inputs, every_method)}
    forward()  # warm-up
    best = {name: float("inf") for name in runs}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            best[name] = min(best[name], timed(fn))
    bare = best["bare forward"]
    print(f"all-MiniLM-L6-v2, {SEQUENCES} x {TOKENS} tokens, {torch.get_num_threads()} threads, "
          f"best of {args.repeats}")
    print(f"{'run':<22}{'seconds':>9}{'x forward':>11}")
    print(f"{'bare forward':<22}{bare:>9.2f}{1.0:>11.2f}")
    for name in list(runs)[1:3]:
        print(f"{name:<22}{best[name]:>9.2f}{best[name] / bare:>11.2f}")
    five = best["analyze (4 methods)"]
    print(f"{'analyze (4 methods)':<22}{five:>9.2f}{five / bare:>11.2f}  ({five / (5 * bare):.2f} x five forwards)")
    print(f"ratio analyze / forward: {best['analyze (baseline)'] / bare:.2f}, ranks on {RANK_SAMPLE} "
          f"sequences {best[f'  ranks on {RANK_SAMPLE} seqs'] / bare:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
