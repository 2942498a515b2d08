"""Spectral reparameterisation of the value and output maps (Dovonon, Bronstein & Kusner 2025).

Per layer, ``H = W_V W_O = U diag(lam) U^T`` with ``U`` orthogonal ``[d, d]``. Head h uses
its own column block ``b_h`` of U: ``W_V^h = U[:, b_h]`` and ``W_O^h = diag(lam[b_h]) U[:, b_h]^T``,
so the eigenvalues of H are exactly ``lam`` and the eigenvectors are U's columns. Biases are kept
(they shift the output, not H). The raw parameter ``psi`` maps onto the promised range:

- ``sharpen``: ``lam = -sigmoid(psi)`` in (-1, 0);
- ``smooth``:  ``lam = sigmoid(psi)`` in (0, 1);
- ``free``:    ``lam = psi``, unconstrained.

(The paper clips +-psi^2; a sigmoid is smooth, never saturates the sign, and is documented here.)

**Initial scale.** ``reset_parameters(std, generator)`` starts every ``|lam|`` at the spectral
norm of a baseline layer's ``W_V W_O`` drawn as our models draw it (two ``[d, d]`` matrices with
N(0, std^2) entries; about ``2.6 std^2 d``, i.e. 0.066 at d = 64, std 0.02), so H starts exactly
as large as the baseline's H: ``sharpen`` at ``-s I``, ``smooth`` at ``+s I``, ``free`` uniform
in ``[-s, s]``. (A fixed +-0.5 would make the spectral models' attention sublayers several times
stronger than the baseline's from step 0, and a sharpen-vs-smooth difference could come from that.)

U is held by ``torch.nn.utils.parametrizations.orthogonal`` (Cayley map of a skew matrix: one
solve per forward, 13x cheaper than the matrix exponential at d = 192),
so it stays orthogonal to float precision whatever the optimiser does.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn.utils.parametrizations import orthogonal

from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import SPECTRAL_MODES, SpectralKnobs


def baseline_scale(width: int, std: float, generator: torch.Generator | None = None) -> float:
    """``||W_V W_O||_2`` of one draw of two ``[width, width]`` matrices with N(0, std^2) entries:
    the size of a baseline layer's value-output map at initialisation."""
    w_v, w_o = torch.randn(2, width, width, generator=generator, dtype=torch.float64) * std
    return torch.linalg.matrix_norm(w_v @ w_o, ord=2).item()


class SpectralValueOutput(SiteLayer):
    """The value projection ``v = x W_V + value_bias`` and the output projection
    ``o W_O + output_bias`` (heads merged, ``[batch, tokens, d]``), with ``W_V, W_O = weights()``.
    Call ``weights()`` once per forward: each call evaluates the orthogonal map.
    Constructed at the scale of ``std = 0.02`` from torch's global RNG; models re-draw it with
    ``reset_parameters`` from a generator of their own.
    """

    def __init__(self, width: int, mode: str = "free"):
        super().__init__()
        if mode not in SPECTRAL_MODES:
            raise ValueError(f"spectral mode {mode!r} not in {tuple(SPECTRAL_MODES)}")
        self.mode = mode
        self.basis = nn.Parameter(nn.init.orthogonal_(torch.empty(width, width)))
        orthogonal(self, "basis", orthogonal_map="cayley")
        self.psi = nn.Parameter(torch.zeros(width))
        self.value_bias = nn.Parameter(torch.zeros(width))
        self.output_bias = nn.Parameter(torch.zeros(width))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self, std: float = 0.02, generator: torch.Generator | None = None) -> None:
        """U a random orthogonal matrix, ``|lam|`` at ``baseline_scale(width, std)``, biases 0."""
        width = self.psi.numel()
        self.basis = nn.init.orthogonal_(torch.empty(width, width), generator=generator)
        scale = baseline_scale(width, std, generator)
        if self.mode == "free":
            self.psi.copy_((torch.rand(width, generator=generator) * 2 - 1) * scale)
        else:  # sigmoid(psi) = scale
            self.psi.fill_(math.log(scale / (1 - scale)))
        self.value_bias.zero_()
        self.output_bias.zero_()

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

    def value_output(self) -> nn.Module:
        return self

    def extra_repr(self) -> str:
        return f"mode={self.mode!r}, range={SPECTRAL_MODES[self.mode]}"


def layer(knobs: SpectralKnobs, shape: LayerShape) -> SpectralValueOutput:
    return SpectralValueOutput(shape.width, knobs.spectral)
