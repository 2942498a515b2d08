"""Scores of a model on a split, and the per-layer oversmoothing metrics on a fixed batch."""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from oversmooth.train.distributed import Distributed
from oversmooth.train.tasks import SupervisedTask


def autocast(device: torch.device, bf16: bool) -> contextlib.AbstractContextManager:
    """bfloat16 autocast on CUDA when ``bf16``; a no-op elsewhere."""
    return torch.autocast("cuda", torch.bfloat16, enabled=device.type == "cuda" and bf16)


@torch.no_grad()
def evaluate(
    model: nn.Module, task: SupervisedTask, split: str, batch_size: int, env: Distributed, bf16: bool = False
) -> dict[str, float]:
    """Loss, accuracy (and perplexity for LMs) over a whole split, sharded over processes.

    Each process scores examples ``rank, rank + world_size, ...``; sums are then all-reduced.
    """
    was_training = model.training
    model.eval()
    sums = torch.zeros(3, dtype=torch.float64)
    shard = torch.arange(env.rank, task.size(split), env.world_size)
    for chunk in shard.split(batch_size):
        inputs, targets = task.batch(split, chunk)
        with autocast(env.device, bf16):
            logits = model(inputs.to(env.device))
        sums += task.score(logits, targets.to(env.device)).cpu()
    model.train(was_training)
    return task.summarize(env.all_reduce_sum(sums))


@torch.no_grad()
def stream_table(model: nn.Module, inputs: torch.Tensor):
    """The metric suite (``oversmooth.metrics.measure``) on our model's residual stream (a model
    with ``run_with_cache``: our ViT and CausalLM) for ``inputs`` (images ``[B, 1, H, W]`` or
    tokens ``[B, n]``), in eval mode (the mode is restored): one ``metric_table`` row per state in
    ``oversmooth.activations``' numbering, ``layer`` 0 = embeddings output, i = after block i;
    ``attrs["tokens"]``: tokens per sequence, the measured ones (a ViT's registers left out)."""
    from oversmooth.metrics.suite import measure

    was_training = model.training
    model.eval()
    try:
        _, cache = model.run_with_cache(inputs)
    finally:
        model.train(was_training)
    stream = cache.stream()
    table = measure(stream, cache.mask, hook="stream")  # a ViT's registers left out
    table.attrs["tokens"] = stream[0].shape[1] if cache.mask is None else int(cache.mask[0].sum())
    return table


def validation_probe(task: SupervisedTask, size: int) -> torch.Tensor:
    """The fixed batch whose per-layer metrics a run records: the inputs of the first ``size``
    validation examples (all of them if fewer), shape (n, ...) as ``task.batch`` gives them."""
    return task.batch("val", torch.arange(min(size, task.size("val"))))[0]


def layer_metrics(model: nn.Module, inputs: torch.Tensor) -> list[dict]:
    """``stream_table`` as strict-JSON records (undefined values, NaN, become None), as each
    epoch's ``layers`` record holds them."""
    from oversmooth.metrics.suite import json_records

    return json_records(stream_table(model, inputs))
