"""AdamW with decoupled weight decay on matrices only, and a linear-warmup cosine schedule."""

from __future__ import annotations

import math

import torch
from torch import nn


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two AdamW groups: tensors with ``ndim >= 2`` (weights, embeddings) decay; the rest do not.

    Norm weights, biases and per-channel scales (FeatScale's ``s``, AttnScale's ``omega``,
    a learnable ``tau``) are all ``ndim < 2`` and so are never pulled towards zero.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    return [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]


def warmup_cosine(step: int, warmup_steps: int, total_steps: int, min_ratio: float = 0.0) -> float:
    """Learning-rate multiplier: linear from ~0 to 1 over ``warmup_steps``, then cosine to ``min_ratio``.

    >>> [round(warmup_cosine(s, 2, 6), 3) for s in range(7)]
    [0.5, 1.0, 1.0, 0.854, 0.5, 0.146, 0.0]
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def build_optimizer(
    model: nn.Module, lr: float, weight_decay: float, warmup_steps: int, total_steps: int, betas=(0.9, 0.999)
) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW over :func:`parameter_groups` and a per-step :func:`warmup_cosine` scheduler."""
    optimizer = torch.optim.AdamW(parameter_groups(model, weight_decay), lr=lr, betas=betas)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_cosine(step, warmup_steps, total_steps)
    )
    return optimizer, scheduler
