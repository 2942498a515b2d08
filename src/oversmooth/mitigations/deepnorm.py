"""DeepNorm (Wang et al. 2022, "DeepNet: Scaling Transformers to 1,000 Layers"): a post-LN
residual that up-weights the stream, with the branch weights initialised small.

``x <- LN(alpha x + f(x))`` in every sub-layer, and W_V, W_O and the MLP's two weight matrices
multiplied by ``beta`` after the usual init (as ``microsoft/torchscale`` does in
``architecture/encoder.py``: it divides ``v_proj``, ``out_proj``, ``fc1`` and ``fc2`` by
``1 / beta``; W_Q and W_K keep theirs). For an encoder-only stack of N blocks, and for a
decoder-only one of M blocks, the paper's table gives ``alpha = (2N)^(1/4)``, ``beta =
(8N)^(-1/4)``. Post-norm only. With ``spectral``, W_V and W_O are its own and keep their scale.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import DeepNormKnobs

#: the weights DeepNet initialises scaled by beta, by role (``SiteLayer.reweight``).
SCALED_ROLES = ("value", "output", "mlp_in", "mlp_out")


def deepnorm_constants(depth: int) -> tuple[float, float]:
    """``(alpha, beta)`` of DeepNet's table for an encoder-only or decoder-only stack of ``depth`` blocks.

    >>> [round(c, 4) for c in deepnorm_constants(12)]
    [2.2134, 0.3195]
    """
    return (2 * depth) ** 0.25, (8 * depth) ** -0.25


class DeepNorm(SiteLayer):
    """``alpha * x + f`` on both branches (the block's post-norm follows), ``beta`` at init."""

    def __init__(self, knobs: DeepNormKnobs, shape: LayerShape):
        super().__init__()
        self.alpha, self.beta = deepnorm_constants(shape.depth)

    def residual(self, x: Tensor, f: Tensor, branch: int) -> Tensor:
        return self.alpha * x + f

    @torch.no_grad()
    def reweight(self, linears: dict[str, nn.Linear]) -> None:
        for role in SCALED_ROLES:
            if role in linears:
                linears[role].weight.mul_(self.beta)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha:.4g}, beta={self.beta:.4g}"
