"""The mean token, over valid tokens, or over each token's causal prefix."""

from __future__ import annotations

import torch
from torch import Tensor

from oversmooth.errors import UsageError


def broadcast_mask(mask: Tensor, x: Tensor) -> Tensor:
    """Reshape a ``[batch, tokens]`` mask to broadcast against ``x: [batch, ..., tokens, d]``."""
    if mask.dim() != 2 or mask.shape[0] != x.shape[0] or mask.shape[1] != x.shape[-2]:
        raise UsageError(f"mask shape {tuple(mask.shape)} does not fit x {tuple(x.shape)}: "
                         "expected [batch, tokens]")
    return mask.reshape(mask.shape[0], *([1] * (x.dim() - 3)), mask.shape[1], 1).to(x.dtype)


def token_mean(x: Tensor, mask: Tensor | None = None, causal: bool = False) -> Tensor:
    """Mean over the token axis (-2) of ``x: [batch, ..., tokens, d]``.

    Non-causal: ``[batch, ..., 1, d]``, the mean of the valid tokens (Pi_1 X).
    Causal: ``[batch, ..., tokens, d]``, row t the mean of valid tokens s <= t, so nothing
    from the future leaks. ``mask: [batch, tokens]`` is True on real tokens.

    >>> x = torch.tensor([[[1.0], [3.0], [8.0]]])
    >>> token_mean(x).flatten().tolist(), token_mean(x, causal=True).flatten().tolist()
    ([4.0], [1.0, 2.0, 4.0])
    """
    if mask is None:
        if not causal:  # a sum: its backward broadcasts a view, where mean's divides a full-size tensor
            return x.sum(dim=-2, keepdim=True) / x.shape[-2]
        counts = torch.arange(1, x.shape[-2] + 1, device=x.device, dtype=x.dtype)
        return x.cumsum(dim=-2) / counts[:, None]
    m = broadcast_mask(mask, x)
    if not causal:
        return (x * m).sum(dim=-2, keepdim=True) / m.sum(dim=-2, keepdim=True).clamp_min(1)
    return (x * m).cumsum(dim=-2) / m.cumsum(dim=-2).clamp_min(1)
