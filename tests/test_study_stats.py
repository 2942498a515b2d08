"""The statistics that decide a claim, against answers known independently of the code.

References: Student's sleep data as R's ``t.test(..., paired = TRUE)`` prints it; R's
``power.t.test``; Monte Carlo simulations of the paired t-test (numpy, fixed seeds); Holm by hand
and by its closed-testing definition; ``scipy.stats.ttest_rel``.
"""

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from oversmooth.claims.verdicts import (
    CONTRADICTED,
    HELD,
    HELD_SMALLER,
    INCONCLUSIVE,
    NOT_SHOWN,
    NOT_TESTED,
    SMALLER,
    PairedClaim,
    PaperEffect,
    decide,
    decide_family,
    existence,
    in_magnitude,
)
from oversmooth.study.stats import holm, min_detectable_effect, paired_test, power_paired

# Student (1908) / Cushny & Peebles: extra hours of sleep under two drugs, the same 10 patients.
DRUG1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
DRUG2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
R_POWER = 0.8030962  # R: power.t.test(n = 10, delta = 1, sd = 1, type = "paired")$power


def noise_claims(rng: np.random.Generator, n: int, count: int, effect: float = 0.0) -> list[PairedClaim]:
    """Claims whose method and baseline share a per-seed offset (the pairing) plus their own noise:
    the true mean difference is ``effect``, the differences' sd is sqrt(2)."""
    claims = []
    for _ in range(count):
        seed_offset = rng.normal(0.0, 3.0, n)
        method = 80.0 + seed_offset + effect + rng.normal(0.0, 1.0, n)
        baseline = 80.0 + seed_offset + rng.normal(0.0, 1.0, n)
        claims.append(PairedClaim(tuple(method), tuple(baseline), "higher"))
    return claims


def rejection_bounds(count: int, rate: float) -> tuple[float, float]:
    """The central 99.8 % range of a binomial(count, rate) proportion."""
    return stats.binom.ppf(0.001, count, rate) / count, stats.binom.ppf(0.999, count, rate) / count


# --- the paired t-test -------------------------------------------------------------------------


def test_sleep_data_matches_the_published_paired_t_test():
    test = paired_test(DRUG2, DRUG1, "higher")
    assert test.n == 10 and test.df == 9
    assert test.mean == pytest.approx(1.58)
    assert test.sd == pytest.approx(1.2299955, abs=1e-7)
    assert test.se == pytest.approx(0.3889587, abs=1e-7)
    assert test.t == pytest.approx(4.0621, abs=1e-4)
    assert test.p_two_sided == pytest.approx(0.002833, abs=1e-6)
    assert (test.ci_low, test.ci_high) == pytest.approx((0.7001142, 2.4598858), abs=1e-7)
    assert test.p_one_sided == pytest.approx(test.p_two_sided / 2)
    # The other way round: same two-sided p, one-sided p on the wrong side, mirrored interval.
    lower = paired_test(DRUG1, DRUG2, "lower")
    assert lower.t == pytest.approx(-test.t) and lower.p_two_sided == pytest.approx(test.p_two_sided)
    assert lower.p_one_sided == pytest.approx(test.p_two_sided / 2)
    assert paired_test(DRUG2, DRUG1, "lower").p_one_sided == pytest.approx(1 - test.p_two_sided / 2)
    assert (lower.ci_low, lower.ci_high) == pytest.approx((-2.4598858, -0.7001142), abs=1e-7)


