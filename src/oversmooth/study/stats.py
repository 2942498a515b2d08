"""Paired statistics on numbers: the paired t-test with its intervals, Holm's step-down
correction, power and the smallest detectable effect, and the seeds a test needs.

Pure maths (numpy, scipy): nothing here knows cells, studies or reports. Runs are paired by seed
(same init and data order for the method and its baseline); a test is on the differences ``d =
method - baseline``, and a *direction* is the expected sign of ``d`` ("higher": method above
baseline; "lower": below, e.g. perplexity or token similarity). The claims' verdicts built on
these are ``oversmooth.claims.verdicts``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy import optimize, stats

Direction = Literal["higher", "lower"]
POWER = 0.8  # the power at which the minimum detectable effect is quoted


def paired_differences(method: Sequence[float], baseline: Sequence[float]) -> np.ndarray:
    """``method[i] - baseline[i]`` as float ``[n]``; ValueError unless both are 1-d, paired and finite.

    >>> paired_differences([3.0, 5.0], [1.0, 1.5]).tolist()
    [2.0, 3.5]
    """
    x, y = np.asarray(method, dtype=float), np.asarray(baseline, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"method and baseline must be 1-d and paired, got shapes {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("method and baseline must be finite (a diverged run is a gate, not a number)")
    return x - y


@dataclass(frozen=True)
class PairedTest:
    """A paired t-test of ``d = method - baseline`` (one value per seed), t-based throughout.

    ``p_one_sided`` tests in the claimed ``direction`` (small when ``mean`` has the claimed
    sign); ``(ci_low, ci_high)`` is the two-sided interval at ``confidence``.

    Fewer than 2 pairs: no test. ``sd``, ``se``, ``t`` and the p-values are NaN, ``df`` is 0 and
    the interval is ``(-inf, inf)`` (nothing excluded); ``mean`` is NaN for no pair at all.
    All differences equal (``sd == 0``, n >= 2): the t statistic is taken at its limit, as
    ``scipy.stats.ttest_rel`` does: ``+-inf`` for a nonzero difference (p 0, the interval the
    single point ``mean``), and 0 when every difference is 0 (two-sided p 1, one-sided 0.5,
    interval ``[0, 0]``: nothing observed, yet a test that stays in the Holm family, where
    scipy would give NaN).
    """

    n: int
    mean: float
    sd: float
    se: float
    t: float
    df: int
    p_two_sided: float
    p_one_sided: float
    ci_low: float
    ci_high: float
    confidence: float
    direction: Direction

    def interval(self, confidence: float) -> tuple[float, float]:
        """The two-sided t interval of the mean difference at ``confidence`` in (0, 1).

        >>> low, high = paired_test([3.0, 4.0, 8.0], [1.0, 2.0, 3.0], "higher").interval(0.99)
        >>> round(low, 2), round(high, 2)  # mean 3, se 1, t(0.995, df 2) = 9.925
        (-6.92, 12.92)
        """
        return _t_interval(self.mean, self.se, self.df, confidence)


def _t_interval(mean: float, se: float, df: int, confidence: float) -> tuple[float, float]:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if df < 1:
        return -math.inf, math.inf
    half = float(stats.t.isf((1 - confidence) / 2, df)) * se
    return mean - half, mean + half


def check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")


def _check_direction(direction: str) -> None:
    if direction not in ("higher", "lower"):
        raise ValueError(f'direction must be "higher" or "lower", got {direction!r}')


def paired_test(
    method: Sequence[float], baseline: Sequence[float], direction: Direction, confidence: float = 0.95
) -> PairedTest:
    """Paired t-test of ``method[i] - baseline[i]`` (two sequences of n floats, paired by seed).

    Raises ``ValueError`` for sequences of different lengths, non-finite values or an unknown
    direction.

    Student's sleep data (Cushny & Peebles; R's ``t.test(..., paired = TRUE)``):

    >>> drug2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
    >>> drug1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
    >>> test = paired_test(drug2, drug1, "higher")
    >>> round(test.mean, 2), round(test.t, 3), test.df, round(test.p_two_sided, 5)
    (1.58, 4.062, 9, 0.00283)
    >>> round(test.ci_low, 3), round(test.ci_high, 3)
    (0.7, 2.46)
    """
    _check_direction(direction)
    d = paired_differences(method, baseline)
    n = int(d.size)
    mean = float(d.mean()) if n else math.nan
    if n < 2:
        nan = math.nan
        return PairedTest(
            n, mean, nan, nan, nan, 0, nan, nan, *_t_interval(mean, nan, 0, confidence), confidence, direction
        )
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    df = n - 1
    if se > 0:
        t = mean / se
    else:
        t = math.copysign(math.inf, mean) if mean else 0.0
    p_two = float(min(1.0, 2 * stats.t.sf(abs(t), df)))
    sign = 1 if direction == "higher" else -1
    p_one = float(stats.t.sf(sign * t, df))
    return PairedTest(
        n, mean, sd, se, t, df, p_two, p_one, *_t_interval(mean, se, df, confidence), confidence, direction
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in input order (m floats in [0, 1] or NaN).

    The k-th smallest of the m non-NaN p-values becomes ``max_{j <= k} min(1, (m - j + 1) p_(j))``:
    monotone in p, never below p, capped at 1; "significant at alpha after Holm" is then
    ``adjusted < alpha``. NaN p-values (no test possible) are left out of the family (m counts
    only the others) and stay NaN.

    >>> [round(p, 6) for p in holm([0.01, 0.04, float("nan"), 0.03, 0.005])]
    [0.03, 0.06, nan, 0.06, 0.02]
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"p_values must be a flat sequence, got shape {p.shape}")
    if ((p < 0) | (p > 1)).any():
        raise ValueError("p-values must lie in [0, 1]")
    adjusted = np.full(p.shape, math.nan)
    tested = np.flatnonzero(~np.isnan(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    divisors = np.arange(order.size, 0, -1)  # m for the smallest p, ..., 1 for the largest
    adjusted[order] = np.maximum.accumulate(np.minimum(1.0, divisors * p[order]))
    return [float(a) for a in adjusted]


def power_paired(effect: float, n: int, sd: float, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test at level ``alpha`` with n pairs, when the true mean
    difference is ``effect`` and the differences' standard deviation is ``sd``.

    Both rejection tails of the noncentral t (noncentrality ``effect * sqrt(n) / sd``, df n - 1);
    R's ``power.t.test`` counts only the upper one unless ``strict = TRUE``. Fewer than 2 pairs:
    0 (no test, no detection). ``sd == 0``: 1 for any nonzero effect.

    >>> round(power_paired(1.0, 10, 1.0), 7)  # R's power.t.test(n=10, delta=1, sd=1, type="paired"): 0.8030962
    0.8030969
    >>> round(power_paired(0.0, 5, 2.0), 3)   # no effect: the test's size
    0.05
    """
    check_alpha(alpha)
    if not sd >= 0:
        raise ValueError(f"sd must be >= 0, got {sd}")
    if n < 2:
        return 0.0
    if effect == 0:
        return alpha
    if sd == 0:
        return 1.0
    df = n - 1
    ncp = effect * math.sqrt(n) / sd
    crit = stats.t.isf(alpha / 2, df)
    # The lower tail as sf at -ncp: scipy's nct.cdf turns NaN far out in that tail (scipy 1.17).
    return float(stats.nct.sf(crit, df, ncp) + stats.nct.sf(crit, df, -ncp))


