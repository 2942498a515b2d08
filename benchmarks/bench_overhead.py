"""Overhead of each mitigation against the softmax baseline: time, FLOPs and activation memory.

One training step (forward, cross-entropy, backward) per contender, eager and ``torch.compile``d,
at two shapes: ``vit-cpu`` at depth 8 (batch 128, 50 tokens, width 64: the claims study's ViT)
and DeiT-tiny (12 x 192, 197 tokens). Times come from interleaved rounds (every contender once
per round, order rotated, warm-up rounds dropped); each ratio is the median of the per-round
ratios with a bootstrap 95 % CI (``oversmooth.bench.timing``). FLOPs are FlopCounterMode's (matmuls,
convolutions, attention; elementwise work counts 0). The methods add elementwise work, bounded
by memory traffic: the bytes every other op reads and writes are counted (``cost.traffic_bytes``)
and the method's extra bytes, streamed at the rate this machine adds two [batch, tokens, width]
tensors (a contender of the same rounds), give its floor: ``1 + extra bytes / rate / softmax
time``, the ratio a method doing exactly this traffic at streaming speed would show. Memory:
bytes autograd keeps for backward on a CPU, the CUDA peak on a GPU.

    PYTHONPATH=src python benchmarks/bench_overhead.py --threads 1            # both shapes
    PYTHONPATH=src python benchmarks/bench_overhead.py --shapes vit-cpu-d8 --modes eager --rounds 5
    PYTHONPATH=src python benchmarks/bench_overhead.py --manual --methods gated_attention,softpick,registers
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from oversmooth.bench.cost import flops, peak_bytes, traffic_bytes
from oversmooth.bench.timing import allow_compiled_models, interleaved_rounds, median_seconds, ratio, step_clock
from oversmooth.layers import METHOD_FORMULAS, Attention, MitigationConfig
from oversmooth.mitigations.registry import METHODS as REGISTRY
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig
from oversmooth.utils.markdown import markdown_table

Step = Callable[[], None]
DEFAULT_METHODS = (
    "neutreno",
    "deescalate",
    "attnscale",
    "featscale",
    "layerscale",
    "rezero",
    "mv_split",
    "deepnorm",
    "sigma_reparam",
)
#: a second, identical softmax model: its "overhead" is what two instances of one model differ by
#: on this machine (memory placement, noise the rounds do not remove), the resolution of the table.
CONTROL = "softmax (copy)"
#: ``--manual``: softmax with A built explicitly, the path a method that replaces softmax (softpick) takes
MANUAL = "softmax (manual A)"


@dataclass(frozen=True)
class Shape:
    """A model preset with overrides, and the batch it trains on."""

    title: str
    family: str  # "vit" | "lm"
    preset: str
    batch: int
    overrides: tuple[tuple[str, object], ...] = ()

    def model(self, method: str) -> torch.nn.Module:
        """Pre-norm, but post-norm for a method defined only there (DeepNorm: compared with the
        pre-norm softmax, whose blocks do the same work)."""
        mitigation = MitigationConfig.parse(method)
        norm = "pre" if all("pre" in REGISTRY[m].norms for m in mitigation.methods) else "post"
        overrides = {"norm": norm, **dict(self.overrides)}
        if self.family == "vit":
            return ViT(ViTConfig.preset(self.preset, mitigation=mitigation, **overrides))
        return CausalLM(CausalLMConfig.preset(self.preset, mitigation=mitigation, **overrides))

    def batch_of(self, model: torch.nn.Module, device: str) -> tuple[torch.Tensor, torch.Tensor]:
        cfg = model.cfg
        if self.family == "vit":
            x = torch.randn(self.batch, cfg.channels, cfg.image_size, cfg.image_size, device=device)
            return x, torch.randint(0, cfg.num_classes, (self.batch,), device=device)
        tokens = torch.randint(0, cfg.vocab_size, (self.batch, cfg.context + 1), device=device)
        return tokens[:, :-1], tokens[:, 1:]


SHAPES = {
    "vit-cpu-d8": Shape("vit-cpu, depth 8 (50 tokens, width 64, 4 heads)", "vit", "vit-cpu", 128, (("depth", 8),)),
    "deit-tiny": Shape("DeiT-tiny (12 layers, 197 tokens, width 192, 3 heads)", "vit", "deit-tiny", 8),
    "lm-cpu-d8": Shape(
        "lm-cpu, depth 8 (64 tokens, width 64, 4 heads, causal)",
        "lm",
        "lm-cpu",
        64,
        (("depth", 8), ("vocab_size", 4096)),
    ),
}


def train_step(model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> Step:
    """Gradients set to None, forward, cross-entropy, backward (no optimiser: the same for all)."""

    def step() -> None:
        for p in model.parameters():
            p.grad = None
        logits = model(inputs)
        F.cross_entropy(logits.flatten(0, -2), targets.flatten()).backward()

    return step


def streaming(shape: tuple[int, ...], device: str, repeats: int = 20) -> tuple[Step, int]:
    """A contender adding two tensors of ``shape`` ``repeats`` times, and the bytes it moves (two
    reads and a write each time)."""
    a, b, c = (torch.randn(shape, device=device) for _ in range(3))

    def step() -> None:
        for _ in range(repeats):
            torch.add(a, b, out=c)

    return step, repeats * 3 * a.numel() * a.element_size()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="vit-cpu-d8,deit-tiny", help=f"comma-separated: {', '.join(SHAPES)}")
    parser.add_argument(
        "--methods",
        default=",".join(DEFAULT_METHODS),
        help=f"comma-separated, besides softmax and its copy (any of {', '.join(METHOD_FORMULAS)})",
    )
    parser.add_argument("--modes", default="eager,compiled", help="eager, compiled or both")
    parser.add_argument("--manual", action="store_true", help=f"also time {MANUAL!r}: softmax without the fused kernel")
    parser.add_argument("--rounds", type=int, default=15, help="kept rounds (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="rounds run first and dropped (default 2)")
    parser.add_argument("--deit-batch", type=int, default=SHAPES["deit-tiny"].batch)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    methods = [
        "softmax",
        CONTROL,
        *([MANUAL] if args.manual else []),
        *[m for m in args.methods.split(",") if m and m != "softmax"],
    ]
    modes = [m for m in args.modes.split(",") if m]
    allow_compiled_models(len(methods) * len(args.shapes.split(",")))
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    args.clock, clock_name = step_clock(args.device)
    print(
        f"device {args.device}, torch {torch.__version__}, threads {torch.get_num_threads()}, "
        f"rounds {args.rounds} (+{args.warmup} warm-up), modes {', '.join(modes)}, "
        f"clock: {clock_name}"
    )
    for key in args.shapes.split(","):
        shape = SHAPES[key]
        if key == "deit-tiny":
            shape = dataclasses.replace(shape, batch=args.deit_batch)
        measure_shape(shape, methods, modes, args, sync)


def measure_shape(shape: Shape, methods: list[str], modes: list[str], args, sync: Step) -> None:
    steps: dict[str, Step] = {}
    flop_count: dict[str, int] = {}
    traffic: dict[str, int] = {}
    memory: dict[str, int] = {}
    compile_seconds: dict[str, float] = {}
    for method in methods:
        torch.manual_seed(0)
        model = shape.model("softmax" if method in (CONTROL, MANUAL) else method).to(args.device).train()
        for attention in (m for m in model.modules() if isinstance(m, Attention)):
            attention.materialize = method == MANUAL
        x, y = shape.batch_of(model, args.device)
        for mode in modes:
            name = f"{method}/{mode}"
            step = train_step(torch.compile(model) if mode == "compiled" else model, x, y)
            started = time.perf_counter()
            step()  # compiles, if compiled
            sync()
            compile_seconds[name] = time.perf_counter() - started
            memory[name] = peak_bytes(step, args.device)
            steps[name] = step
        flop_count[method] = flops(train_step(model, x, y))
        traffic[method] = traffic_bytes(train_step(model, x, y))
    tokens = model.cfg.tokens if shape.family == "vit" else x.shape[1]
    steps["stream"], streamed = streaming((shape.batch, tokens, model.cfg.width), args.device)
    done = lambda r: print(f"round {r}/{args.warmup + args.rounds}", end="\r", file=sys.stderr, flush=True)  # noqa: E731
    times = interleaved_rounds(steps, args.rounds, args.warmup, sync=sync, progress=done, clock=args.clock)
    rate = [streamed / t for t in times["stream"]]  # bytes per second, per round
    base = modes[0]
    for method in methods:  # the floor of each round: softmax's time plus the extra bytes at that round's rate
        extra = traffic[method] - traffic["softmax"]
        times[f"{method}/floor"] = [t + extra / r for t, r in zip(times[f"softmax/{base}"], rate)]
    memory_label = "peak" if args.device == "cuda" else "saved activations"
    print(
        f"\n{shape.title}, batch {shape.batch}: train step (forward + backward), median ms and ratio to "
        "softmax [95 % CI]"
    )
    header = ["method"]
    for mode in modes:
        header += [f"{mode} ms", f"{mode} ratio"]
    if set(modes) == {"eager", "compiled"}:
        header.append("compiled / eager softmax")
    header += [
        f"floor ({base})",
        "extra traffic MiB",
        "FLOP ratio",
        *(f"{memory_label} ratio ({mode})" for mode in modes),
    ]
    rows = []
    for method in methods:
        row = [method]
        for mode in modes:
            name = f"{method}/{mode}"
            row += [
                f"{1e3 * median_seconds(times, name):.1f}",
                "1" if method == "softmax" else str(ratio(times, name, f"softmax/{mode}")),
            ]
        if set(modes) == {"eager", "compiled"}:
            row.append(str(ratio(times, f"{method}/compiled", "softmax/eager")))
        row += [
            "1" if method == "softmax" else str(ratio(times, f"{method}/floor", f"softmax/{base}")),
            f"{(traffic[method] - traffic['softmax']) / 2**20:.1f}",
            f"{flop_count[method] / flop_count['softmax']:.4f}",
        ]
        row += [f"{memory[f'{method}/{mode}'] / memory[f'softmax/{mode}']:.3f}" for mode in modes]
        rows.append(row)
    print(markdown_table(header, rows))
    print(
        f"softmax: {flop_count['softmax'] / 1e9:.2f} GFLOP and {traffic['softmax'] / 2**30:.2f} GiB of "
        f"elementwise traffic per step; streaming rate {statistics.median(rate) / 1e9:.1f} GB/s; "
        + "; ".join(f"{memory_label} {mode} {memory[f'softmax/{mode}'] / 2**20:.1f} MiB" for mode in modes)
    )
    if "compiled" in modes:
        print(
            "first compiled step (compilation) s: "
            + ", ".join(f"{m} {compile_seconds[f'{m}/compiled']:.0f}" for m in methods)
        )


if __name__ == "__main__":
    main()
