"""Switch a loaded Hugging Face model's attention to a mitigation, in place, without fine-tuning.

``patch(model, "neutreno", lam=0.6)`` adds forward hooks on the model's own modules (see
``families``); ``unpatch(model)`` removes them and the model is exactly as before. The maths is
``oversmooth.mitigations``, the same code as our own layers. Where each method acts:

- ``neutreno`` (lam): per head, ``A V + lam (V1 - V)`` on the output projection's input, every
  block but the first; V1 = block 0's values of the same forward pass.
- ``attnscale`` (omega, per head or one value): ``A V + omega (A V - mean V)`` on the same input.
- ``deescalate`` (tau): ``attn_out - tau * mean(attn_out)`` on the attention branch's output
  (``Family.attn_out``, before the residual add).
- ``featscale`` (s_dc, s_hc, per channel or one value): ``Z + s_dc DC + s_hc HC`` on that output.

Means run over the valid tokens of the call's ``attention_mask``; causal models use prefix means
(token t: the mean of the valid tokens s <= t). With a KV cache (``generate``) each call sees only
its new tokens, so the prefix sums are carried from call to call (``_Means``) and the patched
model decodes exactly as it would recomputing the whole sequence; beam search's reordering of
the cache reorders them too. AttnScale and FeatScale learn their scales from 0 in training;
patched into a pretrained model they take fixed values. Every method is the identity at 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from oversmooth.errors import UsageError
from oversmooth.hf.capture import merge_heads, split_heads
from oversmooth.hf.families import Layout, layout
from oversmooth.hf.hooks import BatchMask, HookSet
from oversmooth.mitigations import (PrefixSums, attnscale, check_lambda, deescalate, featscale, neutreno,
                                   prefix_mean, token_mean)

DEFAULT_KNOBS: dict[str, dict[str, float]] = {
    "neutreno": {"lam": 0.6},
    "deescalate": {"tau": 0.5},
    "attnscale": {"omega": 0.5},
    "featscale": {"s_dc": -0.5, "s_hc": 0.5},
}
METHODS = tuple(DEFAULT_KNOBS)
ZERO_KNOBS: dict[str, dict[str, float]] = {m: {k: 0.0 for k in knobs} for m, knobs in DEFAULT_KNOBS.items()}
# ``analyze --sweep``: each knob's default grid, swept with the method's other knobs at 0.
SWEEP_GRIDS: dict[str, dict[str, tuple[float, ...]]] = {
    "neutreno": {"lam": (0.05, 0.1, 0.2, 0.4, 0.6, 1.0)},
    "deescalate": {"tau": (0.05, 0.1, 0.2, 0.5, 1.0)},
    "attnscale": {"omega": (0.05, 0.1, 0.2, 0.5, 1.0)},
    # FeatScale's s_dc alone is de-escalation with tau = -s_dc, so its grid sweeps s_hc.
    "featscale": {"s_hc": (0.05, 0.1, 0.2, 0.5, 1.0)},
}
_ATTRIBUTE = "_oversmooth_patch"


@dataclass
class PatchState:
    """What a patch holds on the model: its method, knobs, hooks and the token means it carries."""

    method: str
    knobs: dict[str, float | Tensor]
    entries: tuple[nn.Module, ...]  # the modules a forward pass enters by: the model, its base model
    hooks: HookSet = field(default_factory=HookSet)
    carried: list["_Means"] = field(default_factory=list)

    def means(self, lay: Layout) -> "_Means":
        """Token means over the valid tokens of each call (causal: carried prefix means)."""
        means = _Means(lay, BatchMask(self.entries, self.hooks))
        self.carried.append(means)
        return means

    def reorder(self, rows: Tensor) -> None:
        """Follow beam search: the carried means of batch rows ``rows``."""
        for means in self.carried:
            means.reorder(rows)


def patched_method(model: nn.Module) -> str | None:
    state = model.__dict__.get(_ATTRIBUTE)
    return None if state is None else state.method


def check_method(method: str) -> str:
    if method not in DEFAULT_KNOBS:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    return method


def resolve_knobs(method: str, knobs: dict) -> dict:
    """The method's defaults overridden by ``knobs``; UsageError on a knob the method lacks."""
    defaults = DEFAULT_KNOBS[check_method(method)]
    extra = sorted(set(knobs) - set(defaults))
    if extra:
        raise UsageError(f"{method} takes {', '.join(defaults)}, not {', '.join(extra)}")
    resolved = {**defaults, **knobs}
    if method == "neutreno":
        check_lambda(resolved["lam"])
    if method == "deescalate" and not 0.0 <= resolved["tau"] <= 1.0:
        raise UsageError(f"de-escalation tau must lie in [0, 1], got {resolved['tau']}")
    return resolved


