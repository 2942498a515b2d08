"""FeatScale (Wang et al., ICLR 2022): re-weight the DC and high-frequency parts of features.

On the attention sub-layer output Z: ``DC = Pi_1 Z``, ``HC = Z - DC``,
``Z' = Z + s_dc * DC + s_hc * HC`` with per-channel s initialised to 0. (The released DeiT code
adds the scaled terms twice; this does not.) Causal models use the prefix mean.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from oversmooth.mitigations.token_mean import token_mean

Linear = Callable[[Tensor, Tensor, Tensor | None], Tensor]  # F.linear's signature


def featscale(z: Tensor, s_dc: Tensor, s_hc: Tensor, mask: Tensor | None = None,
              causal: bool = False, mean: Tensor | None = None) -> Tensor:
    """``z + s_dc * DC + s_hc * HC`` for ``z: [batch, tokens, d]``, ``s_dc, s_hc: [d]`` (``mean``:
    DC when the caller has it, e.g. a prefix mean carried across calls)."""
    dc = token_mean(z, mask, causal) if mean is None else mean
    s_dc, s_hc = s_dc.to(z.dtype), s_hc.to(z.dtype)
    # = (1 + s_hc) z + (s_dc - s_hc) DC: two full-size passes instead of four.
    return (1 + s_hc) * z + (s_dc - s_hc) * dc


def featscale_projection(x: Tensor, weight: Tensor, bias: Tensor | None, s_dc: Tensor, s_hc: Tensor,
                         mask: Tensor | None = None, linear: Linear = F.linear) -> Tensor:
    """``featscale(F.linear(x, weight, bias), s_dc, s_hc, mask)``, non-causal, without keeping the output.

    The mean is linear, so ``DC(z) = DC(x) W^T + b`` (``[batch, 1, d]``), and ``(1 + s_hc)`` folds
    into the rows of W: autograd keeps ``x`` (the projection keeps it anyway), not ``z``.
    ``x: [batch, tokens, d_in]``, ``weight: [d, d_in]``, ``s_dc, s_hc: [d]``; ``linear`` computes
    the full-size projection (the attention layer passes one that does not keep ``x``).
    """
    scale = 1 + s_hc.to(x.dtype)
    z = linear(x, weight * scale[:, None], None if bias is None else bias * scale)
    return z + (s_dc - s_hc).to(x.dtype) * F.linear(token_mean(x, mask), weight, bias)


class FeatScale(nn.Module):
    """Per-channel ``s_dc`` and ``s_hc``, initialised to 0 (= identity). Exclude from weight decay."""

    def __init__(self, *, dim: int, causal: bool = False):
        super().__init__()
        self.s_dc = nn.Parameter(torch.zeros(dim))
        self.s_hc = nn.Parameter(torch.zeros(dim))
        self.causal = causal

    def forward(self, z: Tensor, mask: Tensor | None = None) -> Tensor:
        return featscale(z, self.s_dc, self.s_hc, mask, self.causal)

    def project(self, x: Tensor, weight: Tensor, bias: Tensor | None, mask: Tensor | None = None,
                linear: Linear = F.linear) -> Tensor:
        """FeatScale of the projection ``linear(x, weight, bias)`` (see ``featscale_projection``)."""
        if self.causal:
            return self(linear(x, weight, bias), mask)
        return featscale_projection(x, weight, bias, self.s_dc, self.s_hc, mask, linear)
