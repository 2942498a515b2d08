"""Cost of the metric suite, measured side by side in one run, and against each measure's floor.

All times come from interleaved rounds (``oversmooth.bench.timing``: every contender once per round,
order rotated, warm-up dropped; thread CPU time with one torch thread, else wall time); every
ratio is the median of per-round ratios with a bootstrap 95 % CI.

1. The suite over 12 layers of B x n x d hidden states vs one forward pass of a 12-layer
   d-wide encoder (torch's TransformerEncoder, 4x MLP) on the same batch: the O(n d) similarity
   measures alone, and the whole suite with the two spectral ranks.
2. Each measure on one layer against its floor: cos_sim, t_sim, t_div and centred_residual
   against reading the hidden states once (``x.sum()``: a memory-bandwidth floor, as every one
   must read every token); effective_rank and stable_rank against one batched eigensolve
   (``eigvalsh``) of the float64 Gram matrices of the smaller side, already formed.
3. cos_sim vs the naive O(n^2 d) version (explicit n x n cosine matrix) at several n.

    python benchmarks/bench_metrics.py --threads 1   # B=8, n=512, d=768 (a BERT-base batch)
    python benchmarks/bench_metrics.py --quick       # smaller, for a smoke run
"""

from __future__ import annotations

import argparse
import sys

import torch

from oversmooth.bench.timing import Estimate, bootstrap_median, interleaved_rounds, ratio, step_clock
from oversmooth.metrics import centred_residual, cos_sim, effective_rank, measure, stable_rank, t_div, t_sim

SIMILARITY = ("cos_sim", "t_sim", "t_div", "centred_residual")
READ_FLOOR = {"cos_sim": cos_sim, "t_sim": t_sim, "t_div": t_div, "centred_residual": centred_residual}
EIGEN_FLOOR = {"effective_rank": effective_rank, "stable_rank": stable_rank}


def naive_cos_sim(x: torch.Tensor) -> torch.Tensor:
    """Mean off-diagonal entry of the full n x n cosine matrix, [batch]."""
    u = torch.nn.functional.normalize(x.double(), dim=-1)
    cos = u @ u.transpose(1, 2)
    n = x.shape[1]
    return (cos.sum((1, 2)) - cos.diagonal(dim1=1, dim2=2).sum(-1)) / (n * (n - 1))


def rounds(contenders: dict, args: argparse.Namespace, label: str) -> dict[str, list[float]]:
    clock, _ = step_clock()

    def done(r: int) -> None:
        print(f"{label}: round {r}/{args.warmup + args.rounds}", end="\r", file=sys.stderr, flush=True)

    with torch.inference_mode():
        return interleaved_rounds(contenders, args.rounds, args.warmup, progress=done, clock=clock)


def seconds(times: dict[str, list[float]], name: str) -> Estimate:
    return bootstrap_median(times[name])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=9, help="kept rounds (default 9)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="B=2, n=128, d=256")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.quick:
        args.batch, args.tokens, args.width = 2, 128, 256
    torch.manual_seed(0)
    b, n, d, layers = args.batch, args.tokens, args.width, args.layers
    print(
        f"torch {torch.__version__}, CPU, {torch.get_num_threads()} thread(s), clock: {step_clock()[1]}, "
        f"{args.rounds} rounds + {args.warmup} warm-up; median [95 % CI]"
    )

    encoder = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(
            d, nhead=max(1, d // 64), dim_feedforward=4 * d, batch_first=True, dropout=0.0
        ),
        num_layers=layers,
        enable_nested_tensor=False,
    ).eval()
    x = torch.randn(b, n, d)
    states = [torch.randn(b, n, d) for _ in range(layers)]
    t = rounds(
        {
            "forward": lambda: encoder(x),
            "suite_similarity": lambda: measure(states, metrics=SIMILARITY),
            "suite_full": lambda: measure(states),
        },
        args,
        "suite",
    )
    print(f"\n1. suite over {layers} layers of B={b} n={n} d={d} vs a {layers}-layer encoder forward")
    print(f"   forward pass                          {seconds(t, 'forward').format('.3f')} s")
    for key, label in (
        ("suite_similarity", "similarity measures (O(n d))"),
        ("suite_full", "whole suite (+ effective/stable rank)"),
    ):
        print(
            f"   {label:38s}{seconds(t, key).format('.3f')} s   "
            f"ratio {ratio(t, key, 'forward').scaled(100).format('.1f')} %"
            "  (target <= 5 %)"
        )
    flops_forward = layers * b * n * (24 * d * d + 4 * n * d)  # 2 x 12 d^2 weights per token, + QK^T, AV
    m = min(n, d)
    flops_ranks = layers * b * (2 * n * d * m + 4 * m**3 // 3)  # Gram + tridiagonalisation
    print(
        f"   exact ranks need >= {flops_ranks / flops_forward:.1%} of the forward's FLOPs "
        "(Gram + tridiagonalisation of every sequence), whatever the implementation"
    )

    layer = states[0]
    tokens_side = n <= d
    gram = (
        layer.double() @ layer.double().transpose(1, 2)
        if tokens_side
        else layer.double().transpose(1, 2) @ layer.double()
    )
    floors = {"read once": lambda: layer.sum(), "eigensolve": lambda: torch.linalg.eigvalsh(gram)}
    measures = {**READ_FLOOR, **EIGEN_FLOOR}
    t = rounds({**floors, **{name: (lambda f=f: f(layer)) for name, f in measures.items()}}, args, "floors")
    print(f"\n2. one layer (B={b} n={n} d={d}, float32) against its floor")
    for name, floor in [*((k, "read once") for k in READ_FLOOR), *((k, "eigensolve") for k in EIGEN_FLOOR)]:
        print(
            f"   {name:18s}{seconds(t, name).scaled(1e3).format('.2f')} ms   "
            f"{ratio(t, name, floor).format('.1f')} x the floor"
        )
    read = seconds(t, "read once")
    print(
        f"   floors: reading the states once {read.scaled(1e3).format('.2f')} ms "
        f"({b * n * d * 4 / read.median / 1e9:.1f} GB/s); eigvalsh of {b} float64 Gram matrices "
        f"{m} x {m}: {seconds(t, 'eigensolve').scaled(1e3).format('.1f')} ms"
    )

    print("\n3. cos_sim vs naive O(n^2 d)")
    for tokens in (128, 512, 2048):
        y = torch.randn(b, tokens, d)
        assert torch.allclose(cos_sim(y), naive_cos_sim(y), atol=1e-9)
        t = rounds({"fast": lambda y=y: cos_sim(y), "naive": lambda y=y: naive_cos_sim(y)}, args, f"n={tokens}")
        print(
            f"   n={tokens:5d}: fast {seconds(t, 'fast').scaled(1e3).format('.2f')} ms  naive "
            f"{seconds(t, 'naive').scaled(1e3).format('.1f')} ms  speed-up {ratio(t, 'naive', 'fast').format('.1f')} x"
            + ("  (target >= 50 x)" if tokens == 512 else "")
        )


if __name__ == "__main__":
    main()
