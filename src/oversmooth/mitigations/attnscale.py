"""AttnScale (Wang et al., ICLR 2022): amplify the high-frequency part of each head's attention.

``A' = A + omega_h (A - U)`` with U the uniform attention over the allowed keys. Applied to the
output, ``A'V = AV + omega_h (AV - U V)``, so it also works on fused attention. Causal models
use the uniform attention over the prefix (the prefix mean of V).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from oversmooth.mitigations.base import LayerShape, Patcher, PatchTarget, SiteLayer, per_unit
from oversmooth.mitigations.registry import AttnScaleKnobs
from oversmooth.mitigations.token_mean import token_mean


def attnscale(
    out: Tensor, v: Tensor, omega: Tensor, mask: Tensor | None = None, causal: bool = False, mean: Tensor | None = None
) -> Tensor:
    """``out + omega (out - mean_token(v))`` per head.

    ``out``, ``v``: ``[batch, heads, tokens, d_head]``; ``omega``: ``[heads]``; ``mean``: the
    token mean of ``v`` when the caller has it (a prefix mean carried across calls), else computed.
    """
    w = omega[:, None, None].to(out.dtype)
    mean = token_mean(v, mask, causal) if mean is None else mean
    # (1 + w) out - w mean: autograd keeps ``out`` (often saved already), not a new difference.
    return (1 + w) * out - w * mean


class AttnScale(SiteLayer):
    """One learnable omega per head, initialised to 0 (= plain attention). Without a causal mask
    it folds into W_O: ``(1 + omega_h)`` on head h's columns and the offset ``omega_h mean_t(V_h)``."""

    def __init__(self, *, heads: int, causal: bool = False):
        super().__init__()
        self.omega = nn.Parameter(torch.zeros(heads))
        self.causal = causal

    def forward(self, out: Tensor, v: Tensor, mask: Tensor | None = None) -> Tensor:
        return attnscale(out, v, self.omega, mask, self.causal)

    def on_context(self, v_first: Tensor | None) -> bool:
        return True

    def context(self, out: Tensor, v: Tensor, v_first: Tensor | None) -> Tensor:
        return self(out, v)

    def context_fold(self, v: Tensor, dtype) -> tuple[Tensor, Tensor] | None:
        if self.causal:
            return None
        omega = self.omega.to(dtype)
        offset = (omega[:, None, None] * token_mean(v)).transpose(1, 2).flatten(2)
        return (1 + omega).repeat_interleave(v.shape[-1]), offset


def layer(knobs: AttnScaleKnobs, shape: LayerShape) -> AttnScale:
    return AttnScale(heads=shape.heads, causal=shape.causal)


def patch_edit(knobs: AttnScaleKnobs, target: PatchTarget):
    """``A V + omega (A V - mean V)`` per head on the output projection's input."""
    omega = per_unit(knobs.omega, target.heads, "omega")
    return lambda layer, z, v, v_first: attnscale(z, v, omega.to(z.device), mean=target.means(layer, v))


PATCHER = Patcher("context", patch_edit)