@pytest.mark.parametrize("n", [2, 3, 5, 12])
def test_agrees_with_scipy_ttest_rel_on_random_data(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        method, baseline = rng.normal(0.3, 1.0, n), rng.normal(0.0, 1.0, n)
        ours = paired_test(method, baseline, "higher", confidence=0.9)
        ref = stats.ttest_rel(method, baseline)
        assert ours.t == pytest.approx(ref.statistic, rel=1e-10)
        assert ours.df == ref.df
        assert ours.p_two_sided == pytest.approx(ref.pvalue, rel=1e-10)
        assert ours.p_one_sided == pytest.approx(
            stats.ttest_rel(method, baseline, alternative="greater").pvalue, rel=1e-10
        )
        assert paired_test(method, baseline, "lower").p_one_sided == pytest.approx(
            stats.ttest_rel(method, baseline, alternative="less").pvalue, rel=1e-10
        )
        ci = ref.confidence_interval(0.9)
        assert (ours.ci_low, ours.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-10)


def test_fewer_than_two_pairs_is_no_test():
    for method, baseline in (([], []), ([2.0], [1.0])):
        test = paired_test(method, baseline, "higher")
        assert test.n == len(method) and test.df == 0
        assert all(math.isnan(x) for x in (test.sd, test.se, test.t, test.p_two_sided, test.p_one_sided))
        assert (test.ci_low, test.ci_high) == (-math.inf, math.inf)
        decision = decide(method, baseline, "higher")
        assert decision.verdict == INCONCLUSIVE and "at least 2" in decision.reason
        assert decision.mde == math.inf and math.isnan(decision.p_adjusted)
    assert paired_test([2.0], [1.0], "higher").mean == 1.0
    assert math.isnan(paired_test([], [], "higher").mean)
    assert power_paired(5.0, 1, 1.0) == 0.0 and min_detectable_effect(1, math.nan) == math.inf


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")  # scipy's, on constant data
def test_all_differences_equal():
    # A constant nonzero difference: t at its limit, as scipy takes it, and an interval of one point.
    test = paired_test([1.5, 2.5, 3.5], [1.0, 2.0, 3.0], "higher")
    assert test.t == math.inf == stats.ttest_rel([1.5, 2.5, 3.5], [1.0, 2.0, 3.0]).statistic
    assert test.p_two_sided == 0.0 and test.p_one_sided == 0.0
    assert (test.ci_low, test.ci_high) == (0.5, 0.5)
    assert paired_test([1.5, 2.5, 3.5], [1.0, 2.0, 3.0], "lower").p_one_sided == 1.0
    decision = decide([1.5, 2.5, 3.5], [1.0, 2.0, 3.0], "higher")
    assert decision.verdict == HELD and (decision.ci_low, decision.ci_high) == (0.5, 0.5) and decision.mde == 0.0
    # No difference at all: t = 0, a test that finds nothing (and stays in the Holm family).
    same = paired_test([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], "higher")
    assert same.t == 0.0 and same.p_two_sided == 1.0 and same.p_one_sided == 0.5
    assert (same.ci_low, same.ci_high) == (0.0, 0.0)
    family = decide_family(
        [PairedClaim((1.0, 2.0, 3.0), (1.0, 2.0, 3.0), "higher"), PairedClaim(tuple(DRUG2), tuple(DRUG1), "higher")]
    )
    assert [d.verdict for d in family] == [INCONCLUSIVE, HELD] and family[0].family_size == 2
    assert family[1].p_adjusted == pytest.approx(2 * 0.002833, abs=2e-6)
    # ... and says so, rather than quote a detectable effect of 0 (both arms at chance on every seed, say)
    assert "every pair's difference is 0: the arms ended equal on every seed" in family[0].reason
    assert "detects" not in family[0].reason


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="paired"):
        paired_test([1.0, 2.0], [1.0], "higher")
    with pytest.raises(ValueError, match="finite"):
        paired_test([1.0, math.nan], [1.0, 2.0], "higher")
    with pytest.raises(ValueError, match="direction"):
        paired_test([1.0, 2.0], [1.0, 2.0], "better")
    with pytest.raises(ValueError, match="Holm-adjusted"):
        decide(DRUG2, DRUG1, "higher", p_adjusted=0.001, family_size=2)  # below its own p 0.0028
    with pytest.raises(ValueError, match="p-values"):
        holm([0.5, 1.5])


# --- power and the minimum detectable effect ---------------------------------------------------


def simulated_power(n: int, effect: float, sd: float, alpha: float, runs: int, seed: int) -> float:
    """The share of simulated paired t-tests (normal differences) that reject at ``alpha``."""
    d = np.random.default_rng(seed).normal(effect, sd, (runs, n))
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    return float(np.mean(np.abs(t) > stats.t.ppf(1 - alpha / 2, n - 1)))


