"""The mean token, over valid tokens, or over each token's causal prefix (also across calls)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from oversmooth.errors import UsageError


def broadcast_mask(mask: Tensor, x: Tensor) -> Tensor:
    """Reshape a ``[batch, tokens]`` mask to broadcast against ``x: [batch, ..., tokens, d]``."""
    if mask.dim() != 2 or mask.shape[0] != x.shape[0] or mask.shape[1] != x.shape[-2]:
        raise UsageError(f"mask shape {tuple(mask.shape)} does not fit x {tuple(x.shape)}: expected [batch, tokens]")
    return mask.reshape(mask.shape[0], *([1] * (x.dim() - 3)), mask.shape[1], 1).to(x.dtype)


@dataclass(frozen=True)
class PrefixSums:
    """What a causal prefix mean carries from one call to the next (incremental decoding with a KV
    cache): ``total [batch, ..., 1, d]``, the sum of the valid tokens seen so far, ``count
    [batch, ..., 1, 1]`` how many there were, and ``tokens`` the positions seen (valid or not)."""

    total: Tensor
    count: Tensor
    tokens: int

    def reorder(self, rows: Tensor) -> PrefixSums:
        """The same sums for the batch rows ``rows`` (beam search reorders its cache so)."""
        return PrefixSums(self.total[rows], self.count[rows], self.tokens)


def prefix_mean(x: Tensor, mask: Tensor | None = None, carry: PrefixSums | None = None) -> tuple[Tensor, PrefixSums]:
    """Row t of ``x: [batch, ..., tokens, d]`` -> the mean of the valid tokens s <= t, counting the
    earlier calls' tokens in ``carry``; returns the means ``[batch, ..., tokens, d]`` and the carry
    for the next call. ``mask: [batch, tokens]`` (this call's tokens) is True on real tokens.

    >>> x = torch.tensor([[[1.0], [3.0], [8.0]]])
    >>> whole = prefix_mean(x)[0]
    >>> first, carry = prefix_mean(x[:, :2])
    >>> torch.equal(torch.cat([first, prefix_mean(x[:, 2:], carry=carry)[0]], dim=1), whole)
    True
    """
    weights = torch.ones_like(x[..., :1]) if mask is None else broadcast_mask(mask, x)
    sums, counts = (x * weights).cumsum(dim=-2), weights.cumsum(dim=-2)
    if carry is not None:
        sums, counts = sums + carry.total, counts + carry.count
    seen = PrefixSums(sums[..., -1:, :], counts[..., -1:, :], x.shape[-2] + (carry.tokens if carry else 0))
    return sums / counts.clamp_min(1), seen


def token_mean(x: Tensor, mask: Tensor | None = None, causal: bool = False) -> Tensor:
    """Mean over the token axis (-2) of ``x: [batch, ..., tokens, d]``.

    Non-causal: ``[batch, ..., 1, d]``, the mean of the valid tokens (Pi_1 X).
    Causal: ``[batch, ..., tokens, d]``, row t the mean of valid tokens s <= t, so nothing
    from the future leaks (``prefix_mean``). ``mask: [batch, tokens]`` is True on real tokens.

    >>> x = torch.tensor([[[1.0], [3.0], [8.0]]])
    >>> token_mean(x).flatten().tolist(), token_mean(x, causal=True).flatten().tolist()
    ([4.0], [1.0, 2.0, 4.0])
    """
    if causal:
        return prefix_mean(x, mask)[0]
    if mask is None:
        return x.sum(dim=-2, keepdim=True) / x.shape[-2]  # a sum: its backward broadcasts a view
    m = broadcast_mask(mask, x)
    return (x * m).sum(dim=-2, keepdim=True) / m.sum(dim=-2, keepdim=True).clamp_min(1)
