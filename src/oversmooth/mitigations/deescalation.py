"""De-escalation (Yu & Zhang 2023): remove a share tau of the mean token, Y = (I - tau Pi_1) X.

Placement is our reading (the paper's exact placement is not available): by default on the
attention sub-layer output before the residual add (``attn_out``), or on the residual stream
after the add (``stream``). Causal models use the prefix mean, so no future token leaks.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from oversmooth.mitigations.base import LayerShape, Patcher, PatchTarget, SiteLayer
from oversmooth.mitigations.registry import DeescalationKnobs
from oversmooth.mitigations.token_mean import token_mean
from oversmooth.utils.tensors import check_tensor


def deescalate(
    x: Tensor, tau: float | Tensor, mask: Tensor | None = None, causal: bool = False, mean: Tensor | None = None
) -> Tensor:
    """``x - tau * mean_token(x)`` for ``x: [batch, tokens, d]`` (``mean``: the token mean when
    the caller has it, e.g. a prefix mean carried across calls).

    >>> deescalate(torch.tensor([[[1.0], [3.0]]]), 1.0).flatten().tolist()
    [-1.0, 1.0]
    """
    check_tensor(x, "the tokens x", "[batch, tokens, ...]")
    return x - tau * (token_mean(x, mask, causal) if mean is None else mean)


class Deescalation(SiteLayer):
    """``(I - tau Pi_1)`` with tau in [0, 1], fixed (a buffer) or learnable (clamped to [0, 1]), on
    the attention sub-layer output (``at="attn_out"``, folded into W_O without a causal mask) or
    on the stream after the residual add (``at="stream"``)."""

    def __init__(self, *, tau: float = 1.0, learnable: bool = False, causal: bool = False, at: str = "attn_out"):
        super().__init__()
        DeescalationKnobs(tau=tau, deescalate_at=at)  # the range checks
        value = torch.tensor(float(tau))
        if learnable:
            self.tau = nn.Parameter(value)
        else:
            self.register_buffer("tau", value)
        self.causal = causal
        self.on_output, self.on_stream = at == "attn_out", at == "stream"

    def share(self) -> Tensor:
        """tau, clamped to [0, 1] (a 0-d tensor)."""
        return self.tau.clamp(0.0, 1.0)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return deescalate(x, self.share().to(x.dtype), mask, self.causal)

    def output(self, z: Tensor) -> Tensor:
        return self(z)

    def output_fold(self, dtype) -> tuple[Tensor | None, Tensor] | None:
        return None if self.causal else (None, -self.share().to(dtype))

    def stream(self, x: Tensor) -> Tensor:
        return self(x)

    def extra_repr(self) -> str:
        return f"tau={float(self.tau):.3g}, learnable={isinstance(self.tau, nn.Parameter)}, causal={self.causal}"


def layer(knobs: DeescalationKnobs, shape: LayerShape) -> Deescalation:
    return Deescalation(tau=knobs.tau, learnable=knobs.tau_learnable, causal=shape.causal, at=knobs.deescalate_at)


def patch_edit(knobs: DeescalationKnobs, target: PatchTarget):
    """``attn_out - tau * mean(attn_out)`` on the attention branch output."""
    return lambda layer, out: deescalate(out, knobs.tau, mean=target.means(layer, out))


PATCHER = Patcher("output", patch_edit)
