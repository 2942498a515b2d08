"""FeatScale (Wang et al., ICLR 2022): re-weight the DC and high-frequency parts of features.

On the attention sub-layer output Z: ``DC = Pi_1 Z``, ``HC = Z - DC``,
``Z' = Z + s_dc * DC + s_hc * HC`` with per-channel s initialised to 0. (The released DeiT code
adds the scaled terms twice; this does not.) Causal models use the prefix mean. Without a causal
mask our attention folds FeatScale into its output projection (``layers/output_projection.py``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from oversmooth.mitigations.base import LayerShape, Patcher, PatchTarget, SiteLayer, per_unit
from oversmooth.mitigations.registry import FeatScaleKnobs
from oversmooth.mitigations.token_mean import token_mean
from oversmooth.utils.tensors import check_tensor


def featscale(
    z: Tensor, s_dc: Tensor, s_hc: Tensor, mask: Tensor | None = None, causal: bool = False, mean: Tensor | None = None
) -> Tensor:
    """``z + s_dc * DC + s_hc * HC`` for ``z: [batch, tokens, d]``, ``s_dc, s_hc: [d]`` (``mean``:
    DC when the caller has it, e.g. a prefix mean carried across calls)."""
    check_tensor(z, "the tokens z", "[batch, tokens, ...]")
    dc = token_mean(z, mask, causal) if mean is None else mean
    s_dc, s_hc = s_dc.to(z.dtype), s_hc.to(z.dtype)
    # = (1 + s_hc) z + (s_dc - s_hc) DC: two full-size passes instead of four.
    return (1 + s_hc) * z + (s_dc - s_hc) * dc


class FeatScale(SiteLayer):
    """Per-channel ``s_dc`` and ``s_hc``, initialised to 0 (= identity). Exclude from weight decay."""

    on_output = True

    def __init__(self, *, dim: int, causal: bool = False):
        super().__init__()
        self.s_dc = nn.Parameter(torch.zeros(dim))
        self.s_hc = nn.Parameter(torch.zeros(dim))
        self.causal = causal

    def forward(self, z: Tensor, mask: Tensor | None = None) -> Tensor:
        return featscale(z, self.s_dc, self.s_hc, mask, self.causal)

    def output(self, z: Tensor) -> Tensor:
        return self(z)

    def output_fold(self, dtype) -> tuple[Tensor | None, Tensor] | None:
        if self.causal:
            return None
        s_dc, s_hc = self.s_dc.to(dtype), self.s_hc.to(dtype)
        return 1 + s_hc, s_dc - s_hc


def layer(knobs: FeatScaleKnobs, shape: LayerShape) -> FeatScale:
    return FeatScale(dim=shape.width, causal=shape.causal)


def patch_edit(knobs: FeatScaleKnobs, target: PatchTarget):
    """``Z + s_dc DC + s_hc HC`` on the attention branch output."""
    s_dc = per_unit(knobs.s_dc, target.hidden, "s_dc")
    s_hc = per_unit(knobs.s_hc, target.hidden, "s_hc")
    return lambda layer, out: featscale(out, s_dc.to(out.device), s_hc.to(out.device), mean=target.means(layer, out))


PATCHER = Patcher("output", patch_edit)
