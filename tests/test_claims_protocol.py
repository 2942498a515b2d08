"""The registered protocol around the tests: what the claims runner trains first and where it stops,
the seed rules of claims 4 and 2b by hand, the command that reproduces a claim, and the paper's
numbers in the claims' statements."""

import math
from pathlib import Path

import pytest
from claims_cells import SEEDS, SOFTMAX_VAL, make_cell
from scipy import stats

from oversmooth.claims.gathering import Inputs, baseline_gate
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.claims.questions import QUESTIONS
from oversmooth.claims.statements import STATEMENTS
from oversmooth.study.results import read_study


def test_the_runner_trains_each_settings_pilot_and_long_run_first():
    """scripts/run_claims.sh reads what comes before a setting from the protocol (docs/studies.md,
    "Running it"): claim 4's pilot, and the 1.5x-epochs runs of the three gated baselines."""
    from oversmooth.claims.protocol import runs_before

    assert {name: runs_before(name) for name in ("fmnist-p7", "fmnist-p7-spectral", "depth-w32", "austen-p3")} == {
        "fmnist-p7": {"pilot": "", "long": "fmnist-p7-long"},
        "fmnist-p7-spectral": {"pilot": "", "long": ""},  # gated on fmnist-p7's softmax, trained there
        "depth-w32": {"pilot": "depth-w32-pilot", "long": "depth-w32-long"},
        "austen-p3": {"pilot": "", "long": "austen-p3-long"},
    }
    assert "runs_before" in (Path(__file__).parents[1] / "scripts" / "run_claims.sh").read_text()


def test_the_runner_stops_on_the_gate_the_report_would_name(tmp_path):
    """scripts/run_claims.sh trains the softmax cells first and asks ``baseline_gate`` whether to go on."""
    preset = CLAIMS_PRESETS["fmnist-p7"]
    assert (
        baseline_gate(preset, []) == "not judged yet: not every claim trained on fmnist-p7 has a finished baseline cell"
    )
    for seed in SEEDS:
        make_cell(tmp_path, "fmnist-p7", "softmax", seed, SOFTMAX_VAL[seed])
    cells = read_study(tmp_path / "fmnist-p7")
    waits = "gate (b) not judged yet: fmnist-p7-long (1.5x the epochs) has not finished"
    assert baseline_gate(preset, cells) == waits  # the runner does not go on while the gate waits
    make_cell(tmp_path, "fmnist-p7-long", "softmax", 0, SOFTMAX_VAL[0])
    assert baseline_gate(preset, cells + read_study(tmp_path / "fmnist-p7-long")) is None


@pytest.mark.parametrize("spread, seeds", [(1.0, range(2, 14)), (0.1, range(2, 10))])
def test_claim_4s_seed_rule_by_hand(tmp_path, spread, seeds):
    """The pilot's four arms, two seeds each, differ in validation accuracy by 2, 2, 4 and 10 pp times
    ``spread`` (their test accuracies by much more, and are not read): the pooled variance is the
    mean of d^2 / 2 over the arms; 4a's SD 2 sigma; the detectable effect of the two-sided paired
    t-test at 0.05 / 7 with 8 seeds (power 0.8) from the noncentral t by hand."""
    from scipy import optimize

    from oversmooth.claims.protocol import depth_seeds

    gaps = {("pre", 8): 2, ("pre", 48): 2, ("post", 8): 4, ("post", 48): 10}
    for (norm, depth), gap in gaps.items():
        for seed in (0, 1):
            val = 0.7 + seed * gap * spread / 100
            make_cell(tmp_path, "depth-w32-pilot", "softmax", seed, 0.5 + seed * 0.3, val=[val], norm=norm, depth=depth)
    sigma = math.sqrt(sum((gap * spread) ** 2 / 2 for gap in gaps.values()) / 4)
    alpha, df = 0.05 / 7, 7
    critical = stats.t.isf(alpha / 2, df)
    power = lambda d: stats.nct.sf(critical, df, d * math.sqrt(8)) + stats.nct.cdf(-critical, df, d * math.sqrt(8))  # noqa: E731
    detectable = 2 * sigma * optimize.brentq(lambda d: power(d) - 0.8, 0.01, 5)
    found = depth_seeds(read_study(tmp_path / "depth-w32-pilot"))
    assert found[0] == pytest.approx(sigma) and found[1] == pytest.approx(detectable, rel=1e-6)
    assert found[2] == tuple(seeds) and (detectable > 5) == (len(seeds) == 12)


