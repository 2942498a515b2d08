"""Capture hook points of a Hugging Face model in one forward pass, TransformerLens names, into
the toolkit's one ``oversmooth.activations.ActivationCache`` (its docstring has the hook names and
the layer numbering of per-layer measures: stream index 0 = embeddings, i = after block i).

For block ``l`` (0-based, in call order: a shared block, as in ALBERT, counts once per use):

- ``blocks.{l}.hook_resid_pre``  ``[B, n, d]`` block input.
- ``blocks.{l}.hook_attn_out``   ``[B, n, d]`` attention branch output as it is added to the
  stream (``Family.attn_out``: after the output projection, and after Gemma2/3's post-attention
  norm or DINOv2's layer scale), before the residual add.
- ``blocks.{l}.hook_resid_mid``  ``[B, n, d]`` ``resid_pre + attn_out``: the input of the norm
  that reads it (post-LN: the sum *before* that norm). Parallel blocks (GPT-NeoX, Phi) never
  form this sum, both branches read the block input: it is computed, the stream with the
  attention branch alone.
- ``blocks.{l}.hook_resid_post`` ``[B, n, d]`` block output. The last block's output is always
  *before* the model's final norm, where it has one (``Family.final_norm``).
- ``blocks.{l}.attn.hook_v``     ``[B, H, n, d_head]`` values after the value projection, kv-heads
  repeated to the query heads as the layer does (GQA / MQA).
- ``blocks.{l}.attn.hook_z``     ``[B, H, n, d_head]`` per-head attention context ``A V`` (the output
  projection's input, where NeuTRENO and AttnScale act).
- ``blocks.{l}.attn.hook_pattern`` ``[B, H, n, n]`` attention weights (only with ``pattern=True``;
  the model is switched to eager attention for that call, unless a patch of the weights already
  runs it so: then the patterns are the edited weights).

Norm hook points (``NORM_HOOKS``), captured only on request:

- ``blocks.{l}.hook_mid_norm_out`` ``[B, n, d]`` output of the norm that reads ``resid_mid``
  (``Family.mid_norm``; parallel blocks have none). Post-LN: the normalised stream the MLP reads
  and adds to; pre-LN: the MLP's input inside its branch (the stream itself stays ``resid_mid``).
- ``blocks.{l}.hook_out_norm_in`` ``[B, n, d]`` post-LN only: the stream after the MLP residual
  add (``mid_norm_out + mlp_out``), the input of the norm (``Family.out_norm``) whose output is
  ``resid_post``.
- ``hook_final_norm_out`` ``[B, n, d]`` one per model, families with a final norm only: the final
  norm applied to the last block's ``resid_post``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
from torch import Tensor

from oversmooth.activations import ActivationCache, hook_name
from oversmooth.errors import UsageError
from oversmooth.hf.attention_weights import returns_weights
from oversmooth.hf.discover import layout
from oversmooth.hf.families import Layout
from oversmooth.hf.hooks import HookSet, first_input, first_output
from oversmooth.hf.model_inputs import check_model_inputs

HOOKS = ("resid_pre", "attn_out", "resid_mid", "resid_post", "v", "z")  # the default
NORM_HOOKS = ("mid_norm_out", "out_norm_in", "final_norm_out")
_NEEDS = {
    "mid_norm_out": ("mid_norm", "norm reading the stream after the attention add (parallel blocks)"),
    "out_norm_in": ("out_norm", "norm after the MLP residual add (post-LN only)"),
    "final_norm_out": ("final_norm", "final norm"),
}  # hook -> the Family field it needs


def split_heads(merged: Tensor, heads: int) -> Tensor:
    """``[B, n, H * d_head]`` -> ``[B, H, n, d_head]``."""
    b, n, _ = merged.shape
    return merged.reshape(b, n, heads, -1).transpose(1, 2)


def merge_heads(per_head: Tensor) -> Tensor:
    """``[B, H, n, d_head]`` -> ``[B, n, H * d_head]``."""
    b, h, n, dh = per_head.shape
    return per_head.transpose(1, 2).reshape(b, n, h * dh)


Sink = Callable[[str, Tensor], None]


def _register(lay: Layout, hooks: HookSet, wanted: Sequence[str], emit: Sink, shapes: dict[int, torch.Size]) -> None:
    """Hooks that pass each wanted tensor to ``emit(name, tensor)`` as the forward makes it;
    ``shapes`` gets each block's input shape."""
    derived = "resid_mid" in wanted and lay.family.residual == "parallel"  # no module reads it
    inputs: dict[int, Tensor] = {}  # parallel blocks: resid_pre until the attention branch is added

    def put(hook, transform):
        return lambda layer, module, args, *rest: emit(hook_name(layer, hook), transform(layer, args, *rest))

    def stream(layer, tensor):  # OPT's norms see the stream as [B * n, d]
        return tensor.view(shapes[layer])

    def block_input(layer, module, args, kwargs):
        shapes[layer] = first_input(args, kwargs).shape
        if derived:
            inputs[layer] = first_input(args, kwargs)
        if "resid_pre" in wanted:
            emit(hook_name(layer, "resid_pre"), first_input(args, kwargs))

    def branch_output(layer, module, args, out):
        if derived:
            emit(hook_name(layer, "resid_mid"), inputs.pop(layer) + out)
        if "attn_out" in wanted:
            emit(hook_name(layer, "attn_out"), out)

    lay.hook(hooks, "block", block_input, before=True, with_kwargs=True)
    if "resid_post" in wanted:
        lay.hook(hooks, "block", put("resid_post", lambda layer, args, out: first_output(out)))
    if "resid_mid" in wanted and not derived:
        lay.hook(hooks, "mid_norm", put("resid_mid", lambda layer, args: stream(layer, args[0])), before=True)
    if "attn_out" in wanted or derived:
        lay.hook(hooks, "attn_out", branch_output)
    if "z" in wanted:
        lay.hook(hooks, "out_proj", put("z", lambda layer, args: split_heads(args[0], lay.heads)), before=True)
    if "v" in wanted:
        lay.hook(hooks, "value", put("v", lambda layer, args, out: lay.values_from(out)))
    if "pattern" in wanted:
        index = lay.family.pattern_index
        lay.hook(hooks, "attention", put("pattern", lambda layer, args, out: out[index]))
    if "mid_norm_out" in wanted:
        lay.hook(hooks, "mid_norm", put("mid_norm_out", lambda layer, args, out: stream(layer, out)))
    if "out_norm_in" in wanted:
        lay.hook(hooks, "out_norm", put("out_norm_in", lambda layer, args: stream(layer, args[0])), before=True)
    if "final_norm_out" in wanted:
        last = lay.depth - 1
        hooks.after(lay.final_norm, lambda module, args, out: emit("hook_final_norm_out", stream(last, out)))


