"""Token-similarity measures, O(tokens x features): cos_sim, t_sim, t_div.

Conventions (documented, tested): a sequence with one counted token is fully collapsed
(cos_sim = t_sim = 1); a zero-norm token has cosine 0 with every other token; a sequence of
only zero tokens has t_sim = 1 (all tokens are equal); a sequence with no counted token is NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from oversmooth.metrics.tokens import count, token_sum, valid_tokens, working
from oversmooth.tensors import check_tensor


def cos_sim(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """Mean cosine similarity over distinct pairs of counted tokens, ``[batch]`` (float64).

    With unit tokens u_i and S = sum_i u_i: ``(|S|^2 - n) / (n (n - 1))``; the n x n matrix
    is never built. ``x: [batch, tokens, features]``, ``mask: [batch, tokens]``.

    >>> cos_sim(torch.tensor([[[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]]])).tolist()
    [0.3333333333333333]
    """
    valid = valid_tokens(check_tensor(x, "states"), mask, exclude)
    xs = working(x)
    norms = torch.linalg.vector_norm(xs, dim=-1)
    counted = valid & (norms > 0)
    total = token_sum(torch.where(counted, 1.0 / norms.clamp_min(torch.finfo(norms.dtype).tiny), 0.0), xs)
    n = count(valid)
    value = (total.pow(2).sum(dim=-1) - count(counted)) / (n * (n - 1)).clamp_min(1)
    value = torch.where(n == 1, 1.0, value)
    return torch.where(n == 0, torch.nan, value)


def t_sim(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """Yu & Zhang's token similarity ``n |xbar|^2 / sum_i |x_i|^2`` in [0, 1], ``[batch]``.

    It is the share of energy in the mean token (the "DC" share of Wang et al.); 1 iff all
    counted tokens are equal.

    >>> t_sim(torch.tensor([[[1.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [-1.0, 0.0]]])).tolist()
    [1.0, 0.0]
    """
    valid = valid_tokens(check_tensor(x, "states"), mask, exclude)
    xs = working(x)
    n = count(valid)
    energy = torch.linalg.vector_norm(xs, dim=-1).to(torch.float64).pow(2).mul(valid).sum(dim=1)
    mean_energy = token_sum(valid, xs).pow(2).sum(dim=-1) / n.clamp_min(1)
    value = torch.where(energy > 0, mean_energy / energy.clamp_min(torch.finfo(torch.float64).tiny), 1.0)
    value = torch.where(n == 1, 1.0, value.clamp(0.0, 1.0))
    return torch.where(n == 0, torch.nan, value)


def t_div(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """``1 - t_sim``: the high-frequency share ``|X - 1 xbar^T|_F^2 / |X|_F^2``, ``[batch]``."""
    return 1.0 - t_sim(x, mask, exclude)