def test_power_matches_r_and_a_simulation():
    power = power_paired(1.0, 10, 1.0)
    # R's default counts only the upper rejection tail; ours adds the lower one (6.5e-7 here).
    assert R_POWER <= power < R_POWER + 1e-6
    runs = 40_000
    simulated = simulated_power(10, 1.0, 1.0, 0.05, runs, seed=1908)
    assert abs(simulated - R_POWER) < 4 * math.sqrt(R_POWER * (1 - R_POWER) / runs)


@pytest.mark.parametrize(
    "n, effect, sd, alpha", [(2, 8.0, 1.0, 0.05), (3, -2.0, 1.0, 0.05), (4, 3.0, 2.0, 0.0125), (3, 0.3, 1.0, 0.05)]
)  # 0.010 of 0.062 from the far tail
def test_power_matches_a_simulation_at_small_n(n, effect, sd, alpha):
    runs = 40_000
    power = power_paired(effect, n, sd, alpha)
    simulated = simulated_power(n, effect, sd, alpha, runs, seed=n)
    assert abs(simulated - power) < 4 * math.sqrt(power * (1 - power) / runs)


def test_power_properties():
    assert power_paired(0.0, 6, 1.0) == 0.05
    assert power_paired(0.7, 6, 1.0) == pytest.approx(power_paired(-0.7, 6, 1.0))
    assert power_paired(1.4, 6, 2.0) == pytest.approx(power_paired(0.7, 6, 1.0))
    assert power_paired(0.7, 6, 0.0) == 1.0
    assert power_paired(0.5, 5, 1.0) < power_paired(0.5, 10, 1.0) < power_paired(0.8, 10, 1.0)


@pytest.mark.parametrize("n", [2, 3, 4, 8, 30])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 6])
def test_minimum_detectable_effect_inverts_power(n, alpha):
    mde = min_detectable_effect(n, 1.7, alpha)
    assert power_paired(mde, n, 1.7, alpha) == pytest.approx(0.8, abs=1e-9)
    assert power_paired(0.99 * mde, n, 1.7, alpha) < 0.8
    assert min_detectable_effect(n, 3.4, alpha) == pytest.approx(2 * mde, rel=1e-9)


def test_minimum_detectable_effect_at_r_power():
    # The effect R's power.t.test gives power 0.8030962 at n = 10, sd = 1 is delta = 1.
    assert min_detectable_effect(10, 1.0, power=R_POWER) == pytest.approx(1.0, abs=1e-5)
    assert min_detectable_effect(4, 1.0) > min_detectable_effect(8, 1.0) > min_detectable_effect(16, 1.0)
    assert min_detectable_effect(8, 0.0) == 0.0
    assert min_detectable_effect(8, 1.0, power=0.04) == 0.0  # below the size: no effect needed


# --- Holm --------------------------------------------------------------------------------------


def test_holm_by_hand():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # NaN is left out of the family: m stays 4 and the others do not move.
    adjusted = holm([0.01, math.nan, 0.04, 0.03, 0.005])
    assert math.isnan(adjusted[1])
    assert [adjusted[i] for i in (0, 2, 3, 4)] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # 2 * 0.5 caps at 1, carried to 0.6
    assert holm([0.02, 0.02, 0.5]) == pytest.approx([0.06, 0.06, 0.5])  # ties get the same value
    assert holm([0.03]) == [0.03]
    assert holm([]) == []
    assert all(math.isnan(p) for p in holm([math.nan, math.nan]))


def closed_testing_holm(p: list[float]) -> list[float]:
    """Holm as the closed test of Bonferroni tests: the largest, over the subsets S holding a
    hypothesis, of min(1, |S| * min p over S)."""
    m = len(p)
    return [
        max(
            min(1.0, len(s) * min(p[j] for j in s))
            for size in range(1, m + 1)
            for s in itertools.combinations(range(m), size)
            if i in s
        )
        for i in range(m)
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=7))
def test_holm_equals_closed_testing(p):
    assert holm(p) == pytest.approx(closed_testing_holm(p), abs=1e-12)
    adjusted = holm(p)
    assert all(a >= q and a <= 1 for a, q in zip(adjusted, p))
    for i, j in itertools.combinations(range(len(p)), 2):  # monotone in p
        if p[i] <= p[j]:
            assert adjusted[i] <= adjusted[j]


# --- decisions ---------------------------------------------------------------------------------

