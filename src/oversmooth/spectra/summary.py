"""Weight-only summary of one layer's (or head's) H_eff spectrum, with a sign-based descriptor.

``sign_verdict`` reads the signs of the eigenvalues of H_eff alone, without attention: a
descriptor of the weights, *not* the smoothing verdict, which needs the measured attention
(``oversmooth.spectra.dynamics_verdict``). Sign rule, on the eigenvalues of magnitude above
``zero_tol * max|lambda|`` (the rest are numerically zero and carry no sign):

1. all real parts > 0 -> ``smoothing``;
2. all real parts < 0 (e.g. all eigenvalues in [-1, 0)) -> ``sharpening``;
3. mixed signs: the eigenvalue of largest modulus decides when it dominates clearly, i.e. when
   ``|lambda_dom| >= dominance * max |lambda|`` over the eigenvalues whose real part has the other
   sign: ``smoothing`` if Re(lambda_dom) > 0, ``sharpening`` if < 0; otherwise ``mixed``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class SpectrumSummary:
    """What the weights alone say about one layer or head."""

    count: int  # eigenvalues considered (numerically non-zero)
    positive_real_share: float  # share with Re(lambda) > 0
    dominant: complex  # the eigenvalue of largest modulus
    sign_verdict: str  # one of VERDICTS, by the sign rule above (not the dynamics verdict)
    negative_gamma_share: float | None  # share of LayerNorm weights < 0 (None: no LN given)

    def as_dict(self) -> dict:
        return {
            "count": self.count,
            "positive_real_share": self.positive_real_share,
            "dominant_real": self.dominant.real,
            "dominant_imag": self.dominant.imag,
            "sign_verdict": self.sign_verdict,
            "negative_gamma_share": self.negative_gamma_share,
        }


def summarize_spectrum(
    eigenvalues: Tensor, gamma: Tensor | None = None, *, dominance: float = 1.5, zero_tol: float = 1e-8
) -> SpectrumSummary:
    """Summarise ``eigenvalues: [k]`` (complex or real) of one H_eff; ``gamma: [d]`` or None.

    >>> s = summarize_spectrum(torch.tensor([0.5, 0.2, -0.1]))
    >>> s.sign_verdict, round(s.positive_real_share, 3), s.dominant
    ('smoothing', 0.667, (0.5+0j))
    """
    eig = eigenvalues.detach().to(torch.complex128).flatten()
    magnitude = eig.abs()
    if eig.numel() == 0 or float(magnitude.max()) == 0.0:
        return SpectrumSummary(0, float("nan"), 0j, "mixed", _negative_share(gamma))
    eig = eig[magnitude > zero_tol * magnitude.max()]
    magnitude = eig.abs()
    positive, negative = eig.real > 0, eig.real < 0
    dominant = complex(eig[magnitude.argmax()])
    return SpectrumSummary(
        count=eig.numel(),
        positive_real_share=float(positive.double().mean()),
        dominant=dominant,
        sign_verdict=_sign_verdict(dominant, magnitude, positive, negative, dominance),
        negative_gamma_share=_negative_share(gamma),
    )


def _sign_verdict(dominant: complex, magnitude: Tensor, positive: Tensor, negative: Tensor, dominance: float) -> str:
    if bool(positive.all()):
        return "smoothing"
    if bool(negative.all()):
        return "sharpening"
    opposite = negative if dominant.real > 0 else positive if dominant.real < 0 else None
    if opposite is None or not bool(opposite.any()):
        return "mixed"
    if abs(dominant) >= dominance * float(magnitude[opposite].max()):
        return "smoothing" if dominant.real > 0 else "sharpening"
    return "mixed"


def _negative_share(gamma: Tensor | None) -> float | None:
    return None if gamma is None else float((gamma.detach() < 0).double().mean())
