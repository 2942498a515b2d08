"""NeuTRENO (Nguyen, Nguyen & Baraniuk, NeurIPS 2023): a fidelity term toward layer 1's values.

Per head, in every layer after the first: ``O = softmax(QK^T/sqrt(d_h)) V + lam (V1 - V)``,
added before the heads are merged and before the output projection. ``V1`` is the first
layer's value tensor, passed on undetached. No parameters, so pretrained weights load as they
are. Being per token, it keeps causal models causal.
"""

from __future__ import annotations

import torch
from torch import Tensor

from oversmooth.mitigations.base import LayerShape, Patcher, PatchTarget, SiteLayer
from oversmooth.mitigations.registry import NeutrenoKnobs


def neutreno(out: Tensor, v: Tensor, v_first: Tensor, lam: float) -> Tensor:
    """``out + lam * (v_first - v)``: the attention output ``out = A V`` with the fidelity term.

    ``out``, ``v``, ``v_first``: ``[batch, heads, tokens, d_head]`` (or heads merged, all alike).
    Two passes (a difference, then an add that scales it), and autograd keeps nothing for them.

    >>> import torch
    >>> neutreno(torch.ones(1, 1, 2, 1), torch.zeros(1, 1, 2, 1), torch.ones(1, 1, 2, 1), 0.5).flatten().tolist()
    [1.5, 1.5]
    """
    return torch.add(out, torch.sub(v_first, v), alpha=lam)


class NeutrenoLayer(SiteLayer):
    """The fidelity term on the per-head context, in every layer but the first."""

    def __init__(self, knobs: NeutrenoKnobs, shape: LayerShape):
        super().__init__()
        self.lam = knobs.lam

    def on_context(self, v_first: Tensor | None) -> bool:
        return v_first is not None

    def context(self, out: Tensor, v: Tensor, v_first: Tensor | None) -> Tensor:
        return out if v_first is None else neutreno(out, v, v_first, self.lam)


def patch_edit(knobs: NeutrenoKnobs, target: PatchTarget):
    """On the output projection's input, blocks after the first; V1 = block 0's values."""
    return lambda layer, z, v, v_first: z if v_first is None else neutreno(z, v, v_first, knobs.lam)


PATCHER = Patcher("context", patch_edit)
