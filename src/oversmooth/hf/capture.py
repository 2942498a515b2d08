"""Capture hook points of a Hugging Face model in one forward pass, TransformerLens names.

For block ``l``:

- ``blocks.{l}.hook_resid_pre``  ``[B, n, d]`` block input.
- ``blocks.{l}.hook_attn_out``   ``[B, n, d]`` attention sub-layer output (after the output
  projection, before the residual add).
- ``blocks.{l}.hook_resid_mid``  ``[B, n, d]`` stream after the attention residual add
  (``resid_pre + attn_out``); in post-LN families (BERT, RoBERTa, DistilBERT) this is the sum
  *before* the LayerNorm that follows it.
- ``blocks.{l}.hook_resid_post`` ``[B, n, d]`` block output. The last block's output is always
  *before* the model's final norm (GPT-2, ViT, DeiT, Llama have one; the BERT family has none).
- ``blocks.{l}.attn.hook_v``     ``[B, H, n, d_head]`` values after the value projection, kv-heads
  repeated to the query heads as the layer does (Llama GQA).
- ``blocks.{l}.attn.hook_z``     ``[B, H, n, d_head]`` per-head attention context ``A V`` (the output
  projection's input, where NeuTRENO and AttnScale act).
- ``blocks.{l}.attn.hook_pattern`` ``[B, H, n, n]`` attention weights (only with ``pattern=True``;
  the model is switched to eager attention for that call).

Norm hook points (``NORM_HOOKS``), captured only on request:

- ``blocks.{l}.hook_mid_norm_out`` ``[B, n, d]`` output of the norm that reads ``resid_mid``
  (``Family.mid_norm``). Post-LN: the normalised stream the MLP reads and adds to; pre-LN: the
  MLP's input inside its branch (the stream itself stays ``resid_mid``).
- ``blocks.{l}.hook_out_norm_in`` ``[B, n, d]`` post-LN only: the stream after the MLP residual
  add (``mid_norm_out + mlp_out``), the input of the norm (``Family.out_norm``) whose output is
  ``resid_post``.
- ``hook_final_norm_out`` ``[B, n, d]`` one per model, families with a final norm only: the final
  norm applied to the last block's ``resid_post``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import torch
from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.hf.families import Layout, layout
from oversmooth.hf.hooks import HookSet, first_input, first_output

HOOKS = ("resid_pre", "attn_out", "resid_mid", "resid_post", "v", "z")  # the default
NORM_HOOKS = ("mid_norm_out", "out_norm_in", "final_norm_out")
_NEEDS = {"out_norm_in": ("out_norm", "norm after the MLP residual add (post-LN only)"),
          "final_norm_out": ("final_norm", "final norm")}  # hook -> the Family field it needs
_ATTN_HOOKS = ("v", "z", "pattern")


def hook_name(layer: int, hook: str) -> str:
    """``blocks.3.hook_resid_post`` or ``blocks.3.attn.hook_v`` (the one model-level hook point is
    stored as ``hook_final_norm_out``)."""
    return f"blocks.{layer}.attn.hook_{hook}" if hook in _ATTN_HOOKS else f"blocks.{layer}.hook_{hook}"


@dataclass
class ActivationCache:
    """Captured tensors by hook name, the batch's valid-token mask ``[B, n]`` and layout facts."""

    tensors: dict[str, Tensor]
    mask: Tensor
    layers: int
    hidden_states_last: str  # what the model's own output_hidden_states[-1] is

    def __getitem__(self, name: str) -> Tensor:
        return self.tensors[name]

    def stack(self, hook: str) -> list[Tensor]:
        """One tensor per block for ``hook`` (e.g. ``"resid_post"``)."""
        return [self.tensors[hook_name(layer, hook)] for layer in range(self.layers)]

    def stream(self) -> list[Tensor]:
        """``[resid_pre of block 0] + resid_post of every block``: L+1 states, last before final norm."""
        return [self.tensors[hook_name(0, "resid_pre")], *self.stack("resid_post")]


def split_heads(merged: Tensor, heads: int) -> Tensor:
    """``[B, n, H * d_head]`` -> ``[B, H, n, d_head]``."""
    b, n, _ = merged.shape
    return merged.reshape(b, n, heads, -1).transpose(1, 2)


