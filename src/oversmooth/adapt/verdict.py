"""How much of the damage a patch did came back, in numbers and words. Quality always stands
beside similarity: an arm whose similarity is low because the model is broken is never a success.

The quality measure and its budget follow the objective (``analyze``'s budget where one exists):
- ``output_cosine`` (distillation, no head): at least 0.95, absolute;
- ``kl`` (distillation, LM head): at most 0.05 nats;
- ``perplexity`` / ``masked_perplexity``: at most 1.1 x the control arm's;
- ``accuracy`` (a ViT run's task): at least the control arm's minus 0.01.
Judged on the validation split at the last step; the test split is reported, never judged on.
A verdict on fewer than ``MIN_VAL_EXAMPLES`` validation examples comes with a warning (``small_sample``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from oversmooth.adapt.result import AdaptResult, ArmResult

#: measure -> (higher is better, budget kind, bound)
MEASURES = {
    "output_cosine": (True, "absolute", 0.95),
    "kl": (False, "absolute", 0.05),
    "masked_perplexity": (False, "ratio", 1.1),
    "perplexity": (False, "ratio", 1.1),
    "accuracy": (True, "difference", 0.01),
}
SIMILARITY_MARGIN = 0.01  # cos_sim lower than the control's by at least this counts as lower
#: fewer validation examples (sequences, images) than this and a verdict comes with a warning: it is
#: ``analyze``'s default sample (8 passages), and below it the 95 % t interval of a mean over n examples,
#: t(0.975, n - 1) / sqrt(n) per-example standard deviations wide each side, is wider than the spread
#: between single examples (1.05 at n = 6, 0.84 at 8): another sample may well reverse the verdict
MIN_VAL_EXAMPLES = 8
#: a patched start that lacks less than this of the control's end (on the log scale for a ratio) has no
#: gap to close: the scores are means of float32 values, whose rounding (about 1e-7 of a value) makes
#: the same model score a hair apart
NO_GAP = 1e-6


def quality_measure(scores: dict) -> str:
    return next(name for name in MEASURES if name in scores)


@dataclass(frozen=True)
class Verdict:
    arm: str
    measure: str
    unpatched: float  # the control's start: the model as it came
    patched: float  # this arm's start: patched, before any step
    adapted: float  # this arm's end
    control: float  # the control's end
    recovered: float | None  # share of the gap patched -> control closed (log scale for perplexities);
    # None: no gap, the patched start was already as good as the control's end
    within_budget: bool
    damaged: bool  # the patched start was out of budget
    cos_unpatched: float | None
    cos_patched: float | None
    cos_adapted: float | None
    cos_control: float | None
    status: str

    @property
    def similarity_lower(self) -> bool:
        return (
            self.cos_adapted is not None
            and self.cos_control is not None
            and self.cos_adapted <= self.cos_control - SIMILARITY_MARGIN
        )

    def words(self) -> str:
        if self.status != "completed":
            return f"{self.arm}: {self.status}; no verdict"
        name = self.measure.replace("_", " ")
        share = (
            f", {100 * self.recovered:.0f} % of the gap to the control closed"
            if self.recovered is not None
            else f", no gap to close: patched {self.patched:.4g} already as good as the control's {self.control:.4g}"
        )
        numbers = (
            f"{name} {self.unpatched:.4g} unpatched -> {self.patched:.4g} patched -> {self.adapted:.4g} "
            f"adapted (control {self.control:.4g}){share}"
        )
        similarity = (
            f"last-layer cos_sim {_f(self.cos_unpatched)} unpatched, {_f(self.cos_patched)} patched, "
            f"{_f(self.cos_adapted)} adapted vs {_f(self.cos_control)} control"
        )
        if not self.damaged and self.within_budget:
            lower = "lower than" if self.similarity_lower else "not lower than"
            return (
                f"{self.arm}: the patch did no damage beyond the budget to begin with, and similarity ends "
                f"{lower} the control's ({numbers}); {similarity}"
            )
        if not self.within_budget:
            return f"{self.arm}: NOT recovered, the model is still damaged ({numbers}); {similarity}"
        if self.similarity_lower:
            return f"{self.arm}: recovered, and similarity stays lower than the control's ({numbers}); {similarity}"
        return (
            f"{self.arm}: quality recovered, but similarity came back to the control's level: no less "
            f"smoothing is left ({numbers}); {similarity}"
        )


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def judge(result: AdaptResult, arm: ArmResult) -> Verdict:
    control = result.control
    end = arm.val or arm.start
    measure = quality_measure(end)
    higher, kind, bound = MEASURES[measure]
    values = [control.start[measure], arm.start[measure], end[measure], (control.val or control.start)[measure]]
    unpatched, patched, adapted, reference = values
    ok, damaged = within(adapted, reference, higher, kind, bound), not within(patched, unpatched, higher, kind, bound)
    scale = (lambda v: math.log(v)) if kind == "ratio" else (lambda v: v)
    gap = scale(reference) - scale(patched)  # what the patched start lacks of the control's end
    worse = gap if higher else -gap  # > 0: the patched start is worse, a gap to close
    recovered = (scale(adapted) - scale(patched)) / gap if worse > NO_GAP else None
    return Verdict(
        arm.name,
        measure,
        unpatched,
        patched,
        adapted,
        reference,
        recovered,
        ok,
        damaged,
        control.start_cos_sim_last,
        arm.start_cos_sim_last,
        arm.cos_sim_last,
        control.cos_sim_last,
        arm.status,
    )


def within(value: float, reference: float, higher: bool, kind: str, bound: float) -> bool:
    """``value`` inside the budget (``reference``: what a ratio or difference is taken against)."""
    edge = limit(reference, kind, bound)
    return value >= edge if higher else value <= edge


def limit(reference: float, kind: str, bound: float) -> float:
    """The worst value inside the budget (``reference``: what a ratio or difference is taken against)."""
    if kind == "absolute":
        return bound
    if kind == "ratio":
        return bound * reference
    return reference - bound


def small_sample(result: AdaptResult) -> str | None:
    """A warning when the verdicts rest on fewer than ``MIN_VAL_EXAMPLES`` validation examples, or None."""
    val = result.data.get("val", {})  # adaptations written before it was recorded have no data
    count = val.get("examples", MIN_VAL_EXAMPLES)
    if count >= MIN_VAL_EXAMPLES:
        return None
    unit = "sequences" if "tokens" in val else "examples"
    pretrained = result.source.get("kind") == "pretrained"
    fix = "raise --eval-sequences, or give more text" if pretrained else "train the run with a larger --val-size"
    return (
        f"the verdict rests on {count} validation {unit}, fewer than {MIN_VAL_EXAMPLES}: another sample may "
        f"reverse it; read it as a smoke test ({fix})"
    )
