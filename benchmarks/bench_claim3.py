"""Claim 3 of the claims protocol (NeuTRENO App. G.4): NeuTRENO's cost per training example against
softmax's, from interleaved rounds, at the `fmnist-p7` cells' model (8 x 64, MLP x2, 7 x 7
patches: 17 tokens, batch 128), compiled as those cells train.

Each round times one training step (forward, cross-entropy, backward; no optimiser, the same for
both) of each model in a shuffled order, by the thread's CPU time on one torch thread, so other
jobs on the machine are left out of the clock. The per-round seconds per example go to
``OUT/rounds.json``; the claims report decides the claim from them (TOST of the per-round log
ratio against +-log 1.10).

    PYTHONPATH=src python benchmarks/bench_claim3.py --out results/claim3
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys

import torch
from bench_overhead import Shape, train_step

from oversmooth.bench.timing import allow_compiled_models, interleaved_rounds, step_clock
from oversmooth.utils.atomic import atomic_write

SHAPE = Shape(
    "fmnist-p7 (8 x 64, MLP x2, 17 tokens)",
    "vit",
    "vit-cpu",
    128,
    (("depth", 8), ("patch_size", 7), ("mlp_ratio", 2.0)),
)
METHODS = ("softmax", "neutreno")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for rounds.json (e.g. results/claim3)")
    parser.add_argument("--rounds", type=int, default=30, help="kept rounds (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="rounds run first and dropped (default 3)")
    parser.add_argument("--eager", action="store_true", help="time eager models instead of compiled ones")
    args = parser.parse_args()
    if args.rounds < 2:
        print("error: --rounds must be at least 2 (the claim's test needs two rounds)", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    allow_compiled_models(len(METHODS))
    clock, clock_name = step_clock("cpu")
    steps = {}
    for method in METHODS:
        torch.manual_seed(0)
        model = SHAPE.model(method).train()
        x, y = SHAPE.batch_of(model, "cpu")
        steps[method] = train_step(model if args.eager else torch.compile(model), x, y)
    times = interleaved_rounds(steps, args.rounds, args.warmup, clock=clock)
    rounds = [{m: times[m][r] / SHAPE.batch for m in METHODS} for r in range(args.rounds)]
    logs = [math.log(r["neutreno"] / r["softmax"]) for r in rounds]
    mode = "eager" if args.eager else "compiled"
    note = (
        f"{args.rounds} interleaved rounds, {clock_name}, {mode}, {SHAPE.title}: median ratio "
        f"{math.exp(statistics.median(logs)):.3f}"
    )
    from pathlib import Path

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "rounds.json") as handle:
        json.dump(
            {
                "rounds": rounds,
                "unit": "seconds per training example",
                "clock": clock_name,
                "mode": mode,
                "shape": SHAPE.title,
                "torch": torch.__version__,
                "note": note,
                "command": " ".join(["python", "benchmarks/bench_claim3.py", *sys.argv[1:]]),
            },
            handle,
            indent=1,
        )
    print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
