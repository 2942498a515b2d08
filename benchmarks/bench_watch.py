"""What measuring during training costs: one ``oversmooth.watch`` measurement of a probe batch
against one training step, in interleaved rounds, and so the share of training time at an interval.

Contenders per round (order shuffled, warm-up dropped, thread CPU time): a training step of our
ViT (``vit-cpu`` at depth 8, batch 128: forward, loss, backward, AdamW) and one measurement of the
watched measures on a probe batch. The overhead at ``--every N`` is ``probe / (N * step)``, the
per-round ratio's median with its bootstrap 95 % CI; its floor is the probe's forward alone (the
measures on top of a forward that the probe cannot skip), timed in the same rounds.

    PYTHONPATH=src python benchmarks/bench_watch.py --threads 1
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F

from oversmooth.activations import stream_names
from oversmooth.analyze.watch import measure_stream
from oversmooth.bench.timing import bootstrap_median, interleaved_rounds, median_seconds, step_clock
from oversmooth.models import ViT, ViTConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=100, help="the watch interval in steps (default 100)")
    parser.add_argument("--probe", type=int, default=32, help="probe sequences (default 32)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = ViT(ViTConfig.preset("vit-cpu", depth=8))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    images, labels = torch.randn(128, 1, 28, 28), torch.randint(0, 10, (128,))
    probe = torch.randn(args.probe, 1, 28, 28)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    def forward_only() -> None:
        model.eval()
        with torch.no_grad():
            model.run_with_cache(probe, names=stream_names(len(model.blocks)))
        model.train()

    clock, clock_name = step_clock("cpu")
    progress = lambda r: print(f"round {r}", end="\r", file=sys.stderr, flush=True)  # noqa: E731
    times = interleaved_rounds(
        {"step": step, "probe": lambda: measure_stream(model, probe), "probe forward": forward_only},
        args.rounds,
        args.warmup,
        progress=progress,
        clock=clock,
    )
    share = [p / (args.every * s) for p, s in zip(times["probe"], times["step"])]
    floor = [p / (args.every * s) for p, s in zip(times["probe forward"], times["step"])]
    print(
        f"\nthreads {torch.get_num_threads()}, clock: {clock_name}, {args.rounds} rounds (+{args.warmup} warm-up)\n"
        f"training step (vit-cpu depth 8, batch 128): {1e3 * median_seconds(times, 'step'):.1f} ms\n"
        f"one watch measurement ({args.probe} probe images): {1e3 * median_seconds(times, 'probe'):.1f} ms "
        f"(its forward alone: {1e3 * median_seconds(times, 'probe forward'):.1f} ms)\n"
        f"share of training time at every={args.every}: {bootstrap_median(share).format('.4f')} "
        f"(floor, the probe's forward: {bootstrap_median(floor).format('.4f')})"
    )


if __name__ == "__main__":
    main()
