"""The largest eigenvalue of a batch of symmetric PSD matrices, by Lanczos with a checked error.

A full ``eigvalsh`` of an m x m Gram matrix costs O(m^3) in a memory-bound tridiagonalisation;
the stable rank needs only the top eigenvalue. Each Lanczos step is one batched matrix-vector
product. The top Ritz value theta never exceeds lambda_1 (Rayleigh-Ritz) and lies within the
Ritz residual r = ``beta_k |s_k|`` of an eigenvalue. Given ``second`` with lambda_2 <= second <=
lambda_1 (for X^T X = C^T C + n xbar xbar^T, interlacing gives lambda_1(C^T C)): a theta below
it is not lambda_1 yet, and above it by more than r the error is at most r^2 / (theta - second).
A matrix whose error bound is not below ``tol * theta`` after ``steps`` steps gets a full
``eigvalsh`` instead.
"""

from __future__ import annotations

import torch
from torch import Tensor


def top_eigenvalue(
    gram: Tensor, start: Tensor | None = None, second: Tensor | None = None, steps: int = 8, tol: float = 1e-12
) -> Tensor:
    """``lambda_max`` of each symmetric PSD ``gram: [batch, m, m]`` (float64), ``[batch]``.

    ``start: [batch, m]`` is the first Krylov vector (a guess at the top eigenvector; a fixed
    pseudo-random one is mixed in); ``second: [batch]``, if known, lies in [lambda_2, lambda_1].

    >>> g = torch.diag(torch.tensor([1.0, 5.0, 2.0], dtype=torch.float64))[None]
    >>> round(top_eigenvalue(g).item(), 12)
    5.0
    """
    batch, m, _ = gram.shape
    tiny = torch.finfo(gram.dtype).tiny
    steps = min(steps, m)
    fixed = torch.randn(m, generator=torch.Generator().manual_seed(0), dtype=gram.dtype).to(gram.device)
    q = fixed / fixed.norm()
    if start is not None:  # a pseudo-random 1 % keeps the guess from sitting in an invariant subspace
        q = start.to(gram.dtype) / start.norm(dim=-1, keepdim=True).clamp_min(tiny) + 0.01 * q
    q = q.expand(batch, m) / q.norm(dim=-1, keepdim=True)
    basis = gram.new_zeros(batch, steps, m)  # orthonormal Krylov basis, one row per step
    alpha, beta = gram.new_zeros(batch, steps), gram.new_zeros(batch, steps)
    for j in range(steps):
        basis[:, j] = q
        w = (gram @ q[..., None])[..., 0]
        alpha[:, j] = (q * w).sum(-1)
        for _ in range(2):  # full re-orthogonalisation, twice is enough
            w = w - (basis[:, : j + 1].transpose(1, 2) @ (basis[:, : j + 1] @ w[..., None]))[..., 0]
        beta[:, j] = w.norm(dim=-1)
        q = w / beta[:, j, None].clamp_min(tiny)
        if j + 1 == steps or (j + 1) % 2 == 0:
            theta, residual = _ritz(alpha[:, : j + 1], beta[:, : j + 1])
            bound = residual
            if second is not None:  # lambda_1 >= second too, so a theta below it is not lambda_1 yet
                gap = theta - second
                bound = torch.where(
                    gap > residual,
                    torch.minimum(residual, residual.square() / gap.clamp_min(tiny)),
                    torch.where(gap >= -tol * theta.abs(), residual, torch.inf),
                )
            converged = bound <= tol * theta.abs().clamp_min(tiny)
            if bool(converged.all()):
                return theta
    theta = theta.clone()
    theta[~converged] = torch.linalg.eigvalsh(gram[~converged])[:, -1]
    return theta


def _ritz(alpha: Tensor, beta: Tensor) -> tuple[Tensor, Tensor]:
    """The top Ritz value of the Lanczos tridiagonal ``[batch, k, k]`` and its residual ``beta_k |s_k|``."""
    tridiagonal = torch.diag_embed(alpha) + torch.diag_embed(beta[:, :-1], 1) + torch.diag_embed(beta[:, :-1], -1)
    ritz, vectors = torch.linalg.eigh(tridiagonal)
    return ritz[:, -1], beta[:, -1] * vectors[:, -1, -1].abs()
