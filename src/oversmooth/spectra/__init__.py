"""Spectral diagnosis of oversmoothing (Dovonon, Bronstein & Kusner 2025, "Setting the Record
Straight on Transformer Oversmoothing", Sec. 4; docs/theory.md): maths only, no models.

- ``effective_matrix(w_v, w_o, gamma=None) -> [d, d]``: H_eff = diag(gamma) W_V W_O
  (row-vector convention, W_V [d, d_v], W_O [d_v, d]; gamma the pre-LN weight or None).
- ``value_output_eigenvalues(w_v, w_o, gamma=None, heads=None)``: the non-zero eigenvalues of
  H_eff, complex, ``[d_v]`` per layer or ``[heads, d_h]`` per head, via the small matrix
  W_O diag(gamma) W_V.
- ``dynamics_verdict(attention, head_eigenvalues) -> DynamicsVerdict``: the smoothing /
  sharpening / mixed verdict (``VERDICTS``) of one layer from the measured per-head attention:
  growth of the all-tokens-equal mode against every other mode of X <- X + A X H
  (rule in ``verdict.py``, tie tolerance ``TOLERANCE``).
- ``summarize_spectrum(eigenvalues, gamma=None) -> SpectrumSummary``: weight-only share with
  positive real part, dominant eigenvalue, ``sign_verdict`` (a sign descriptor, not the verdict),
  share of negative LayerNorm weights.
- ``predict_dynamics(attention_or_its_eigenvalues, lambda_h) -> DynamicsPrediction``: the
  dominant mu = 1 + lambda_A lambda_H of I + H^T (x) A and the predicted outcome (``mode`` in
  ``MODES``, angle convergence, rotation, limit rank / rank collapse); ``mode_eigenvalues``,
  ``attention_eigenvalues`` and ``constant_mode`` are its building blocks.
"""

from oversmooth.spectra.dynamics import (
    MODES,
    DynamicsPrediction,
    attention_eigenvalues,
    constant_mode,
    mode_eigenvalues,
    predict_dynamics,
)
from oversmooth.spectra.summary import SpectrumSummary, summarize_spectrum
from oversmooth.spectra.value_output import effective_matrix, value_output_eigenvalues
from oversmooth.spectra.verdict import TOLERANCE, VERDICTS, DynamicsVerdict, dynamics_verdict

__all__ = [
    "MODES",
    "DynamicsPrediction",
    "attention_eigenvalues",
    "constant_mode",
    "mode_eigenvalues",
    "predict_dynamics",
    "effective_matrix",
    "value_output_eigenvalues",
    "VERDICTS",
    "TOLERANCE",
    "DynamicsVerdict",
    "dynamics_verdict",
    "SpectrumSummary",
    "summarize_spectrum",
]
