"""Predicted outcome of the linear dynamics X <- X + A X H (Dovonon et al. 2025, Sec. 4).

(Without the residual, X <- A X H, drop the 1 from every mu below.)

With column-stacking vec, vec(X + A X H) = (I + H^T (x) A) vec(X); its eigenvalues are
``mu_ij = 1 + lambda^A_i lambda^H_j`` with eigen-matrices ``v_i u_j^T`` (A v_i = lambda^A_i v_i,
u_j^T H = lambda^H_j u_j^T). After many layers the pairs of largest |mu| (the *dominant set*,
|mu| within ``rtol`` of the maximum) carry X. A row-stochastic A has lambda^A = 1 with
eigenvector 1 (all tokens equal); we assume it is simple, which holds for softmax attention
(positive entries, Perron-Frobenius) and for causal softmax attention.

Outcome rules, for a generic starting X:

- ``mode``: ``smoothing`` (input convergence: tokens converge to one point, t_sim -> 1) when
  every dominant pair has lambda^A = 1; ``sharpening`` when none has (a high-frequency mode of A
  wins); ``mixed`` when both kinds tie.
- ``angle_converges``: every dominant mu is the same real number, so X / ||X|| settles
  (up to sign when mu < 0). ``rotates``: a non-real mu dominates (a conjugate pair), so the
  direction keeps turning.
- ``limit_rank``: min(#distinct A-indices, #distinct H-indices) over the dominant set, the rank
  of the limit of X / ||X||; ``rank_collapse`` when it is 1 (in particular when one |mu| strictly
  dominates).
- ``separation``: the largest |mu| outside the dominant set over the dominant |mu| (< 1); the
  prediction holds after about log(eps) / log(separation) layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy
import torch
from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.utils.tensors import check_tensor

MODES = ("smoothing", "sharpening", "mixed")


@dataclass(frozen=True)
class DynamicsPrediction:
    """The dominant eigen-pair of I + H^T (x) A and what it implies (see module docstring)."""

    mu: Tensor  # [n_A, n_H] complex, 1 + lambda^A_i lambda^H_j
    dominant: complex  # dominant mu (of a conjugate pair, the one with Im >= 0)
    dominant_lambda_a: complex
    dominant_lambda_h: complex
    dominant_pairs: tuple[tuple[int, int], ...]  # (i, j) indices of the dominant set
    mode: str  # one of MODES
    angle_converges: bool
    rotates: bool
    limit_rank: int
    separation: float

    @property
    def rank_collapse(self) -> bool:
        return self.limit_rank == 1

    def describe(self) -> str:
        """One line, e.g. ``'smoothing, angle convergence, rank collapse'``."""
        parts = [
            self.mode,
            "angle convergence" if self.angle_converges else "rotation" if self.rotates else "no angle convergence",
        ]
        parts.append("rank collapse" if self.rank_collapse else f"limit rank {self.limit_rank}")
        return ", ".join(parts)

    def as_dict(self) -> dict:
        return {
            "mode": self.mode,
            "dominant_mu_real": self.dominant.real,
            "dominant_mu_imag": self.dominant.imag,
            "dominant_lambda_a_real": self.dominant_lambda_a.real,
            "dominant_lambda_a_imag": self.dominant_lambda_a.imag,
            "dominant_lambda_h_real": self.dominant_lambda_h.real,
            "dominant_lambda_h_imag": self.dominant_lambda_h.imag,
            "angle_converges": self.angle_converges,
            "rotates": self.rotates,
            "limit_rank": self.limit_rank,
            "rank_collapse": self.rank_collapse,
            "separation": self.separation,
        }


def mode_eigenvalues(lambda_a: Tensor, lambda_h: Tensor, residual: bool = True) -> Tensor:
    """``mu[i, j] = 1 + lambda_a[i] * lambda_h[j]`` (without the 1 if not ``residual``),
    complex128 ``[n_A, n_H]``.

    >>> mode_eigenvalues(torch.tensor([1.0, 0.5]), torch.tensor([-1.0])).real.flatten().tolist()
    [0.0, 0.5]
    """
    a = lambda_a.detach().to(torch.complex128).flatten()
    h = lambda_h.detach().to(torch.complex128).flatten()
    return int(residual) + a[:, None] * h[None, :]


def attention_eigenvalues(attention: Tensor, atol: float = 1e-6) -> Tensor:
    """Eigenvalues (complex128 ``[..., n]``) of row-stochastic ``attention: [..., n, n]``."""
    check_tensor(attention, "attention maps", "[..., n, n]")
    if attention.dim() < 2 or attention.shape[-1] != attention.shape[-2]:
        raise UsageError(
            f"attention shape {tuple(attention.shape)} is not [..., n, n]: pass "
            "square attention maps of one sequence (valid tokens only)"
        )
    rows = attention.detach().double().sum(dim=-1)
    if not torch.allclose(rows, torch.ones_like(rows), atol=atol):
        raise UsageError(
            "attention rows do not sum to 1: pass the softmax attention restricted to valid (unpadded) tokens"
        )
    attention = attention.detach().double()
    try:
        return torch.linalg.eigvals(attention)
    except torch.linalg.LinAlgError:
        # torch's LAPACK geev can fail to converge on near-uniform maps with a few distinct rows
        # (eigenvalue 0 of multiplicity ~n, as in collapsed deep post-norm layers); numpy's converges
        values = numpy.linalg.eigvals(attention.cpu().numpy()).astype(numpy.complex128)
        return torch.from_numpy(values).to(attention.device)


def constant_mode(lambda_a: Tensor, atol: float = 1e-6) -> Tensor:
    """Index ``[...]`` of the eigenvalue closest to 1 (the all-tokens-equal mode) in each row
    of ``lambda_a: [..., n]``; UsageError when one is farther than ``atol`` from 1.

    >>> constant_mode(torch.tensor([[0.2, 1.0, -0.5], [1.0, 0.999, 0.3]])).tolist()
    [1, 0]
    """
    distance = (lambda_a.detach().to(torch.complex128) - 1).abs()
    one = distance.argmin(dim=-1)
    if bool((distance.gather(-1, one.unsqueeze(-1)) > atol).any()):
        raise UsageError("no attention eigenvalue equals 1: A must be row-stochastic (softmax rows summing to 1)")
    return one


def predict_dynamics(
    attention: Tensor, lambda_h: Tensor, *, residual: bool = True, rtol: float = 1e-6, atol: float = 1e-6
) -> DynamicsPrediction:
    """Predict X <- X + A X H from ``attention`` (``[n, n]`` row-stochastic A, or its
    eigenvalues ``[n]``) and the eigenvalues ``lambda_h: [k]`` of H. ``residual=False``
    predicts X <- A X H instead (mu = lambda_A lambda_H).

    >>> p = predict_dynamics(torch.tensor([[0.75, 0.25], [0.25, 0.75]]), torch.tensor([0.5, 0.2]))
    >>> p.mode, p.dominant, p.describe()
    ('smoothing', (1.5+0j), 'smoothing, angle convergence, rank collapse')
    """
    check_tensor(lambda_h, "lambda_h (the eigenvalues of H)", "[k, ...]")
    lambda_a = (
        attention_eigenvalues(attention, atol)
        if check_tensor(attention, "attention (A [n, n], or its eigenvalues [n])", "[n, ...]").dim() == 2
        else attention.detach().to(torch.complex128).flatten()
    )
    one = int(constant_mode(lambda_a, atol))
    lambda_h = lambda_h.detach().to(torch.complex128).flatten()
    mu = mode_eigenvalues(lambda_a, lambda_h, residual)
    size = mu.abs()
    top = float(size.max())
    dominant_mask = size >= (1 - rtol) * top
    pairs = tuple((int(i), int(j)) for i, j in dominant_mask.nonzero().tolist())
    rows = {i for i, _ in pairs}
    on_mean_mode = [i == one for i, _ in pairs]
    mode = "smoothing" if all(on_mean_mode) else "sharpening" if not any(on_mean_mode) else "mixed"
    values = mu[dominant_mask]
    scale = max(top, 1e-300)
    real = bool((values.imag.abs() <= rtol * scale).all())
    same = bool(((values - values[0]).abs() <= rtol * scale).all())
    i, j = max(pairs, key=lambda pair: float(mu[pair].imag))  # Im >= 0 of a conjugate pair
    outside = size[~dominant_mask]
    return DynamicsPrediction(
        mu=mu,
        dominant=complex(mu[i, j]),
        dominant_lambda_a=complex(lambda_a[i]),
        dominant_lambda_h=complex(lambda_h[j]),
        dominant_pairs=pairs,
        mode=mode,
        angle_converges=real and same,
        rotates=not real,
        limit_rank=min(len(rows), len({j for _, j in pairs})),
        separation=float(outside.max()) / scale if outside.numel() else 0.0,
    )
