"""Which tokens count: the valid-token mask, minus positions excluded on request (CLS, BOS)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from oversmooth.errors import NonFiniteError, UsageError
from oversmooth.utils.tensors import check_tensor


def valid_tokens(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> Tensor:
    """Boolean ``[batch, tokens]``: True where a token of ``x: [batch, tokens, ...]`` is counted.

    ``mask`` is True on real tokens (padding is never counted). ``exclude`` lists positions
    (negative ones count from the end of the padded length) to leave out, e.g. ``(0,)`` for CLS.

    >>> valid_tokens(torch.zeros(1, 4, 2), torch.tensor([[1, 1, 1, 0]]), exclude=(0,)).tolist()
    [[False, True, True, False]]
    """
    batch, n = check_tensor(x, "states", "[batch, tokens, ...]").shape[:2]
    if mask is None:
        valid = torch.ones(batch, n, dtype=torch.bool, device=x.device)
    else:
        if not isinstance(mask, Tensor):
            raise UsageError(
                f"mask is a {type(mask).__name__}; pass a torch tensor [batch, tokens] (True / 1 = real token)"
            )
        if tuple(mask.shape) != (batch, n):
            raise UsageError(
                f"mask has shape {tuple(mask.shape)} but the states have "
                f"{batch} sequences of {n} tokens: pass a [batch, tokens] mask"
            )
        if not mask.dtype == torch.bool and not bool(((mask == 0) | (mask == 1)).all()):
            raise UsageError(
                "mask holds values other than 0 and 1; pass True / 1 for real tokens, False / 0 for padding"
            )
        valid = mask.to(device=x.device, dtype=torch.bool).clone()
    for position in exclude:
        if not -n <= position < n:
            raise UsageError(f"cannot exclude position {position}: sequences have {n} tokens")
        valid[:, position] = False
    if exclude and not bool(valid.any()):
        raise UsageError(
            f"excluding positions {list(exclude)} leaves no token to measure in sequences of {n} "
            "tokens; exclude fewer positions"
        )
    return valid


def check_counted(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> None:
    """UsageError naming the first sequence of ``x`` with no token counted (``valid_tokens``): a
    mean over sequences would leave it out unsaid.

    >>> check_counted(torch.zeros(2, 3, 4), torch.tensor([[1, 1, 0], [0, 0, 0]]))
    Traceback (most recent call last):
    ...
    oversmooth.errors.UsageError: sequence 1 has no token to measure: its mask is all 0 (padding only); ...
    """
    counted = valid_tokens(x, mask, exclude).any(dim=1)
    if bool(counted.all()):
        return
    sequence = int((~counted).nonzero()[0])
    if mask is not None and not bool(mask[sequence].any()):
        why = "its mask is all 0 (padding only); drop the sequence or mark its real tokens 1 in the mask"
    else:
        why = f"positions {list(exclude)} are excluded and it has no other; exclude fewer positions or drop it"
    raise UsageError(f"sequence {sequence} has no token to measure: {why}")


def masked_float64(x: Tensor, valid: Tensor) -> Tensor:
    """``x`` in float64 with every token outside ``valid`` set to exactly zero."""
    return torch.where(valid[..., None], x.to(torch.float64), 0.0)


def working(x: Tensor) -> Tensor:
    """``x`` in its working precision: float32 and float64 stay as they are (sums over float32
    tokens are finished in float64), half precision (bfloat16, float16) becomes float64. No copy
    is made for float32 input: the mask is applied through per-token weights, so padded
    positions must merely be finite."""
    return x if x.dtype in (torch.float32, torch.float64) else x.double()


def token_sum(weights: Tensor, x: Tensor) -> Tensor:
    """``sum_i weights[b, i] x[b, i]`` as float64 ``[batch, features]`` (one batched matmul)."""
    return torch.bmm(weights.to(x.dtype)[:, None, :], x)[:, 0].to(torch.float64)


def count(valid: Tensor) -> Tensor:
    """Number of counted tokens per sequence, float64 ``[batch]``."""
    return valid.sum(dim=1).to(torch.float64)


def check_finite(x: Tensor, what: str) -> None:
    """NonFiniteError naming ``what`` and the first bad position when ``x: [batch, tokens, ...]``
    holds NaN or Inf (they would reach an eigensolver).

    >>> check_finite(torch.tensor([[[1.0], [float("nan")]]]), "layer 3 states")
    Traceback (most recent call last):
    ...
    oversmooth.errors.NonFiniteError: layer 3 states (first at sequence 0, token 1) hold NaN or Inf; check the ...
    """
    if bool(x.sum().isfinite()):  # one read, no [batch, tokens, ...] mask: 14x faster than isfinite
        return
    finite = torch.isfinite(x)  # a non-finite sum is NaN / Inf in x, or only an overflow of the sum
    if not bool(finite.all()):
        sequence, token = (int(i) for i in (~finite).nonzero()[0][:2])
        raise NonFiniteError(
            f"{what} (first at sequence {sequence}, token {token})",
            "check the model's weights and inputs, or the dtype (float16 overflows)",
        )
