"""Paired comparisons of two methods over matching cells, and the verdict rule of the report.

Cells pair up when they share a setting (task, norm, depth, seed): the same data, depth and
initial seed, so the difference is the method's. The *gain* of A over B is positive when A is
better (higher accuracy, lower perplexity).

Verdict rule: with n >= 2 pairs, ``held`` when the mean gain is positive and larger than twice
its standard error, ``did not hold`` when it is negative by the same margin, ``inconclusive``
otherwise (and always with fewer than 2 pairs).

>>> verdict(Comparison("a", "b", (1.0, 1.2, 0.8), " pp"))
'held'
>>> verdict(Comparison("a", "b", (1.0, -1.0)))
'inconclusive'
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable, Iterable

from oversmooth.study.results import CellResult

HELD, NOT_HELD, INCONCLUSIVE = "held", "did not hold", "inconclusive"
RULE = "paired over matching cells: held if mean gain > 2 SE, did not hold if < -2 SE, else inconclusive"


@dataclass(frozen=True)
class Comparison:
    """Per matched setting, the gain of ``a`` over ``b`` (positive: ``a`` better), or with
    ``measure`` named, a plain difference ``a - b`` of that measure."""

    a: str
    b: str
    gains: tuple[float, ...]
    unit: str = ""
    measure: str = "gain"

    @property
    def n(self) -> int:
        return len(self.gains)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.gains) if self.gains else math.nan

    @property
    def se(self) -> float:
        """Standard error of the mean gain (NaN below two pairs)."""
        return statistics.stdev(self.gains) / math.sqrt(self.n) if self.n >= 2 else math.nan

    def describe(self) -> str:
        if not self.gains:
            return f"{self.a} vs {self.b}: no matching finished cells"
        spread = f" ± {self.se:.3g} (SE)" if self.n >= 2 else ""
        head = f"gain of {self.a} over {self.b}" if self.measure == "gain" else f"{self.measure}, {self.a} − {self.b}"
        return f"{head}: {self.mean:+.3g}{self.unit}{spread}, n = {self.n}"


def verdict(comparison: Comparison) -> str:
    if comparison.n < 2:
        return INCONCLUSIVE
    if comparison.mean > 2 * comparison.se:
        return HELD
    return NOT_HELD if comparison.mean < -2 * comparison.se else INCONCLUSIVE


def gain(better: CellResult, other: CellResult) -> float:
    """How much ``better`` beats ``other``: accuracy in percentage points, perplexity in its own unit."""
    difference = better.score - other.score
    return 100 * difference if better.score_name == "accuracy" else -difference


def gain_unit(cells: Iterable[CellResult]) -> str:
    names = {cell.score_name for cell in cells}
    return " pp" if names == {"accuracy"} else " PPL" if names == {"perplexity"} else ""


def setting(cell: CellResult) -> tuple:
    """Cells of one study with the same task, norm, depth and seed pair up (the method differs)."""
    return (cell.study, *cell.setting())


def pair_up(cells: Iterable[CellResult], a: Callable[[CellResult], bool], b: Callable[[CellResult], bool],
            match: Callable[[CellResult], tuple] = setting) -> list[tuple[CellResult, CellResult]]:
    """The (a, b) pairs of scored cells with equal ``match`` keys, sorted by key."""
    sides: dict[tuple, dict[str, CellResult]] = {}
    for cell in cells:
        if cell.score is None:
            continue
        for side, wanted in (("a", a), ("b", b)):
            if wanted(cell):
                sides.setdefault(match(cell), {})[side] = cell
    return [(found["a"], found["b"]) for _, found in sorted(sides.items()) if len(found) == 2]


def compare(cells: Iterable[CellResult], a: str, b: str, where: Callable[[CellResult], bool] = lambda c: True,
            value: Callable[[CellResult, CellResult], float] | None = None, measure: str = "") -> Comparison:
    """Methods labelled ``a`` and ``b`` over the settings that pass ``where``: the score gain of
    ``a`` (see ``gain``), or ``value(a, b)`` per pair, a difference in ``measure``."""
    pairs = pair_up(cells, lambda c: c.label == a and where(c), lambda c: c.label == b and where(c))
    if value is None:
        return Comparison(a, b, tuple(gain(x, y) for x, y in pairs), gain_unit(x for pair in pairs for x in pair))
    return Comparison(a, b, tuple(value(x, y) for x, y in pairs), measure=measure)