differences = st.lists(st.integers(-40, 40).map(lambda k: k / 10), min_size=0, max_size=6)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(differences, st.sampled_from(["higher", "lower"]), st.booleans()), min_size=1, max_size=5))
def test_the_printed_interval_never_disagrees_with_the_verdict(rows):
    claims = [
        PairedClaim(tuple(d), (0.0,) * len(d), direction, None if passed else "gate") for d, direction, passed in rows
    ]
    for claim, decision in zip(claims, decide_family(claims)):
        if claim.failed_gate:
            assert decision.verdict == NOT_TESTED
            continue
        excludes_zero = decision.ci_low > 0 or decision.ci_high < 0
        assert excludes_zero == (decision.verdict in (HELD, CONTRADICTED)), decision.reason
        above = decision.ci_low > 0
        if decision.verdict == HELD:
            assert above == (claim.direction == "higher")
        if decision.verdict == CONTRADICTED:
            assert above == (claim.direction == "lower")
        if decision.verdict == INCONCLUSIVE:
            told = ("smallest effect", "at least 2", "every pair's difference is 0")
            assert any(words in decision.reason for words in told), decision.reason


def test_holm_can_leave_an_unadjusted_significant_claim_inconclusive_and_says_so():
    a = PairedClaim((0.5, 1.5, 1.0, 2.0, 0.2), (0.0,) * 5, "higher")  # p 0.0334 alone
    b = PairedClaim((1.0, 2.0, 0.1, 1.6, 0.9), (0.0,) * 5, "higher")  # p 0.0261 alone
    assert decide(a.method, a.baseline, "higher").verdict == HELD
    assert decide(b.method, b.baseline, "higher").verdict == HELD
    decisions = decide_family([a, b])
    assert [d.p_adjusted for d in decisions] == pytest.approx([2 * 0.0260585, 2 * 0.0260585], abs=1e-6)
    for decision in decisions:
        assert decision.verdict == INCONCLUSIVE
        assert decision.test.ci_low > 0  # the plain 95 % CI excludes 0 ...
        assert decision.ci_low < 0 < decision.ci_high  # ... the one printed with the verdict does not
        assert "excludes 0" in decision.reason and "not after Holm" in decision.reason
    # Holm rejected neither, so both intervals are at 1 - alpha / 2 (Strassburger & Bretz's level).
    assert [d.ci_level for d in decisions] == pytest.approx([0.975, 0.975])
    # decide with the adjusted p from holm() is the same decision.
    alone = decide(b.method, b.baseline, "higher", p_adjusted=decisions[1].p_adjusted, family_size=2)
    assert alone == decisions[1]


def test_pure_noise_rarely_decides():
    """4000 claims with no true effect at n = 2, 3, 4, 8: held + contradicted within the 5 %."""
    rng = np.random.default_rng(20240601)
    count = 1000
    decided, old_rule = {}, {}
    for n in (2, 3, 4, 8):
        claims = noise_claims(rng, n, count)
        verdicts = [decide(c.method, c.baseline, c.direction).verdict for c in claims]
        decided[n] = sum(v in (HELD, CONTRADICTED) for v in verdicts) / count
        d = np.array([np.subtract(c.method, c.baseline) for c in claims])
        se = d.std(axis=1, ddof=1) / math.sqrt(n)
        old_rule[n] = float(np.mean(np.abs(d.mean(axis=1)) > 2 * se))  # the report's "mean gain > 2 SE"
    overall = sum(decided.values()) / len(decided)
    low, high = rejection_bounds(4 * count, 0.05)
    assert low <= overall <= high, decided  # the t-test is exact: about 5 %, not more (nor 0)
    for n, rate in decided.items():
        assert rate <= rejection_bounds(count, 0.05)[1], (n, rate)
    # The old rule at n = 2 is |t| > 2 with 1 df: P = 1 - 2 atan(2) / pi = 29.5 %.
    low, high = rejection_bounds(count, 1 - 2 * math.atan(2) / math.pi)
    assert low <= old_rule[2] <= high and old_rule[2] > 4 * decided[2], (old_rule, decided)


