"""Simulate the theory behind the toolkit (Dovonon et al. 2025; Yu & Zhang 2023): the linear
dynamics of attention layers.

- ``simulate(x0, h, depth, LayerConfig(...), attention=A | query_key=M) -> Trajectory``:
  X <- X + A X H, optionally without residual, with pre/post LayerNorm (weight gamma), with
  data-dependent softmax attention, with de-escalation on the attention output.
- ``observe(states) -> Outcome``: the simulated mode / angle convergence / rank collapse.
- ``run_preset(name, Setup(...)) -> [CaseResult]``: presets ``THEORY_PRESETS`` (smoothing,
  sharpening, rotating, lnflip) predicted with ``oversmooth.spectra.predict_dynamics`` and
  simulated side by side.
- ``escalation_curves`` / ``escalation_rates``: Yu & Zhang's t_sim escalation with and
  without residual and post-norm, its rate against |lambda_2(A)|, and de-escalation.
- ``random_attention``, ``softmax_attention``, ``matrix_with_spectrum``: the samplers.
"""

from oversmooth.theory.escalation import VARIANTS, RateStudy, escalation_curves, escalation_rates, fitted_rate
from oversmooth.theory.experiment import CaseResult, Setup, run_preset
from oversmooth.theory.outcome import Outcome, direction_drift, observe
from oversmooth.theory.presets import THEORY_PRESETS, Case, preset_cases
from oversmooth.theory.sampling import matrix_with_spectrum, random_attention, softmax_attention
from oversmooth.theory.simulate import SIMULATED_NORMS, LayerConfig, Trajectory, layer_norm, simulate

__all__ = [
    "VARIANTS",
    "RateStudy",
    "escalation_curves",
    "escalation_rates",
    "fitted_rate",
    "CaseResult",
    "Setup",
    "run_preset",
    "Outcome",
    "direction_drift",
    "observe",
    "THEORY_PRESETS",
    "Case",
    "preset_cases",
    "matrix_with_spectrum",
    "random_attention",
    "softmax_attention",
    "SIMULATED_NORMS",
    "LayerConfig",
    "Trajectory",
    "layer_norm",
    "simulate",
]
