"""Multi-head self-attention in which every attention-side mitigation is a config switch.

Two paths compute ``A V``: the fused ``F.scaled_dot_product_attention`` (fast, the default) and a
manual path that materialises ``A = softmax(Q K^T / sqrt(d_h))`` and passes it through
``hook_pattern`` (set ``materialize = True``). Everything after ``A V`` is shared, so both paths
give the same result for every method.

Order inside the sub-layer, per head, then merged:
``V -> value_residual mix -> A V -> AttnScale -> + NeuTRENO term -> merge -> W_O -> FeatScale
-> de-escalation (when the block places it at attn_out)``.
Without a causal mask, AttnScale, FeatScale and de-escalation fold into W_O and a per-sequence
bias (``layers/output_projection.py``); AttnScale stays per head when NeuTRENO adds its term.
The merged input of W_O is not kept for backward but rebuilt, so the per-head terms add no
activation memory.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from oversmooth.layers.hook_point import HookPoint
from oversmooth.layers.mitigation_config import MitigationConfig
from oversmooth.layers.output_projection import Fold, folded_projection
from oversmooth.layers.spectral import SpectralValueOutput
from oversmooth.mitigations import AttnScale, Deescalation, FeatScale, neutreno, token_mean


class Attention(nn.Module):
    """Self-attention on ``x: [batch, tokens, width]``.

    ``forward(x, v_first, deescalation)`` returns ``(out [batch, tokens, width], v [batch, heads,
    tokens, d_head])`` where ``v`` is this layer's value tensor (after the value projection, before
    any mixing); the first layer's ``v`` is the ``v_first`` that NeuTRENO and value residual use
    later (passed undetached, so gradients reach layer 1's value weights through it).
    ``deescalation``: the block's de-escalation when it acts on this output (placement ``attn_out``).
    A mitigation whose token mean is not causal folds into W_O; a causal one acts on the output.
    """

    def __init__(self, width: int, heads: int, *, mitigation: MitigationConfig = MitigationConfig(),
                 causal: bool = False, dropout: float = 0.0):
        super().__init__()
        self.heads, self.d_head = heads, width // heads
        self.causal, self.dropout = causal, dropout
        self.mitigation = mitigation
        self.materialize = False
        self.query = nn.Linear(width, width)
        self.key = None if "symmetric" in mitigation else nn.Linear(width, width)
        if "spectral" in mitigation:
            self.value_output = SpectralValueOutput(width, mitigation.spectral)
            self.value = self.output = None
        else:
            self.value_output = None
            self.value, self.output = nn.Linear(width, width), nn.Linear(width, width)
        self.attnscale = AttnScale(heads=heads, causal=causal) if "attnscale" in mitigation else None
        self.featscale = FeatScale(dim=width, causal=causal) if "featscale" in mitigation else None
        self.attn_dropout = nn.Dropout(dropout)
        self.hook_v = HookPoint()
        self.hook_pattern = HookPoint()

    def forward(self, x: Tensor, v_first: Tensor | None = None,
                deescalation: Deescalation | None = None) -> tuple[Tensor, Tensor]:
        q = self._split(self.query(x))
        k = q if self.key is None else self._split(self.key(x))
        if self.value_output is not None:
            w_v, w_o = self.value_output.weights()
            v = self._split(x @ w_v + self.value_output.value_bias)
        else:
            v = self._split(self.value(x))
        v = self.hook_v(v)

        mixed = v
        if v_first is not None and "value_residual" in self.mitigation:
            mixed = torch.lerp(v, v_first, self.mitigation.value_mix)   # (1 - mix) v + mix v1
        attended = self._manual(q, k, mixed) if self.materialize else F.scaled_dot_product_attention(
            q, k, mixed, dropout_p=self.dropout if self.training else 0.0, is_causal=self.causal)
        with_neutreno = v_first is not None and "neutreno" in self.mitigation
        attnscale_per_head = self.attnscale is not None and (self.attnscale.causal or with_neutreno)

        def context() -> Tensor:
            """``[batch, tokens, width]``: per head ``A V`` plus the per-head terms, heads merged."""
            out = attended
            if attnscale_per_head:
                out = self.attnscale(out, mixed)
            if with_neutreno:
                out = neutreno(out, mixed, v_first, self.mitigation.lam)
            return out.transpose(1, 2).flatten(2)

        if self.value_output is not None:
            weight, bias = w_o.T, self.value_output.output_bias
        else:
            weight, bias = self.output.weight, self.output.bias
        fold = Fold()
        if self.attnscale is not None and not attnscale_per_head:
            omega = self.attnscale.omega.to(x.dtype)
            offset = (omega[:, None, None] * token_mean(mixed)).transpose(1, 2).flatten(2)
            fold = Fold(column_scale=(1 + omega).repeat_interleave(self.d_head), offset=offset)
        featscale_after = self.featscale is not None and self.featscale.causal
        if self.featscale is not None and not featscale_after:
            s_dc, s_hc = self.featscale.s_dc.to(x.dtype), self.featscale.s_hc.to(x.dtype)
            fold = Fold(fold.column_scale, fold.offset, alpha=1 + s_hc, beta=s_dc - s_hc)
        deescalate_after = deescalation is not None and (deescalation.causal or featscale_after)
        if deescalation is not None and not deescalate_after:
            fold = fold.then_deescalate(deescalation.share().to(x.dtype))
        out = folded_projection(context(), context, weight, bias, fold)
        if featscale_after:
            out = self.featscale(out)
        if deescalate_after:
            out = deescalation(out)
        return out, v

    def _split(self, x: Tensor) -> Tensor:
        """``[batch, tokens, width] -> [batch, heads, tokens, d_head]``."""
        return x.unflatten(-1, (self.heads, self.d_head)).transpose(1, 2)

    def _manual(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """``A V`` with ``A: [batch, heads, tokens, tokens]`` built explicitly and hooked."""
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_head)
        if self.causal:
            n = scores.shape[-1]
            future = torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        pattern = self.hook_pattern(scores.softmax(dim=-1))
        return self.attn_dropout(pattern) @ v

    def value_output_weights(self) -> tuple[Tensor, Tensor]:
        """``(W_V, W_O)``, both ``[width, width]`` in the ``x @ W`` convention (head h owns
        columns ``h*d_head:(h+1)*d_head`` of W_V and the same rows of W_O)."""
        if self.value_output is not None:
            return self.value_output.weights()
        return self.value.weight.T, self.output.weight.T
