"""The statistics that decide a claim: paired t-test, Holm correction, power, verdicts.

Pure maths on numbers (numpy, scipy): nothing here knows cells, studies or reports.

Protocol. Runs are paired by seed (same init and data order for the method and its baseline),
and a claim is one question (one task, depth, width: never pooled as replicates), tested with a
paired t-test on the differences ``d = method - baseline``. A claim states a *direction*: the
expected sign of ``d`` ("higher": method above baseline; "lower": below, e.g. perplexity or
token similarity). Across the claims of one report, Holm's step-down correction of the two-sided
p-values. Verdicts:

- ``held``: Holm-adjusted p < alpha and the mean difference in the claimed direction;
- ``contradicted``: Holm-adjusted p < alpha and the mean difference the other way;
- ``inconclusive``: neither, or fewer than 2 pairs (no test); the reason gives the smallest
  effect the design detects with power 0.8;
- ``not tested``: a gate failed (the baseline missed its stated quality or had not plateaued)
  or the claim has not finished; whatever its data, it stays in its Holm family with p = 1, so a
  family's m is fixed in advance and never shrinks.

One other test shares this rule (``PairedClaim``): an equivalence claim ("changes the measure
by less than a margin") is decided by TOST (``oversmooth.study.equivalence``): held when the
matching interval lies inside the margin, contradicted when it lies wholly outside.

The interval beside a verdict (``Decision.ci_low``, ``ci_high``, at ``Decision.ci_level``) is
matched to Holm's decisions in its family. A claim Holm did not reject gets the t interval at
``1 - alpha / (m - r)`` (``r``: the claims the family rejected), the level of the step at which
Holm stopped: Strassburger & Bretz (2008, "Compatible simultaneous lower confidence bounds for the
Holm procedure and other Bonferroni-based closed tests", Stat. Med. 27) give the claims Holm keeps
this level, and every such p is at least ``alpha / (m - r)``, so the interval contains 0. A
rejected claim gets the level ``1 - alpha * p / p_adjusted``, at which 0 sits on the interval's
edge exactly when the adjusted p is alpha (``_level``): its interval excludes 0, as its verdict
says, and is narrower than the one-sided bound at 0 that Strassburger & Bretz give a rejected
claim, so the printed intervals are not jointly simultaneous. Bonferroni's, at
``1 - alpha / m``, would be, and is at least as wide. An equivalence claim (TOST) takes the same
alpha' for each of its two one-sided tests, so its interval is at ``1 - 2 alpha'``: it lies inside
the margin exactly when held, and wholly outside it when contradicted.
The plain, unadjusted ``1 - alpha`` interval stays in ``Decision.test``; when it excludes 0 but
Holm's does not, the reason says so.

The third protocol (DESIGN 9.8) reads a decision in magnitude and an existence claim as one:

- ``smaller than claimed``: the Holm-matched interval covers 0 and lies entirely short of the
  paper's effect on the claimed side, the effect carried to our measure by ``PaperEffect``;
  ``held, smaller than claimed`` when the claim held (its interval excludes 0 on the claimed
  side) and the interval still lies short of the paper's effect: present, but smaller. An
  interval that reaches the effect is not smaller; a contradicted claim stays contradicted
  (``in_magnitude``);
- an existence claim ("need not", "can improve") is ``held`` or ``not shown here``: one setting
  where it did not show never contradicts it (``existence``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy import optimize, stats

from oversmooth.study.equivalence import narrowest_margin, paired_differences, tost

Direction = Literal["higher", "lower"]
Verdict = Literal[
    "held",
    "contradicted",
    "inconclusive",
    "not tested",
    "held, smaller than claimed",
    "smaller than claimed",
    "not shown here",
]
HELD: Verdict = "held"
CONTRADICTED: Verdict = "contradicted"
INCONCLUSIVE: Verdict = "inconclusive"
NOT_TESTED: Verdict = "not tested"
HELD_SMALLER: Verdict = "held, smaller than claimed"  # the third protocol's (DESIGN 9.8)
SMALLER: Verdict = "smaller than claimed"
NOT_SHOWN: Verdict = "not shown here"
POWER = 0.8  # the power at which the minimum detectable effect is quoted


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


def _check_alpha(alpha: float) -> None:
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
    _check_alpha(alpha)
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
    _check_alpha(alpha)
    if n < 2:
        return math.inf
    if not sd >= 0:
        raise ValueError(f"sd must be >= 0, got {sd}")
    return sd * _unit_mde(int(n), float(alpha), float(power))


def sd_upper_limit(sd: float, n: int, level: float = 0.8) -> float:
    """The one-sided ``level`` upper confidence limit of a normal population's SD estimated as
    ``sd`` from ``n`` values: ``sd * sqrt((n - 1) / chi2_(1 - level)(n - 1))``. The third
    protocol's seed rule (DESIGN 9.8) plans on it at 80 %, so that a pilot's lucky small spread
    does not under-size the test. ``inf`` below 2 values.

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
class Decision:
    """The verdict on one claim, with the reason a report prints beside it.

    ``test`` is the paired test, its own interval at ``1 - alpha`` (unadjusted); ``p_adjusted``
    the Holm-adjusted two-sided p among ``family_size`` tested claims (NaN when not tested or
    no test was possible). ``(ci_low, ci_high)`` is the interval at ``ci_level`` that matches
    the verdict (see the module docstring): for a paired t claim it excludes 0 exactly when the
    verdict is held or contradicted; for an equivalence claim it lies inside the margin exactly
    when held. ``mde`` is the smallest effect detected with power 0.8 at level
    ``alpha / family_size``: Holm rejects every p below that whatever the other claims show, so
    the power holds for any of them (``inf`` with fewer than 2 pairs, NaN when not tested).
    """

    verdict: Verdict
    reason: str
    test: PairedTest
    p_adjusted: float
    family_size: int
    ci_level: float
    ci_low: float
    ci_high: float
    mde: float
    effect: float = math.nan  # what the interval is about: the mean difference
    p: float = math.nan  # the unadjusted p of the claim's own test
    margin: float | None = None  # an equivalence claim's margin


