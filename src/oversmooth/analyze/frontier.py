"""The similarity / quality frontier: each method over a grid of one knob, no fine-tuning.

Each point patches one method with one knob at one value (the method's other knobs at 0, so
every curve starts at the unpatched model) and records the last layer's ``cos_sim`` and
``t_sim`` beside the model's quality (``oversmooth.analyze.quality``). The best a method can do
without fine-tuning is the largest setting that stays within the quality budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from oversmooth.analyze.quality import Quality


@dataclass(frozen=True)
class FrontierPoint:
    """One setting of one sweep: last-layer similarity and the model's quality."""

    method: str
    knob: str
    value: float
    cos_sim: float
    t_sim: float
    quality: Quality

    @property
    def setting(self) -> str:
        return f"{self.knob}={self.value:g}"


def best_within_budget(points: list[FrontierPoint], method: str, knob: str) -> FrontierPoint | None:
    """The largest |value| of ``method``'s ``knob`` whose model stays within budget, or None."""
    fits = [p for p in points if (p.method, p.knob) == (method, knob) and p.value != 0 and p.quality.within_budget]
    return max(fits, key=lambda p: abs(p.value), default=None)


def frontier_rows(points: list[FrontierPoint]) -> list[dict]:
    """``frontier.csv``: one row per point with its primary quality measure."""
    return [
        {
            "method": p.method,
            "knob": p.knob,
            "value": p.value,
            "cos_sim": p.cos_sim,
            "t_sim": p.t_sim,
            "measure": p.quality.primary.measure,
            "quality": p.quality.primary.value,
            "baseline": p.quality.primary.baseline,
            "ratio": p.quality.primary.ratio,
            "within_budget": p.quality.within_budget,
        }
        for p in points
    ]


def quality_loss(quality: Quality) -> float:
    """A number that grows as the model breaks: ratio - 1 for perplexity, KL, or 1 - agreement/cosine."""
    row = quality.primary
    if row.ratio is not None:
        return row.ratio - 1
    if row.measure == "kl":
        return row.value
    return row.baseline - row.value