def test_holm_keeps_the_familywise_error_of_noise_families():
    """1000 reports of 4 pure-noise claims (n = 3): some claim decided in at most 5 % of them
    with Holm; about 1 - 0.95 ** 4 = 18.5 % when each claim is decided alone."""
    rng = np.random.default_rng(7)
    reports = 1000
    with_holm = alone = 0
    for _ in range(reports):
        claims = noise_claims(rng, 3, 4)
        with_holm += any(d.verdict != INCONCLUSIVE for d in decide_family(claims))
        alone += any(decide(c.method, c.baseline, c.direction).verdict != INCONCLUSIVE for c in claims)
    assert with_holm / reports <= rejection_bounds(reports, 0.05)[1]
    low, high = rejection_bounds(reports, 1 - 0.95**4)
    assert low <= alone / reports <= high


def test_a_true_effect_is_held_as_often_as_the_power_says():
    rng = np.random.default_rng(11)
    count, n, effect = 1000, 8, 1.5  # differences' sd is sqrt(2)
    claims = noise_claims(rng, n, count, effect)
    held = sum(decide(c.method, c.baseline, "higher").verdict == HELD for c in claims) / count
    power = power_paired(effect, n, math.sqrt(2))  # the lower tail (contradicted) is ~1e-6 here
    low, high = rejection_bounds(count, power)
    assert low <= held <= high


def test_inconclusive_gives_the_detectable_effect_at_the_holm_level():
    noisy = PairedClaim((1.0, 2.0, 3.0, 1.0), (1.5, 1.0, 3.2, 0.9), "higher")
    decisions = decide_family([noisy, PairedClaim(tuple(DRUG2), tuple(DRUG1), "higher"), noisy])
    decision = decisions[0]
    assert decision.verdict == INCONCLUSIVE and decision.family_size == 3
    assert decision.mde == pytest.approx(min_detectable_effect(4, decision.test.sd, 0.05 / 3))
    assert f"{decision.mde:.4g}" in decision.reason


# --- gates -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, baseline, direction",
    [
        (DRUG2, DRUG1, "higher"),  # would be held
        (DRUG2, DRUG1, "lower"),  # would be contradicted
        ([1.0, 2.0, 3.0], [1.1, 1.9, 3.0], "higher"),  # would be inconclusive
        ([], [], "lower"),  # no data at all
    ],
)
def test_a_failed_gate_is_not_tested_whatever_the_data(method, baseline, direction):
    decision = decide(method, baseline, direction, failed_gate="baseline had not plateaued")
    assert decision.verdict == NOT_TESTED
    assert decision.reason == "not tested: baseline had not plateaued"
    assert math.isnan(decision.p_adjusted) and math.isnan(decision.mde)


def test_a_not_tested_claim_stays_in_the_holm_family_with_p_one():
    """docs/registrations/second-protocol.md: m is fixed in advance; an unfinished or gated claim
    enters with p = 1."""
    tested = [
        PairedClaim(tuple(DRUG2), tuple(DRUG1), "higher"),
        PairedClaim((0.5, 1.5, 1.0, 2.0, 0.2), (0.0,) * 5, "higher"),
    ]
    gated = PairedClaim((9.0, 9.1, 9.2), (0.0, 0.1, 0.0), "higher", failed_gate="baseline below 85 %")
    with_gated = decide_family([tested[0], gated, tested[1]])
    assert with_gated[1].verdict == NOT_TESTED
    assert [d.family_size for d in with_gated] == [3, 3, 3]
    p = [paired_test(c.method, c.baseline, "higher").p_two_sided for c in tested]
    expected = holm([p[0], 1.0, p[1]])  # the gated claim's own data are ignored
    assert with_gated[0].p_adjusted == pytest.approx(expected[0])
    assert with_gated[2].p_adjusted == pytest.approx(expected[2])
    assert with_gated[0].p_adjusted == pytest.approx(3 * p[0])  # the smallest of 3 is multiplied by 3


# --- equivalence (TOST) ---------------------------------------------------------------------------


def test_tost_matches_two_one_sided_t_tests_by_hand():
    from scipy import stats as sps

    from oversmooth.claims.equivalence import tost

    d = [0.31, -0.12, 0.05, 0.22, -0.08, 0.15, 0.02, 0.11]
    margin = 0.5
    n, mean = len(d), sum(d) / len(d)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    se = sd / math.sqrt(n)
    by_hand = max(1 - sps.t.cdf((mean + margin) / se, n - 1), sps.t.cdf((mean - margin) / se, n - 1))
    assert tost(d, [0.0] * n, margin).p == pytest.approx(by_hand, rel=1e-9)


