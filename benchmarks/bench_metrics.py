"""Cost of the metric suite, measured side by side in one run (ratios, interleaved repeats).

1. The suite over 12 layers of B x n x d hidden states vs one forward pass of a 12-layer
   d-wide encoder (torch's TransformerEncoder, 4x MLP) on the same batch. Reported twice: the
   O(n d) similarity measures alone, and the whole suite with the two spectral ranks.
2. cos_sim vs the naive O(n^2 d) version (explicit n x n cosine matrix) at several n.

    python benchmarks/bench_metrics.py            # B=8, n=512, d=768 (issue 2's shape)
    python benchmarks/bench_metrics.py --quick    # smaller, for a smoke run
    python benchmarks/bench_metrics.py --threads 1  # steadier on a busy machine
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from oversmooth.metrics import cos_sim, measure

SIMILARITY = ("cos_sim", "t_sim", "t_div", "centred_residual")


def naive_cos_sim(x: torch.Tensor) -> torch.Tensor:
    """Mean off-diagonal entry of the full n x n cosine matrix, [batch]."""
    u = torch.nn.functional.normalize(x.double(), dim=-1)
    cos = u @ u.transpose(1, 2)
    n = x.shape[1]
    return (cos.sum((1, 2)) - cos.diagonal(dim1=1, dim2=2).sum(-1)) / (n * (n - 1))


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(fns: dict, repeats: int) -> dict[str, float]:
    """Median seconds of each function, run in turn so machine noise hits all alike."""
    for fn in fns.values():
        fn()  # warm-up
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(timed(fn))
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="B=2, n=128, d=256")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.quick:
        args.batch, args.tokens, args.width = 2, 128, 256
    torch.manual_seed(0)
    b, n, d, layers = args.batch, args.tokens, args.width, args.layers
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")

    encoder = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(d, nhead=max(1, d // 64), dim_feedforward=4 * d,
                                         batch_first=True, dropout=0.0),
        num_layers=layers, enable_nested_tensor=False).eval()
    x = torch.randn(b, n, d)
    states = [torch.randn(b, n, d) for _ in range(layers)]
    with torch.inference_mode():
        t = interleaved({
            "forward": lambda: encoder(x),
            "suite_similarity": lambda: measure(states, metrics=SIMILARITY),
            "suite_full": lambda: measure(states),
        }, args.repeats)
    print(f"\n1. suite over {layers} layers of B={b} n={n} d={d} vs a {layers}-layer encoder forward")
    print(f"   forward pass                        {t['forward']:8.3f} s")
    for key, label in (("suite_similarity", "similarity measures (O(n d))"),
                       ("suite_full", "whole suite (+ effective/stable rank)")):
        print(f"   {label:36s}{t[key]:8.3f} s   ratio {t[key] / t['forward']:6.1%}  (target <= 5%)")

    flops_forward = layers * b * n * (24 * d * d + 4 * n * d)  # 2 x 12 d^2 weights per token, + QK^T, AV
    m = min(n, d)
    flops_ranks = layers * b * (2 * n * d * m + 4 * m ** 3 // 3)         # Gram + tridiagonalisation
    print(f"   exact ranks need >= {flops_ranks / flops_forward:.1%} of the forward's FLOPs "
          "(Gram + tridiagonalisation of every sequence), whatever the implementation")

    print("\n2. cos_sim vs naive O(n^2 d)")
    for tokens in (128, 512, 2048):
        y = torch.randn(b, tokens, d)
        assert torch.allclose(cos_sim(y), naive_cos_sim(y), atol=1e-9)
        t = interleaved({"fast": lambda: cos_sim(y), "naive": lambda: naive_cos_sim(y)}, args.repeats + 2)
        print(f"   n={tokens:5d}: fast {t['fast'] * 1e3:8.2f} ms  naive {t['naive'] * 1e3:9.2f} ms"
              f"  speed-up {t['naive'] / t['fast']:7.1f}x" + ("  (target >= 50x)" if tokens == 512 else ""))


if __name__ == "__main__":
    main()