def merge_heads(per_head: Tensor) -> Tensor:
    """``[B, H, n, d_head]`` -> ``[B, n, H * d_head]``."""
    b, h, n, dh = per_head.shape
    return per_head.transpose(1, 2).reshape(b, n, h * dh)


def _register(lay: Layout, hooks: HookSet, wanted: Sequence[str], store: dict[str, Tensor]) -> None:
    for layer, block in enumerate(lay.blocks):
        def put(hook, transform, layer=layer):
            return lambda module, args, *rest: store.__setitem__(hook_name(layer, hook), transform(args, *rest))

        if "resid_pre" in wanted:
            hooks.before(block, put("resid_pre", lambda args, kwargs: first_input(args, kwargs)),
                         with_kwargs=True)
        if "resid_post" in wanted:
            hooks.after(block, put("resid_post", lambda args, out: first_output(out)))
        if "resid_mid" in wanted:
            hooks.before(lay.module(layer, "mid_norm"), put("resid_mid", lambda args: args[0]))
        if "attn_out" in wanted:
            hooks.after(lay.module(layer, "out_proj"), put("attn_out", lambda args, out: out))
        if "z" in wanted:
            hooks.before(lay.module(layer, "out_proj"), put("z", lambda args: split_heads(args[0], lay.heads)))
        if "v" in wanted:
            hooks.after(lay.module(layer, "value"), put("v", lambda args, out: lay.values_from(out)))
        if "pattern" in wanted:
            hooks.after(lay.module(layer, "attention"), put("pattern", lambda args, out: out[1]))
        if "mid_norm_out" in wanted:
            hooks.after(lay.module(layer, "mid_norm"), put("mid_norm_out", lambda args, out: out))
        if "out_norm_in" in wanted:
            hooks.before(lay.module(layer, "out_norm"), put("out_norm_in", lambda args: args[0]))
    if "final_norm_out" in wanted:
        hooks.after(lay.final_norm, lambda module, args, out: store.__setitem__("hook_final_norm_out", out))


@torch.no_grad()
def capture(model, inputs: Mapping[str, Tensor], hooks: Sequence[str] = HOOKS,
            pattern: bool = False) -> tuple[object, ActivationCache]:
    """Run ``model(**inputs)`` once and return ``(outputs, cache)`` of the requested hook points.

    ``hooks`` are short names from ``HOOKS`` and ``NORM_HOOKS``. ``inputs`` is what the tokenizer /
    image processor returns (``attention_mask`` is used as the valid-token mask when present).
    Hooks are removed afterwards, also on error.
    """
    unknown = sorted(set(hooks) - set(HOOKS) - set(NORM_HOOKS))
    if unknown:
        raise UsageError(f"unknown hook point(s) {unknown}; choose from {', '.join(HOOKS + NORM_HOOKS)}")
    lay = layout(model)
    for hook, (role, what) in _NEEDS.items():
        if hook in hooks and getattr(lay.family, role) is None:
            raise UsageError(f"hook point {hook}: {lay.family.name} models have no {what}")
    if "out_norm_in" in hooks and any(getattr(block, "chunk_size_feed_forward", 0) for block in lay.blocks):
        raise UsageError("hook point out_norm_in needs the feed-forward in one piece (BERT and RoBERTa "
                         "normalise each chunk); load the model with chunk_size_feed_forward=0")
    wanted = (*hooks, "pattern") if pattern else tuple(hooks)
    store: dict[str, Tensor] = {}
    handles = HookSet()
    previous = model.config._attn_implementation
    try:
        if pattern and previous != "eager":
            model.set_attn_implementation("eager")
        _register(lay, handles, wanted, store)
        outputs = model(**inputs)
    finally:
        handles.remove()
        if model.config._attn_implementation != previous:
            model.set_attn_implementation(previous)
    first = next(iter(store.values()))
    mask = inputs.get("attention_mask")
    if mask is None:
        batch, tokens = first.shape[0], first.shape[-2]
        mask = torch.ones(batch, tokens, dtype=torch.bool, device=first.device)
    return outputs, ActivationCache(tensors=store, mask=mask.to(torch.bool), layers=len(lay.blocks),
                                    hidden_states_last=lay.family.hidden_states_last)
