"""The similarity / quality frontier: each method over a grid of one knob, no fine-tuning.

Each point patches one method with one knob at one value (the method's other knobs at 0, so
every curve starts at the unpatched model) and records the last layer's ``cos_sim`` and
``t_sim`` beside the model's quality (``oversmooth.analyze.quality``). The best a method can do
without fine-tuning is the largest setting that stays within the quality budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from oversmooth.analyze.quality import Quality
from oversmooth.errors import FieldError, UsageError
from oversmooth.hf import DEFAULT_KNOBS, METHODS, SWEEP_GRIDS, ZERO_KNOBS, check_method, resolve_knobs


@dataclass(frozen=True)
class Sweep:
    """One curve: ``method`` with ``knob`` at each of ``values`` (its other knobs at 0)."""

    method: str
    knob: str
    values: tuple[float, ...]

    def knobs(self, value: float) -> dict[str, float]:
        return resolve_knobs(self.method, {**ZERO_KNOBS[self.method], self.knob: value})


def default_sweeps(methods: tuple[str, ...]) -> tuple[Sweep, ...]:
    """Every knob of every method in ``methods`` over its default grid (``SWEEP_GRIDS``)."""
    return tuple(Sweep(m, knob, values) for m in methods for knob, values in SWEEP_GRIDS[m].items())


def parse_sweep(text: str) -> Sweep:
    """``"neutreno:lam=0,0.05,0.1"`` -> a Sweep; every value is checked as that knob's value.

    >>> parse_sweep("neutreno:lam=0,0.1")
    Sweep(method='neutreno', knob='lam', values=(0.0, 0.1))
    """
    method, _, rest = text.partition(":")
    knob, _, values = rest.partition("=")
    if not (method and knob and values):
        raise UsageError(f"bad sweep {text!r}; write METHOD:KNOB=V1,V2,... e.g. neutreno:lam=0,0.1,0.2")
    method, knob = check_method(method.strip()), knob.strip()
    if knob not in DEFAULT_KNOBS[method]:
        raise UsageError(f"{method} has no knob {knob!r}; it takes {', '.join(DEFAULT_KNOBS[method])}")
    try:
        grid = tuple(float(v) for v in values.split(",") if v.strip())
    except ValueError:
        raise UsageError(f"sweep values {values!r} are not numbers; write e.g. {knob}=0,0.1,0.2") from None
    if not grid or not all(math.isfinite(v) for v in grid):
        raise UsageError(f"sweep {text!r} needs finite numbers after '='")
    sweep = Sweep(method, knob, grid)
    for value in grid:
        sweep.knobs(value)  # a value the method refuses fails here, before any work
    return sweep


def parse_sweeps(specs: Sequence[str], methods: tuple[str, ...] | None) -> tuple[Sweep, ...]:
    """``analyze --sweep`` values -> Sweeps, each once: ``""`` is the default grid of each of
    ``methods`` (None: every patchable method), else ``parse_sweep``. FieldError naming ``sweep``
    when ``""`` finds no method.

    >>> parse_sweeps(["", "neutreno:lam=0.1"], ("neutreno",))[-1]
    Sweep(method='neutreno', knob='lam', values=(0.1,))
    """
    grids = default_sweeps(METHODS if methods is None else methods)
    if "" in specs and not grids:
        raise FieldError("{sweep} alone sweeps the methods of {methods}, and there are none; name some")
    return tuple(dict.fromkeys(s for spec in specs for s in ((parse_sweep(spec),) if spec else grids)))


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
