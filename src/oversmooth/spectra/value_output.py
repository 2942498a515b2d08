"""Eigenvalues of the effective value-output matrix H_eff = diag(gamma) W_V W_O (Dovonon et al. 2025, Sec. 5).

Row-vector convention: a token row ``x: [d]`` maps to ``x @ W_V @ W_O`` with ``W_V: [d, d_v]``
and ``W_O: [d_v, d]`` (for ``nn.Linear`` layers: ``W_V = value.weight.T``,
``W_O = output.weight.T``). ``gamma: [d]`` is the weight of a pre-LayerNorm feeding the values
(LN(x) ~ x diag(gamma) up to centring and scale), or None.

The d x d product has rank <= d_v; its non-zero eigenvalues are those of the small
``[d_v, d_v]`` matrix ``W_O diag(gamma) W_V`` (eig(MN) = eig(NM) away from zero), which is what we
decompose. Per head h the blocks are ``W_V[:, h*d_h:(h+1)*d_h]`` and ``W_O[h*d_h:(h+1)*d_h, :]``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.utils.tensors import check_tensor


def effective_matrix(w_v: Tensor, w_o: Tensor, gamma: Tensor | None = None) -> Tensor:
    """The full ``[d, d]`` matrix ``diag(gamma) W_V W_O`` (what ``X <- X + A X H`` multiplies by).

    >>> effective_matrix(torch.eye(2), 2 * torch.eye(2), torch.tensor([1.0, -1.0])).tolist()
    [[2.0, 0.0], [-0.0, -2.0]]
    """
    _check_shapes(w_v, w_o, gamma)
    product = w_v @ w_o
    return product if gamma is None else gamma.to(product.dtype)[:, None] * product


def value_output_eigenvalues(w_v: Tensor, w_o: Tensor, gamma: Tensor | None = None, heads: int | None = None) -> Tensor:
    """Non-zero eigenvalues of ``diag(gamma) W_V W_O``, complex.

    ``heads=None``: the whole layer, shape ``[d_v]``. ``heads=H``: per head, ``[H, d_v // H]``,
    from ``W_O^h diag(gamma) W_V^h``. Computed in float64.

    >>> w_v = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    >>> value_output_eigenvalues(w_v, torch.tensor([[2.0, 0, 0], [0, -3.0, 0]])).real.tolist()
    [2.0, -3.0]
    """
    _check_shapes(w_v, w_o, gamma)
    w_v, w_o = w_v.detach().double(), w_o.detach().double()
    if gamma is not None:
        w_v = gamma.detach().double()[:, None] * w_v
    d_v = w_v.shape[1]
    if heads is None:
        return torch.linalg.eigvals(w_o @ w_v)
    if heads < 1 or d_v % heads:
        raise UsageError(
            f"heads={heads} does not divide the value width {d_v}: pass the model's number of attention heads"
        )
    d_h = d_v // heads
    blocks_v = w_v.reshape(w_v.shape[0], heads, d_h).permute(1, 0, 2)  # [H, d, d_h]
    blocks_o = w_o.reshape(heads, d_h, w_o.shape[1])  # [H, d_h, d]
    return torch.linalg.eigvals(blocks_o @ blocks_v)


def _check_shapes(w_v: Tensor, w_o: Tensor, gamma: Tensor | None) -> None:
    check_tensor(w_v, "the weights W_V", "[d, d_v]")
    check_tensor(w_o, "the weights W_O", "[d_v, d]")
    if gamma is not None:
        check_tensor(gamma, "the LayerNorm weights gamma", "[d]")
    if w_v.dim() != 2 or w_o.dim() != 2 or w_v.shape[1] != w_o.shape[0] or w_o.shape[1] != w_v.shape[0]:
        raise UsageError(
            f"W_V {tuple(w_v.shape)} and W_O {tuple(w_o.shape)} do not chain: "
            "expected W_V [d, d_v] and W_O [d_v, d] (transpose nn.Linear weights)"
        )
    if gamma is not None and tuple(gamma.shape) != (w_v.shape[0],):
        raise UsageError(
            f"LayerNorm weight shape {tuple(gamma.shape)} does not match d="
            f"{w_v.shape[0]}: pass the pre-LN weight of this layer"
        )
