"""The fourth step's CPU-hour tally and claim 2b's budget decision (docs/registrations/fourth-step.md,
section 6), on hand-made archives whose hours are worked out by hand: spent from each cell's
wall_seconds, to come at the mean of the finished cells of the same depth, the decision taken once."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from claims_cells import adapt_json

from oversmooth.claims.evidence import read_folders
from oversmooth.claims.fourth_step_budget import decide_2b, read_decision, tally
from oversmooth.claims.fresh_2b import fresh_2b_record
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.errors import UsageError

ROOT = Path(__file__).parents[1]


def archive(root: Path, study: str, names: list[str], hours: float) -> None:
    for name in names:
        (root / study / name).mkdir(parents=True)
        (root / study / name / "results.json").write_text(json.dumps({"wall_seconds": hours * 3600}))


def archives(root: Path, family_deep_hours: float = 0.5, family_seeds=(20,), fair_seeds=(20,)) -> None:
    """2 screen cells of 1 h; the family's cells of ``family_seeds`` (0.1 h at depth 8); 3 x 1 h for each
    fair seed of ``fair_seeds``; 2b's two cells of seed 20 at 0.2 h."""
    archive(root, "postnorm-screen", ["a", "b"], 1.0)
    family = [c for c in CLAIMS_PRESETS["postnorm-family"].cells() if c.seed in family_seeds]
    archive(root, "postnorm-family", [c.name for c in family if c.depth == 96], family_deep_hours)
    archive(root, "postnorm-family", [c.name for c in family if c.depth == 8], 0.1)
    for seed in fair_seeds:
        adapt_json(root, seed, 3.4, 3.5, 3.4, hours_per_arm=1.0)
    archive(root, "austen-p3-fresh", [c.name for c in CLAIMS_PRESETS["austen-p3-fresh"].cells() if c.seed == 20], 0.2)


def test_the_tally_spends_wall_seconds_and_prices_missing_cells_at_their_depths_mean(tmp_path):
    archives(tmp_path)
    items = {item.name: item for item in tally(tmp_path)}
    assert list(items) == [
        "postnorm-screen", "postnorm-confirm", "postnorm-family", "claim 8 on SmolLM2 (fair)", "austen-p3-fresh",
    ]  # fmt: skip
    assert (items["postnorm-screen"].spent, items["postnorm-screen"].to_come) == (2.0, 0.0)  # it stopped early
    assert items["postnorm-confirm"].missing == 4 and items["postnorm-confirm"].to_come == 0.0  # nothing to price by
    family = items["postnorm-family"]
    assert family.spent == pytest.approx(8 * 0.5 + 2 * 0.1)  # seed 20: 8 cells at depth 96, 2 at depth 8
    assert family.missing == 30
    assert family.to_come == pytest.approx(24 * 0.5 + 6 * 0.1)
    fair = items["claim 8 on SmolLM2 (fair)"]
    assert (fair.spent, fair.missing, fair.to_come) == pytest.approx((3.0, 2, 6.0))
    fresh = items["austen-p3-fresh"]
    assert (fresh.spent, fresh.missing, fresh.to_come) == pytest.approx((0.4, 26, 26 * 0.2))


def test_2b_is_decided_once_after_the_family_and_claim_8s_first_two_seeds_within_the_budget(tmp_path):
    archives(tmp_path)
    with pytest.raises(UsageError, match=r"the family lacks 30 cells, claim 8 has seeds \[20\]"):
        decide_2b(tmp_path)
    assert not (tmp_path / "fourth-step" / "budget.json").exists()
    archives(tmp_path / "done", family_seeds=(20, 21, 22, 23), fair_seeds=(20, 21))
    # 2 + 4 x 4.2 + 6 + 3 (seed 22 at the mean) + 0.4 + 5.2 = 33.4 h: within 40
    decision = decide_2b(tmp_path / "done")
    assert decision["2b"] == "run" and decision["total"] == pytest.approx(33.4)
    assert decision["total_without_2b"] == pytest.approx(28.2) and decision["spent"] == pytest.approx(25.2)
    assert read_decision(tmp_path / "done" / "fourth-step")["2b"] == "run"
    archive(tmp_path / "done", "postnorm-screen", ["c"], 20.0)  # what comes later never retakes it
    assert decide_2b(tmp_path / "done")["2b"] == "run"
    dear = tmp_path / "dear"
    archives(dear, family_deep_hours=0.8, family_seeds=(20, 21, 22, 23), fair_seeds=(20, 21))  # 43 h
    dropped = decide_2b(dear)
    assert dropped["2b"] == "dropped" and dropped["2b_cost"] == pytest.approx(5.2)


def test_a_dropped_2b_is_not_tested_with_its_cost_a_run_one_stays_pending_and_a_damaged_decision_is_named(tmp_path):
    decision = {"2b": "dropped", "2b_cost": 3.7, "2b_missing": 25, "budget": 40.0, "decided": "now"}
    decision |= {"spent": 38.1, "total": 46.3, "total_without_2b": 42.6}
    record = fresh_2b_record([], decision)
    assert record["verdict"] == "not tested"
    assert record["sentence"].startswith(
        "not tested: dropped for budget (docs/registrations/fourth-step.md, sections 6 and 8; decided now, 38.1 "
        "CPU-hours spent then): the fourth step was projected at 42.6 hours without these pairs and 46.3 with them, "
        "against 40; their 25 missing cells would have cost about 3.7"
    )
    assert fresh_2b_record([])["verdict"] == fresh_2b_record([], decision | {"2b": "run"})["verdict"] == "pending"
    (tmp_path / "budget.json").write_text(json.dumps(decision | {"2b": "maybe"}))
    with pytest.raises(UsageError, match=r"budget.json is damaged \(its 2b is 'maybe'.*restore it from git"):
        read_decision(tmp_path)


def test_the_claims_report_reads_the_decision_beside_claim_8s_archives(tmp_path):
    folder = tmp_path / "fourth-step"
    folder.mkdir()
    decision = {"2b": "dropped", "2b_cost": 3.7, "2b_missing": 25, "budget": 40.0, "spent": 38.1, "total": 46.3}
    (folder / "budget.json").write_text(json.dumps(decision | {"total_without_2b": 42.6}))
    assert read_folders([folder]).budget["2b"] == "dropped"
    (folder / "budget.json").write_text("[1]")
    with pytest.raises(UsageError, match="budget.json is damaged"):
        read_folders([folder])


@pytest.mark.parametrize("deep_hours, code, said", [(0.5, 0, "run"), (0.8, 3, "dropped")])
def test_the_script_prints_the_tally_and_exits_by_the_decision(tmp_path, deep_hours, code, said):
    script = ROOT / "scripts" / "fourth_step_budget.py"
    command = [sys.executable, str(script), "--decide", "--results", str(tmp_path)]
    archives(tmp_path, family_deep_hours=deep_hours)
    early = subprocess.run(command, capture_output=True, text=True)
    assert early.returncode == 2 and early.stderr.startswith("error: 2b's budget decision is taken once")
    assert "Traceback" not in early.stderr and not (tmp_path / "fourth-step" / "budget.json").exists()
    archives(tmp_path / "done", family_deep_hours=deep_hours, family_seeds=(20, 21, 22, 23), fair_seeds=(20, 21))
    run = subprocess.run([*command[:-1], str(tmp_path / "done")], capture_output=True, text=True)
    assert run.returncode == code, run.stderr
    assert "postnorm-family" in run.stdout and f"2b's remaining pairs: {said}" in run.stdout
