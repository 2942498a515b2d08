"""Random attention matrices and value-output matrices with a chosen spectrum (float64)."""

from __future__ import annotations

import torch
from torch import Tensor

from oversmooth.errors import UsageError


def random_attention(
    tokens: int, generator: torch.Generator, *, batch: int = 1, temperature: float | Tensor = 1.0
) -> Tensor:
    """``softmax(temperature * G)`` row-wise, G standard normal: ``[batch, tokens, tokens]``.

    Higher temperature gives peakier rows and a larger |lambda_2|. ``temperature`` may be a
    ``[batch]`` tensor.

    >>> a = random_attention(4, torch.Generator().manual_seed(0), batch=2)
    >>> a.shape, bool(torch.allclose(a.sum(-1), torch.ones(2, 4, dtype=torch.float64)))
    (torch.Size([2, 4, 4]), True)
    """
    logits = torch.randn(batch, tokens, tokens, generator=generator, dtype=torch.float64)
    scale = torch.as_tensor(temperature, dtype=torch.float64).reshape(-1, 1, 1)
    return torch.softmax(scale * logits, dim=-1)


def softmax_attention(x: Tensor, query_key: Tensor) -> Tensor:
    """Data-dependent attention ``softmax(X M X^T / sqrt(d))`` for ``x: [B, n, d]``,
    ``query_key = W_Q W_K^T: [d, d]`` or ``[B, d, d]``; returns ``[B, n, n]``."""
    logits = x @ query_key @ x.transpose(-1, -2) / x.shape[-1] ** 0.5
    return torch.softmax(logits, dim=-1)


def matrix_with_spectrum(eigenvalues: Tensor, generator: torch.Generator, *, orthogonal: bool = False) -> Tensor:
    """A real ``[d, d]`` matrix whose eigenvalues are ``eigenvalues: [d]`` (complex ones must come
    in conjugate pairs): ``P B P^-1`` with B block-diagonal (a 2x2 rotation-scaling block
    ``[[a, b], [-b, a]]`` per pair a +- ib) and P random (orthogonal if asked; else well
    conditioned, I + 0.3 G / sqrt(d)).

    >>> m = matrix_with_spectrum(torch.tensor([0.5, 0.2 + 0.1j, 0.2 - 0.1j]), torch.Generator().manual_seed(0))
    >>> sorted(round(v, 6) for v in torch.linalg.eigvals(m).real.tolist())
    [0.2, 0.2, 0.5]
    """
    eig = eigenvalues.to(torch.complex128).flatten()
    d = eig.numel()
    block = torch.zeros(d, d, dtype=torch.float64)
    used = torch.zeros(d, dtype=torch.bool)
    k = 0
    for i in range(d):
        if used[i]:
            continue
        value = eig[i]
        used[i] = True
        if abs(float(value.imag)) <= 1e-12:
            block[k, k] = value.real
            k += 1
            continue
        partner = [j for j in range(d) if not used[j] and abs(complex(eig[j] - value.conj())) <= 1e-9]
        if not partner:
            raise UsageError(
                f"eigenvalue {complex(value)} has no conjugate partner: a real matrix "
                "needs complex eigenvalues in conjugate pairs"
            )
        used[partner[0]] = True
        block[k : k + 2, k : k + 2] = torch.tensor([[value.real, value.imag], [-value.imag, value.real]])
        k += 2
    gaussian = torch.randn(d, d, generator=generator, dtype=torch.float64)
    if orthogonal:
        basis, _ = torch.linalg.qr(gaussian)
        return basis @ block @ basis.T
    basis = torch.eye(d, dtype=torch.float64) + 0.3 * gaussian / d**0.5
    return basis @ block @ torch.linalg.inv(basis)
