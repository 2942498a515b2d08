"""MV-split residual (Lu 2026, "Mean Mode Screaming: Mean-Variance Split Residuals for 1000-Layer
Diffusion Transformers", arXiv 2605.06169): the branch's token-mean mode and its variation join
the stream through separate gains.

``x <- x + beta * (f - mean_t f) + alpha * (mean_t f - mean_t x)``, ``alpha`` and ``beta`` learned
per channel and per branch, initialised at 0 and 0.03 as published. We follow the official code
(``FusedMVSplitNorm1Fallback`` in the paper's ``dit.py``; the public x-transformers port
``MVSplitResidualUpdate`` computes the same update): alpha multiplies the *difference* of the
means, so the stream's mean mode moves to ``(1 - alpha) mean_t x + alpha mean_t f`` (frozen at
alpha = 0), while the centred part adds ``beta`` times the branch's. The official block follows
the update with an RMSNorm (post-norm); here the block's own norm placement applies. Means run
over all tokens (CLS included); causal models use prefix means (token t: tokens s <= t), which
neither published version has. No setting gives back ``x + f``, so it is not patched.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import MVSplitKnobs
from oversmooth.mitigations.token_mean import token_mean


def mv_split_update(x: Tensor, f: Tensor, alpha: Tensor, beta: Tensor, causal: bool = False) -> Tensor:
    """The new stream for ``x, f: [batch, tokens, d]`` and gains ``alpha, beta: [d]``.

    >>> x, f = torch.tensor([[[1.0], [3.0]]]), torch.tensor([[[4.0], [8.0]]])
    >>> mv_split_update(x, f, torch.tensor([0.5]), torch.tensor([1.0])).flatten().tolist()
    [1.0, 7.0]
    """
    mean_f = token_mean(f, causal=causal)
    return x + beta * (f - mean_f) + alpha * (mean_f - token_mean(x, causal=causal))


class MVSplit(SiteLayer):
    """``mv_split_update`` with per-branch ``alpha[branch], beta[branch]: [width]`` (0: attention, 1: MLP)."""

    def __init__(self, knobs: MVSplitKnobs, shape: LayerShape):
        super().__init__()
        self.causal = shape.causal
        self.alpha = nn.ParameterList(nn.Parameter(torch.full((shape.width,), knobs.alpha)) for _ in range(2))
        self.beta = nn.ParameterList(nn.Parameter(torch.full((shape.width,), knobs.beta)) for _ in range(2))

    def residual(self, x: Tensor, f: Tensor, branch: int) -> Tensor:
        return mv_split_update(x, f, self.alpha[branch], self.beta[branch], self.causal)

    def extra_repr(self) -> str:
        return f"causal={self.causal}"
