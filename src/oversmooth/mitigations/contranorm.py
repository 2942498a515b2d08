"""ContraNorm (Guo et al., ICLR 2023, "ContraNorm: A Contrastive Learning Perspective on
Oversmoothing and Beyond"): push tokens apart along their similarity, after the attention sublayer.

``X <- LN(X - s * softmax(Xn Xn^T / tau) X)`` with ``Xn`` the row-normalised X (each token's
vector divided by its L2 norm). Our placement: on the residual stream right after the attention
residual add. Post-norm blocks: the LN is the block's own LayerNorm after that add. Pre-norm
blocks: the subtraction alone, no LN added, so s = 0 is the baseline exactly. Causal models: the
softmax runs over the prefix only (token t mixes tokens s <= t); padding is never mixed in.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from oversmooth.mitigations.base import LayerShape, Patcher, PatchTarget, SiteLayer
from oversmooth.mitigations.registry import ContraNormKnobs


def similarity_mix(
    x: Tensor, tau: float, valid: Tensor | None = None, causal: bool = False, queries: int | None = None
) -> Tensor:
    """``softmax(Xn Xn^T / tau) X`` for the last ``queries`` rows (default all) of ``x: [batch,
    tokens, d]``; ``valid: [batch, tokens]`` bool, False on padding (never mixed in; each token
    always sees itself). Causal: row t mixes only rows s <= t. Returns ``[batch, queries, d]``."""
    n = x.shape[-2]
    queries = n if queries is None else queries
    unit = F.normalize(x, dim=-1)
    scores = unit[:, n - queries :] @ unit.transpose(-1, -2) / tau
    rows = torch.arange(n - queries, n, device=x.device)[:, None]
    cols = torch.arange(n, device=x.device)[None, :]
    allowed = (cols <= rows) if causal else torch.ones(queries, n, dtype=torch.bool, device=x.device)
    allowed = allowed[None] if valid is None else allowed & valid[:, None, :]
    allowed = allowed | (cols == rows)
    return scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1).to(x.dtype) @ x


class ContraNorm(SiteLayer):
    """``x - s * softmax(Xn Xn^T / tau) X`` on the stream after the attention residual add; ``s``
    a fixed number or, ``learnable``, one parameter per feature starting at ``s``."""

    on_stream = True

    def __init__(self, knobs: ContraNormKnobs, shape: LayerShape):
        super().__init__()
        self.tau, self.causal = knobs.tau, shape.causal
        self.s: float | nn.Parameter = nn.Parameter(torch.full((shape.width,), knobs.s)) if knobs.learnable else knobs.s

    def stream(self, x: Tensor) -> Tensor:
        return x - self.s * similarity_mix(x, self.tau, causal=self.causal)

    def extra_repr(self) -> str:
        return f"tau={self.tau:g}, learnable={isinstance(self.s, nn.Parameter)}, causal={self.causal}"


def patch_edit(knobs: ContraNormKnobs, target: PatchTarget):
    """``delta = -s * softmax(Xn Xn^T / tau) X`` on the stream after the attention add, over the
    valid tokens (causal: the prefix, including the earlier calls' tokens with a KV cache)."""

    def edit(layer: int, x: Tensor) -> Tensor:
        rows, valid = target.history(layer, x)
        return -knobs.s * similarity_mix(rows, knobs.tau, valid, target.causal, queries=x.shape[-2])

    return edit


PATCHER = Patcher("stream", patch_edit)
