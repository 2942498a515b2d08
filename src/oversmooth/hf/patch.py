"""Switch a loaded Hugging Face model's attention to a mitigation, in place, without fine-tuning.

``patch(model, "neutreno", lam=0.6)`` adds forward hooks on the model's own modules (see
``families``); ``unpatch(model)`` removes them and the model is exactly as before. The maths is
``oversmooth.mitigations``, the same code as our own layers. Where each method acts:

- ``neutreno`` (lam): per head, ``A V + lam (V1 - V)`` on the output projection's input, every
  block but the first; V1 = block 0's values of the same forward pass.
- ``attnscale`` (omega, per head or one value): ``A V + omega (A V - mean V)`` on the same input.
- ``deescalate`` (tau): ``attn_out - tau * mean(attn_out)`` on the output projection's output.
- ``featscale`` (s_dc, s_hc, per channel or one value): ``Z + s_dc DC + s_hc HC`` on that output.

Means run over the valid tokens of the call's ``attention_mask``; GPT-2 and Llama use prefix
means (causal). AttnScale and FeatScale learn their scales from 0 in training; patched into a
pretrained model they take fixed values. Every method is the identity at 0.
Patched models are meant for full-sequence forward passes; incremental decoding with a KV cache
is not supported (means would cover only the new tokens).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from oversmooth.errors import UsageError
from oversmooth.hf.capture import merge_heads, split_heads
from oversmooth.hf.families import Layout, layout
from oversmooth.hf.hooks import BatchMask, HookSet
from oversmooth.mitigations import attnscale, check_lambda, deescalate, featscale, neutreno

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
    """What a patch holds on the model: its method, knobs and hooks."""

    method: str
    knobs: dict[str, float | Tensor]
    hooks: HookSet = field(default_factory=HookSet)


def patched_method(model: nn.Module) -> str | None:
    state = getattr(model, _ATTRIBUTE, None)
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
    state = PatchState(method=method, knobs=knobs)
    try:
        _INSTALL[method](lay, state)
    except BaseException:  # e.g. a knob of the wrong length: leave no half-installed hooks behind
        state.hooks.remove()
        raise
    setattr(model, _ATTRIBUTE, state)
    return model


def unpatch(model: nn.Module) -> nn.Module:
    """Remove a patch (no-op on an unpatched model); returns the model."""
    state = getattr(model, _ATTRIBUTE, None)
    if state is not None:
        state.hooks.remove()
        delattr(model, _ATTRIBUTE)
    return model


class _Values:
    """Per forward pass: block 0's values (V1) and the current block's values, ``[B, H, n, d_head]``."""

    def __init__(self, lay: Layout, hooks: HookSet):
        self.first: Tensor | None = None
        self.current: Tensor | None = None
        for layer in range(len(lay.blocks)):
            hooks.after(lay.module(layer, "value"), self._keeper(lay, layer))

    def _keeper(self, lay: Layout, layer: int):
        def keep(module, args, output):
            self.current = lay.values_from(output)
            if layer == 0:
                self.first = self.current
        return keep


def _on_context(lay: Layout, hooks: HookSet, first_layer: int, edit) -> None:
    """Replace the output projection's input by ``merge(edit(split(z)))`` in blocks >= first_layer."""
    for layer in range(first_layer, len(lay.blocks)):
        def hook(module, args):
            return (merge_heads(edit(split_heads(args[0], lay.heads))), *args[1:])
        hooks.before(lay.module(layer, "out_proj"), hook)


def _on_attn_out(lay: Layout, hooks: HookSet, edit) -> None:
    for layer in range(len(lay.blocks)):
        hooks.after(lay.module(layer, "out_proj"), lambda module, args, out: edit(out))


def _install_neutreno(lay: Layout, state: PatchState) -> None:
    values = _Values(lay, state.hooks)
    lam = state.knobs["lam"]
    _on_context(lay, state.hooks, 1, lambda z: neutreno(z, values.current, values.first, lam))


def _install_attnscale(lay: Layout, state: PatchState) -> None:
    batch = BatchMask(lay.base, state.hooks)
    values = _Values(lay, state.hooks)
    omega = _vector(state.knobs["omega"], lay.heads, "omega")
    causal = lay.family.causal
    _on_context(lay, state.hooks, 0, lambda z: attnscale(z, values.current, omega.to(z.device), batch.mask, causal))


def _install_deescalate(lay: Layout, state: PatchState) -> None:
    batch = BatchMask(lay.base, state.hooks)
    tau, causal = state.knobs["tau"], lay.family.causal
    _on_attn_out(lay, state.hooks, lambda out: deescalate(out, tau, batch.mask, causal))


def _install_featscale(lay: Layout, state: PatchState) -> None:
    batch = BatchMask(lay.base, state.hooks)
    s_dc = _vector(state.knobs["s_dc"], lay.hidden, "s_dc")
    s_hc = _vector(state.knobs["s_hc"], lay.hidden, "s_hc")
    causal = lay.family.causal
    _on_attn_out(lay, state.hooks,
                 lambda out: featscale(out, s_dc.to(out.device), s_hc.to(out.device), batch.mask, causal))


_INSTALL = {
    "neutreno": _install_neutreno,
    "deescalate": _install_deescalate,
    "attnscale": _install_attnscale,
    "featscale": _install_featscale,
}
