"""NeuTRENO (Nguyen, Nguyen & Baraniuk, NeurIPS 2023): a fidelity term toward layer 1's values.

Per head, in every layer after the first: ``O = softmax(QK^T/sqrt(d_h)) V + lam (V1 - V)``,
added before the heads are merged and before the output projection. ``V1`` is the first
layer's value tensor, passed on undetached. No parameters, so pretrained weights load as they
are. Being per token, it keeps causal models causal.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from oversmooth.mitigations.base import Method, Knobs, LayerShape, Patcher, PatchTarget, SiteLayer, knob


@dataclass(frozen=True)
class NeutrenoKnobs(Knobs):
    method = "neutreno"
    lam: float = knob(0.6, "NeuTRENO lambda, the fidelity weight (paper: 0.6 DeiT, 0.4 WikiText-103 LM)",
                      low=0.0, flag="lam", causal=0.4, label="NeuTRENO lambda")


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


METHOD = Method("neutreno", "NeuTRENO (Nguyen, Nguyen & Baraniuk, NeurIPS 2023)",
                "O_h = A_h V_h + lam (V1_h - V_h) in layers after the first",
                NeutrenoKnobs, "context", NeutrenoLayer, "neutreno", patcher=PATCHER,
                zero={"lam": 0.0}, sweep={"lam": (0.05, 0.1, 0.2, 0.4, 0.6, 1.0)})
