"""Cost of an adaptation step: a patched model's optimiser step against a plain fine-tuning step
of the same model, whole-model and LoRA, and the memory each needs.

Each contender is the step ``oversmooth adapt`` takes (``train.loop.optimizer_step``: forward,
the objective's loss, backward, clip, AdamW) on one fixed batch, the models built by the adapt
package itself (``PretrainedSource.arm``), so the patch hooks and peft's adapters are the ones
that train. The batch's targets (for distillation, the unpatched teacher's outputs) are computed
once, outside the timed step: the teacher costs both arms the same. Times come from interleaved
rounds (order shuffled per round, warm-up dropped); each ratio is the median of the per-round
ratios with a bootstrap 95 % CI (``oversmooth.bench.timing``); with one thread the clock is the thread's
CPU time, so other jobs on the machine do not count. Memory: the bytes autograd keeps for
backward on a CPU (the CUDA peak on a GPU), plus the training state counted from the parameters
(weights, and for trainable ones a gradient and AdamW's two moments).

    PYTHONPATH=src python benchmarks/bench_adapt.py --threads 1 --rounds 8
    PYTHONPATH=src python benchmarks/bench_adapt.py --model tiny-gpt2-folder --batch 4 --seq-len 64
"""

from __future__ import annotations

import argparse
import sys

import torch

from oversmooth.adapt import AdaptConfig
from oversmooth.adapt.pretrained import PretrainedSource
from oversmooth.bench.cost import peak_bytes
from oversmooth.bench.timing import interleaved_rounds, median_seconds, ratio, step_clock
from oversmooth.train.compiled import CompiledForward
from oversmooth.train.distributed import Distributed
from oversmooth.train.loop import TrainConfig, optimizer_step
from oversmooth.train.optim import build_optimizer
from oversmooth.utils.markdown import markdown_table


def contender(source: PretrainedSource, method: str | None, inputs, targets, task, device: str):
    """One adapt optimiser step of a fresh arm (``method`` None: unpatched, else at its default
    knobs); returns (step, model)."""
    torch.manual_seed(0)
    model = source.arm(method, method and source.resolve(method, {})).to(device).train()
    optimizer, _ = build_optimizer(model, 1e-5, 0.01, 0, 10**6)  # a tiny lr: the weights barely move
    runner, config, env = (
        CompiledForward(model, False),
        TrainConfig(epochs=1, bf16=False),
        Distributed(device=torch.device(device)),
    )

    def step() -> None:
        optimizer_step(runner, model, task, inputs, targets, optimizer, config, env)

    return step, model


def state_bytes(model: torch.nn.Module) -> int:
    """Weights, plus a gradient and two AdamW moments per trainable weight."""
    size = lambda p: p.numel() * p.element_size()  # noqa: E731
    return sum(size(p) for p in model.parameters()) + 3 * sum(size(p) for p in model.parameters() if p.requires_grad)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="any model adapt takes (default: the bundled MiniLM)")
    parser.add_argument("--method", default="neutreno")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--lora", type=int, default=8, help="LoRA rank of the LoRA contenders (0: none)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    clock, clock_name = step_clock(args.device)
    sources = {
        "whole": PretrainedSource(
            AdaptConfig(model=args.model, text="sample", seq_len=args.seq_len, method=args.method, device=args.device)
        )
    }
    if args.lora:
        sources[f"LoRA r{args.lora}"] = PretrainedSource(
            AdaptConfig(
                model=args.model,
                text="sample",
                seq_len=args.seq_len,
                method=args.method,
                lora=args.lora,
                device=args.device,
            )
        )
    task = sources["whole"].task()
    index = torch.arange(args.batch) % task.size("train")
    inputs, targets = task.batch("train", index, torch.Generator().manual_seed(0))
    inputs, targets = inputs.to(args.device), targets.to(args.device)
    steps, memory = {}, {}
    for kind, source in sources.items():
        for arm, method in (("plain", None), (args.method, args.method)):
            step, model = contender(source, method, inputs, targets, task, args.device)
            steps[f"{kind}/{arm}"] = step
            memory[f"{kind}/{arm}"] = (peak_bytes(step, args.device), state_bytes(model))
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    done = lambda r: print(f"round {r}/{args.warmup + args.rounds}", end="\r", file=sys.stderr, flush=True)  # noqa: E731
    times = interleaved_rounds(steps, args.rounds, args.warmup, sync=sync, progress=done, clock=clock)
    print(
        f"\n{sources['whole'].description['model']} ({sources['whole'].loaded.family.name}), objective "
        f"{sources['whole'].objective}, batch {args.batch} x {args.seq_len} tokens; {args.device}, threads "
        f"{torch.get_num_threads()}, {clock_name}, {args.rounds} rounds"
    )
    rows = []
    for name in steps:
        kind, arm = name.split("/")
        share = "1" if arm == "plain" else str(ratio(times, name, f"{kind}/plain"))
        mebibytes = [f"{size / 2**20:.1f}" for size in memory[name]]  # activations, training state
        rows.append([name, f"{1000 * median_seconds(times, name):.1f}", share, *mebibytes])
    header = ["contender", "step ms", "ratio to plain step [95 % CI]", "activations MiB", "training state MiB"]
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
