"""Overhead of each mitigation vs the softmax baseline, and our ViT vs transformers' ViT.

Forward+backward time (interleaved repeats, method order rotated each repeat; the best repeat,
which other load on a shared machine can only slow, and the median) and
memory, as ratios to softmax, at the DeiT-tiny shape (197 tokens) and the NeuTRENO LM preset
(256 tokens). Memory is the CUDA peak on a GPU; on CPU it is the bytes of tensors saved for
backward, parameters excluded (the activation memory, which is what the methods can change).

    PYTHONPATH=src python benchmarks/bench_overhead.py            # small batches (CPU friendly)
    PYTHONPATH=src python benchmarks/bench_overhead.py --full     # B=32 ViT, B=16 LM
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import torch
import torch.nn.functional as F
from tqdm import tqdm

from oversmooth.layers import METHODS, MitigationConfig
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig

Step = Callable[[], None]


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def activation_bytes(step: Step) -> int:
    """Bytes of distinct storages autograd saves for backward during ``step``, parameters excluded."""
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor):
        if not (t.is_leaf and t.requires_grad):
            storage = t.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()
    return sum(seen.values())


def peak_bytes(step: Step, device: str) -> int:
    if device != "cuda":
        return activation_bytes(step)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def interleaved_times(steps: dict[str, Step], repeats: int, warmup: int, device: str,
                      label: str) -> dict[str, list[float]]:
    """Seconds per step, per repeat; every repeat runs every step once, in a rotated order."""
    names = list(steps)
    for name in names:
        for _ in range(warmup):
            steps[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in tqdm(range(repeats), desc=label, leave=False):
        for name in names[r % len(names):] + names[: r % len(names)]:
            sync(device)
            start = time.perf_counter()
            steps[name]()
            sync(device)
            times[name].append(time.perf_counter() - start)
    return times


def train_step(model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> Step:
    """Forward, cross-entropy, backward (gradients set to None first)."""
    def step() -> None:
        model.zero_grad(set_to_none=True)
        logits = model(inputs)
        if not torch.is_tensor(logits):      # transformers' output object
            logits = logits.logits
        F.cross_entropy(logits.flatten(0, -2), targets.flatten()).backward()
    return step


def method_steps(setting: str, batch: int, methods: list[str], device: str) -> dict[str, Step]:
    steps = {}
    for method in methods:
        torch.manual_seed(0)
        if setting == "vit":
            cfg = ViTConfig.preset("deit-tiny", mitigation=method)
            model = ViT(cfg).to(device)
            x = torch.randn(batch, 3, 224, 224, device=device)
            y = torch.randint(0, cfg.num_classes, (batch,), device=device)
        else:
            cfg = CausalLMConfig.preset("neutreno-lm", mitigation=MitigationConfig.parse(method, lam=0.4))
            model = CausalLM(cfg).to(device)
            tokens = torch.randint(0, cfg.vocab_size, (batch, cfg.context + 1), device=device)
            x, y = tokens[:, :-1], tokens[:, 1:]
        steps[method] = train_step(model.train(), x, y)
    return steps


def table(title: str, times: dict[str, list[float]], memory: dict[str, int], memory_label: str) -> str:
    best = {name: min(t) for name, t in times.items()}
    median = {name: statistics.median(t) for name, t in times.items()}
    lines = [title, f"| method | best ms | time ratio (best) | time ratio (median) | "
                    f"{memory_label} MiB | memory ratio |", "|---|---|---|---|---|---|"]
    for name in times:
        lines.append(f"| {name} | {1e3 * best[name]:.1f} | {best[name] / best['softmax']:.3f} | "
                     f"{median[name] / median['softmax']:.3f} | {memory[name] / 2**20:.1f} | "
                     f"{memory[name] / memory['softmax']:.3f} |")
    return "\n".join(lines)


def hf_vit_steps(batch: int, device: str) -> dict[str, Step]:
    """Our DeiT-tiny and transformers' ViTForImageClassification of the same shape, with AdamW."""
    from transformers import ViTConfig as HFViTConfig
    from transformers import ViTForImageClassification

    torch.manual_seed(0)
    hf_cfg = HFViTConfig(hidden_size=192, num_hidden_layers=12, num_attention_heads=3,
                         intermediate_size=768, image_size=224, patch_size=16, num_channels=3,
                         num_labels=1000, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                         attn_implementation="sdpa")
    models = {"oversmooth ViT": ViT(ViTConfig.preset("deit-tiny")),
              "transformers ViT": ViTForImageClassification(hf_cfg)}
    x = torch.randn(batch, 3, 224, 224, device=device)
    y = torch.randint(0, 1000, (batch,), device=device)
    steps = {}
    for name, model in models.items():
        model.to(device).train()
        optimiser = torch.optim.AdamW(model.parameters(), lr=1e-4)
        backward = train_step(model, x, y)

        def step(backward=backward, optimiser=optimiser) -> None:
            backward()
            optimiser.step()
        steps[name] = step
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="issue shapes: ViT B=32, LM B=16")
    parser.add_argument("--vit-batch", type=int, default=4)
    parser.add_argument("--lm-batch", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: vit,lm,hf")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.full:
        args.vit_batch, args.lm_batch = 32, 16
    methods = ["softmax", *[m for m in args.methods.split(",") if m]]
    skip = set(args.skip.split(","))
    memory_label = "peak" if args.device == "cuda" else "saved-activation"
    print(f"device {args.device}, torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"repeats {args.repeats}")
    for setting, batch, shape in (("vit", args.vit_batch, "197 tokens"),
                                  ("lm", args.lm_batch, "256 tokens")):
        if setting in skip:
            continue
        steps = method_steps(setting, batch, methods, args.device)
        memory = {name: peak_bytes(step, args.device) for name, step in steps.items()}
        times = interleaved_times(steps, args.repeats, args.warmup, args.device, setting)
        title = ("DeiT-tiny ViT" if setting == "vit" else "NeuTRENO LM (16 x 128, post-norm)")
        print(table(f"\n{title}, B={batch}, {shape}", times, memory, memory_label))
    if "hf" not in skip:
        steps = hf_vit_steps(args.vit_batch, args.device)
        times = interleaved_times(steps, args.repeats, args.warmup, args.device, "hf")
        ours, theirs = times["oversmooth ViT"], times["transformers ViT"]
        print(f"\nTrain step (fwd+bwd+AdamW), DeiT-tiny shape, B={args.vit_batch}: best ours "
              f"{1e3 * min(ours):.1f} ms, transformers {1e3 * min(theirs):.1f} ms; ratio best "
              f"{min(ours) / min(theirs):.3f}, median "
              f"{statistics.median(ours) / statistics.median(theirs):.3f}")


if __name__ == "__main__":
    main()
