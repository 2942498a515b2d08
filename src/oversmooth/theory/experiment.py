"""Run a preset: predict from the spectra, simulate, measure, and set the two side by side."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd
import torch

from oversmooth.errors import FieldError, UsageError
from oversmooth.metrics import measure
from oversmooth.spectra import DynamicsPrediction, predict_dynamics, value_output_eigenvalues
from oversmooth.theory.outcome import Outcome, observe
from oversmooth.theory.presets import Case, preset_cases
from oversmooth.theory.sampling import matrix_with_spectrum, random_attention
from oversmooth.theory.simulate import simulate
from oversmooth.utils.seeds import check_seed

ATTENTION_KINDS = ("fixed", "softmax")


@dataclass(frozen=True)
class Setup:
    """Sizes and randomness shared by every case of a run."""

    depth: int = 64
    tokens: int = 8
    dim: int = 8
    seed: int = 0
    sequences: int = 4  # independent starting X, the batch
    temperature: float = 2.0  # of the sampled attention logits
    attention: str = "fixed"  # one of ATTENTION_KINDS: sampled A, or softmax(X M X^T / sqrt d)

    def __post_init__(self):
        if self.attention not in ATTENTION_KINDS:
            raise UsageError(f"unknown attention {self.attention!r}; choose from {', '.join(ATTENTION_KINDS)}")
        for name, least in (("depth", 2), ("tokens", 2), ("sequences", 2), ("dim", 1)):
            if getattr(self, name) < least:
                raise FieldError("{%s} must be at least %d, got {got}" % (name, least), got=getattr(self, name))
        check_seed(self.seed)


@dataclass
class CaseResult:
    """One case: per-sequence predictions, the simulated outcome and the metric table."""

    preset: str
    case: Case
    predictions: list[DynamicsPrediction]
    outcome: Outcome
    table: pd.DataFrame  # ``metric_table``

    @property
    def linear(self) -> bool:
        """No LayerNorm: the theory is exact, so mode, angle and rank are all compared."""
        return self.case.layer.norm == "none"

    def agreement(self) -> list[bool]:
        """Per sequence: prediction and simulation agree on the mode and, for linear runs, on
        angle convergence and rank collapse too. (With LayerNorm the residual stream grows, the
        per-layer mu tend to 1 and direction and rank settle only polynomially in depth.)"""
        o = self.outcome
        return [
            p.mode == o.mode[b]
            and (
                not self.linear
                or (p.angle_converges == bool(o.angle_converges[b]) and p.rank_collapse == bool(o.rank_collapse[b]))
            )
            for b, p in enumerate(self.predictions)
        ]

    def summary_row(self) -> dict:
        """One CSV/table row: the case, sequence 0's prediction, the outcome, the agreement."""
        p, o = self.predictions[0], self.outcome
        return {
            "preset": self.preset,
            "case": self.case.label,
            "norm": self.case.layer.norm,
            **p.as_dict(),
            "predicted": self.predicted(),
            "simulated": self.simulated(),
            "t_sim_first": self.table["t_sim"].iloc[0].item(),
            "t_sim_last": self.table["t_sim"].iloc[-1].item(),
            "direction_drift": float(o.direction_drift.max()),
            "agree": sum(self.agreement()),
            "sequences": len(self.predictions),
            "compared": "mode, angle, rank" if self.linear else "mode",
        }

    def predicted(self) -> str:
        return _majority(p.describe() for p in self.predictions)

    def simulated(self) -> str:
        o = self.outcome
        return _majority(
            ", ".join(
                [
                    o.mode[b],
                    "angle convergence" if o.angle_converges[b] else "no angle convergence",
                    "rank collapse" if o.rank_collapse[b] else "no rank collapse",
                ]
            )
            for b in range(len(o.mode))
        )


def _majority(texts) -> str:
    return Counter(texts).most_common(1)[0][0]


def run_preset(name: str, setup: Setup) -> list[CaseResult]:
    """Simulate every case of preset ``name`` and compare with the spectral prediction.

    With softmax attention the prediction uses each sequence's attention at the last layer.
    """
    cases = preset_cases(name, setup.dim)
    generator = torch.Generator().manual_seed(setup.seed)
    attention = random_attention(setup.tokens, generator, temperature=setup.temperature)[0]
    query_key = (
        setup.temperature * torch.randn(setup.dim, setup.dim, generator=generator, dtype=torch.float64) / setup.dim**0.5
    )
    x0 = torch.randn(setup.sequences, setup.tokens, setup.dim, generator=generator, dtype=torch.float64)
    basis_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
    results = []
    for case in cases:
        h = matrix_with_spectrum(torch.tensor(case.h_eigenvalues), torch.Generator().manual_seed(basis_seed))
        fixed = setup.attention == "fixed"
        trajectory = simulate(
            x0,
            h,
            setup.depth,
            case.layer,
            attention=attention if fixed else None,
            query_key=None if fixed else query_key,
        )
        gamma = torch.tensor(case.layer.gamma) if case.layer.norm == "pre" and case.layer.gamma else None
        lambda_h = value_output_eigenvalues(h, torch.eye(setup.dim, dtype=torch.float64), gamma)
        last = trajectory.attentions[-1]
        predictions = [
            predict_dynamics(last[b], lambda_h, residual=case.layer.residual) for b in range(setup.sequences)
        ]
        results.append(
            CaseResult(name, case, predictions, observe(trajectory.states), measure(trajectory.states, hook="theory"))
        )
    return results
