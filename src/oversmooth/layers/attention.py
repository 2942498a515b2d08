"""Multi-head self-attention in which every attention-side mitigation is a config switch.

Two paths compute ``A V``: the fused ``F.scaled_dot_product_attention`` (fast, the default) and a
manual path that materialises ``A = softmax(Q K^T / sqrt(d_h))`` and passes it through
``hook_pattern`` (set ``materialize = True``). Everything after ``A V`` is shared, so both paths
give the same result for every method.

Order inside the sub-layer, per head, then merged: values methods (value residual) -> ``A V``
(A: softmax, or the method that replaces it, softpick) -> context methods (AttnScale, NeuTRENO)
-> gate (gated attention) -> merge -> W_O -> output methods (FeatScale, de-escalation when the
block places it at attn_out), each site in the registry's order.
Without a causal mask, the last context method and the output methods fold into W_O and a
per-sequence bias where they can (``layers/output_projection.py``): AttnScale stays per head when
NeuTRENO adds its term after it, or a gate.
The merged input of W_O is not kept for backward but rebuilt, so the per-head terms add no
activation memory.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from oversmooth.layers.hook_point import HookPoint
from oversmooth.layers.mitigation_config import MitigationConfig
from oversmooth.layers.output_projection import Fold, folded_projection
from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import METHODS


def method_layers(
    mitigation: MitigationConfig, shape: LayerShape, where: Literal["attention", "block", "model"]
) -> dict[str, SiteLayer]:
    """Attribute name -> layer of each method in ``mitigation`` that lives ``where``: on the model
    (site ``tokens``), on the block, or on its attention; in the registry's order (the order they
    act in)."""

    def home(m) -> str:
        return "model" if m.site == "tokens" else "block" if m.in_block else "attention"

    return {
        m.attribute: m.layer(mitigation.knobs[name], shape)
        for name, m in METHODS.items()
        if name in mitigation and home(m) == where
    }


class Attention(nn.Module):
    """Self-attention on ``x: [batch, tokens, width]``.

    ``forward(x, v_first, *outer)`` returns ``(out [batch, tokens, width], v [batch, heads,
    tokens, d_head])`` where ``v`` is this layer's value tensor (after the value projection, before
    any mixing); the first layer's ``v`` is the ``v_first`` that NeuTRENO and value residual use
    later (passed undetached, so gradients reach layer 1's value weights through it).
    ``outer``: the block's method layers that act on this output (None entries are skipped).
    Each method acts through its ``SiteLayer`` (``oversmooth.mitigations.base``); one whose token
    mean is not causal folds into W_O, a causal one acts on the output.
    """

    def __init__(
        self,
        width: int,
        heads: int,
        *,
        mitigation: MitigationConfig = MitigationConfig(),
        causal: bool = False,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.heads, self.d_head = heads, width // heads
        self.causal, self.dropout = causal, dropout
        self.mitigation = mitigation
        self.materialize = False
        layers = method_layers(mitigation, LayerShape(width, heads, causal), "attention")
        for attribute, layer in layers.items():
            self.add_module(attribute, layer)
        self.methods: tuple[SiteLayer, ...] = tuple(layers.values())
        # softpick replaces the softmax (A is then built explicitly); gated attention gates the context
        self.normaliser = next((m for m in self.methods if m.normalises), None)
        self.gates = tuple(m for m in self.methods if m.gates)
        self.query = nn.Linear(width, width)
        self.key = None if any(m.ties_keys for m in self.methods) else nn.Linear(width, width)
        self.value_output = next((m.value_output() for m in self.methods if m.value_output() is not None), None)
        if self.value_output is not None:
            self.value = self.output = None
        else:
            self.value, self.output = nn.Linear(width, width), nn.Linear(width, width)
        self.attn_dropout = nn.Dropout(dropout)
        self.hook_v = HookPoint()
        self.hook_pattern = HookPoint()

    def forward(self, x: Tensor, v_first: Tensor | None = None, *outer: SiteLayer | None) -> tuple[Tensor, Tensor]:
        q = self._split(self.query(x))
        k = q if self.key is None else self._split(self.key(x))
        if self.value_output is not None:
            w_v, w_o = self.value_output.weights()
            v = self._split(x @ w_v + self.value_output.value_bias)
        else:
            v = self._split(self.value(x))
        v = self.hook_v(v)

        mixed = v
        for method in self.methods:
            mixed = method.values(mixed, v_first)
        attended = (
            self._manual(q, k, mixed)
            if self.materialize or self.normaliser is not None
            else F.scaled_dot_product_attention(
                q, k, mixed, dropout_p=self.dropout if self.training else 0.0, is_causal=self.causal
            )
        )
        # The last method on the context may fold into W_O (column scale and offset) unless a gate
        # follows it; the others act per head.
        per_head = [m for m in self.methods if m.on_context(v_first)]
        folded = per_head[-1].context_fold(mixed, x.dtype) if per_head and not self.gates else None
        if folded is not None:
            per_head.pop()

        def context() -> Tensor:
            """``[batch, tokens, width]``: per head ``A V`` plus the per-head terms, gated, heads merged."""
            out = attended
            for method in per_head:
                out = method.context(out, mixed, v_first)
            for method in self.gates:
                out = method.gate(out, x)
            return out.transpose(1, 2).flatten(2)

        if self.value_output is not None:
            weight, bias = w_o.T, self.value_output.output_bias
        else:
            weight, bias = self.output.weight, self.output.bias
        fold = Fold() if folded is None else Fold(column_scale=folded[0], offset=folded[1])
        # Output methods fold in order until one cannot (causal); it and those after it act on Z.
        after: list[SiteLayer] = []
        for method in (*self.methods, *(m for m in outer if m is not None)):
            if method.on_output:
                affine = None if after else method.output_fold(x.dtype)
                if affine is None:
                    after.append(method)
                else:
                    fold = fold.then(*affine)
        out = folded_projection(context(), context, weight, bias, fold)
        for method in after:
            out = method.output(out)
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
        weights = scores.softmax(dim=-1) if self.normaliser is None else self.normaliser.normalise(scores)
        pattern = self.hook_pattern(weights)
        return self.attn_dropout(pattern) @ v

    def value_output_weights(self) -> tuple[Tensor, Tensor]:
        """``(W_V, W_O)``, both ``[width, width]`` in the ``x @ W`` convention (head h owns
        columns ``h*d_head:(h+1)*d_head`` of W_V and the same rows of W_O)."""
        if self.value_output is not None:
            return self.value_output.weights()
        return self.value.weight.T, self.output.weight.T
