"""`oversmooth report`: claims decided from hand-made cells whose answers are known, and the files."""

import csv
import json
import math
import statistics
from pathlib import Path

import pytest

from oversmooth.cli import main
from oversmooth.study.claims import check_cells, check_probes
from oversmooth.study.compare import Comparison, verdict
from oversmooth.hf.quality import Quality, QualityRow
from oversmooth.study.probes import CurvePair, Probes, random_init
from oversmooth.study.report import write_report
from oversmooth.study.results import read_study


def make_cell(root: Path, study: str, label: str, depth: int, seed: int, score: float, *, model: str = "vit",
              norm: str = "pre", method: str | None = None, knobs: dict | None = None, status: str = "completed",
              t_sim: float = 0.5, examples_per_second: float = 100.0) -> None:
    """A cell folder as `oversmooth study` leaves it (cell.json, metrics.jsonl, results.json)."""
    name = f"{study}-{norm}-d{depth}-{label}-s{seed}"
    folder = root / "cells" / name
    folder.mkdir(parents=True)
    score_name = "accuracy" if model == "vit" else "perplexity"
    variant = {"label": label, "method": method or label, **(knobs or {})}
    (folder / "cell.json").write_text(json.dumps({
        "study": study, "name": name, "model": model, "task": "fmnist" if model == "vit" else "austen",
        "norm": norm, "depth": depth, "variant": variant, "seed": seed, "train_args": []}))
    layers = [{"layer": l, "cos_sim": t_sim, "t_sim": t_sim} for l in range(depth)]
    epochs = [{"epoch": e, "val": {score_name: score + (e - 2) * 0.01}, "layers": layers} for e in (1, 2)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(e) + "\n" for e in epochs))
    if status != "partial":
        (folder / "results.json").write_text(json.dumps({
            "status": status, "test": {score_name: score} if status == "completed" else None,
            "train_examples_per_second": examples_per_second, "wall_seconds": 1.0}))


