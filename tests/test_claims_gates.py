"""The gates of the claims (docs/registrations/second-protocol.md, on validation only): each part
can fail and names its seed and margin, one passed close to its bar says so, a gate waits for what
has not finished, and it judges the seeds of its own test."""

import json
import math
import shutil
import statistics

import pytest
from claims_cells import NEUTRENO_GAIN, SEEDS, SOFTMAX_VAL, adapted, claims_of, depth_cells, fmnist, make_cell


@pytest.mark.parametrize(
    "change, why",
    [
        ({"softmax_val": [a - 0.02 for a in SOFTMAX_VAL]}, "undertrained (c): val accuracy 86."),
        ({"long_gain": 0.006}, "not plateaued (b): seed 0 trained 1.5x as long gains 0.60 pp on validation"),
        ({"val": [0.89, 0.895, 0.888]}, "ended 0.70 pp short of the best of its last 3"),
    ],
)
def test_each_gate_can_fail_and_names_its_seed_and_margin(tmp_path, change, why):
    """docs/registrations/second-protocol.md's gates on validation: the floor (c), 1.5x the epochs
    (b), the plateau of each seed (a)."""
    kw = dict(change)
    val = kw.pop("val", None)
    fmnist(tmp_path, **kw, **({"val": val} if val else {}))
    claims = claims_of(tmp_path)
    for claim_id in ("2a", "6", "7", "5c"):
        claim = claims[claim_id]
        assert claim.verdict == "not tested" and why in claim.reason, claim_id
        assert claim.gate_passed is False and "failed" in claim.gate
    from oversmooth.claims.report import verdict_summary

    untested = verdict_summary(list(claims.values())).splitlines()[-1]
    assert "2a, 2c, 5b, 5c, 6, 7, 8 (a gate failed); 1a, 1b, 2b, 3, 4a, 4b, 5a (runs not finished)" in untested


def test_the_long_run_must_have_finished(tmp_path):
    fmnist(tmp_path)
    for path in (tmp_path / "fmnist-p7-long").glob("*/results.json"):
        path.unlink()
    claim = claims_of(tmp_path)["2a"]
    assert claim.verdict == "not tested" and "fmnist-p7-long (1.5x the epochs) has not finished" in claim.reason
    # the gate has not failed: it waits (before, an unfinished long run read as a failed gate)
    assert claim.gate_passed is None and "failed" not in claim.gate and claim.why_not_tested == "runs not finished"


