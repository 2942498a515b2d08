"""Smoothing / sharpening verdict of one layer: which update mode of X <- X + A X H grows fastest.

Dovonon, Bronstein & Kusner, "Setting the Record Straight on Transformer Oversmoothing" (TMLR
2025), eigen-analysis of the simplified layer X <- X + A X H: with column-stacking vec the update
is I + H^T (x) A, with eigenvalues mu_ij = 1 + lambda^A_i lambda^H_j and eigen-matrices
v_i u_j^T. A row-stochastic A has lambda^A_1 = 1 with v_1 = 1 (all tokens equal), so after many
layers X follows the largest |mu|, and the verdict compares two growth rates:

- constant mode  ``c = max_j |1 + lambda^H_j|``                 (lambda^A_1 = 1)
- other modes    ``o = max_{i >= 2, j} |1 + lambda^A_i lambda^H_j|``

``smoothing`` if c > o (1 + tolerance), ``sharpening`` if o > c (1 + tolerance), else ``mixed``;
``tolerance`` is relative, ``TOLERANCE`` = 1e-3 by default. Magnitudes decide, not the signs of
lambda^H: H eigenvalues {0.1, -1.9} with lambda^A_2 = 0.9 give c = 1.1 > o = 1.09, smoothing.

Multi-head layers: head h has its own measured A_h and H_h = W_V^h W_O^h, whose lambda^H are the
d_h eigenvalues of W_O^h diag(gamma) W_V^h (its d - d_h zero eigenvalues give mu = 1 for every A
mode alike and are left out). Each head gets c_h, o_h and its own verdict; the layer compares
c = max_h c_h with o = max_h o_h, i.e. whichever mode grows fastest anywhere in the layer. (The
sum over heads is not one Kronecker product, so this is the paper's single-head result read per
head.)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.spectra.dynamics import attention_eigenvalues, constant_mode

VERDICTS = ("smoothing", "sharpening", "mixed")
TOLERANCE = 1e-3


@dataclass(frozen=True)
class DynamicsVerdict:
    """One layer on one sequence (see module docstring); ``head_*`` have one entry per head."""

    verdict: str  # one of VERDICTS, from c and o
    c: float  # max_h c_h, growth of the constant (all tokens equal) mode
    o: float  # max_h o_h, growth of the fastest other mode
    head_c: tuple[float, ...]
    head_o: tuple[float, ...]
    head_verdicts: tuple[str, ...]
    tolerance: float

    def as_dict(self) -> dict:
        return asdict(self)


def dynamics_verdict(
    attention: Tensor, lambda_h: Tensor, tolerance: float = TOLERANCE, atol: float = 1e-6
) -> DynamicsVerdict:
    """Verdict from per-head ``attention`` (row-stochastic maps ``[H, n, n]`` over the valid
    tokens, or their eigenvalues ``[H, n]``) and per-head H eigenvalues ``lambda_h: [H, k]``.

    lambda^A_1 (the eigenvalue closest to 1, within ``atol``) is left out once per head; with
    n = 1 there is no other mode and o_h = 0.

    >>> v = dynamics_verdict(torch.tensor([[1.0, 0.9]]), torch.tensor([[0.1, -1.9]]))
    >>> v.verdict, round(v.c, 6), round(v.o, 6)
    ('smoothing', 1.1, 1.09)
    """
    if not tolerance >= 0:
        raise UsageError(f"tolerance {tolerance} is not >= 0: pass a relative tie tolerance such as {TOLERANCE}")
    lambda_a = (
        attention_eigenvalues(attention, atol) if attention.dim() == 3 else attention.detach().to(torch.complex128)
    )
    lambda_h = lambda_h.detach().to(lambda_a.device, torch.complex128)
    if (
        lambda_a.dim() != 2
        or lambda_h.dim() != 2
        or lambda_a.shape[0] != lambda_h.shape[0]
        or 0 in lambda_a.shape
        or 0 in lambda_h.shape
    ):
        raise UsageError(
            f"attention {tuple(attention.shape)} and H eigenvalues {tuple(lambda_h.shape)} "
            "do not pair up: pass maps [H, n, n] (or eigenvalues [H, n]) and [H, k], "
            "the same H heads, n >= 1, k >= 1"
        )
    heads = lambda_a.shape[0]
    others = torch.ones(lambda_a.shape, dtype=torch.bool, device=lambda_a.device)
    others[torch.arange(heads, device=lambda_a.device), constant_mode(lambda_a, atol)] = False
    lambda_others = lambda_a[others].reshape(heads, -1)  # [H, n - 1]
    head_c = (1 + lambda_h).abs().amax(dim=-1)  # [H]
    growth = (1 + lambda_others[:, :, None] * lambda_h[:, None, :]).abs().flatten(1)  # [H, (n-1) k]
    head_o = torch.cat([growth, growth.new_zeros(heads, 1)], dim=1).amax(dim=-1)  # [H], 0 if n = 1
    c, o = float(head_c.max()), float(head_o.max())
    return DynamicsVerdict(
        verdict=_compare(c, o, tolerance),
        c=c,
        o=o,
        head_c=tuple(head_c.tolist()),
        head_o=tuple(head_o.tolist()),
        head_verdicts=tuple(_compare(*pair, tolerance) for pair in zip(head_c.tolist(), head_o.tolist())),
        tolerance=tolerance,
    )


def _compare(c: float, o: float, tolerance: float) -> str:
    if c > o * (1 + tolerance):
        return "smoothing"
    if o > c * (1 + tolerance):
        return "sharpening"
    return "mixed"
