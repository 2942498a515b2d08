"""Token-similarity measures, O(tokens x features): cos_sim, t_sim, t_div, anisotropy, and the
block influence between two layers.

Conventions (documented, tested): a sequence with one counted token is fully collapsed
(cos_sim = t_sim = 1); a zero-norm token has cosine 0 with every other token; a sequence of
only zero tokens has t_sim = 1 (all tokens are equal); a sequence with no counted token is NaN;
anisotropy is NaN in a batch of fewer than two sequences (no pair of sequences).

Domain: entries whose squares are normal numbers in the working precision (``tokens.working``:
|x| above about 1e-154 in float64, 1e-19 in float32, or 0). Below that, a token's squared norm
underflows and loses its digits, so its unit vector and the sequence's energy are inexact (a
cos_sim a little outside [-1, 1], a t_sim off); a network's activations do not come near it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.metrics.tokens import count, token_sum, valid_tokens, working
from oversmooth.utils.tensors import check_tensor


def similarity_measures(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> dict[str, Tensor]:
    """``cos_sim``, ``t_sim``, ``t_div`` and ``anisotropy`` of ``x: [batch, tokens, features]``,
    ``{name: [batch]}`` float64, from one pass over the tokens: one norm per token, the sum of the
    counted tokens' unit vectors (zero-norm tokens add nothing) and the sum of the counted tokens.
    Each measure's function takes the same pass, so a value is the same bits either way."""
    valid = valid_tokens(check_tensor(x, "states"), mask, exclude)
    xs = working(x)
    norms = torch.linalg.vector_norm(xs, dim=-1)
    n = count(valid)
    counted = valid & (norms > 0)
    unit_sums = token_sum(torch.where(counted, 1.0 / norms.clamp_min(torch.finfo(norms.dtype).tiny), 0.0), xs)
    # cos_sim: with S the sum of the unit tokens, (|S|^2 - n) / (n (n - 1))
    cosine = (unit_sums.pow(2).sum(dim=-1) - count(counted)) / (n * (n - 1)).clamp_min(1)
    cosine = torch.where(n == 1, 1.0, cosine)
    # t_sim: the mean token's share of the energy, n |xbar|^2 / sum_i |x_i|^2
    energy = norms.to(torch.float64).pow(2).mul(valid).sum(dim=1)
    mean_energy = token_sum(valid, xs).pow(2).sum(dim=-1) / n.clamp_min(1)
    share = torch.where(energy > 0, mean_energy / energy.clamp_min(torch.finfo(torch.float64).tiny), 1.0)
    share = torch.where(n == 1, 1.0, share.clamp(0.0, 1.0))
    share = torch.where(n == 0, torch.nan, share)
    # anisotropy: S_b . (S - S_b) / (n_b (N - n_b)) against every other sequence's tokens
    others, other_n = unit_sums.sum(dim=0) - unit_sums, n.sum() - n
    across = (unit_sums * others).sum(dim=-1) / (n * other_n).clamp_min(1)
    return {
        "cos_sim": torch.where(n == 0, torch.nan, cosine),
        "t_sim": share,
        "t_div": 1.0 - share,
        "anisotropy": torch.where((n == 0) | (other_n == 0), torch.nan, across),
    }