def _fmt(x: float) -> str:
    return f"{x:+.4g}"


def _decide(
    test: PairedTest,
    failed_gate: str | None,
    p_adjusted: float,
    family_size: int,
    alpha: float,
    power: float,
    unrejected: int | None = None,
) -> Decision:
    nan = math.nan
    if failed_gate is not None:
        return Decision(NOT_TESTED, f"not tested: {failed_gate}", test, nan, family_size, nan, nan, nan, nan)
    if family_size < 1:
        raise ValueError(f"family_size must be >= 1, got {family_size}")
    mde = min_detectable_effect(test.n, test.sd, alpha / family_size, power)
    if test.n < 2:
        return Decision(
            INCONCLUSIVE,
            f"inconclusive: {test.n} pair(s), a paired t-test needs at least 2",
            test,
            nan,
            family_size,
            1 - alpha,
            -math.inf,
            math.inf,
            mde,
            test.mean,
        )
    p = test.p_two_sided
    if not p * (1 - 1e-9) <= p_adjusted <= 1:
        raise ValueError(f"a Holm-adjusted p lies in [p, 1] = [{p:.6g}, 1], got {p_adjusted}")
    level = 1 - _level(p, p_adjusted, alpha, family_size if unrejected is None else unrejected)
    low, high = test.interval(level)
    where = f"mean difference {_fmt(test.mean)} over {test.n} pairs, {100 * level:.4g} % CI [{_fmt(low)}, {_fmt(high)}]"
    holm_p = f"p {p:.3g}" if family_size == 1 else f"Holm-adjusted p {p_adjusted:.3g} over {family_size} claims"
    if p_adjusted < alpha:
        claimed = (test.mean > 0) == (test.direction == "higher")
        verdict, way = (HELD, "in") if claimed else (CONTRADICTED, "against")
        return Decision(
            verdict,
            f"{verdict}: {where}, {holm_p} < {alpha:g}, {way} the claimed direction ({test.direction})",
            test,
            p_adjusted,
            family_size,
            level,
            low,
            high,
            mde,
            test.mean,
            p,
        )
    reason = f"inconclusive: {where}, {holm_p} >= {alpha:g}"
    if test.ci_low > 0 or test.ci_high < 0:
        reason += (
            f" (the unadjusted {100 * test.confidence:.4g} % CI [{_fmt(test.ci_low)}, "
            f"{_fmt(test.ci_high)}] excludes 0, p {p:.3g}, but not after Holm)"
        )
    reason += f"; smallest effect this design detects with power {power:g}: {mde:.4g} (either sign)"
    return Decision(INCONCLUSIVE, reason, test, p_adjusted, family_size, level, low, high, mde, test.mean, p)


