"""Claims S3 and S4 on hand-made LM cells (docs/registrations/sinks.md): the seed rule against scipy's
noncentral t and chi-square, the paired values as recorded, and the registered reasons a claim is
not tested (the gate, no sink, no massive activation)."""

import math

import numpy as np
import pytest
from claims_cells import analysis, make_cell
from scipy import stats

from oversmooth.claims.sinks_trained import CLAIMS, PILOT, seed_rule, trained_evidence
from oversmooth.study.results import read_studies

SEEDS = PILOT.seeds  # 40-42
SEEDS_I = range(len(SEEDS))


def sinks(rate, share, ratio, cos=0.3):
    return {"sink_rate_model": rate, "first_token_share_model": share, "massive_ratio_max": ratio, "cos_sim_last": cos}


def record(trained, init=None):
    return {"trained": trained, "init": init or sinks(0.0, 0.06, 8.0, 0.2)}


#: per seed: softmax sinks in a third of its heads, softpick and gated attention far fewer
ARMS = {
    "softmax": lambda i: record(sinks(0.30 + 0.02 * i, 0.40 + 0.01 * i, 300.0 * (1 + i))),
    "softpick": lambda i: record(sinks(0.03 * i * i, 0.10, 40.0)),
    "gated_attention": lambda i: record(sinks(0.05, 0.08 + 0.005 * i, 30.0 + 5 * i)),
}


def cells(tmp_path, arms=ARMS, softmax_val=4.1, reference=4.5):
    root = tmp_path / "results"
    for i, seed in enumerate(SEEDS):
        for label, make in arms.items():
            found = {**analysis(reference=reference if label == "softmax" else None), "sinks": make(i)}
            val = [softmax_val + 0.01, softmax_val] if label == "softmax" else None
            make_cell(root, PILOT.name, label, seed, softmax_val, val=val, cell_analysis=found)
    return read_studies([root / PILOT.name])[0]


def needed(effect, differences, alpha=0.01, most=10):
    """scipy's noncentral t: the fewest pairs reaching power 0.8 at the SD's 80 % upper limit."""
    sd = np.std(differences, ddof=1)
    limit = sd * math.sqrt((len(differences) - 1) / stats.chi2.ppf(0.2, len(differences) - 1))
    for n in range(2, most + 1):
        critical = stats.t.ppf(1 - alpha / 2, n - 1)
        shift = abs(effect) / limit * math.sqrt(n)
        if stats.nct.sf(critical, n - 1, shift) + np.nan_to_num(stats.nct.cdf(-critical, n - 1, shift)) >= 0.8:
            return max(n, 4)
    return None


def test_the_seed_rule_plans_half_the_effect_at_the_sds_upper_limit(tmp_path):
    rule = seed_rule(cells(tmp_path))
    softmax = [ARMS["softmax"](i)["trained"] for i in range(3)]
    rate = np.mean([r["sink_rate_model"] for r in softmax])
    share = np.mean([r["first_token_share_model"] for r in softmax])
    expected = {
        "S3a": (rate, [r["sink_rate_model"] - 0.0 for r in softmax]),
        "S3b": (-rate, [0.03 * i * i - softmax[i]["sink_rate_model"] for i in range(3)]),
        "S4a": (-(1 - 4.8 / 46.7) * share, [0.08 + 0.005 * i - softmax[i]["first_token_share_model"] for i in SEEDS_I]),
        "S4b": (math.log(94 / 1053), [math.log((30 + 5 * i) / (300 * (1 + i))) for i in range(3)]),
    }
    for claim, (effect, differences) in expected.items():
        planned, sd, _, n = rule.plans[claim]
        assert planned == pytest.approx(effect) and sd == pytest.approx(np.std(differences, ddof=1))
        assert n == needed(effect / 2, differences)
    most = max(plan[3] for plan in rule.plans.values())
    assert rule.seeds == tuple(range(43, 43 + most)) and rule.underpowered == ()


def test_the_seed_rule_waits_for_every_pilot_cell(tmp_path):
    with pytest.raises(ValueError, match="not finished"):
        seed_rule(cells(tmp_path, arms={"softmax": ARMS["softmax"]}))


def test_the_decision_reads_the_paired_values_as_recorded(tmp_path):
    found = {e.claim.id: e for e in trained_evidence(cells(tmp_path), PILOT)}
    assert all(e.failed is None and e.pending is None for e in found.values())
    assert found["S3a"].method == tuple(ARMS["softmax"](i)["trained"]["sink_rate_model"] for i in range(3))
    assert found["S3a"].baseline == (0.0, 0.0, 0.0)
    assert found["S4b"].method == pytest.approx([math.log(30 + 5 * i) for i in range(3)])
    assert found["S4b"].effect == pytest.approx(math.log(94 / 1053))
    assert found["S4c"].method == (0.3,) * 3 and found["S4c"].claim.direction is None


@pytest.mark.parametrize(
    ("softmax", "untested"),
    [
        (lambda i: record(sinks(0.01, 0.40, 300.0)), dict.fromkeys(("S3a", "S3b"), "no sink forms in this LM")),
        (lambda i: record(sinks(0.30, 0.10, 300.0)), {"S4a": "no sink to lower"}),
        (lambda i: record(sinks(0.30, 0.40, 50.0)), {"S4b": "no massive activation"}),
    ],
)
def test_a_claim_the_scale_cannot_test_says_which_measurement_shows_it(tmp_path, softmax, untested):
    found = trained_evidence(cells(tmp_path, arms={**ARMS, "softmax": softmax}), PILOT)
    assert {e.claim.id: e.failed.split(" (")[0] for e in found if e.failed} == untested


def test_a_failed_gate_leaves_every_claim_untested(tmp_path):
    found = trained_evidence(cells(tmp_path, reference=4.0), PILOT)  # the bigram beats softmax
    assert all(e.failed.startswith("gate L") for e in found) and len(found) == len(CLAIMS)


def test_before_the_pilot_finishes_every_claim_is_pending():
    assert all("0 of 3 seeds" in e.pending for e in trained_evidence([], None))


def test_without_sinks_lm_the_pilot_decides_only_what_it_shows_untestable(tmp_path):
    """The registered deviation: no sink in the pilot -> S3 not tested from the pilot; the claims
    it shows testable wait for sinks-lm; S4c is described on the pilot."""
    no_sink = {**ARMS, "softmax": lambda i: record(sinks(0.01, 0.40, 300.0))}
    found = {e.claim.id: e for e in trained_evidence(cells(tmp_path, arms=no_sink), None)}
    assert found["S3a"].failed.startswith("no sink forms") and "sinks-lm not run" in found["S3a"].failed
    assert found["S4a"].pending.startswith("the pilot shows it testable") and found["S4a"].failed is None
    assert found["S4c"].pending is None and found["S4c"].method == (0.3,) * 3