def test_an_equivalence_claim_is_held_inside_the_margin_and_contradicted_outside():
    inside = PairedClaim((0.1, -0.1, 0.05, 0.0, -0.05, 0.08), (0.0,) * 6, "higher", margin=0.5)
    outside = PairedClaim((1.1, 0.9, 1.05, 1.0, 0.95, 1.08), (0.0,) * 6, "higher", margin=0.5)
    wide = PairedClaim((2.0, -2.0, 1.0), (0.0,) * 3, "higher", margin=0.5)
    held, contradicted, unknown = decide_family([inside, outside, wide])
    assert (held.verdict, contradicted.verdict, unknown.verdict) == (HELD, CONTRADICTED, INCONCLUSIVE)
    assert -0.5 < held.ci_low < held.ci_high < 0.5 and contradicted.ci_low > 0.5
    assert held.margin == 0.5 and "narrowest margin" in unknown.reason and math.isfinite(unknown.mde)


def test_a_claim_holm_keeps_gets_the_interval_at_alpha_over_the_claims_it_kept():
    """A family of 7: one claim rejected (p about 1e-9), one tested claim kept (p about 0.55), five
    entering with p = 1. Holm stopped after one rejection, so the kept claim's interval is the t
    interval at 1 - 0.05 / 6 (scipy; Strassburger & Bretz 2008), not the 1 - 0.05 * p one that its
    capped ratio p_adjusted / p would give, and the rejected one's interval excludes 0."""
    diffs = np.array([0.3, -0.2, 0.1, 0.4, -0.3, 0.2, -0.1, 0.05])
    tested = PairedClaim(tuple(diffs), (0.0,) * 8, "higher")
    strong = PairedClaim(tuple(5 + diffs), (0.0,) * 8, "higher")
    untested = PairedClaim((1.0, 2.0), (0.0, 0.0), "higher", failed_gate="unfinished")
    decisions = decide_family([untested] * 3 + [tested, strong] + [untested] * 2)
    kept, rejected = decisions[3], decisions[4]
    assert kept.p_adjusted == 1.0 and kept.family_size == 7 and rejected.verdict == HELD
    assert kept.ci_level == pytest.approx(1 - 0.05 / 6)
    half = stats.t.ppf(1 - 0.05 / 12, len(diffs) - 1) * diffs.std(ddof=1) / math.sqrt(len(diffs))
    assert (kept.ci_low, kept.ci_high) == pytest.approx((diffs.mean() - half, diffs.mean() + half))
    assert rejected.ci_low > 0
    assert decide_family([untested] * 3 + [tested] + [untested] * 3)[3].ci_level == pytest.approx(1 - 0.05 / 7)


# --- the third protocol's verdicts (fourth-step.md) -----------------------------------------------


def test_the_papers_effect_is_carried_to_our_measure_by_hand():
    """2a: 72.17 -> 73.01 % removes 0.8400 of the 27.83 pp of error, 0.03018; at our softmax's
    88.64 % (11.36 pp of error) that is 0.3429 pp. 8: 72.17 -> 72.63, 0.46 / 27.83 of 11.35 pp is
    0.1876 pp. 2b: ln(33.70 / 34.29) = ln(1 - x), x = 0.59 / 34.29 = 0.0172062, by its series
    -(x + x^2/2 + x^3/3 + x^4/4) = -0.0173559 nats per token, whatever our baseline."""
    neutreno = PaperEffect(72.17, 73.01, "accuracy")
    assert neutreno.error_removed == pytest.approx(0.03018, abs=5e-6)
    assert neutreno.transferred(88.64) == pytest.approx(0.3429, abs=5e-5)
    assert neutreno.transferred(72.17) == pytest.approx(0.84)  # at the paper's baseline: its own +0.84
    assert neutreno.transferred(100.0) == 0  # no error left to remove
    assert PaperEffect(72.17, 72.63, "accuracy").transferred(88.65) == pytest.approx(0.1876, abs=5e-5)
    lm = PaperEffect(34.29, 33.70, "perplexity")
    assert lm.transferred(4.45) == lm.transferred(3.0) == pytest.approx(-0.0173559, abs=5e-8)
    for bad in (
        lambda: PaperEffect(100.0, 100.0, "accuracy").transferred(90.0),
        lambda: neutreno.transferred(120.0),
        lambda: PaperEffect(0.0, 33.7, "perplexity").transferred(4.0),
        lambda: lm.error_removed,
    ):
        with pytest.raises(ValueError):
            bad()


