"""LayerScale (Touvron et al., ICCV 2021, "Going deeper with Image Transformers", CaiT): a learned
per-channel diagonal on each residual branch.

``x <- x + diag(gamma) f(x)`` on the attention and on the MLP branch, each with its own
``gamma [width]``, initialised at a small epsilon chosen by depth. CaiT: 0.1 up to depth 18, 1e-5
for depth 24, 1e-6 deeper; the paper names no value between 19 and 23, which we give 1e-5.
The official code (facebookresearch/deit, ``cait_models.py``, ``LayerScale_Block``) scales
pre-norm branches; in a post-norm block the branch is scaled before the add, inside the norm.
``gamma = 1`` is the baseline exactly. Each gamma is one-dimensional, so it is not decayed.

Patched into a pretrained model, gamma is a fixed knob (one number or one per channel) on the
attention and MLP branch outputs of every block; at 1, its default, the model is as it was.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from oversmooth.mitigations.base import LayerShape, Patcher, PatchTarget, SiteLayer, per_unit
from oversmooth.mitigations.registry import LayerScaleKnobs


def cait_eps(depth: int) -> float:
    """CaiT's initial gamma for a stack of ``depth`` blocks.

    >>> cait_eps(12), cait_eps(24), cait_eps(36)
    (0.1, 1e-05, 1e-06)
    """
    if depth <= 18:
        return 0.1
    return 1e-5 if depth <= 24 else 1e-6


class LayerScale(SiteLayer):
    """``x + gamma[branch] * f`` with ``gamma: [2, width]`` as two learned ``[width]`` vectors
    (0: attention, 1: MLP)."""

    def __init__(self, knobs: LayerScaleKnobs, shape: LayerShape):
        super().__init__()
        eps = cait_eps(shape.depth) if knobs.eps is None else knobs.eps
        self.gamma = nn.ParameterList(nn.Parameter(torch.full((shape.width,), float(eps))) for _ in range(2))

    def residual(self, x: Tensor, f: Tensor, branch: int) -> Tensor:
        return x + self.gamma[branch] * f


def patch_edit(knobs: LayerScaleKnobs, target: PatchTarget):
    """``gamma * out`` on both branches of every block."""
    gamma = per_unit(knobs.gamma, target.hidden, "LayerScale gamma")
    return lambda layer, branch, out: out * gamma.to(out)


PATCHER = Patcher("branches", patch_edit)