def _vector(value, size: int, name: str) -> Tensor:
    """A scalar or length-``size`` sequence as a float tensor ``[size]``."""
    tensor = torch.as_tensor(value, dtype=torch.float32)
    if tensor.dim() == 0:
        return tensor.expand(size).clone()
    if tensor.shape != (size,):
        raise UsageError(f"{name} must be one number or {size} numbers, got shape {tuple(tensor.shape)}")
    return tensor


def patch(model: nn.Module, method: str, **knobs) -> nn.Module:
    """Patch ``model`` in place with ``method`` (neutreno, deescalate, attnscale, featscale).

    Knobs (defaults in ``DEFAULT_KNOBS``): neutreno ``lam``; deescalate ``tau``; attnscale
    ``omega`` (number or one per head); featscale ``s_dc``, ``s_hc`` (number or one per channel).
    Returns the model. Call ``unpatch(model)`` before patching again.
    """
    if patched_method(model) is not None:
        raise UsageError(f"model is already patched with {patched_method(model)}; call unpatch(model) first")
    knobs = resolve_knobs(method, knobs)
    lay = layout(model)
    state = PatchState(method=method, knobs=knobs, entries=(model, lay.base))
    try:
        _INSTALL[method](lay, state)
    except BaseException:  # e.g. a knob of the wrong length: leave no half-installed hooks behind
        state.hooks.remove()
        raise
    model.__dict__[_ATTRIBUTE] = state
    if state.carried:
        model.__dict__["_reorder_cache"] = _reorder_cache(model, state)
    return model


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


def unpatch(model: nn.Module) -> nn.Module:
    """Remove a patch (no-op on an unpatched model); returns the model."""
    state = model.__dict__.pop(_ATTRIBUTE, None)
    if state is not None:
        state.hooks.remove()
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
            raise UsageError(f"the KV cache holds {past} tokens but the patch has seen "
                             f"{0 if carry is None else carry.tokens} in block {layer}; patched models "
                             "decode in order (greedy, sampling or beam search), not from a cache "
                             "filled before patching or cropped")
        mean, self.carried[layer] = prefix_mean(work, mask, carry)
        return mean.to(x.dtype)

    def reorder(self, rows: Tensor) -> None:
        self.carried = {layer: carry.reorder(rows.to(carry.total.device)) for layer, carry in self.carried.items()}


def _on_context(lay: Layout, hooks: HookSet, first_layer: int, edit) -> None:
    """Replace the output projection's input by ``merge(edit(layer, split(z)))`` in blocks >= first_layer."""
    def hook(layer, module, args):
        if layer >= first_layer:
            return (merge_heads(edit(layer, split_heads(args[0], lay.heads))), *args[1:])
    lay.hook(hooks, "out_proj", hook, before=True)


def _on_attn_out(lay: Layout, hooks: HookSet, edit) -> None:
    lay.hook(hooks, "attn_out", lambda layer, module, args, out: edit(layer, out))


def _install_neutreno(lay: Layout, state: PatchState) -> None:
    values = _Values(lay, state.hooks)
    lam = state.knobs["lam"]
    _on_context(lay, state.hooks, 1, lambda layer, z: neutreno(z, values.current, values.first, lam))


def _install_attnscale(lay: Layout, state: PatchState) -> None:
    means = state.means(lay)
    values = _Values(lay, state.hooks)
    omega = _vector(state.knobs["omega"], lay.heads, "omega")
    _on_context(lay, state.hooks, 0, lambda layer, z: attnscale(
        z, values.current, omega.to(z.device), mean=means(layer, values.current)))


def _install_deescalate(lay: Layout, state: PatchState) -> None:
    means, tau = state.means(lay), state.knobs["tau"]
    _on_attn_out(lay, state.hooks, lambda layer, out: deescalate(out, tau, mean=means(layer, out)))


def _install_featscale(lay: Layout, state: PatchState) -> None:
    means = state.means(lay)
    s_dc = _vector(state.knobs["s_dc"], lay.hidden, "s_dc")
    s_hc = _vector(state.knobs["s_hc"], lay.hidden, "s_hc")
    _on_attn_out(lay, state.hooks, lambda layer, out: featscale(
        out, s_dc.to(out.device), s_hc.to(out.device), mean=means(layer, out)))


_INSTALL = {
    "neutreno": _install_neutreno,
    "deescalate": _install_deescalate,
    "attnscale": _install_attnscale,
    "featscale": _install_featscale,
}
