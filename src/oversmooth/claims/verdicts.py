"""The verdict on a claim from its paired values: Holm within a family, the Holm-matched interval,
TOST for an equivalence claim, and the third protocol's readings.

Pure maths on numbers (the tests are ``oversmooth.study.stats``): nothing here knows cells, studies
or reports.

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
by less than a margin") is decided by TOST (``oversmooth.claims.equivalence``): held when the
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

The third protocol (docs/registrations/fourth-step.md) reads a decision in magnitude and an
existence claim as one:

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
from typing import Literal

from oversmooth.claims.equivalence import narrowest_margin, tost
from oversmooth.study.stats import POWER, Direction, PairedTest, check_alpha, holm, min_detectable_effect, paired_test

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
HELD_SMALLER: Verdict = "held, smaller than claimed"  # the third protocol's (fourth-step.md)
SMALLER: Verdict = "smaller than claimed"
NOT_SHOWN: Verdict = "not shown here"


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


def p_text(p: float, alpha: float) -> str:
    """``p`` to 3 significant figures, more where 3 would print it on the other side of ``alpha``.

    >>> p_text(0.0499, 0.05), p_text(0.04996, 0.05), p_text(0.0501, 0.05), p_text(1.23e-5, 0.05)
    ('0.0499', '0.04996', '0.0501', '1.23e-05')
    """
    for digits in range(3, 17):
        text = f"{p:.{digits}g}"
        if (float(text) < alpha) == (p < alpha):
            return text
    return repr(p)


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
    holm_p = (
        f"p {p_text(p, alpha)}"
        if family_size == 1
        else f"Holm-adjusted p {p_text(p_adjusted, alpha)} over {family_size} claims"
    )
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
            f"{_fmt(test.ci_high)}] excludes 0, p {p_text(p, alpha)}, but not after Holm)"
        )
    if test.sd == 0:  # every difference 0 (a nonzero one would have been held or contradicted)
        reason += "; every pair's difference is 0: the arms ended equal on every seed, so nothing was observed to test"
    else:
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
    check_alpha(alpha)
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
    holm_p = f"TOST p {p_text(equivalence.p, alpha)}" + (
        "" if family_size == 1 else f", Holm-adjusted {p_text(p_adjusted, alpha)} over {family_size} claims"
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
    check_alpha(alpha)
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
    the rule docs/registrations/fourth-step.md fixes."""

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


def magnitude_reason(decision: Decision, effect: float) -> tuple[Verdict, str]:
    """``in_magnitude``'s verdict and why: the decision's own reason, led, where the magnitude
    reading differs from it, by that reading and the interval it rests on.

    >>> drug2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
    >>> drug1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
    >>> verdict, reason = magnitude_reason(decide(drug2, drug1, "higher"), 3.0)
    >>> verdict  # Student's sleep data: 95 % CI [0.70, 2.46]
    'held, smaller than claimed'
    >>> reason.split("; the test: ")[0]
    "held, smaller than claimed: the Holm-matched interval [+0.7001, +2.46] lies entirely short of ..."
    """
    verdict = in_magnitude(decision, effect)
    if verdict == decision.verdict:
        return verdict, decision.reason
    interval = f"[{_fmt(decision.ci_low)}, {_fmt(decision.ci_high)}]"
    return verdict, (
        f"{verdict}: the Holm-matched interval {interval} lies entirely short of the paper's effect carried to this "
        f"measure ({effect:+.4g}); the test: {decision.reason}"
    )


def existence(verdict: Verdict) -> Verdict:
    """The third protocol's verdict on an existence claim decided ``verdict``: held and not tested
    stay; any other is ``not shown here``, never contradicted.

    >>> existence("held"), existence("contradicted"), existence("inconclusive")
    ('held', 'not shown here', 'not shown here')
    """
    return verdict if verdict in (HELD, NOT_TESTED) else NOT_SHOWN
