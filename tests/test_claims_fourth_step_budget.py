"""The fourth step's CPU-hour tally and claim 2b's budget decision (docs/registrations/fourth-step.md,
section 6), on hand-made archives whose hours are worked out by hand: spent from each cell's
wall_seconds, to come at the mean of the finished cells of the same depth, the decision taken once."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oversmooth.claims.fourth_step_budget import decide_2b, read_decision, tally
from oversmooth.claims.fresh_2b import fresh_2b_record
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.errors import UsageError

ROOT = Path(__file__).parents[1]


def archive(root: Path, study: str, names: list[str], hours: float) -> None:
    for name in names:
        (root / study / name).mkdir(parents=True)
        (root / study / name / "results.json").write_text(json.dumps({"wall_seconds": hours * 3600}))


def fair_seed(root: Path, seed: int, hours_per_arm: float) -> None:
    folder = root / "fourth-step" / "smollm2-8-fair" / f"s{seed}"
    folder.mkdir(parents=True)
    arms = {name: {"wall_seconds": hours_per_arm * 3600} for name in ("control", "lam0.4", "lam0.05")}
    (folder / "adapt.json").write_text(json.dumps({"arms": arms}))


def archives(root: Path, family_deep_hours: float = 0.5) -> None:
    """2 screen cells of 1 h; the family's 4 cells of seed 20 (3 at depth 96, 1 at depth 8); one fair
    seed of 3 x 1 h; 2b's two cells of seed 20 at 0.2 h."""
    archive(root, "postnorm-screen", ["a", "b"], 1.0)
    family = CLAIMS_PRESETS["postnorm-family"].cells()
    deep = [c.name for c in family if c.seed == 20 and c.depth == 96][:3]
    shallow = [c.name for c in family if c.seed == 20 and c.depth == 8][:1]
    archive(root, "postnorm-family", deep, family_deep_hours)
    archive(root, "postnorm-family", shallow, 0.1)
    fair_seed(root, 20, 1.0)
    archive(root, "austen-p3-fresh", [c.name for c in CLAIMS_PRESETS["austen-p3-fresh"].cells() if c.seed == 20], 0.2)


def test_the_tally_spends_wall_seconds_and_prices_missing_cells_at_their_depths_mean(tmp_path):
    archives(tmp_path)
    items = {item.name: item for item in tally(tmp_path)}
    assert (items["postnorm-screen"].spent, items["postnorm-screen"].to_come) == (2.0, 0.0)  # it stopped early
    assert items["postnorm-confirm"].missing == 4 and items["postnorm-confirm"].to_come == 0.0  # nothing to price by
    family = items["postnorm-family"]
    assert family.spent == pytest.approx(3 * 0.5 + 0.1)
    assert family.missing == 36  # 40 cells: 32 at depth 96, 8 at depth 8
    assert family.to_come == pytest.approx(29 * 0.5 + 7 * 0.1)
    fair = items["claim 8 on SmolLM2 (fair)"]
    assert (fair.spent, fair.missing, fair.to_come) == pytest.approx((3.0, 2, 6.0))
    fresh = items["austen-p3-fresh"]
    assert (fresh.spent, fresh.missing, fresh.to_come) == pytest.approx((0.4, 26, 26 * 0.2))


def test_2b_runs_only_within_the_budget_and_the_decision_is_taken_once(tmp_path):
    archives(tmp_path)  # 2 + 1.6 + 15.2 + 3 + 6 + 0.4 + 5.2 = 33.4 h: within 40
    decision = decide_2b(tmp_path)
    assert decision["2b"] == "run" and decision["total"] == pytest.approx(33.4)
    assert read_decision(tmp_path / "fourth-step")["2b"] == "run"
    archive(tmp_path, "postnorm-screen", ["c"], 20.0)  # what comes later never retakes it
    assert decide_2b(tmp_path)["2b"] == "run"
    dear = tmp_path / "dear"
    archives(dear, family_deep_hours=0.8)  # 24.8 h of family to come instead of 15.2: 43 h
    dropped = decide_2b(dear)
    assert dropped["2b"] == "dropped" and dropped["2b_cost"] == pytest.approx(5.2)


def test_a_dropped_2b_is_not_tested_with_its_cost_and_a_damaged_decision_is_named(tmp_path):
    decision = {"2b": "dropped", "2b_cost": 3.7, "2b_missing": 25, "total": 42.6, "budget": 40.0, "decided": "now"}
    record = fresh_2b_record([], decision)
    assert record["verdict"] == "not tested"
    assert (
        "dropped for budget" in record["sentence"]
        and "25 missing cells would have cost about 3.7" in record["sentence"]
    )
    assert fresh_2b_record([])["verdict"] == "pending"
    (tmp_path / "budget.json").write_text(json.dumps(decision | {"2b": "maybe"}))
    with pytest.raises(UsageError, match=r"budget.json is damaged \(its 2b is 'maybe'"):
        read_decision(tmp_path)


def test_the_script_prints_the_tally_and_exits_1_when_2b_is_dropped(tmp_path):
    archives(tmp_path, family_deep_hours=0.8)
    script = ROOT / "scripts" / "fourth_step_budget.py"
    run = subprocess.run(
        [sys.executable, str(script), "--decide", "--results", str(tmp_path)], capture_output=True, text=True
    )
    assert run.returncode == 1, run.stderr
    assert "postnorm-family" in run.stdout and "2b's remaining pairs: dropped" in run.stdout