def decide(
    method: Sequence[float],
    baseline: Sequence[float],
    direction: Direction,
    *,
    failed_gate: str | None = None,
    p_adjusted: float | None = None,
    family_size: int = 1,
    alpha: float = 0.05,
    power: float = POWER,
) -> Decision:
    """The verdict on one claim from its paired values (n floats each, paired by seed).

    ``failed_gate``: None when every gate passed, else what failed (then ``not tested``,
    whatever the data). ``p_adjusted``: this claim's Holm-adjusted p among ``family_size``
    tested claims (see ``holm``); None for a lone claim (its own two-sided p). Alone, it cannot
    know how many of the family Holm rejected, so a claim it does not reject gets the interval of a
    family that rejected none (``1 - alpha / family_size``): use ``decide_family`` to decide the
    claims of a report together.

    >>> drug2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
    >>> drug1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
    >>> decide(drug2, drug1, "higher").verdict, decide(drug2, drug1, "lower").verdict
    ('held', 'contradicted')
    >>> decide(drug2, drug1, "higher", failed_gate="baseline below 80 % accuracy").reason
    'not tested: baseline below 80 % accuracy'
    >>> decide([1.0, 2.0], [0.5, 2.2], "higher").verdict
    'inconclusive'
    """
    _check_alpha(alpha)
    test = paired_test(method, baseline, direction, 1 - alpha)
    return _decide(test, failed_gate, test.p_two_sided if p_adjusted is None else p_adjusted, family_size, alpha, power)


@dataclass(frozen=True)
class PairedClaim:
    """One claim's data: paired values (n floats each, paired by seed), the claimed direction
    of ``method - baseline``, and what gate failed (None: all passed). ``margin`` makes it an
    equivalence claim (TOST against +-margin; ``direction`` is then unused)."""

    method: tuple[float, ...]
    baseline: tuple[float, ...]
    direction: Direction
    failed_gate: str | None = None
    margin: float | None = None

    def p_value(self) -> float:
        """The unadjusted p of its own test; 1 when not tested or untestable (it enters Holm so)."""
        if self.failed_gate is not None or len(self.method) < 2:
            return 1.0
        if self.margin is not None:
            return tost(self.method, self.baseline, self.margin).p
        return paired_test(self.method, self.baseline, self.direction).p_two_sided


def _level(p: float, p_adjusted: float, alpha: float, unrejected: int) -> float:
    """The alpha this claim's interval is drawn at (module docstring): ``alpha * p / p_adjusted``
    when Holm rejected it, else (or when p is 0) ``alpha / unrejected``, ``unrejected`` being how
    many claims of its family Holm did not reject (at least 1)."""
    if p_adjusted >= alpha or p == 0:
        return alpha / max(unrejected, 1)
    return alpha * p / p_adjusted


def _decide_equivalence(
    claim: PairedClaim,
    test: PairedTest,
    p_adjusted: float,
    family_size: int,
    alpha: float,
    power: float,
    unrejected: int,
) -> Decision:
    equivalence = tost(claim.method, claim.baseline, claim.margin)
    level = _level(equivalence.p, p_adjusted, alpha, unrejected)
    low, high = equivalence.interval(level)
    margin = claim.margin
    mde = narrowest_margin(equivalence.n, equivalence.sd, alpha / family_size, power)
    where = (
        f"mean difference {_fmt(equivalence.mean)} over {equivalence.n} pairs, {100 * (1 - 2 * level):.4g} % CI "
        f"[{_fmt(low)}, {_fmt(high)}] against the margin +-{margin:g}"
    )
    holm_p = f"TOST p {equivalence.p:.3g}" + (
        "" if family_size == 1 else f", Holm-adjusted {p_adjusted:.3g} over {family_size} claims"
    )
    values = (test, p_adjusted, family_size, 1 - 2 * level, low, high, mde, equivalence.mean, equivalence.p, margin)
    if p_adjusted < alpha:
        return Decision(HELD, f"held: {where}, inside it; {holm_p} < {alpha:g}", *values)
    if low >= margin or high <= -margin:
        return Decision(CONTRADICTED, f"contradicted: {where}, wholly outside it; {holm_p}", *values)
    return Decision(
        INCONCLUSIVE,
        f"inconclusive: {where}, neither inside nor outside; {holm_p}; the narrowest "
        f"margin this design establishes with power {power:g} at a true difference of 0: "
        f"+-{mde:.4g}",
        *values,
    )


