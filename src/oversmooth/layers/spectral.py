"""Spectral reparameterisation of the value and output maps (Dovonon, Bronstein & Kusner 2025).

Per layer, ``H = W_V W_O = U diag(lam) U^T`` with ``U`` orthogonal ``[d, d]``. Head h uses
its own column block ``b_h`` of U: ``W_V^h = U[:, b_h]`` and ``W_O^h = diag(lam[b_h]) U[:, b_h]^T``,
so the eigenvalues of H are exactly ``lam`` and the eigenvectors are U's columns. Biases are kept
(they shift the output, not H). The raw parameter ``psi`` maps onto the promised range:

- ``sharpen``: ``lam = -sigmoid(psi)`` in (-1, 0); init psi = 0, so lam = -0.5.
- ``smooth``:  ``lam = sigmoid(psi)`` in (0, 1); init psi = 0, so lam = 0.5.
- ``free``:    ``lam = psi``, unconstrained; init uniform in [-1, 1].

(The paper clips +-psi^2; a sigmoid is smooth, never saturates the sign, and is documented here.)
U is held by ``torch.nn.utils.parametrizations.orthogonal`` (Cayley map of a skew matrix: one
solve per forward, 13x cheaper than the matrix exponential at d = 192),
so it stays orthogonal to float precision whatever the optimiser does.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.parametrizations import orthogonal

from oversmooth.layers.mitigation_config import SPECTRAL_MODES


class SpectralValueOutput(nn.Module):
    """The value projection ``v = x W_V + value_bias`` and the output projection
    ``o W_O + output_bias`` (heads merged, ``[batch, tokens, d]``), with ``W_V, W_O = weights()``.
    Call ``weights()`` once per forward: each call evaluates the orthogonal map.
    """

    def __init__(self, width: int, mode: str = "free"):
        super().__init__()
        if mode not in SPECTRAL_MODES:
            raise ValueError(f"spectral mode {mode!r} not in {tuple(SPECTRAL_MODES)}")
        self.mode = mode
        self.basis = nn.Parameter(nn.init.orthogonal_(torch.empty(width, width)))
        orthogonal(self, "basis", orthogonal_map="cayley")
        if mode == "free":
            self.psi = nn.Parameter(torch.empty(width).uniform_(-1.0, 1.0))
        else:
            self.psi = nn.Parameter(torch.zeros(width))
        self.value_bias = nn.Parameter(torch.zeros(width))
        self.output_bias = nn.Parameter(torch.zeros(width))

    @property
    def eigenvalues(self) -> Tensor:
        """``lam: [d]``, the eigenvalues of ``W_V W_O``, in the mode's range."""
        if self.mode == "sharpen":
            return -torch.sigmoid(self.psi)
        if self.mode == "smooth":
            return torch.sigmoid(self.psi)
        return self.psi

    def weights(self) -> tuple[Tensor, Tensor]:
        """``(W_V, W_O)``, both ``[d, d]``, in the ``x @ W`` convention: ``W_V W_O = U diag(lam) U^T``."""
        u = self.basis
        return u, self.eigenvalues[:, None] * u.T

    def extra_repr(self) -> str:
        return f"mode={self.mode!r}, range={SPECTRAL_MODES[self.mode]}"
