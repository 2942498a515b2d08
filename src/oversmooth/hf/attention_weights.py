"""The attention weights of a loaded Hugging Face model as a place to patch (site ``scores``).

A model switched to ``IMPLEMENTATION`` runs each attention module's own eager attention (the
``eager_attention_forward`` of its family's modeling file, with the eager mask), which returns
the weights ``A [B, H, queries, keys]``. When the module carries an edit (``edit_weights``), the
edit gets A and the real keys, and the module's output is recomputed as ``A' V`` (kv-heads repeated
to the query heads). ``returns_weights`` tells ``capture`` that such a model already gives its
patterns: it keeps the patch instead of switching to plain eager attention.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor, nn

from oversmooth.errors import UsageError
from oversmooth.hf.families import Layout
from oversmooth.hf.hooks import BatchMask

IMPLEMENTATION = "oversmooth_eager"
_EDIT = "_oversmooth_weights"


def returns_weights(implementation: str | None) -> bool:
    """Whether attention implemented by ``implementation`` returns its weights."""
    return implementation in ("eager", IMPLEMENTATION)


def _family_eager(module: nn.Module) -> Callable | None:
    return getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)


def _attention(
    module: nn.Module, query: Tensor, key: Tensor, value: Tensor, attention_mask, dropout: float = 0.0, **kwargs
):
    """The interface's call: the family's eager attention, its weights edited where an edit sits
    (before the attention dropout, which is applied after the edit, as eager applies it)."""
    eager = _family_eager(module)
    edit = module.__dict__.get(_EDIT)
    if edit is None:
        return eager(module, query, key, value, attention_mask, dropout=dropout, **kwargs)
    _, weights = eager(module, query, key, value, attention_mask, dropout=0.0, **kwargs)
    weights = edit(weights)
    dropped = F.dropout(weights, p=dropout, training=module.training)
    values = value.repeat_interleave(weights.shape[1] // value.shape[1], dim=1)
    return (dropped.to(values.dtype) @ values).transpose(1, 2).contiguous(), weights


def _register() -> None:
    """Our implementation in transformers' attention and mask registries (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(IMPLEMENTATION, _attention)
    AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)


def edit_weights(model: nn.Module, lay: Layout, batch: BatchMask, edit: Callable) -> Callable[[bool], None]:
    """Every attention call of ``model`` runs eager with ``edit(weights, valid)`` on its weights
    (``valid [B, keys]`` bool from ``batch``, None: every key real). Returns ``undo(keep)``;
    UsageError, with nothing changed, when a family has no eager attention to return weights."""
    attentions = list(dict.fromkeys(lay.module(layer, "attention") for layer in range(lay.depth)))
    callers = [m for attention in attentions for m in attention.modules()]  # the module that calls the interface
    if any(_family_eager(m) is None for m in attentions):
        raise UsageError(
            f"{lay.family.name}'s attention has no eager form (eager_attention_forward) that returns its "
            "weights; this patch edits the attention weights and cannot patch it"
        )
    previous = model.config._attn_implementation
    _register()
    model.set_attn_implementation(IMPLEMENTATION)
    if model.config._attn_implementation != IMPLEMENTATION:
        raise UsageError(f"{lay.family.name} cannot switch its attention implementation, which this patch needs")

    def edit_call(weights: Tensor) -> Tensor:
        valid = batch.mask
        if valid is not None and valid.shape[1] != weights.shape[-1]:
            raise UsageError(
                f"the attention reads {weights.shape[-1]} keys but the attention_mask has {valid.shape[1]} "
                "columns; pass a mask over the cached and the new tokens (no static or sliding cache)"
            )
        return edit(weights, valid)

    for module in callers:
        module.__dict__[_EDIT] = edit_call

    def undo(keep: bool) -> None:
        for module in callers:
            module.__dict__.pop(_EDIT, None)
        model.set_attn_implementation(previous)

    return undo
