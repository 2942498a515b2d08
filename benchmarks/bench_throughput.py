"""Training throughput of `oversmooth train` at the claims study's shapes, against the machine.

The step is the training loop's own (``oversmooth.train.loop``: ``training_batch`` builds the
batch, with augmentation, and ``optimizer_step`` runs forward, backward, clipping and AdamW),
plus the scheduler step. Contenders, in interleaved rounds (wall clock; warm-up dropped):

- each method, eager and compiled, with data loading (the next batch of a shuffled epoch each
  call) and without it (one fixed batch): images/s or tokens/s;
- the loader alone (``training_batch``): its share of a step with loading;
- a large matmul (square float32, same threads): achieved FLOP/s of a step (its
  FlopCounterMode FLOPs over its time) as a fraction of the matmul's;
- optionally the softmax step at other thread counts (``--threads 1,2``).

Data are random, of the studies' sizes (55 000 images of 28 x 28 with 2-pixel shifts and flips;
8 000 token blocks of 65 with a 4096-token vocabulary): the loader's cost does not depend on the
values. Compilation time (first step) and the steps it takes to pay for itself are printed.

    PYTHONPATH=src python benchmarks/bench_throughput.py                    # both models
    PYTHONPATH=src python benchmarks/bench_throughput.py --models vit --modes eager --rounds 5
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from oversmooth.bench.cost import flops
from oversmooth.bench.timing import allow_compiled_models, bootstrap_median, interleaved_rounds, ratio
from oversmooth.layers import MitigationConfig
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig
from oversmooth.train import ImageClassification, LanguageModelling, SupervisedTask, TrainConfig, build_optimizer
from oversmooth.train.compiled import CompiledForward
from oversmooth.train.distributed import Distributed
from oversmooth.train.loop import epoch_order, optimizer_step, training_batch
from oversmooth.utils.markdown import markdown_table

Step = Callable[[], None]


@dataclass(frozen=True)
class Setting:
    """One model of the claims study: its task, its model and its batch."""

    title: str
    unit: str  # what a rate counts: images or tokens
    batch: int
    lr: float

    def task(self) -> SupervisedTask:
        g = torch.Generator().manual_seed(0)
        if self.unit == "images":
            splits = {
                split: (
                    torch.randint(0, 256, (n, 28, 28), dtype=torch.uint8, generator=g),
                    torch.randint(0, 10, (n,), generator=g),
                )
                for split, n in (("train", 55000), ("val", 8))
            }
            return ImageClassification(splits, classes=10, augment=True)
        return LanguageModelling(
            {split: torch.randint(0, 4096, (n, 65), generator=g) for split, n in (("train", 8000), ("val", 8))},
            vocab_size=4096,
        )

    def model(self, method: str) -> torch.nn.Module:
        mitigation = MitigationConfig.parse(
            method, **({"lam": 0.6 if self.unit == "images" else 0.4} if method == "neutreno" else {})
        )
        if self.unit == "images":
            return ViT(ViTConfig.preset("vit-cpu", depth=8, mitigation=mitigation))
        return CausalLM(CausalLMConfig.preset("lm-cpu", depth=8, vocab_size=4096, mitigation=mitigation))

    def per_batch(self, inputs: torch.Tensor) -> int:
        return inputs.shape[0] if self.unit == "images" else inputs.numel()


SETTINGS = {
    "vit": Setting("ViT 8 x 64, 4 heads, MLP x2, 4 x 4 patches of 28 x 28 (50 tokens), augmented", "images", 128, 1e-3),
    "lm": Setting("causal LM 8 x 64, 4 heads, MLP x4, 64-token context, vocabulary 4096", "tokens", 64, 2e-3),
}


class Trainer:
    """One model being trained exactly as the loop trains it; ``step(load)`` runs one step."""

    def __init__(self, setting: Setting, method: str, compiled: bool, task: SupervisedTask):
        torch.manual_seed(0)
        self.model = setting.model(method).train()
        self.task, self.config = task, TrainConfig(epochs=1, batch_size=setting.batch, lr=setting.lr, progress=False)
        self.env = Distributed()
        self.steps_per_epoch = task.size("train") // setting.batch
        self.optimizer, self.scheduler = build_optimizer(self.model, setting.lr, 0.05, 10, 10**6)
        self.runner = CompiledForward(self.model, compiled)
        self.order, self.position = epoch_order(0, 0, task.size("train")), 0
        self.fixed = self.next_batch()

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        batch = training_batch(self.task, self.order, 0, self.position % self.steps_per_epoch, self.config, self.env)
        self.position += 1
        return batch

    def step(self, load: bool) -> None:
        inputs, targets = self.next_batch() if load else self.fixed
        optimizer_step(self.runner, self.model, self.task, inputs, targets, self.optimizer, self.config, self.env)
        self.scheduler.step()

    def forward_backward_flops(self) -> int:
        inputs, targets = self.fixed
        return flops(lambda: self.task.loss(self.model(inputs), targets).backward())


def matmul(size: int) -> tuple[Step, int]:
    a, b = torch.randn(size, size), torch.randn(size, size)
    return (lambda: torch.mm(a, b)), 2 * size**3


def with_threads(threads: int, step: Step) -> Step:
    def run() -> None:
        torch.set_num_threads(threads)
        step()

    return run


def measure(
    key: str, setting: Setting, methods: list[str], modes: list[str], threads: list[int], args: argparse.Namespace
) -> None:
    task = setting.task()
    base_threads = threads[0]
    torch.set_num_threads(base_threads)
    trainers: dict[str, Trainer] = {}
    contenders: dict[str, Step] = {}
    compile_seconds: dict[str, float] = {}
    for method in methods:
        for mode in modes:
            name = f"{method}/{mode}"
            trainer = trainers[name] = Trainer(setting, method, mode == "compiled", task)
            started = time.perf_counter()
            trainer.step(load=False)  # compiles, if compiled
            compile_seconds[name] = time.perf_counter() - started
            if mode == "compiled" and not trainer.runner.compiled:
                sys.exit(f"{name}: compilation failed, nothing to compare")
            contenders[f"{name}/load"] = with_threads(base_threads, lambda t=trainer: t.step(load=True))
            contenders[f"{name}/fixed"] = with_threads(base_threads, lambda t=trainer: t.step(load=False))
    first = trainers[f"{methods[0]}/{modes[0]}"]
    contenders["loader"] = with_threads(base_threads, first.next_batch)
    mm, mm_flops = matmul(args.matmul)
    contenders["matmul"] = with_threads(base_threads, mm)
    for n in threads[1:]:
        contenders[f"{methods[0]}/{modes[0]}/load/{n} threads"] = with_threads(n, lambda: first.step(load=True))
    done = lambda r: print(f"round {r}/{args.warmup + args.rounds}", end="\r", file=sys.stderr, flush=True)  # noqa: E731
    times = interleaved_rounds(contenders, args.rounds, args.warmup, progress=done)
    torch.set_num_threads(base_threads)

    per_batch = setting.per_batch(first.fixed[0])
    print(
        f"\n{key}: {setting.title}; batch {setting.batch} ({per_batch} {setting.unit}); {base_threads} thread(s); "
        f"median [95 % CI] over {args.rounds} rounds"
    )
    header = [
        "method",
        "mode",
        f"{setting.unit}/s, loading on",
        f"{setting.unit}/s, loading off",
        "FLOP/s vs matmul",
        "first step s",
    ]
    rows = []
    for method in methods:
        step_flops = trainers[f"{method}/{modes[0]}"].forward_backward_flops()
        for mode in modes:
            name = f"{method}/{mode}"
            rates = [bootstrap_median([per_batch / t for t in times[f"{name}/{load}"]]) for load in ("load", "fixed")]
            fraction = ratio(times, "matmul", f"{name}/fixed").scaled(step_flops / mm_flops)
            rows.append(
                [method, mode, rates[0].format(".0f"), rates[1].format(".0f"), fraction, f"{compile_seconds[name]:.1f}"]
            )
    print(markdown_table(header, rows))
    loader = ratio(times, "loader", f"{methods[0]}/{modes[0]}/load")
    print(
        f"loader alone: {bootstrap_median(times['loader']).scaled(1e3).format('.2f')} ms per batch, "
        f"{loader.scaled(100).format('.2f')} % of a {methods[0]} {modes[0]} step with loading: the step has "
        f"{100 * (1 - loader.median):.2f} % [{100 * (1 - loader.high):.2f}, {100 * (1 - loader.low):.2f}] "
        f"of the time (goal >= 95 %)"
    )
    print(
        f"matmul {args.matmul}^2: "
        f"{bootstrap_median([mm_flops / t for t in times['matmul']]).scaled(1e-9).format('.1f')}"
        f" GFLOP/s; step: {step_flops / 1e9:.2f} GFLOP forward + backward (FlopCounterMode)"
    )
    for n in threads[1:]:
        print(
            f"{methods[0]} {modes[0]} with {n} threads: {setting.unit}/s ratio to {base_threads} thread(s) "
            f"{ratio(times, f'{methods[0]}/{modes[0]}/load', f'{methods[0]}/{modes[0]}/load/{n} threads')}"
        )
    if set(modes) == {"eager", "compiled"}:
        for method in methods:
            speedup = ratio(times, f"{method}/eager/load", f"{method}/compiled/load")
            saved = statistics.median(times[f"{method}/eager/load"]) - statistics.median(
                times[f"{method}/compiled/load"]
            )
            extra = compile_seconds[f"{method}/compiled"] - compile_seconds[f"{method}/eager"]
            paid = f"pays for its compilation after {math.ceil(extra / saved)} steps" if saved > 0 else "never pays"
            print(f"{method}: compiled is {speedup} x the eager speed; {paid}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="vit,lm", help="vit, lm or both")
    parser.add_argument("--methods", default="softmax,neutreno")
    parser.add_argument("--modes", default="eager,compiled", help="eager, compiled or both")
    parser.add_argument(
        "--threads",
        default="1",
        help="torch threads; more than one (e.g. 1,2): the first "
        "for every contender, the others for the first method's step as well",
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--matmul", type=int, default=2048, help="side of the reference matmul")
    args = parser.parse_args()
    threads = [int(n) for n in args.threads.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    methods = [m for m in args.methods.split(",") if m]
    allow_compiled_models(len(methods) * len(args.models.split(",")))
    print(f"torch {torch.__version__}, CPU only (no GPU in this run), {args.rounds} rounds + {args.warmup} warm-up")
    for key in args.models.split(","):
        measure(key, SETTINGS[key], methods, modes, threads, args)


if __name__ == "__main__":
    main()