def write_study_file(root: Path, name: str, labels: list[str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "study.json").write_text(json.dumps({"name": name, "methods": [{"label": l} for l in labels],
                                                 "command": f"oversmooth study {name} --out {root}"}))


def by_number(claims):
    return {c.number: c for c in claims}


@pytest.mark.parametrize("gains, expected", [
    ((1.0, 1.2, 0.8), "held"),             # mean 1.0, SE 0.115
    ((-1.0, -1.2, -0.8), "did not hold"),
    ((1.0, -0.5, 0.2), "inconclusive"),    # mean 0.23, SE 0.44
    ((3.0,), "inconclusive"),              # one pair: no spread
    ((0.5, 0.5), "held"),                  # the same gain everywhere: SE 0
    ((0.0, 0.0), "inconclusive"),
])
def test_verdict_rule_against_hand_computed_standard_errors(gains, expected):
    mean = sum(gains) / len(gains)
    se = statistics.stdev(gains) / math.sqrt(len(gains)) if len(gains) > 1 else math.nan
    comparison = Comparison("a", "b", gains)
    assert comparison.mean == pytest.approx(mean)
    assert (math.isnan(comparison.se) and math.isnan(se)) or comparison.se == pytest.approx(se)
    assert verdict(comparison) == expected


def test_claims_from_known_cells(tmp_path):
    root = tmp_path / "depth"
    write_study_file(root, "depth-vit", ["softmax", "neutreno", "deescalate", "featscale", "sharpen", "smooth"])
    for depth, extra in ((2, 0.010), (4, 0.012), (8, 0.008)):
        for norm in ("pre", "post"):
            post = norm == "post"
            base = 0.80 - ((0.01 if depth == 2 else 0.04) if post else 0.0)  # the norm gap widens by 3 pp
            make_cell(root, "depth-vit", "softmax", depth, 0, base, norm=norm, t_sim=0.3 + 0.05 * depth * post,
                      examples_per_second=100.0)
            make_cell(root, "depth-vit", "neutreno", depth, 0, base + extra, norm=norm, examples_per_second=95.0)
            make_cell(root, "depth-vit", "deescalate", depth, 0, base + (0.03 if post else 0.0), norm=norm)
            make_cell(root, "depth-vit", "featscale", depth, 0, base - extra, norm=norm)
            make_cell(root, "depth-vit", "sharpen", depth, 0, base - 0.02, norm=norm, method="spectral",
                      knobs={"spectral": "sharpen"}, t_sim=0.1)
            make_cell(root, "depth-vit", "smooth", depth, 0, base + 0.01 + extra / 10, norm=norm, method="spectral",
                      knobs={"spectral": "smooth"}, t_sim=0.9)
    lm = tmp_path / "lm"
    write_study_file(lm, "lm-austen", ["softmax", "neutreno"])
    for seed, ppl in ((0, 100.0), (1, 104.0), (2, 98.0)):
        make_cell(lm, "lm-austen", "softmax", 4, seed, ppl, model="lm", norm="post")
        make_cell(lm, "lm-austen", "neutreno", 4, seed, ppl + 3.0 + seed * 0.5, model="lm", norm="post",
                  knobs={"lam": 0.4})
    sweep = tmp_path / "sweep"
    write_study_file(sweep, "lambda-sweep", ["softmax", "lam=0.1", "lam=0.6", "lam=2.0"])
    for seed in (0, 1):
        for label, lam, acc in (("softmax", None, 0.80), ("lam=0.1", 0.1, 0.79), ("lam=0.6", 0.6, 0.83),
                                ("lam=2.0", 2.0, 0.70)):
            make_cell(sweep, "lambda-sweep", label, 8, seed, acc + 0.002 * seed, method="softmax" if lam is None
                      else "neutreno", knobs={} if lam is None else {"lam": lam})
    cells = read_study(root) + read_study(lm) + read_study(sweep)
    claims = by_number(check_cells(cells))

    # 2a: neutreno - softmax, pre-norm, gains 1.0, 1.2, 0.8 pp
    assert claims["2a"].verdict == "held" and "+1 pp" in claims["2a"].ours and "n = 3" in claims["2a"].ours
    # 2b: NeuTRENO has higher perplexity by 3.0, 3.5, 4.0: its gain is negative
    assert claims["2b"].verdict == "did not hold" and "gain of neutreno over softmax: -3.5 PPL" in claims["2b"].ours
    # 2c: best lambda 0.6 inside the sweep and better than both ends in both seeds
    assert claims["2c"].verdict == "held" and "best lam 0.6" in claims["2c"].ours
    # 3: time ratio 100 / 95 = 1.053 in every pair
    assert claims["3"].verdict == "held" and "median 1.053" in claims["3"].ours
    # 4a: post-norm softmax trails pre-norm by 1 pp at depth 2 and by 4 pp at depths 4 and 8
    assert claims["4a"].verdict == "held" and "+3 pp" in claims["4a"].ours and "d2 +1, d4 +4" in claims["4a"].ours
    assert "t_sim 0.400 at depth 2 vs 0.700 at depth 8" in claims["4a"].ours
    # 4b: de-escalation + 3 pp in post-norm at every deeper depth (no spread: the sign decides)
    assert claims["4b"].verdict == "held" and "+3 pp" in claims["4b"].ours
    assert claims["5d"].verdict == "held" and "t_sim, smooth − sharpen: +0.8" in claims["5d"].ours  # 0.9 - 0.1
    assert claims["6"].verdict == "held"   # smooth - sharpen = 3 pp + extra/10 in all six settings
    assert claims["7"].verdict == "did not hold"  # featscale trails by 1.2 and 0.8 pp at depths 4, 8


def test_lambda_sweep_with_the_best_at_an_end_did_not_hold(tmp_path):
    write_study_file(tmp_path, "lambda-sweep", ["softmax", "lam=0.3", "lam=1.0"])
    for seed in (0, 1):
        for label, lam, acc in (("softmax", None, 0.70), ("lam=0.3", 0.3, 0.75), ("lam=1.0", 1.0, 0.80)):
            make_cell(tmp_path, "lambda-sweep", label, 8, seed, acc, method="softmax" if lam is None else "neutreno",
                      knobs={} if lam is None else {"lam": lam})
    assert by_number(check_cells(read_study(tmp_path)))["2c"].verdict == "did not hold"


def test_claims_without_cells_say_which_study_to_run():
    claims = by_number(check_cells([]))
    assert claims["2b"].verdict == "not run" and "lm-austen" in claims["2b"].ours
    assert claims["6"].verdict == "not run" and "depth-vit" in claims["6"].ours


def test_probe_claims_from_known_curves():
    lower = CurvePair([[0.1, 0.3, 0.5, 0.6]], [[0.1, 0.3, 0.4, 0.45]], 0.6, "test")
    not_lower = CurvePair([[0.1, 0.3, 0.5, 0.6]], [[0.1, 0.3, 0.6, 0.7]], 0.6, "test")
    theory = {"smoothing: H eig in (0,1]": 0.99, "sharpening: H eig in [-1,0)": 0.02,
              "lnflip: pre-LN, gamma=+1": 0.98, "lnflip: pre-LN, gamma=-1": 0.5}
    claims = by_number(check_probes(Probes(lower, not_lower, ["smoothing", "mixed"], theory)))
    assert claims["1a"].verdict == "held" and "0.600 -> 0.450" in claims["1a"].ours
    assert claims["1b"].verdict == "did not hold"
    broken = Quality((QualityRow("neutreno", "lam=0.6", "output_cosine", 0.2, 1.0, None, False),))
    lower_broken = CurvePair(lower.baseline, lower.neutreno, 0.6, "test", broken)
    claim = by_number(check_probes(Probes(lower, lower_broken, ["smoothing"], theory)))["1b"]
    assert claim.verdict == "model broken" and "output cosine 0.2" in claim.ours
    assert claims["5a"].verdict == "did not hold"  # the pretrained curve rises throughout
    assert claims["5b"].verdict == "held" and claims["5c"].verdict == "did not hold"


def test_untrained_neutreno_probe_matches_the_baseline_where_it_must():
    """Same weights: at lambda 0 every layer equals softmax; at 0.6 the embeddings and block 1 still do."""
    zero = random_init(seeds=(0,), lam=0.0, images=4)
    assert zero.neutreno[0] == pytest.approx(zero.baseline[0], abs=1e-6)
    pair = random_init(seeds=(0,), lam=0.6, images=4)
    assert pair.neutreno[0][:2] == pytest.approx(pair.baseline[0][:2], abs=1e-6)
    assert len(pair.baseline[0]) == 13 and pair.neutreno[0][-1] != pytest.approx(pair.baseline[0][-1], abs=1e-3)


def test_report_files_and_partial_cells(tmp_path, capsys):
    write_study_file(tmp_path, "mini", ["softmax", "neutreno"])
    for depth in (2, 4):
        make_cell(tmp_path, "mini", "softmax", depth, 0, 0.70)
        make_cell(tmp_path, "mini", "neutreno", depth, 0, 0.72)
    make_cell(tmp_path, "mini", "softmax", 8, 0, 0.65, status="partial")   # still training: last val
    make_cell(tmp_path, "mini", "neutreno", 8, 0, 0.40, status="diverged")  # stopped: last good val
    assert main(["report", str(tmp_path), "--no-probes", "--out", str(tmp_path / "rep")]) == 0
    assert "wrote" in capsys.readouterr().out
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "| fmnist | pre | softmax | 70.0 ± 0.0 (1) | 70.0 ± 0.0 (1) | 65.0 ± 0.0* (1) |" in report
    assert "40.0 ± 0.0† (1)" in report and "oversmooth study mini --out" in report
    for png in ("mini_scores.png", "mini_layers.png", "mini_curves.png"):
        assert (tmp_path / "rep" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png in report
    rows = list(csv.DictReader(open(tmp_path / "rep" / "cells.csv")))
    assert len(rows) == 6 and {r["status"] for r in rows} == {"completed", "partial", "diverged"}
    assert json.loads((tmp_path / "rep" / "claims.json").read_text())[0]["number"] == "2a"


def test_report_of_a_folder_that_is_no_study_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--no-probes"]) == 2
    assert "not a study folder" in capsys.readouterr().err


def test_written_report_matches_the_claims_it_returns(tmp_path):
    write_study_file(tmp_path, "mini", ["softmax", "neutreno"])
    for depth in (2, 4, 8):
        make_cell(tmp_path, "mini", "softmax", depth, 0, 0.70)
        make_cell(tmp_path, "mini", "neutreno", depth, 0, 0.70 + depth / 1000)
    claims = write_report(read_study(tmp_path), tmp_path / "rep")
    report = (tmp_path / "rep" / "report.md").read_text()
    for claim in claims:
        assert f"| {claim.number} | {claim.statement} |" in report and f"**{claim.verdict}**" in report


@pytest.mark.parametrize("damaged", ["study.json", "results.json", "metrics.jsonl", "cell.json"])
def test_a_damaged_file_is_one_line_naming_it(tmp_path, capsys, damaged):
    """A truncated study.json, results.json, metrics.jsonl or cell.json: exit 2, one line naming the
    file, no report written."""
    write_study_file(tmp_path, "mini", ["softmax"])
    make_cell(tmp_path, "mini", "softmax", 2, 0, 0.70)
    path = tmp_path / damaged if damaged == "study.json" else next(tmp_path.glob(f"cells/*/{damaged}"))
    path.write_text(path.read_text()[:-10])  # its tail lost
    assert main(["report", str(tmp_path), "--no-probes", "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{damaged} is damaged" in err
    assert not (tmp_path / "rep").exists()
