"""Softpick (Zuhri, Fuadi & Aji 2025, "Softpick: No Attention Sink, No Massive Activations with
Rectified Softmax", arXiv 2504.20966): a rectified softmax for the attention weights.

``softpick(s)_j = ReLU(e^{s_j} - 1) / (sum_k |e^{s_k} - 1| + eps)`` over the keys ``k`` a query
may see; a masked key (score -inf) is left out of the sum. A score <= 0 gets weight exactly 0, so a
row can put no weight anywhere (its weights then sum to 0, and to less than 1 in general): the head
needs no sink to dump attention on. Computed as the official code does
(``zaydzuhri/softpick-attention``, ``naive_softpick_attn.py``): numerator and sum multiplied by
``e^{-m}``, m the row's largest score, so nothing overflows, and ``eps = 1e-8`` added to that
scaled sum (``eps e^m`` in the formula's units); in float32 at least. The gradient is the official
kernel's, by hand (``_Softpick``), so that training keeps two ``[tokens, tokens]`` tensors per head,
not the six autograd would.

It replaces softmax, so our attention builds A itself (no fused kernel). No setting of it is
softmax: it does not patch into a pretrained model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import SoftpickKnobs

EPS = 1e-8


def softpick(scores: Tensor, eps: float = EPS) -> Tensor:
    """Softpick over the last axis of ``scores [..., keys]`` (masked keys -inf; a row needs one
    finite score). Below: ``(e - 1) / (0 + (e - 1) + (1 - 1/e))`` for the score 1.

    >>> [round(w, 4) for w in softpick(torch.tensor([0.0, 1.0, -1.0, -float("inf")])).tolist()]
    [0.0, 0.7311, 0.0, 0.0]
    """
    return _Softpick.apply(scores, eps)


class _Softpick(torch.autograd.Function):
    """Softpick with the gradient of the official kernel (``parallel_softpick_attn_bwd_kernel_dq``):
    ``ds_j = e^{s_j - m} / T (1[s_j > 0] g_j - sign(s_j) g.y)``, T the scaled sum plus eps and the
    row maximum m held constant; it keeps the scores and the output (which ``A V`` keeps anyway),
    not the intermediates autograd would."""

    @staticmethod
    def forward(ctx, scores: Tensor, eps: float) -> Tensor:
        top = scores.amax(dim=-1, keepdim=True)
        shifted = torch.exp(scores - top) - torch.exp(-top)  # e^{-m} (e^s - 1)
        total = torch.where(scores.isfinite(), shifted.abs(), 0.0).sum(dim=-1, keepdim=True) + eps
        out = F.relu(shifted) / total
        ctx.save_for_backward(scores, top, total, out)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        scores, top, total, out = ctx.saved_tensors
        inner = (grad * out).sum(dim=-1, keepdim=True)
        step = torch.where(scores > 0, grad, 0.0) - torch.sign(scores) * inner
        return torch.exp(scores - top) / total * step, None


class Softpick(SiteLayer):
    """Softpick in place of the attention's softmax; no parameters."""

    normalises = True

    def normalise(self, scores: Tensor) -> Tensor:
        return softpick(scores.to(torch.promote_types(scores.dtype, torch.float32))).to(scores.dtype)


def layer(knobs: SoftpickKnobs, shape: LayerShape) -> Softpick:
    return Softpick()
