"""When compile mode ``auto`` compiles: only where the throughput benchmark measured it faster.

``benchmarks/bench_throughput.py`` at the claims studies' shapes, on this project's 2-core CPU
(one thread; docs/benchmarks.md, "Training speed", medians with 95 % CIs): compiling NeuTRENO's ViT (8 x 64,
batch 128) made its steps 1.09x [1.05, 1.23] as fast, paying for compilation after 20 steps;
softmax's ViT was unchanged (0.98x [0.82, 1.02]); the causal LM (8 x 64, 64-token context,
batch 64) gained nothing (0.97-1.00x). So ``auto`` compiles a ViT of at least ``AUTO_MIN_STEPS``
optimiser steps on a CPU, every method alike so that paired arms share one path, and nothing
else (a GPU was not measured). Imports no torch, so ``oversmooth --help`` stays fast.
"""

from __future__ import annotations

COMPILE_MODES = ("auto", "on", "off")
AUTO_MIN_STEPS = 2000


def should_compile(mode: str, model: str, steps: int, device: str) -> bool:
    """Whether a run in compile ``mode`` of a ``model`` (``vit`` / ``lm``) trained ``steps``
    optimiser steps on ``device`` (``cpu`` / ``cuda...``) compiles.

    >>> [should_compile("auto", "vit", 4290, "cpu"), should_compile("auto", "vit", 468, "cpu"),
    ...  should_compile("auto", "lm", 4000, "cpu"), should_compile("on", "lm", 1, "cuda:0")]
    [True, False, False, True]
    """
    if mode == "auto":
        return model == "vit" and device == "cpu" and steps >= AUTO_MIN_STEPS
    return mode == "on"
