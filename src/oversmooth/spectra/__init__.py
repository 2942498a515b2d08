"""Spectral diagnosis of oversmoothing (Dovonon et al., DESIGN §4): maths only, no models.

- ``effective_matrix(w_v, w_o, gamma=None) -> [d, d]``: H_eff = diag(gamma) W_V W_O
  (row-vector convention, W_V [d, d_v], W_O [d_v, d]; gamma the pre-LN weight or None).
- ``value_output_eigenvalues(w_v, w_o, gamma=None, heads=None)``: the non-zero eigenvalues of
  H_eff, complex, ``[d_v]`` per layer or ``[heads, d_h]`` per head, via the small matrix
  W_O diag(gamma) W_V.
- ``summarize_spectrum(eigenvalues, gamma=None) -> SpectrumSummary``: share with positive real
  part, dominant eigenvalue, verdict in ``VERDICTS`` (rule in ``verdict.py``), share of negative
  LayerNorm weights.
- ``predict_dynamics(attention_or_its_eigenvalues, lambda_h) -> DynamicsPrediction``: the
  dominant mu = 1 + lambda_A lambda_H of I + H^T (x) A and the predicted outcome (``mode`` in
  ``MODES``, angle convergence, rotation, limit rank / rank collapse); ``mode_eigenvalues`` and
  ``attention_eigenvalues`` are its building blocks.
"""

from oversmooth.spectra.dynamics import (MODES, DynamicsPrediction, attention_eigenvalues,
                                         mode_eigenvalues, predict_dynamics)
from oversmooth.spectra.value_output import effective_matrix, value_output_eigenvalues
from oversmooth.spectra.verdict import VERDICTS, SpectrumSummary, summarize_spectrum

__all__ = [
    "MODES", "DynamicsPrediction", "attention_eigenvalues", "mode_eigenvalues",
    "predict_dynamics", "effective_matrix", "value_output_eigenvalues", "VERDICTS",
    "SpectrumSummary", "summarize_spectrum",
]
