"""Presets: small cases that show Dovonon et al.'s (2025) qualitative statements.

Each preset is a tuple of ``Case``; every case of a preset runs on the same attention matrix,
the same starting tokens and the same eigenbasis of H, so only the spectrum, the LayerNorm sign
or the norm placement differs.

- ``smoothing``: H eigenvalues in (0, 1] (1 and then 0.1..0.6) -> tokens converge to one point.
- ``sharpening``: the same magnitudes negated, in [-1, 0) -> the all-equal mode shrinks.
- ``rotating``: a dominant complex pair 0.5 +- 0.8i -> the direction keeps turning.
- ``lnflip``: the smoothing H behind a pre-LayerNorm with weight +1 and with weight -1:
  H_eff = diag(gamma) H, so the negative weights flip the spectrum and the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from oversmooth.errors import FieldError, UsageError
from oversmooth.theory.simulate import LayerConfig

THEORY_PRESETS = ("smoothing", "sharpening", "rotating", "lnflip")


@dataclass(frozen=True)
class Case:
    """One run of a preset: the eigenvalues of H (``[d]``, conjugate-closed) and the layer."""

    label: str
    h_eigenvalues: tuple[complex, ...]
    layer: LayerConfig


def smoothing_spectrum(dim: int) -> tuple[complex, ...]:
    """1 and then ``dim - 1`` values spread over [0.1, 0.6]."""
    return (1.0, *torch.linspace(0.1, 0.6, dim - 1, dtype=torch.float64).tolist())


def sharpening_spectrum(dim: int) -> tuple[complex, ...]:
    return tuple(-value for value in smoothing_spectrum(dim))


def rotating_spectrum(dim: int) -> tuple[complex, ...]:
    """The pair 0.5 +- 0.8i and then ``dim - 2`` values spread over [0.1, 0.4]."""
    return (0.5 + 0.8j, 0.5 - 0.8j, *torch.linspace(0.1, 0.4, dim - 2, dtype=torch.float64).tolist())


def preset_cases(name: str, dim: int) -> tuple[Case, ...]:
    """The cases of preset ``name`` in dimension ``dim``."""
    if dim < 2:
        raise FieldError("{dim} must be at least 2 for the presets, got {got}", got=dim)
    linear = LayerConfig()
    if name == "smoothing":
        return (Case("H eig in (0,1]", smoothing_spectrum(dim), linear),)
    if name == "sharpening":
        return (Case("H eig in [-1,0)", sharpening_spectrum(dim), linear),)
    if name == "rotating":
        return (Case("complex dominant pair", rotating_spectrum(dim), linear),)
    if name == "lnflip":
        return tuple(
            Case(f"pre-LN, gamma={sign:+.0f}", smoothing_spectrum(dim), LayerConfig(norm="pre", gamma=(sign,) * dim))
            for sign in (1.0, -1.0)
        )
    raise UsageError(f"unknown preset {name!r}; choose from {', '.join(THEORY_PRESETS)}")
