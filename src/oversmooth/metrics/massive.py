"""Massive activations and the first token: massive_ratio, first_token_norm, cos_sim_outlier_free,
and where the largest activation sits (``massive_location``).

The massive-activation measures read **every real token** (padding never), whatever ``exclude``
says: a causal LM's first token is left out of the similarity measures because it is the sink,
and it is what these measure. ``cos_sim_outlier_free`` honours ``exclude`` and also drops
position 0. "The first token" is position 0 of the batch (inputs are right-padded); a sequence
whose position 0 is padding has no first token (NaN).

Conventions (documented, tested): a ratio of 0 to 0 is 1 (nothing stands out), of x > 0 to 0 is
inf; a sequence with no real token is NaN. Medians are numpy's (the mean of the two middle
values when the count is even).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from oversmooth.metrics.similarity import cos_sim
from oversmooth.metrics.tokens import valid_tokens, working
from oversmooth.utils.tensors import check_tensor

#: a channel is massive when its largest |h| exceeds this many times the sequence's median |h|
MASSIVE_FACTOR = 100.0
#: the columns of ``massive_location``
LOCATION_COLUMNS = ("massive_max", "massive_token", "massive_channel", "massive_share")


def abs_medians(x: Tensor, valid: Tensor) -> Tensor:
    """Per sequence, the median |h| over the entries of its ``valid`` tokens, float64 ``[batch]``
    (NaN with none). One selection per sequence (``kthvalue``, O(entries)), no sort."""
    xs = working(x)
    out = torch.full((x.shape[0],), torch.nan, dtype=torch.float64)
    for b in range(x.shape[0]):
        entries = xs[b][valid[b]].abs().flatten()
        m = entries.numel()
        if m == 0:
            continue
        low = entries.kthvalue((m + 1) // 2).values  # the lower middle (1-based rank)
        high = low
        if m % 2 == 0 and int((entries <= low).sum()) <= m // 2:  # the upper middle is the next value up
            high = entries[entries > low].min()
        out[b] = (low.double() + high.double()) / 2
    return out


def _row_medians(values: Tensor, valid: Tensor) -> Tensor:
    """Median of ``values [batch, n]`` over the ``valid`` ones of each row, NaN with none."""
    n = values.shape[1]
    ordered = torch.where(valid, values, torch.inf).sort(dim=1).values
    m = valid.sum(dim=1, keepdim=True)
    low = ordered.gather(1, ((m - 1) // 2).clamp(0, n - 1))
    high = ordered.gather(1, (m // 2).clamp(0, n - 1))
    return torch.where(m[:, 0] == 0, torch.nan, ((low + high) / 2)[:, 0])


def _ratio(top: Tensor, scale: Tensor) -> Tensor:
    """``top / scale`` with 0 / 0 = 1 and x / 0 = inf; NaN where ``scale`` is NaN."""
    value = torch.where(scale > 0, top / scale.clamp_min(torch.finfo(torch.float64).tiny), 1.0)
    value = torch.where((scale == 0) & (top > 0), torch.inf, value)
    return torch.where(scale.isnan(), torch.nan, value)


def massive_ratio(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """Sun et al.'s massive activations ("Massive Activations in Large Language Models", 2024, arXiv
    2402.17762): the largest |h| over the entries of a sequence's real tokens divided by their median
    |h|, ``x: [batch, tokens, features]`` -> ``[batch]`` float64. They call an activation massive when
    it exceeds 100 and about 1 000 times the median. ``exclude`` is ignored (module docstring);
    ``massive_location`` says where the largest one sits.

    >>> massive_ratio(torch.tensor([[[1.0, -2.0], [3.0, 1.0], [2.0, 400.0]]])).tolist()  # 400 / 2
    [200.0]
    """
    valid = valid_tokens(check_tensor(x, "states"), mask)
    top = torch.where(valid[..., None], working(x).abs(), 0.0).flatten(1).amax(dim=1).double()
    return _ratio(top, abs_medians(x, valid))


def first_token_norm(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """``|h_first| / median_t |h_t|`` over the real tokens t (the first one included), the massive
    norm of the first token (the BOS of Queipo-de-Llano et al., "Attention Sinks and Compression
    Valleys in LLMs are Two Sides of the Same Coin", 2025, arXiv 2510.06477), ``x: [batch, tokens,
    features]`` -> ``[batch]`` float64. ``exclude`` is ignored; NaN where position 0 is padding.

    >>> first_token_norm(torch.tensor([[[30.0, 40.0], [1.0, 0.0], [0.0, 2.0], [3.0, 4.0]]])).tolist()
    [14.285714285714286]
    """
    valid = valid_tokens(check_tensor(x, "states"), mask)
    norms = torch.linalg.vector_norm(working(x), dim=-1).double()
    value = _ratio(norms[:, 0], _row_medians(norms, valid))
    return torch.where(valid[:, 0], value, torch.nan)


def massive_channels(x: Tensor, mask: Tensor | None = None, factor: float = MASSIVE_FACTOR) -> Tensor:
    """``[batch, features]`` bool: the channels whose largest |h| over a sequence's real tokens (the
    first one included) exceeds ``factor`` times the median |h| of those tokens' entries (with a zero
    median, every channel holding a nonzero entry)."""
    valid = valid_tokens(check_tensor(x, "states"), mask)
    channel_max = torch.where(valid[..., None], working(x).abs(), 0.0).amax(dim=1).double()
    return channel_max > factor * abs_medians(x, valid)[:, None]


def cos_sim_outlier_free(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """``cos_sim`` with the first token and the massive channels (``massive_channels``: max |h| > 100 x
    the sequence's median |h|) removed, the rogue dimensions of Timkey & van Schijndel ("All Bark and
    No Bite: Rogue Dimensions in Transformer Language Models Obscure Representational Quality",
    EMNLP 2021), ``x: [batch, tokens, features]`` -> ``[batch]`` float64. Tokens: the counted ones
    (``mask`` and ``exclude``) less position 0; NaN with none left, 1 with one.

    >>> x = torch.tensor([[[9.0, 0.0, 0.0], [1.0, 1.0, 0.0], [-1.0, 1.0, 0.0]]])
    >>> x[0, 1, 2] = x[0, 2, 2] = 1e4  # a massive channel that all tokens but the first share
    >>> cos_sim(x, exclude=(0,)).item() > 0.99, abs(cos_sim_outlier_free(x).item()) < 1e-6
    (True, True)
    """
    keep = ~massive_channels(x, mask)
    counted = valid_tokens(x, mask, exclude).clone()
    counted[:, 0] = False
    return cos_sim(x * keep[:, None, :].to(x.dtype), counted)


def massive_location(x: Tensor, mask: Tensor | None = None) -> dict[str, float]:
    """Where the batch's largest activation sits, over every real token: ``massive_max`` (its |h|),
    ``massive_token`` and ``massive_channel`` (its position and channel), and ``massive_share``,
    the share of sequences whose own largest |h| sits at that same token and channel. NaN for
    every column when no token is real. ``x: [batch, tokens, features]``.

    >>> x = torch.zeros(2, 3, 4)
    >>> x[0, 0, 2], x[1, 0, 2], x[1, 1, 1] = 50.0, 7.0, -9.0
    >>> massive_location(x)
    {'massive_max': 50.0, 'massive_token': 0, 'massive_channel': 2, 'massive_share': 0.5}
    """
    valid = valid_tokens(check_tensor(x, "states"), mask)
    has = valid.any(dim=1)
    if not bool(has.any()):
        return dict.fromkeys(LOCATION_COLUMNS, float("nan"))
    values, index = torch.where(valid[..., None], working(x).abs(), -1.0).flatten(1).max(dim=1)
    tokens, channels = index // x.shape[2], index % x.shape[2]
    best = int(torch.where(has, values, -torch.inf).argmax())
    token, channel = int(tokens[best]), int(channels[best])
    here = has & (tokens == token) & (channels == channel)
    return {
        "massive_max": float(values[best]),
        "massive_token": token,
        "massive_channel": channel,
        "massive_share": int(here.sum()) / int(has.sum()),
    }
