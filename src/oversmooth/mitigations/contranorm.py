"""ContraNorm (Guo et al., ICLR 2023, "ContraNorm: A Contrastive Learning Perspective on
Oversmoothing and Beyond"): push tokens apart along their similarity, after the attention sublayer.

``X <- LN(X - s * softmax(Xn Xn^T / tau) X)`` with ``Xn`` the row-normalised X (each token's
vector divided by its L2 norm). Our placement: on the residual stream right after the attention
residual add. Post-norm blocks: the LN is the block's own LayerNorm after that add. Pre-norm
blocks: the subtraction alone, no LN added, so s = 0 is the baseline exactly. Causal models: the
softmax runs over the prefix only (token t mixes tokens s <= t); padding is never mixed in.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from oversmooth.errors import UsageError
from oversmooth.mitigations.base import Knobs, LayerShape, Method, Patcher, PatchTarget, SiteLayer, knob


@dataclass(frozen=True)
class ContraNormKnobs(Knobs):
    method = "contranorm"
    s: float = knob(0.1, "ContraNorm scale s of the similarity term (0: off)", low=0.0, label="ContraNorm s")
    tau: float = knob(1.0, "ContraNorm temperature tau of the token-similarity softmax, > 0", low=0.0,
                      label="ContraNorm tau")
    learnable: bool = knob(False, "ContraNorm: learn s, one per feature, starting at --contranorm-s",
                           scope=("train",))

    def check(self) -> None:
        super().check()
        if self.tau == 0:
            raise UsageError("ContraNorm tau must be > 0 (a softmax temperature), got 0")


def similarity_mix(x: Tensor, tau: float, valid: Tensor | None = None, causal: bool = False,
                   queries: int | None = None) -> Tensor:
    """``softmax(Xn Xn^T / tau) X`` for the last ``queries`` rows (default all) of ``x: [batch,
    tokens, d]``; ``valid: [batch, tokens]`` bool, False on padding (never mixed in; each token
    always sees itself). Causal: row t mixes only rows s <= t. Returns ``[batch, queries, d]``."""
    n = x.shape[-2]
    queries = n if queries is None else queries
    unit = F.normalize(x, dim=-1)
    scores = unit[:, n - queries:] @ unit.transpose(-1, -2) / tau
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
        self.s: float | nn.Parameter = (nn.Parameter(torch.full((shape.width,), knobs.s)) if knobs.learnable
                                        else knobs.s)

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


METHOD = Method("contranorm", "Guo et al., ICLR 2023 (ContraNorm)",
                "X <- LN(X - s softmax(Xn Xn^T / tau) X) after the attention sublayer, Xn row-normalised",
                ContraNormKnobs, "stream", ContraNorm, "contranorm", in_block=True,
                patcher=Patcher("stream", patch_edit), zero={"s": 0.0}, sweep={"s": (0.05, 0.1, 0.2, 0.5, 1.0)},
                short="contra")