@pytest.mark.parametrize("spread, count", [(0.004, 8), (0.006, 10), (0.007, 12), (0.02, 12)])
def test_claim_2bs_seed_rule_by_hand(tmp_path, spread, count):
    """The LM pilot's four softmax seeds end at validation NLL 4.5 + (-1.5, -0.5, 0.5, 1.5) x
    ``spread`` (test NLL far off, and not read); sigma is their sample SD, a pair's SD sqrt(2)
    sigma; the detectable effect of the two-sided paired t-test at 0.05 / 7 (power 0.8) from the
    noncentral t by hand; the first of 8, 10, 12 seeds below 0.017 nats, else 12."""
    from scipy import optimize

    from oversmooth.claims.protocol import lm_seeds

    for seed, step in enumerate((-1.5, -0.5, 0.5, 1.5)):
        make_cell(tmp_path, "austen-p3", "softmax", seed, 3.0 + seed, val=[4.9, 4.5 + step * spread])
    sigma = spread * math.sqrt((2 * 1.5**2 + 2 * 0.5**2) / 3)
    found = lm_seeds(read_study(tmp_path / "austen-p3"))
    assert found[0] == pytest.approx(sigma)

    def power(d: float, n: int) -> float:  # both tails of the noncentral t at 0.05 / 7
        critical = stats.t.isf(0.05 / 14, n - 1)
        return stats.nct.sf(critical, n - 1, d * math.sqrt(n)) + stats.nct.sf(critical, n - 1, -d * math.sqrt(n))

    for n in (8, 10, 12):
        detectable = math.sqrt(2) * sigma * optimize.brentq(lambda d, n=n: power(d, n) - 0.8, 0.1, 2.5)
        assert found[1][n] == pytest.approx(detectable, rel=1e-6)
    assert found[2] == tuple(range(count))
    with pytest.raises(ValueError, match="has not finished"):
        lm_seeds(read_study(tmp_path / "austen-p3")[:3])


def test_claim_4s_seed_rule_needs_the_whole_pilot(tmp_path):
    from oversmooth.claims.protocol import depth_seeds

    make_cell(tmp_path, "depth-w32-pilot", "softmax", 0, 0.7, norm="pre", depth=8)
    with pytest.raises(ValueError, match="depth-w32-pilot has not finished"):
        depth_seeds(read_study(tmp_path / "depth-w32-pilot"))


def test_a_claims_command_runs_the_whole_grid():
    """A claim is reproduced by its study's command less the flags that keep some methods or seeds."""
    ran = "oversmooth study fmnist-p7 --out 'runs/my studies' --methods softmax --seeds=0,1 --jobs 3"
    inputs = Inputs([], commands={"fmnist-p7": ran})
    assert inputs.command("fmnist-p7") == "oversmooth study fmnist-p7 --out 'runs/my studies' --jobs 3"
    assert inputs.command("austen-p3") == "oversmooth study austen-p3 --out runs/studies/austen-p3 --results results"


def test_the_papers_numbers_give_the_registered_effects_and_only_where_the_rule_applies():
    """The paper's two numbers of 2a, 2b and 8 give the effect registered beside them (+0.84,
    -0.017 rounded, +0.46: at the paper's own baseline, transferring changes nothing); the existence
    claims are 5a and 6 (docs/registrations/fourth-step.md)."""
    numbers = {i: s.paper_numbers for i, s in STATEMENTS.items() if s.paper_numbers is not None}
    assert sorted(numbers) == ["2a", "2b", "8"]
    for claim_id, paper in numbers.items():
        assert paper.transferred(paper.baseline) == pytest.approx(STATEMENTS[claim_id].paper_effect, abs=5e-4)
    assert sorted(i for i, q in QUESTIONS.items() if q.existence) == ["5a", "6"]
