"""Switch a loaded Hugging Face model's attention to a mitigation, in place, without fine-tuning.

``patch(model, "neutreno", lam=0.6)`` adds forward hooks on the model's own modules (see
``families``); ``unpatch(model)`` removes them and the model is exactly as before. Methods stack
as in training, ``patch(model, "neutreno+featscale", lam=0.4, s_hc=0.3)``: each hooked at its
site, methods at one site in the registry's order, the combinations the registry allows
(``patch_stack``). Each method's knobs and edit come from the registry
(``oversmooth.mitigations.registry``), the same code as our own layers; this module hooks the
edit at the method's site:

- ``context``: per head, on the output projection's input (``A V``), with the block's values and
  block 0's values (V1) of the same forward pass;
- ``output``: on the attention branch's output (``Family.attn_out``, before the residual add);
- ``stream``: on the stream after the attention residual add: post-LN, the input of the norm after
  the add; pre-LN, the attention branch becomes ``x_mid + delta - resid_pre``. Parallel blocks
  (GPT-NeoX, Phi) have no such stream and are refused;
- ``branches``: on the attention branch's output and the MLP branch's (``Family.mlp_out``);
- ``weights``: on the weight of every linear map in the blocks (a parametrisation, not a hook);
  ``unpatch(model, keep=True)`` leaves what it does in the plain weights, for saving.

Means run over the valid tokens of the call's ``attention_mask``; causal models use prefix means
(token t: the mean of the valid tokens s <= t). With a KV cache (``generate``) each call sees only
its new tokens, so the prefix sums are carried from call to call (``_Means``) and the patched
model decodes exactly as it would recomputing the whole sequence; beam search's reordering of
the cache reorders them too. AttnScale and FeatScale learn their scales from 0 in training;
patched into a pretrained model they take fixed values. Every method is the identity at 0.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from transformers.pytorch_utils import Conv1D

from oversmooth.errors import NonFiniteError, UsageError
from oversmooth.hf.capture import merge_heads, split_heads
from oversmooth.hf.discover import layout
from oversmooth.hf.families import Layout
from oversmooth.hf.hooks import BatchMask, HookSet, first_input
from oversmooth.mitigations.base import PatchTarget
from oversmooth.mitigations.knobs import Knobs
from oversmooth.mitigations.registry import METHODS as REGISTRY
from oversmooth.mitigations.registry import (
    assign_knobs,
    flat_knobs,
    make_knobs,
    patch_knobs,
    patch_stack,
    patchable,
)
from oversmooth.mitigations.token_mean import PrefixSums, prefix_mean, token_mean

#: the methods that can be patched into a pretrained model
PATCHABLE = patchable()
_ATTRIBUTE = "_oversmooth_patch"


@dataclass
class PatchState:
    """What a patch holds on the model: its method (``a+b`` for a stack), each method's knobs in
    the order they act, hooks and what it carries from call to call (token means, earlier stream
    rows)."""

    method: str
    knobs: dict[str, Knobs]
    entries: tuple[nn.Module, ...]  # the modules a forward pass enters by: the model, its base model
    hooks: HookSet = field(default_factory=HookSet)
    carried: list[_Means | _History] = field(default_factory=list)
    undo: list[Callable[[bool], None]] = field(default_factory=list)  # a weights edit's, per module

    def remove(self, keep: bool = False) -> None:
        """Hooks off and weight edits undone (``keep``: their effect left in the plain weights)."""
        self.hooks.remove()
        while self.undo:
            self.undo.pop()(keep)

    def means(self, lay: Layout) -> _Means:
        """Token means over the valid tokens of each call (causal: carried prefix means)."""
        means = _Means(lay, BatchMask(self.entries, self.hooks))
        self.carried.append(means)
        return means

    def reorder(self, rows: Tensor) -> None:
        """Follow beam search: what is carried, for batch rows ``rows``."""
        for carried in self.carried:
            carried.reorder(rows)


def patched_method(model: nn.Module) -> str | None:
    state = model.__dict__.get(_ATTRIBUTE)
    return None if state is None else state.method


#: method -> knob -> default (for a model that is not a causal LM: ``patch_knobs`` has both).
DEFAULT_KNOBS: dict[str, dict] = {m: patch_knobs(m, {}) for m in PATCHABLE}
ZERO_KNOBS: dict[str, dict] = {m: dict(REGISTRY[m].zero) for m in PATCHABLE}
#: ``analyze --sweep``: each knob's default grid, swept with the method's other knobs at 0.
SWEEP_GRIDS: dict[str, dict[str, tuple[float, ...]]] = {m: dict(REGISTRY[m].sweep) for m in PATCHABLE}


def patch(model: nn.Module, method: str, knobs: Mapping[str, Mapping] | None = None, **bare) -> nn.Module:
    """Patch ``model`` in place with ``method`` (one of ``PATCHABLE``, or several joined by ``+``)
    and its knobs, per method (``knobs={"neutreno": {"lam": 0.4}}``) or bare (``lam=0.4``; one
    that fits several methods of a stack is refused: ``registry.assign_knobs``); defaults and
    ranges: the registry, ``oversmooth analyze --help``. Returns the model. Call
    ``unpatch(model)`` before patching again.
    """
    if patched_method(model) is not None:
        raise UsageError(f"model is already patched with {patched_method(model)}; call unpatch(model) first")
    names = patch_stack(method)
    lay = layout(model)
    given = assign_knobs(names, bare, knobs)
    values = {n: make_knobs(n, given.get(n, {}), causal=lay.family.causal, scope="patch") for n in names}
    state = PatchState(method=method, knobs=values, entries=(model, lay.base))
    try:
        _install(lay, state)
    except BaseException:  # e.g. a knob of the wrong length: leave no half-installed hooks behind
        state.remove()
        raise
    model.__dict__[_ATTRIBUTE] = state
    if state.carried:
        model.__dict__["_reorder_cache"] = _reorder_cache(model, state)
    return model


@contextlib.contextmanager
def patched(model: nn.Module, method: str, knobs: Mapping[str, Mapping] | None = None, **bare) -> Iterator[nn.Module]:
    """``patch`` for the block, ``unpatch`` after it. States that overflow inside the block (NaN or
    Inf, ``NonFiniteError``) are blamed on the knobs, by name and value: call it on a model whose
    unpatched states were found finite."""
    given = assign_knobs(patch_stack(method), bare, knobs)
    patch(model, method, given)
    try:
        yield model
    except NonFiniteError as error:
        raise UsageError(
            f"with {method} {setting_text(flat_knobs(given)) or '(its defaults)'} patched in, {error.where} "
            "hold NaN or Inf (unpatched they are finite): the knobs overflow this model's states; "
            "bring them closer to their defaults"
        ) from None
    finally:
        unpatch(model)


def setting_text(knobs: dict) -> str:
    """``{"s_dc": -0.5, "s_hc": 0.5}`` -> ``'s_dc=-0.5,s_hc=0.5'`` (per-head / per-channel lists as lists).

    >>> setting_text({"lam": 0.6})
    'lam=0.6'
    """

    def text(value) -> str:
        values = value.tolist() if isinstance(value, Tensor) else value
        return f"[{' '.join(f'{v:g}' for v in values)}]" if isinstance(values, (list, tuple)) else f"{values:g}"

    return ",".join(f"{name}={text(value)}" for name, value in knobs.items())


def _reorder_cache(model: nn.Module, state: PatchState):
    """``generate``'s beam search calls ``model._reorder_cache(cache, rows)`` when it exists:
    reorder the carried means, then the cache as generate would have."""
    own = getattr(type(model), "_reorder_cache", None)

    def reorder(cache, rows: Tensor):
        state.reorder(rows)
        if own is not None:
            return own(model, cache, rows)
        cache.reorder_cache(rows)
        return cache

    return reorder


def unpatch(model: nn.Module, keep: bool = False) -> nn.Module:
    """Remove a patch (no-op on an unpatched model); returns the model. ``keep``: a weights patch
    (sigmaReparam) leaves its reparametrised weights as plain ones, so that a model adapted with
    it saves as a plain checkpoint that re-patching gives back exactly."""
    state = model.__dict__.pop(_ATTRIBUTE, None)
    if state is not None:
        state.remove(keep)
        model.__dict__.pop("_reorder_cache", None)
    return model


class _Values:
    """Per forward pass: block 0's values (V1) and the current block's values, ``[B, H, n, d_head]``."""

    def __init__(self, lay: Layout, hooks: HookSet):
        self.first: Tensor | None = None
        self.current: Tensor | None = None
        lay.hook(hooks, "value", self._keep(lay))

    def _keep(self, lay: Layout):
        def keep(layer, module, args, output):
            self.current = lay.values_from(output)
            if layer == 0:
                self.first = self.current

        return keep


class _Means:
    """The token means one site of a patch needs, per block: over the call's valid tokens, or for
    causal models prefix means whose sums carry over to the next call when a KV cache holds the
    earlier tokens. Computed in float32 at least."""

    def __init__(self, lay: Layout, batch: BatchMask):
        self.causal, self.batch = lay.family.causal, batch
        self.carried: dict[int, PrefixSums] = {}

    def __call__(self, layer: int, x: Tensor) -> Tensor:
        """``x: [B, ..., n, d]`` (this call's n tokens) -> its means, broadcastable to ``x``."""
        tokens = x.shape[-2]
        mask, work = self.batch.new_mask(tokens), x.float() if x.element_size() < 4 else x
        if not self.causal:
            return token_mean(work, mask).to(x.dtype)
        past = self.batch.past(tokens)
        carry = self.carried.get(layer) if past else None
        if past and (carry is None or carry.tokens != past):
            raise UsageError(
                f"the KV cache holds {past} tokens but the patch has seen "
                f"{0 if carry is None else carry.tokens} in block {layer}; patched models "
                "decode in order (greedy, sampling or beam search), not from a cache "
                "filled before patching or cropped"
            )
        mean, self.carried[layer] = prefix_mean(work, mask, carry)
        return mean.to(x.dtype)

    def reorder(self, rows: Tensor) -> None:
        self.carried = {layer: carry.reorder(rows.to(carry.total.device)) for layer, carry in self.carried.items()}


class _History:
    """Per block, the stream rows of the earlier calls (KV-cache decoding) and their validity;
    kept only for causal models (``keep``), the only ones that decode from a cache."""

    def __init__(self, batch: BatchMask, keep: bool):
        self.batch, self.keep = batch, keep
        self.carried: dict[int, tuple[Tensor, Tensor]] = {}

    def __call__(self, layer: int, x: Tensor) -> tuple[Tensor, Tensor]:
        tokens = x.shape[-2]
        mask = self.batch.new_mask(tokens)
        valid = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device) if mask is None else mask.bool()
        past = self.batch.past(tokens)
        if past:
            rows, seen = self.carried.get(layer, (x[:, :0], valid[:, :0]))
            if rows.shape[1] != past:
                raise UsageError(
                    f"the KV cache holds {past} tokens but the patch has seen {rows.shape[1]} in "
                    f"block {layer}; patched models decode in order, not from a cache filled "
                    "before patching or cropped"
                )
            x, valid = torch.cat([rows, x], dim=1), torch.cat([seen, valid], dim=1)
        if self.keep:
            self.carried[layer] = (x, valid)
        return x, valid

    def reorder(self, rows: Tensor) -> None:
        self.carried = {layer: (x[rows.to(x.device)], v[rows.to(v.device)]) for layer, (x, v) in self.carried.items()}