def cos_sim(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """Mean cosine similarity over distinct pairs of counted tokens, ``[batch]`` (float64).

    With unit tokens u_i and S = sum_i u_i: ``(|S|^2 - n) / (n (n - 1))``; the n x n matrix
    is never built. ``x: [batch, tokens, features]``, ``mask: [batch, tokens]``.

    >>> cos_sim(torch.tensor([[[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]]])).tolist()
    [0.3333333333333333]
    """
    return similarity_measures(x, mask, exclude)["cos_sim"]


def t_sim(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """Yu & Zhang's token similarity ``n |xbar|^2 / sum_i |x_i|^2`` in [0, 1], ``x: [batch, tokens,
    features]`` -> ``[batch]``.

    It is the share of energy in the mean token (the "DC" share of Wang et al.); 1 iff all
    counted tokens are equal.

    >>> t_sim(torch.tensor([[[1.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [-1.0, 0.0]]])).tolist()
    [1.0, 0.0]
    """
    return similarity_measures(x, mask, exclude)["t_sim"]


def t_div(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """``1 - t_sim``: the high-frequency share ``|X - 1 xbar^T|_F^2 / |X|_F^2``, ``x: [batch, tokens,
    features]`` -> ``[batch]``."""
    return similarity_measures(x, mask, exclude)["t_div"]


def anisotropy(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """Ethayarajh's anisotropy, per sequence, ``x: [batch, tokens, features]`` -> ``[batch]``
    (float64): the mean cosine between each counted token of the sequence and every counted token
    of the *other* sequences of the batch.

    Exact over all such pairs, O(tokens x features): with S_b the sum of sequence b's unit
    tokens and S their total, ``S_b . (S - S_b) / (n_b (N - n_b))``; with equal counts the mean
    over sequences is the mean over all cross-sequence pairs. Read it beside ``cos_sim``: what a
    sequence's tokens share beyond what every token shares is oversmoothing.

    >>> x = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 0.0]]])
    >>> anisotropy(x).tolist()  # sequence 0 vs 1: cosines 1, 1, 0, 0
    [0.5, 0.5]
    """
    return similarity_measures(x, mask, exclude)["anisotropy"]


def token_cosines(before: Tensor, after: Tensor) -> Tensor:
    """``cos(before_i, after_i)`` per token, ``[batch, tokens]`` float64 (a zero-norm token: 0);
    one dot product and two norms per token, in the states' working precision."""
    if check_tensor(before, "states before").shape != check_tensor(after, "states after").shape:
        raise UsageError(f"states {tuple(before.shape)} and {tuple(after.shape)} differ in shape")
    a, b = working(before), working(after)
    norms = (torch.linalg.vector_norm(a, dim=-1) * torch.linalg.vector_norm(b, dim=-1)).to(torch.float64)
    dots = torch.linalg.vecdot(a, b).to(torch.float64)
    return torch.where(norms > 0, dots / norms.clamp_min(torch.finfo(torch.float64).tiny), 0.0).clamp(-1.0, 1.0)


def _token_mean(values: Tensor, valid: Tensor) -> Tensor:
    """Mean of ``values [batch, tokens]`` over the counted tokens, NaN for a sequence with none."""
    n = count(valid)
    value = torch.where(valid, values, 0.0).sum(dim=1) / n.clamp_min(1)
    return torch.where(n == 0, torch.nan, value)


def block_influence(before: Tensor, after: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """ShortGPT's block influence ``1 - mean_i cos(before_i, after_i)`` per sequence ``[batch]``
    (float64), over counted tokens: 0 when a block leaves every token's direction as it was, 1
    when it turns each by 90 degrees, 2 when it flips each (Men et al. 2024, arXiv 2403.03853).
    A zero-norm token has cosine 0. ``before, after: [batch, tokens, features]`` -> ``[batch]``.

    >>> block_influence(torch.tensor([[[1.0, 0.0], [0.0, 1.0]]]), torch.tensor([[[2.0, 0.0], [1.0, 0.0]]])).tolist()
    [0.5]
    """
    cosine = token_cosines(before, after)
    return 1.0 - _token_mean(cosine, valid_tokens(before, mask, exclude))


def angular_distance(before: Tensor, after: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """Gromov et al.'s angular distance ``mean_i arccos(cos(before_i, after_i)) / pi`` in [0, 1]
    per sequence ``[batch]`` (arXiv 2403.17887; they read it between layers l and l + n).

    >>> angular_distance(torch.tensor([[[1.0, 0.0]]]), torch.tensor([[[0.0, 3.0]]])).tolist()
    [0.5]
    """
    angle = torch.arccos(token_cosines(before, after)) / math.pi
    return _token_mean(angle, valid_tokens(before, mask, exclude))