def interval(verdict: str, low: float, high: float, direction: str = "higher"):
    """A decision of ``verdict`` whose Holm-matched interval is ``[low, high]`` (built by hand)."""
    return dataclasses.replace(decide(DRUG2, DRUG1, direction), verdict=verdict, ci_low=low, ci_high=high)


@pytest.mark.parametrize(
    "verdict, low, high, direction, effect, read",
    [
        # 2a's Holm-matched interval against its paper's +0.84 carried to our measure (+0.343)
        (INCONCLUSIVE, -0.131, 0.178, "higher", 0.343, SMALLER),
        (HELD, 0.05, 0.30, "higher", 0.343, HELD_SMALLER),  # present, but smaller
        (HELD, 0.05, 0.343, "higher", 0.343, HELD),  # reaches the effect: not smaller
        (INCONCLUSIVE, -0.131, 0.343, "higher", 0.343, INCONCLUSIVE),
        (INCONCLUSIVE, -0.1, 0.5, "higher", 0.343, INCONCLUSIVE),  # covers it
        (HELD, 0.4, 0.9, "higher", 0.343, HELD),  # wholly above it
        (CONTRADICTED, -0.9, -0.15, "higher", 0.343, CONTRADICTED),  # short of it, but the other way
        (INCONCLUSIVE, -math.inf, math.inf, "higher", 0.343, INCONCLUSIVE),  # fewer than 2 pairs
        (NOT_TESTED, math.nan, math.nan, "higher", 0.343, NOT_TESTED),
        # 2b (lower is the claim): its interval reaches -0.0174; a narrower one would not
        (INCONCLUSIVE, -0.0323, 0.0041, "lower", -0.0174, INCONCLUSIVE),
        (INCONCLUSIVE, -0.012, 0.004, "lower", -0.0174, SMALLER),
        (HELD, -0.015, -0.002, "lower", -0.0174, HELD_SMALLER),
        (HELD, -0.0174, -0.002, "lower", -0.0174, HELD),
    ],
)
def test_smaller_than_claimed_when_the_interval_lies_short_of_the_papers_effect(
    verdict, low, high, direction, effect, read
):
    assert in_magnitude(interval(verdict, low, high, direction), effect) == read


def test_the_sleep_datas_interval_against_an_effect_beyond_and_inside_it():
    """Student's sleep data, held at 95 % with R's interval [0.7001, 2.4599]: smaller than an effect
    of 2.5 hours, not smaller than one of 2.4 (inside it)."""
    held = decide(DRUG2, DRUG1, "higher")
    assert (held.ci_low, held.ci_high) == pytest.approx((0.7001142, 2.4598858), abs=1e-6)
    assert in_magnitude(held, 2.5) == HELD_SMALLER and in_magnitude(held, 2.4) == HELD


def test_no_magnitude_verdict_for_an_effect_on_the_wrong_side_or_an_equivalence_claim():
    with pytest.raises(ValueError, match="claimed side"):
        in_magnitude(interval(INCONCLUSIVE, -0.1, 0.1), -0.3)
    with pytest.raises(ValueError, match="claimed side"):
        in_magnitude(interval(INCONCLUSIVE, -0.1, 0.1, "lower"), 0.3)
    equivalence = decide_family([PairedClaim((0.1, -0.1, 0.05, 0.0), (0.0,) * 4, "higher", margin=0.5)])[0]
    with pytest.raises(ValueError, match="equivalence"):
        in_magnitude(equivalence, 0.18)


def test_an_existence_claim_is_held_or_not_shown_never_contradicted():
    assert [existence(v) for v in (HELD, CONTRADICTED, INCONCLUSIVE, NOT_TESTED)] == [
        HELD,
        NOT_SHOWN,
        NOT_SHOWN,
        NOT_TESTED,
    ]
