"""When compile mode ``auto`` compiles: only where the throughput benchmark measured it faster.

``benchmarks/bench_throughput.py`` at the claims studies' shapes, on this project's 2-core CPU
(one thread; docs/training.md, "Training speed"): a compiled ViT (8 x 64, batch 128) trained
1.02-1.09x as fast as eager (softmax, NeuTRENO, spectral, FeatScale), and compiling took 4-60 s,
paid back after 60-1250 steps; the causal LM (8 x 64, 64-token context, batch 64) gained nothing
clear. So ``auto`` compiles a ViT of at least ``AUTO_MIN_STEPS`` optimiser steps on a CPU and
nothing else (a GPU was not measured). Imports no torch, so ``oversmooth --help`` stays fast.
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