def supports(lay: Layout, name: str) -> str | None:
    """Why ``name`` cannot patch a model of this layout, or None when it can."""
    if REGISTRY[name].patcher.site == "stream" and lay.family.residual == "parallel":
        return (
            f"{name} edits the stream after the attention residual add, and {lay.family.name} adds "
            "attention and MLP to the block input in parallel: there is no such stream"
        )
    return None


def supported_methods(model: nn.Module) -> tuple[str, ...]:
    """The methods that can patch ``model``."""
    return tuple(name for name in PATCHABLE if supports(layout(model), name) is None)


def _install(lay: Layout, state: PatchState) -> None:
    """Each method's edit, hooked at its site in every block, in the order the methods act: hooks
    on one module run in the order they were added."""
    refused = next(filter(None, (supports(lay, name) for name in state.knobs)), None)
    if refused:
        raise UsageError(refused)
    for name, knobs in state.knobs.items():
        _install_method(lay, state, REGISTRY[name].patcher, knobs)


def _install_method(lay: Layout, state: PatchState, patcher, knobs: Knobs) -> None:
    """One method's edit, hooked at its site in every block."""
    hooks = state.hooks
    history = _History(BatchMask(state.entries, hooks), keep=lay.family.causal)
    state.carried.append(history)
    target = PatchTarget(lay.heads, lay.hidden, lay.family.causal, state.means(lay), history)
    edit = patcher.build(knobs, target)
    if patcher.site == "context":
        values = _Values(lay, hooks)
        lay.hook(
            hooks,
            "out_proj",
            lambda layer, module, args: (
                merge_heads(
                    edit(layer, split_heads(args[0], lay.heads), values.current, values.first if layer else None)
                ),
                *args[1:],
            ),
            before=True,
        )
    elif patcher.site == "output":
        lay.hook(hooks, "attn_out", lambda layer, module, args, out: edit(layer, out))
    elif patcher.site == "branches":
        lay.hook(hooks, "attn_out", lambda layer, module, args, out: edit(layer, 0, out))
        lay.hook(hooks, "mlp_out", lambda layer, module, args, out: edit(layer, 1, out))
    elif patcher.site == "weights":
        for block in dict.fromkeys(lay.blocks):  # a shared block (ALBERT) once
            for module in block.modules():
                if isinstance(module, (nn.Linear, Conv1D)):
                    state.undo.append(edit(module))
    else:
        _on_stream(lay, hooks, edit)


def _on_stream(lay: Layout, hooks: HookSet, edit) -> None:
    """``x_mid <- x_mid + edit(layer, x_mid)`` on the stream after the attention residual add.
    Post-LN: on the input of the norm that follows the add; pre-LN: on the attention branch, so
    that ``resid_pre + attn_out' = x_mid + delta`` with ``x_mid = resid_pre + attn_out``."""
    inputs: dict[int, Tensor] = {}

    def keep_input(layer, module, args, kwargs):
        inputs[layer] = first_input(args, kwargs)

    lay.hook(hooks, "block", keep_input, before=True, with_kwargs=True)
    if lay.family.residual == "post":

        def on_norm_input(layer, module, args):
            x = args[0].view(inputs.pop(layer).shape)  # OPT's norms see the stream as [B * n, d]
            return ((x + edit(layer, x)).view_as(args[0]), *args[1:])

        lay.hook(hooks, "mid_norm", on_norm_input, before=True)
    else:
        lay.hook(hooks, "attn_out", lambda layer, module, args, out: out + edit(layer, inputs.pop(layer) + out))
