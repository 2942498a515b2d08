"""Gated attention (Qiu et al., NeurIPS 2025, "Gated Attention for Large Language Models:
Non-linearity, Sparsity, and Attention-Sink-Free", arXiv 2505.06708), gate position G1, elementwise.

Per head h, after ``A V`` (and the context methods) and before the heads are merged into W_O:
``O_h <- O_h * sigmoid(X W_g + b_g)_h``, with X the attention's input (the block input after its
norm, the X the queries read), ``W_g: [width, heads * d_head]``: one gate per head, token and
channel, query-dependent. In the official code (``qiuzh20/gated_attention``, ``modeling_qwen3.py``,
``elementwise_attn_output_gate``) the gate's weights are extra output columns of the query
projection, the same map; ours is a linear layer of its own, drawn like every linear (N(0, 0.02),
bias 0), so the gate starts near 1/2.

Patched into a pretrained model the gate is ``2 sigmoid(X W_g + b_g)`` with ``W_g = b_g = 0``:
exactly 1, the model as it was, and ``adapt`` trains ``W_g`` from there. The factor 2 departs
from the paper (whose gate is at most 1 and cannot pass the context unchanged); it is a fixed
rescaling of W_O's input, so the gated models it reaches are the paper's with W_O doubled.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from oversmooth.mitigations.base import LayerShape, Patcher, PatchTarget, SiteLayer
from oversmooth.mitigations.registry import GatedAttentionKnobs


class Gate(SiteLayer):
    """``out * scale * sigmoid(proj(x))`` per head; ``proj: width -> heads * d_head``."""

    gates = True

    def __init__(self, width: int, heads: int, d_head: int, scale: float = 1.0):
        super().__init__()
        self.heads, self.scale = heads, scale
        self.proj = nn.Linear(width, heads * d_head)

    def gate(self, out: Tensor, x: Tensor) -> Tensor:
        """``out [batch, heads, tokens, d_head]`` gated by ``x [batch, tokens, width]``."""
        g = torch.sigmoid(self.proj(x))
        if self.scale != 1.0:
            g = self.scale * g
        return out * g.unflatten(-1, (self.heads, -1)).transpose(1, 2).to(out.dtype)


def layer(knobs: GatedAttentionKnobs, shape: LayerShape) -> Gate:
    return Gate(shape.width, shape.heads, shape.width // shape.heads)


def patch_edit(knobs: GatedAttentionKnobs, target: PatchTarget):
    """A fresh gate for one attention module: ``2 sigmoid(0) = 1`` until trained."""

    def make() -> Gate:
        gate = Gate(target.hidden, target.heads, target.head_dim, scale=2.0)
        nn.init.zeros_(gate.proj.weight)
        nn.init.zeros_(gate.proj.bias)
        return gate

    return make


PATCHER = Patcher("gate", patch_edit)