def decide_family(claims: Sequence[PairedClaim], alpha: float = 0.05, power: float = POWER) -> list[Decision]:
    """Decide the claims of one Holm family together (one ``Decision`` per claim, in order).

    The family is fixed: every claim counts in m, and one that is not tested (a failed gate, an
    unfinished study) or has no test (< 2 pairs) enters Holm with p = 1, so a family's m never
    shrinks because a claim did not finish.

    >>> family = [PairedClaim((1.3, 1.5, 1.4, 1.6), (1.0, 1.1, 1.2, 1.15), "higher"),
    ...           PairedClaim((2.0, 2.1, 1.9, 2.2), (2.2, 1.9, 2.0, 2.0), "higher"),
    ...           PairedClaim((5.0, 6.0), (1.0, 1.0), "lower", failed_gate="baseline had not plateaued")]
    >>> [(d.verdict, d.family_size) for d in decide_family(family)]
    [('held', 3), ('inconclusive', 3), ('not tested', 3)]
    """
    _check_alpha(alpha)
    p_values = [claim.p_value() for claim in claims]  # never NaN: an untested claim enters with 1
    adjusted = holm(p_values)
    m = max(len(claims), 1)
    unrejected = sum(p_adjusted >= alpha for p_adjusted in adjusted)
    decisions = []
    for claim, p_adjusted in zip(claims, adjusted):
        test = paired_test(claim.method, claim.baseline, claim.direction, 1 - alpha)
        if claim.failed_gate is not None:
            decisions.append(_decide(test, claim.failed_gate, math.nan, m, alpha, power))
        elif claim.margin is not None:
            decisions.append(_decide_equivalence(claim, test, p_adjusted, m, alpha, power, unrejected))
        else:
            decisions.append(_decide(test, None, p_adjusted, m, alpha, power, unrejected))
    return decisions


@dataclass(frozen=True)
class PaperEffect:
    """A paper's two numbers for one claim, its baseline's and its method's, on ``scale``: an
    ``accuracy`` in % or a ``perplexity``. ``transferred`` carries the effect to our measure by
    the rule DESIGN 9.8 fixes."""

    baseline: float
    method: float
    scale: Literal["accuracy", "perplexity"]

    def transferred(self, ours: float) -> float:
        """The paper's effect in our measure, at our baseline's mean ``ours``. Accuracy: the share of
        the paper's error removed, ``(method - baseline) / (100 - baseline)``, of our baseline's
        error ``100 - ours`` (pp; ``ours`` in %). Perplexity: nats per token, ``ln(method /
        baseline)``, whatever ``ours``.

        >>> round(PaperEffect(72.17, 73.01, "accuracy").transferred(90.0), 4)  # 0.84 / 27.83 of 10 pp
        0.3018
        """
        if self.scale == "perplexity":
            if not (self.baseline > 0 and self.method > 0):
                raise ValueError(f"perplexities must be > 0, got {self.baseline}, {self.method}")
            return math.log(self.method / self.baseline)
        if not 0 <= ours <= 100:
            raise ValueError(f"our baseline's accuracy lies in [0, 100] %, got {ours}")
        return self.error_removed * (100 - ours)

    @property
    def error_removed(self) -> float:
        """An accuracy claim's share of the paper's error that its method removed (negative: added)."""
        if self.scale != "accuracy" or not (0 <= self.baseline < 100 and 0 <= self.method <= 100):
            raise ValueError(f"the share of error removed needs two accuracies in %, got {self}")
        return (self.method - self.baseline) / (100 - self.baseline)


def in_magnitude(decision: Decision, effect: float) -> Verdict:
    """The third protocol's verdict on a paired t claim whose paper states ``effect`` (in our
    measure, on the claimed side of 0): ``held, smaller than claimed`` or ``smaller than claimed``
    when the Holm-matched interval of a held or inconclusive ``decision`` lies entirely short of
    ``effect`` on the claimed side; otherwise the decision's own verdict.

    >>> drug2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
    >>> drug1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
    >>> held = decide(drug2, drug1, "higher")  # 95 % CI [0.70, 2.46]
    >>> in_magnitude(held, 3.0), in_magnitude(held, 2.0)
    ('held, smaller than claimed', 'held')
    """
    if decision.margin is not None:
        raise ValueError("an equivalence claim (a margin) has no magnitude verdict")
    sign = 1 if decision.test.direction == "higher" else -1
    if not sign * effect > 0:
        raise ValueError(f"the paper's effect {effect:+g} is not on the claimed side ({decision.test.direction})")
    reach = decision.ci_high if sign > 0 else decision.ci_low  # the interval's end on the claimed side
    if decision.verdict not in (HELD, INCONCLUSIVE) or not sign * reach < sign * effect:
        return decision.verdict
    return HELD_SMALLER if decision.verdict == HELD else SMALLER


def existence(verdict: Verdict) -> Verdict:
    """The third protocol's verdict on an existence claim decided ``verdict``: held and not tested
    stay; any other is ``not shown here``, never contradicted.

    >>> existence("held"), existence("contradicted"), existence("inconclusive")
    ('held', 'not shown here', 'not shown here')
    """
    return verdict if verdict in (HELD, NOT_TESTED) else NOT_SHOWN
