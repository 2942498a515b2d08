"""The attention output projection ``C W^T + b``, with the token-mean mitigations folded into it.

AttnScale, FeatScale and de-escalation at ``attn_out`` are, without a causal mask, affine maps of
the merged context C and of token means, so they fold into the weight and a per-sequence bias
instead of adding passes over full-size tensors (``Fold``, every term optional)::

    Z0 = (C * s) W^T + r,  r = b - o W^T       AttnScale: s = 1 + omega_h on head h's columns,
                                                o = omega_h * mean_t(V_h), heads merged [batch, 1, width]
    Z  = alpha * Z0 + beta * mean_t(Z0)         FeatScale: alpha = 1 + s_hc, beta = s_dc - s_hc;
                                                de-escalation after it: beta <- beta - tau (alpha + beta)
                                                (``Fold.then``: any such affine step composes)
       = C (alpha * W * s)^T + [alpha * r + beta * (mean_t(C) (W * s)^T + r)]

The bracket is ``[batch, 1, width]``: the projection adds it as the GEMM's bias (``baddbmm``), so
the full-size extra work is the token mean of C or V and, in backward, its broadcast gradient.
C itself is not kept for backward: ``project`` rebuilds it from tensors autograd keeps anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from oversmooth.mitigations.token_mean import token_mean


@dataclass(frozen=True)
class Fold:
    """What the mitigations do to the projection; ``None`` terms are absent."""

    column_scale: Tensor | None = None  # s: [width_in]
    offset: Tensor | None = None  # o: [batch, 1, width_in]
    alpha: Tensor | None = None  # [width_out]
    beta: Tensor | None = None  # [width_out]

    def then(self, alpha: Tensor | None, beta: Tensor) -> Fold:
        """This fold followed by ``alpha * Z + beta * mean_t(Z)`` (``alpha`` None: 1); since
        ``mean_t(a Z + b mean_t(Z)) = (a + b) mean_t(Z)``, the two compose into one fold."""
        if self.alpha is None and self.beta is None:
            return Fold(self.column_scale, self.offset, alpha, beta)
        old_alpha = 1.0 if self.alpha is None else self.alpha
        old_beta = 0.0 if self.beta is None else self.beta
        new_alpha = self.alpha if alpha is None else alpha * old_alpha
        new_beta = (old_beta if alpha is None else alpha * old_beta) + beta * (old_alpha + old_beta)
        return Fold(self.column_scale, self.offset, new_alpha, new_beta)


def folded_projection(
    context: Tensor, rebuild: Callable[[], Tensor], weight: Tensor, bias: Tensor | None, fold: Fold = Fold()
) -> Tensor:
    """``Z`` of the module docstring for ``context: [batch, tokens, width_in]``, ``weight:
    [width_out, width_in]``; ``rebuild()`` must return ``context`` again (see ``project``)."""
    w = weight if fold.column_scale is None else weight * fold.column_scale
    r = bias
    if fold.offset is not None:
        r = -F.linear(fold.offset, weight) if r is None else r - F.linear(fold.offset, weight)
    mean_z0 = None if fold.beta is None else F.linear(token_mean(context), w, r)
    if fold.alpha is not None:
        w = w * fold.alpha[:, None]
        r = None if r is None else r * fold.alpha
    if mean_z0 is not None:
        r = fold.beta * mean_z0 if r is None else r + fold.beta * mean_z0
    return project(context, rebuild, w, r)


def _linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``x W^T + bias`` with ``bias`` ``[width_out]`` or per sequence ``[batch, 1, width_out]``
    (then added by the GEMM itself, like a plain bias)."""
    if bias is None or bias.dim() == 1:
        return F.linear(x, weight, bias)
    return torch.baddbmm(bias, x, weight.T.expand(x.shape[0], -1, -1))


class _Project(torch.autograd.Function):
    """``_linear`` whose input is rebuilt in backward, not kept."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None, rebuild: Callable[[], Tensor]) -> Tensor:
        ctx.rebuild, ctx.bias_shape = rebuild, None if bias is None else bias.shape
        ctx.save_for_backward(weight)
        return _linear(x, weight, bias)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        (weight,) = ctx.saved_tensors
        flat = grad.reshape(-1, grad.shape[-1])
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = (flat @ weight.to(grad.dtype)).view(*grad.shape[:-1], weight.shape[1])
        if ctx.needs_input_grad[1]:
            with torch.no_grad():
                x = ctx.rebuild()
            grad_w = flat.T @ x.reshape(-1, x.shape[-1]).to(grad.dtype)
        if ctx.bias_shape is not None and ctx.needs_input_grad[2]:
            grad_b = grad.sum_to_size(ctx.bias_shape)
        return grad_x, grad_w, grad_b, None


def project(x: Tensor, rebuild: Callable[[], Tensor], weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x W^T + bias`` (bias ``[width_out]`` or ``[batch, 1, width_out]``) where ``x = rebuild()``;
    backward calls ``rebuild()`` again (under no_grad) instead of keeping ``x``.

    ``rebuild`` must be deterministic and read only tensors that stay unchanged until backward.
    Under ``torch.compile`` plain ops are used (the compiler makes its own choice).

    >>> x = torch.randn(2, 3, requires_grad=True)
    >>> w = torch.randn(4, 3, requires_grad=True)
    >>> project(2 * x, lambda: 2 * x, w).sum().backward()
    >>> torch.allclose(w.grad, (2 * x).sum(0).expand(4, 3))
    True
    """
    if torch.compiler.is_compiling() and bias is not None and bias.dim() > 1:
        return F.linear(x, weight) + bias
    if torch.compiler.is_compiling() or not torch.is_grad_enabled():
        return _linear(x, weight, bias)
    return _Project.apply(x, weight, bias, rebuild)