@torch.no_grad()
def capture(
    model, inputs: Mapping[str, Tensor], hooks: Sequence[str] = HOOKS, pattern: bool = False, sink: Sink | None = None
) -> tuple[object, ActivationCache]:
    """Run ``model(**inputs)`` once and return ``(outputs, cache)`` of the requested hook points.

    ``hooks`` are short names from ``HOOKS`` and ``NORM_HOOKS``. ``inputs`` is what the tokenizer /
    image processor returns (``attention_mask`` is used as the valid-token mask when present).
    With ``sink``, each tensor goes to ``sink(name, tensor)`` the moment the forward makes it and
    is not kept (the cache's tensors stay empty): memory stays that of a bare forward.
    Hooks are removed afterwards, also on error.
    """
    check_model_inputs(inputs)
    unknown = sorted(set(hooks) - set(HOOKS) - set(NORM_HOOKS))
    if unknown:
        raise UsageError(f"unknown hook point(s) {unknown}; choose from {', '.join(HOOKS + NORM_HOOKS)}")
    lay = layout(model)
    for hook, (role, what) in _NEEDS.items():
        if hook in hooks and getattr(lay.family, role) is None:
            raise UsageError(f"hook point {hook}: {lay.family.name} models have no {what}")
    if "out_norm_in" in hooks and any(getattr(block, "chunk_size_feed_forward", 0) for block in lay.blocks):
        raise UsageError(
            "hook point out_norm_in needs the feed-forward in one piece (BERT and RoBERTa "
            "normalise each chunk); load the model with chunk_size_feed_forward=0"
        )
    wanted = (*hooks, "pattern") if pattern else tuple(hooks)
    store: dict[str, Tensor] = {}
    shapes: dict[int, torch.Size] = {}
    handles = HookSet()
    previous = model.config._attn_implementation
    try:
        if pattern and not returns_weights(previous):
            model.set_attn_implementation("eager")
        _register(lay, handles, wanted, sink or store.__setitem__, shapes)
        outputs = model(**inputs)
    finally:
        handles.remove()
        if model.config._attn_implementation != previous:
            model.set_attn_implementation(previous)
    mask = inputs.get("attention_mask")
    if mask is None:
        batch, tokens = shapes[0][:2]
        mask = torch.ones(batch, tokens, dtype=torch.bool, device=next(iter(inputs.values())).device)
    return outputs, ActivationCache(store, depth=lay.depth, mask=mask.to(torch.bool))