def test_a_diverged_long_run_fails_the_gate_instead_of_waiting_for_it(tmp_path):
    """A diverged cell is finished (the runner never trains it again): gate (b) must fail on it."""
    fmnist(tmp_path)
    for path in (tmp_path / "fmnist-p7-long").glob("*/results.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "status": "diverged"}))
    claim = claims_of(tmp_path)["2a"]
    assert claim.gate_passed is False and "fmnist-p7-long (1.5x the epochs) diverged" in claim.gate


@pytest.mark.parametrize(
    "reference, why",
    [
        (
            0.83,
            "undertrained (c): val accuracy 82.00 % (mean of 8 seeds) <= the logistic-regression reference's 83.00 %",
        ),
        (None, "undertrained (c): the logistic-regression reference has not been measured yet"),
    ],
)
def test_claim_4s_gate_is_a_logistic_regression_on_the_same_images(tmp_path, reference, why):
    depth_cells(tmp_path, reference=reference)
    for claim_id in ("4a", "4b"):
        claim = claims_of(tmp_path)[claim_id]
        assert claim.verdict == "not tested" and why in claim.reason, claim.reason


@pytest.mark.parametrize(
    "reference, long_gain, said",
    [
        (
            0.80,
            0.001,
            "(bar 0.50 pp); (c) val accuracy 82.00 % (mean of 8 seeds) > the logistic-regression "
            "reference's 80.00 % (by 2.00 pp)",
        ),
        # 0.05 pp above the reference and 0.05 pp under (b)'s bar: both under a quarter of (a)'s 0.5 pp
        (
            0.8195,
            0.0045,
            "(bar 0.50 pp, narrowly); (c) val accuracy 82.00 % (mean of 8 seeds) > the "
            "logistic-regression reference's 81.95 % (by 0.05 pp, narrowly)",
        ),
    ],
)
def test_a_gate_passed_close_to_its_bar_says_narrowly(tmp_path, reference, long_gain, said):
    depth_cells(tmp_path, reference=reference, long_gain=long_gain)
    claim = claims_of(tmp_path)["4a"]
    assert claim.gate_passed is True and said in claim.gate, claim.gate


def test_claim_4s_long_run_is_depth_w32_long(tmp_path):
    depth_cells(tmp_path, long_gain=0.006)
    claim = claims_of(tmp_path)["4a"]
    assert claim.verdict == "not tested"
    assert "not plateaued (b): seed 0 trained 1.5x as long gains 0.60 pp on validation" in claim.reason


def test_a_method_arm_that_has_not_plateaued_is_compared_at_equal_budget_and_says_so(tmp_path):
    """Method arms report gate (a) too (second-protocol.md); NeuTRENO's seed 3 ends 0.7 pp short of
    its best."""
    fmnist(tmp_path, spectral=False)
    shutil.rmtree(tmp_path / "fmnist-p7" / "fmnist-pre-d8-neutreno-s3")
    make_cell(tmp_path, "fmnist-p7", "neutreno", 3, SOFTMAX_VAL[3] + NEUTRENO_GAIN[3], val=[0.89, 0.895, 0.888])
    claims = claims_of(tmp_path)
    assert "neutreno (pre-norm, depth 8) not plateaued (a), so compared at equal budget: seed 3 ended 0.70 pp" in (
        claims["2a"].ours
    )
    assert claims["2a"].verdict == "held" and claims["2a"].gate_passed is True  # the baseline's gate still decides
    assert "equal budget" not in claims["7"].ours


def test_claim_2cs_gate_reads_its_own_seeds_and_claims_without_a_gate_judge_none(tmp_path):
    """A softmax start outside 2c's seeds (10) that had not plateaued fails claim 8's gate, not 2c's;
    claims 3 and 5a have no gate, so none is judged."""
    fmnist(tmp_path, spectral=False)
    shutil.rmtree(tmp_path / "fmnist-p7" / "fmnist-pre-d8-softmax-s10")
    make_cell(tmp_path, "fmnist-p7", "softmax", 10, SOFTMAX_VAL[10], val=[0.89, 0.895, 0.888])
    records = [adapted(seed, 0.880, {0.2: 0.881, 0.6: 0.885 + 0.0005 * (seed % 2), 1.8: 0.870}) for seed in SEEDS]
    rounds = [{"softmax": 1.0, "neutreno": 1.02 + 0.01 * (i % 3)} for i in range(20)]
    claims = claims_of(tmp_path, adapted=records, benchmark={"rounds": rounds})
    assert claims["8"].gate_passed is False and "seed 10 ended" in claims["8"].reason
    assert claims["2c"].gate_passed is True and claims["2c"].verdict == "held"
    assert claims["3"].gate_passed is None and claims["3"].verdict == "held"
    ratio = math.exp(statistics.fmean(math.log(r["neutreno"]) for r in rounds))  # softmax's rounds take 1.0
    assert f"as a ratio {ratio:.3f} [" in claims["3"].ours


def test_a_gate_waits_for_its_baseline_before_judging(tmp_path):
    """Only depth-w32's depth-8 cells of seed 2 have finished: claim 4's gate reads the pre-norm
    softmax at depth 48, which has not run, so it is not judged (not failed) and the claim waits."""
    from oversmooth.claims.report import verdict_summary

    make_cell(tmp_path, "depth-w32", "softmax", 2, 0.81, norm="pre", depth=8)
    make_cell(tmp_path, "depth-w32", "softmax", 2, 0.80, norm="post", depth=8)
    claims = claims_of(tmp_path)
    for claim_id in ("4a", "4b"):
        assert claims[claim_id].gate_passed is None and claims[claim_id].verdict == "not tested"
    assert "4a, 4b (runs not finished)" in verdict_summary([claims["4a"], claims["4b"]])
