"""Two one-sided tests (TOST, Schuirmann 1987) for an equivalence claim on paired differences.

An equivalence claim says the method changes the measure by less than a ``margin`` (e.g. "FeatScale
changes accuracy by less than 0.5 pp"). With ``d = method - baseline`` (n values, paired by seed),
two one-sided t-tests reject ``mean <= -margin`` and ``mean >= +margin``; the TOST p-value is the
larger of the two. It is dual to the ``1 - 2 alpha`` t interval: p < alpha exactly when that
interval lies inside ``(-margin, +margin)``. Pure maths: nothing here knows cells or reports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats

from oversmooth.study.stats import paired_differences


@dataclass(frozen=True)
class EquivalenceTest:
    """TOST of the mean paired difference against ``(-margin, +margin)``; NaN p with n < 2."""

    n: int
    mean: float
    sd: float
    se: float
    margin: float
    p: float  # max of the two one-sided p-values: small when the mean lies inside the margin

    def interval(self, alpha: float) -> tuple[float, float]:
        """The ``1 - 2 alpha`` t interval, the one TOST at level ``alpha`` inverts."""
        if self.n < 2:
            return -math.inf, math.inf
        half = float(stats.t.isf(alpha, self.n - 1)) * self.se
        return self.mean - half, self.mean + half


def tost(method: Sequence[float], baseline: Sequence[float], margin: float) -> EquivalenceTest:
    """TOST of ``method[i] - baseline[i]`` (paired, finite) against ``+-margin`` (> 0).

    Differences 0 and 0.2, five of each: mean 0.1, se = sqrt(0.01 * 10 / 9 / 10) = 1 / 30; with
    the margin two standard errors above the mean, the upper one-sided t is -2, so p = P(t_9 < -2):

    >>> test = tost([0.0, 0.2] * 5, [0.0] * 10, margin=0.1 + 2 / 30)
    >>> round(test.mean, 3), round(test.p, 4), round(float(stats.t.cdf(-2.0, 9)), 4)
    (0.1, 0.0383, 0.0383)
    """
    if not margin > 0:
        raise ValueError(f"an equivalence margin must be > 0, got {margin}")
    d = paired_differences(method, baseline)
    n = int(d.size)
    mean = float(d.mean()) if n else math.nan
    if n < 2:
        return EquivalenceTest(n, mean, math.nan, math.nan, margin, math.nan)
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    df = n - 1
    if se == 0:
        return EquivalenceTest(n, mean, sd, se, margin, 0.0 if abs(mean) < margin else 1.0)
    p_above = float(stats.t.sf((mean + margin) / se, df))  # H0: mean <= -margin
    p_below = float(stats.t.cdf((mean - margin) / se, df))  # H0: mean >= +margin
    return EquivalenceTest(n, mean, sd, se, margin, max(p_above, p_below))


def narrowest_margin(n: int, sd: float, alpha: float, power: float = 0.8) -> float:
    """The smallest margin that TOST at ``alpha`` establishes with ``power`` when the true
    difference is 0 (the usual normal-shift approximation with t quantiles:
    ``(t_{1-alpha} + t_{1-(1-power)/2}) sd / sqrt(n)``); ``inf`` with fewer than 2 pairs.

    >>> round(narrowest_margin(10, 1.0, 0.05), 3)
    1.017
    """
    if n < 2 or not math.isfinite(sd):
        return math.inf
    df = n - 1
    return (float(stats.t.isf(alpha, df)) + float(stats.t.isf((1 - power) / 2, df))) * sd / math.sqrt(n)