@lru_cache(maxsize=1024)
def _unit_mde(n: int, alpha: float, power: float) -> float:
    """The minimum detectable effect at sd 1 (it scales with sd: power depends on effect / sd)."""
    gap = lambda effect: power_paired(effect, n, 1.0, alpha) - power  # noqa: E731
    if gap(0.0) >= 0:
        return 0.0
    high = 1.0
    while gap(high) < 0:
        high *= 2
    return float(optimize.brentq(gap, 0.0, high, xtol=1e-12, rtol=1e-10))


def min_detectable_effect(n: int, sd: float, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest true mean difference (either sign) that the two-sided paired t-test at
    ``alpha`` with n pairs and differences of standard deviation ``sd`` detects with ``power``:
    the root of ``power_paired(effect, n, sd, alpha) = power``, found with Brent's method.

    ``inf`` with fewer than 2 pairs (whatever ``sd``, NaN included), 0 when ``sd == 0`` or
    ``power <= alpha``.

    >>> mde = min_detectable_effect(10, 1.0)
    >>> round(mde, 4), round(power_paired(mde, 10, 1.0), 6)
    (0.996, 0.8)
    """
    if not 0 < power < 1:
        raise ValueError(f"power must lie in (0, 1), got {power}")
    check_alpha(alpha)
    if n < 2:
        return math.inf
    if not sd >= 0:
        raise ValueError(f"sd must be >= 0, got {sd}")
    return sd * _unit_mde(int(n), float(alpha), float(power))


def sd_upper_limit(sd: float, n: int, level: float = 0.8) -> float:
    """The one-sided ``level`` upper confidence limit of a normal population's SD estimated as
    ``sd`` from ``n`` values: ``sd * sqrt((n - 1) / chi2_(1 - level)(n - 1))``. The third protocol's
    seed rule (docs/registrations/fourth-step.md) plans on it at 80 %, so that a pilot's lucky small
    spread does not under-size the test. ``inf`` below 2 values.

    >>> round(sd_upper_limit(1.0, 2), 3)  # chi2(1) 20th percentile 0.06418 (tables): sqrt(1 / 0.06418)
    3.947
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if n < 2:
        return math.inf
    return sd * math.sqrt((n - 1) / stats.chi2.ppf(1 - level, n - 1))


def seeds_needed(effect: float, sd: float, alpha: float, most: int, power: float = POWER) -> int | None:
    """The fewest pairs (2 to ``most``) whose two-sided paired t-test at ``alpha`` detects
    ``|effect|`` with ``power`` when the differences have SD ``sd``; None when even ``most`` cannot.

    >>> seeds_needed(1.0, 1.0, 0.05, 40)  # min_detectable_effect(10, 1) = 0.996, (9, 1) = 1.07
    10
    """
    return next((n for n in range(2, most + 1) if min_detectable_effect(n, sd, alpha, power) <= abs(effect)), None)


@dataclass(frozen=True)
class SeedPlan:
    """The third protocol's seed rule (docs/registrations/fourth-step.md) read from a pilot: the
    sample SD of its paired differences, that SD's 80 % upper limit (``sd_upper_limit``), and the
    pairs a test needs to detect the effect at that limit (``seeds_needed``; None: more than
    allowed)."""

    sd: float
    limit: float
    needed: int | None


def seed_plan(differences: Sequence[float], effect: float, alpha: float, most: int) -> SeedPlan:
    """The seed rule on a pilot's paired ``differences`` (2 or more floats), for ``|effect|`` at
    ``alpha`` two-sided, power ``POWER``, at most ``most`` pairs.

    >>> plan = seed_plan([0.0, 2**0.5], 3.947, 0.05, 40)  # SD 1, its 80 % limit 3.947 (chi2 tables)
    >>> round(plan.sd, 6), round(plan.limit, 3), plan.needed  # as seeds_needed(1.0, 1.0, 0.05, 40)
    (1.0, 3.947, 10)
    """
    sd = float(np.std(differences, ddof=1))
    limit = sd_upper_limit(sd, len(differences))
    return SeedPlan(sd, limit, seeds_needed(effect, limit, alpha, most))
