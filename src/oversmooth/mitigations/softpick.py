"""Softpick (Zuhri, Fuadi & Aji 2025, "Softpick: No Attention Sink, No Massive Activations with
Rectified Softmax", arXiv 2504.20966): a rectified softmax for the attention weights.

``softpick(s)_j = ReLU(e^{s_j} - 1) / (sum_k |e^{s_k} - 1| + eps)`` over the keys ``k`` a query
may see; a masked key (score -inf) is left out of the sum. A score <= 0 gets weight exactly 0, so a
row can put no weight anywhere (its weights then sum to 0, and to less than 1 in general): the head
needs no sink to dump attention on. Computed as the official code does
(``zaydzuhri/softpick-attention``, ``naive_softpick_attn.py``): numerator and sum multiplied by
``e^{-m}``, m the row's largest score, so nothing overflows, and ``eps = 1e-8`` added to that
scaled sum (``eps e^m`` in the formula's units); in float32 at least.

It replaces softmax, so our attention builds A itself (no fused kernel). No setting of it is
softmax: it does not patch into a pretrained model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import SoftpickKnobs

EPS = 1e-8


def softpick(scores: Tensor, eps: float = EPS) -> Tensor:
    """Softpick over the last axis of ``scores [..., keys]`` (masked keys -inf; a row needs one
    finite score).

    >>> softpick(torch.tensor([[0.0, 1.0, -1.0, -float("inf")]])).tolist()  # (e - 1) / (0 + (e - 1) + (1 - 1/e))
    [[0.0, 0.7310585975646973, 0.0, 0.0]]
    """
    top = scores.amax(dim=-1, keepdim=True)
    shifted = torch.exp(scores - top) - torch.exp(-top)  # e^{-m} (e^s - 1)
    total = torch.where(scores.isfinite(), shifted.abs(), 0.0).sum(dim=-1, keepdim=True)
    return F.relu(shifted) / (total + eps)


class Softpick(SiteLayer):
    """Softpick in place of the attention's softmax; no parameters."""

    normalises = True

    def normalise(self, scores: Tensor) -> Tensor:
        return softpick(scores.to(torch.promote_types(scores.dtype, torch.float32))).to(scores.dtype)


def layer(knobs: SoftpickKnobs, shape: LayerShape) -> Softpick:
    return Softpick()
