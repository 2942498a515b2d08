"""`oversmooth claims`: the report's files (report.md, claims.json, cells.csv, the figures) from
hand-made cells, and docs/results as the committed results/ write it today."""

import csv
import json
import math
import re
import statistics
from pathlib import Path

import pytest
from claims_cells import FEATSCALE_NOISE, SOFTMAX_VAL, TRANSFERRED_2A, adapted, claims_of, depth_cells, fmnist, probes

from oversmooth.analyze.quality import Quality, QualityRow
from oversmooth.claims.protocol import FAMILIES
from oversmooth.claims.questions import QUESTIONS
from oversmooth.claims.registry import CLAIMS
from oversmooth.claims.report import render_claims
from oversmooth.claims.statements import STATEMENTS
from oversmooth.cli import main
from oversmooth.study.results import read_study


def test_claims_writes_claims_json_and_every_declared_claim(tmp_path, capsys):
    """Every declared claim appears in the report and in claims.json with the fields docs/studies.md
    lists; the Holm families are the pre-registered ones (a hidden claim would change m)."""
    fmnist(tmp_path)
    depth_cells(tmp_path)
    deep = list((tmp_path / "depth-w32").glob("*/results.json"))
    for path in deep:  # half an hour each (the other fixture cells: 1 s)
        path.write_text(json.dumps({**json.loads(path.read_text()), "wall_seconds": 1800.0}))
    dirs = [str(p) for p in sorted(tmp_path.iterdir()) if p.is_dir()]
    assert main(["claims", *dirs, "--no-probes", "--out", str(tmp_path / "rep")]) == 0
    assert "wrote" in capsys.readouterr().out
    report = (tmp_path / "rep" / "report.md").read_text()
    others = len(list(tmp_path.glob("*/*/results.json"))) - len(deep)
    assert f"trained for {len(deep) / 2 + others / 3600:.1f} hours in all" in report
    assert f"Cells: {len(deep)} completed; {len(deep) / 2:.2f} hours of training" in report
    rows = json.loads((tmp_path / "rep" / "claims.json").read_text())
    fields = {
        "id",
        "family",
        "statement",
        "paper",
        "measure",
        "effect",
        "ci",
        "n",
        "p",
        "p_holm",
        "mde",
        "margin",
        "gate",
        "gate_passed",
        "verdict",
        "reason",
        "deviations",
        "command",
    }
    assert all(fields <= set(row) for row in rows)
    tests = {r["id"]: r["test"] for r in rows}
    assert tests["7"] == tests["3"] == "TOST" and tests["1a"] == tests["1b"] == "deterministic rule"
    assert tests["2a"] == tests["4b"] == tests["5c"] == "paired t"
    checked = 0
    for row in rows:  # a paired t claim's plain 95 % interval lies inside its Holm-matched one
        if row["ci95"] is not None and row["ci"] is not None and row["margin"] is None:
            assert row["ci"][0] <= row["ci95"][0] <= row["effect"] <= row["ci95"][1] <= row["ci"][1], row["id"]
            checked += 1
    assert checked
    assert sorted(row["id"] for row in rows) == sorted(CLAIMS)  # 1a, 1b too: "not tested", the probes did not run
    assert {r["id"]: r["verdict"] for r in rows if r["id"] in ("1a", "1b")} == {"1a": "not tested", "1b": "not tested"}
    assert sorted(QUESTIONS) == sorted(claim_id for ids in FAMILIES.values() for claim_id in ids)
    assert list(CLAIMS) == list(STATEMENTS)  # one statement a claim, in the report's order
    for family, ids in FAMILIES.items():
        assert sorted(r["id"] for r in rows if r["family"] == family) == sorted(ids)
    for row in rows:
        assert f"| {row['id']} | {row['statement']} |" in report and f"**{row['verdict']}**" in report
    for png in ("claims.png", "claim4_depth.png", "fmnist-p7_curves.png"):
        assert (tmp_path / "rep" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png in report
    # 5b's confusion table: per model, then all together (each model's sublayers counted once more)
    per_model = re.findall(r"^\| (\w+) \| (\w+) \| (\d+) \| (\d+) \|$", report, re.MULTILINE)
    models = {model for model, *_ in per_model} - {"all"}
    assert {"softmax", "smooth", "sharpen", "free"} <= models, per_model
    for verdict in {v for _, v, *_ in per_model}:
        for column in (2, 3):
            pooled = [int(row[column]) for row in per_model if row[:2] == ("all", verdict)]
            assert pooled == [sum(int(row[column]) for row in per_model if row[1] == verdict and row[0] in models)]
    assert len(list(csv.DictReader(open(tmp_path / "rep" / "cells.csv")))) > 0


#: each tested claim's unit, as its measure states it (docs/registrations/second-protocol.md's claims table)
UNITS = {
    **dict.fromkeys(("2a", "2c", "4a", "4b", "6", "7", "8"), "pp"),
    "2b": "nats/token",
    "3": "log time ratio",
    "5a": "cos_sim",
    "5b": "share of blocks",
    "5c": "share of blocks",
}


def test_the_claims_report_opens_with_one_row_per_claim_on_one_screen(tmp_path):
    """Right under the title: one row per claim, in the registry's order, with its effect and
    Holm-matched interval in its unit (the paper's too, and carried to ours), the regime, the
    verdict and the third protocol's reading only where it differs; short rows (each claim in full
    is in the family tables below)."""
    fmnist(tmp_path)
    depth_cells(tmp_path)
    cells = [cell for study in sorted(p for p in tmp_path.iterdir() if p.is_dir()) for cell in read_study(study)]
    claims, report = render_claims(cells)
    lines = report.markdown.splitlines()
    head = lines.index(
        "| id | claim | paper's effect | ours [Holm-matched CI] | regime: softmax cos_sim vs random init "
        "| registered verdict | fresh tests | exploratory reading |"
    )
    assert head < 6 and lines[head + 2 + len(claims)].startswith("| depth fixes | ")  # their family's row
    assert lines[head + 3 + len(claims)] == ""
    rows = lines[head + 2 : head + 2 + len(claims)]
    assert [row.split(" | ")[0] for row in rows] == [f"| {claim_id}" for claim_id in CLAIMS]
    assert any(claim.reading != claim.verdict for claim in claims)  # the fixture has a reading that differs
    for claim, row in zip(claims, rows):
        _, statement, paper, ours, regime, verdict, fresh, reading = row.strip("| ").split(" | ")
        assert len(row) < 320 and statement in claim.statement, row
        assert verdict.startswith(f"**{claim.verdict}**")
        assert ("⚑" in verdict) is bool(STATEMENTS[claim.id].flag)  # a verdict resting on a disclosed flaw
        assert reading == (f"*{claim.reading}*" if claim.reading != claim.verdict else "same")
        pending = {
            "2b": "2b (fresh pairs): **pending**",
            "8": "8 (SmolLM2, lam 0.4): **pending**; 8 (SmolLM2, lam 0.05): **pending**",
            "4a": "4a (post-norm fails): **pending**",
            "4b": "4b (post-norm fails): **pending**",
        }
        assert fresh == pending.get(claim.id, "–")  # the fourth step's registered tests, not run here
        if claim.effect is not None:
            low, high = claim.ci
            assert ours.startswith(f"{claim.effect:+#.3g} [{low:+#.3g}, {high:+#.3g}] {UNITS[claim.id]} (")
            assert ours.endswith(f"n = {claim.n}")
        if claim.paper_effect is not None:
            carried = claim.paper_transferred
            unit = UNITS[claim.id]
            assert paper == f"{claim.paper_effect:+.3g} {unit}" + (
                f" ({carried:+.3g} {unit} carried to ours)" if carried is not None else ""
            )
        if claim.regime is not None and claim.regime.cos_sim is not None:
            assert regime.startswith(f"{claim.regime.cos_sim:.3f} vs ")
    assert claims[0].verdict == "not tested" and rows[0].endswith("| **not tested** | – | same |")  # no probes: 1a
    assert sorted(UNITS) == sorted(QUESTIONS)  # every tested claim has its unit
    assert {claim_id: STATEMENTS[claim_id].unit for claim_id in UNITS} == UNITS
    assert any(c.paper_transferred is not None for c in claims)


def test_claim_6_reports_free_beside_it_and_the_report_opens_with_the_verdicts(tmp_path):
    from oversmooth.claims.report import verdict_summary

    fmnist(tmp_path)
    claims = claims_of(tmp_path)
    free = statistics.fmean(100 * SOFTMAX_VAL[seed] for seed in range(8))
    assert f"free beside (not tested): mean test score {free:.4g} over 8 seeds" in claims["6"].ours
    summary = verdict_summary(list(claims.values()))
    assert summary.splitlines()[0] == "- **held** (4): 2a, 5b, 5c ⚑, 7"  # 5c rests on a disclosed flaw
    assert {line.split("** (")[0][4:] for line in summary.splitlines()} == {c.verdict for c in claims.values()}
    assert sum(int(line.split("(")[1].split(")")[0]) for line in summary.splitlines()) == len(claims)


def test_the_effects_plot_puts_the_papers_effect_beside_ours(tmp_path, monkeypatch):
    """2a's panel holds our interval and the paper's +0.84 pp (Nguyen et al. 2023, Table 1); 6's,
    whose paper states no number, only ours."""
    from oversmooth.claims import effects_figure

    fmnist(tmp_path)
    claims = claims_of(tmp_path)
    figures = []
    monkeypatch.setattr(effects_figure, "save_figure", lambda fig, stem, formats: figures.append(fig))
    effects_figure.plot_effects(list(claims.values()), tmp_path / "claims.png")
    panels = {ax.get_title().split(" ")[0]: ax for ax in figures[0].axes if ax.get_visible()}
    stars = lambda ax: [line.get_ydata()[0] for line in ax.get_lines() if line.get_marker() == "*"]  # noqa: E731
    assert stars(panels["2a"]) == [0.84] and claims["2a"].paper_effect == 0.84
    assert stars(panels["6"]) == [] and claims["6"].paper_effect is None
    # a verdict resting on a disclosed flaw is flagged in its title, as in the table: 6 (one setting), not 2a
    six = panels["6"].get_title().replace("\n", " ")
    assert six.startswith(f"6 (primary): {claims['6'].verdict} ⚑") and "⚑" not in panels["2a"].get_title()


def test_the_effects_plot_draws_the_fresh_similarity_tests_as_archived(tmp_path, monkeypatch):
    """1b on SmolLM2: its per-layer cos_sim change, NeuTRENO minus unpatched, as results/ holds the pair;
    1b's re-test: each model's mean change per passage with its 95 % interval, as archived; both with the
    claimed side (lower) shaded."""
    from oversmooth.claims import effects_figure

    root = Path(__file__).parents[1] / "results" / "third-protocol"
    records = [json.loads((root / f"{name}.json").read_text()) for name in ("smollm2-1b", "retest-1b")]
    two = {"baseline": [[0.1, 0.5, 0.6], [0.1, 0.3, 0.8]], "neutreno": [[0.1, 0.4, 0.6], [0.1, 0.2, 0.4]], "lam": 0.1}
    records.append({"claim": "1b (two inits)", "verdict": "held", "pair": two})  # the change is averaged over rows
    test = {"mean": -0.03, "ci": [-0.05, -0.01], "seeds": [20, 21, 22]}
    records.append({"claim": "2b (fresh pairs)", "verdict": "held", "model": "LM", "direction": "lower", "test": test})
    broken = {"claim": "8 (SmolLM2)", "verdict": "contradicted", "model": "SmolLM2", "direction": "lower"}
    records.append(broken | {"test": {"mean": 0.4, "ci": [0.39, 0.41], "seeds": [10, 11]}})  # a broken start
    figures = []
    monkeypatch.setattr(effects_figure, "save_figure", lambda fig, stem, formats: figures.append(fig))
    effects_figure.plot_effects([], tmp_path / "claims.png", records)
    panels = {ax.get_title().replace("\n", " "): ax for ax in figures[0].axes if ax.get_visible()}
    layers = panels["fresh test 1b (SmolLM2): held"]
    pair = records[0]["pair"]
    expected = [p - b for p, b in zip(pair["neutreno"][0], pair["baseline"][0])]
    assert list(layers.get_lines()[0].get_ydata()) == pytest.approx(expected)
    assert max(expected[2:]) < 0 and layers.get_ylim()[0] < 0  # lower after block 1, as held
    (span,) = [p for p in layers.patches if p.get_alpha() == 0.08]  # the claimed side, from layer 2 (x 1.5) on
    left = layers.transData.inverted().transform(layers.transAxes.transform((span.get_x(), 0)))[0]
    assert left == pytest.approx(1.5)
    averaged = panels["fresh test 1b (two inits): held"].get_lines()[0].get_ydata()
    assert list(averaged) == pytest.approx([0.0, -0.1, -0.2])  # rows (-0.1, 0) and (-0.1, -0.4) at layers 1 and 2
    retest = panels["fresh test 1b (re-test): held"]
    for bars, found in zip(retest.containers, records[1]["models"].values()):
        (segment,) = bars.lines[2][0].get_segments()
        assert bars.lines[0].get_ydata()[0] == pytest.approx(found["mean_difference"])
        assert sorted(y for _, y in segment) == pytest.approx(found["ci95"])
    assert "fresh test 8 (SmolLM2): contradicted ⚑" in panels  # flagged as the table flags it
    paired = panels["fresh test 2b (fresh pairs): held"]
    (shaded,) = [p for p in paired.patches if p.get_alpha() == 0.08]  # the claimed side, below 0
    assert shaded.get_y() + shaded.get_height() == pytest.approx(0.0) and shaded.get_y() < -0.05
    for ax in (layers, retest, paired):
        assert "claimed: lower than 0 (shaded)" in ax.get_xlabel().replace("\n", " ")


def test_the_effects_plot_marks_the_claimed_side_n_and_the_full_measure(tmp_path, monkeypatch):
    """Each panel shades the side of 0 its claim states (7: inside its margin), draws the paper's
    carried effect where it has one, says n, and names the measure in full."""
    from matplotlib.patches import Rectangle

    from oversmooth.claims import effects_figure

    fmnist(tmp_path, gains=FEATSCALE_NOISE)
    claims = claims_of(tmp_path)
    figures = []
    monkeypatch.setattr(effects_figure, "save_figure", lambda fig, stem, formats: figures.append(fig))
    effects_figure.plot_effects(list(claims.values()), tmp_path / "claims.png")
    panels = {ax.get_title().split(" ")[0]: ax for ax in figures[0].axes if ax.get_visible()}
    for claim_id, (low, high) in (("2a", (0, None)), ("7", (-0.5, 0.5))):
        ax = panels[claim_id]
        (shaded,) = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_alpha() == 0.08]  # axhspan
        ys = shaded.get_y(), shaded.get_y() + shaded.get_height()
        assert ys == pytest.approx((low, ax.get_ylim()[1] if high is None else high))
        assert f"n = {claims[claim_id].n}" in ax.get_xlabel().replace("\n", " ")
        assert ax.get_ylabel().replace("\n", " ") == claims[claim_id].measure
    assert "claimed: higher than 0" in panels["2a"].get_xlabel().replace("\n", " ")
    assert "third protocol: smaller than claimed" in panels["2a"].get_title().replace("\n", " ")
    dotted = [line.get_ydata()[0] for line in panels["2a"].get_lines() if line.get_linestyle() == ":"]
    assert dotted == [pytest.approx(TRANSFERRED_2A)]


def test_the_probes_plot_draws_the_deciding_lambda_and_labels_a_broken_one(tmp_path, monkeypatch):
    """MiniLM's panel draws 1b's deciding lambda (the frontier, within budget) solid, and the
    registered 0.6 dashed and labelled broken with what it did; each panel says the claimed side."""
    from oversmooth.claims import report

    figures = []
    monkeypatch.setattr(report, "save_figure", lambda fig, stem, formats: figures.append(fig))
    broken = Quality((QualityRow("neutreno", "lam=0.6", "output_cosine", 0.2, 1.0, None, False),))
    report.plot_probes(probes(broken), tmp_path / "probes.png")
    untrained, pretrained = figures[0].axes
    lines = {line.get_label(): line for line in pretrained.get_lines()}
    assert set(lines) == {
        "softmax",
        "NeuTRENO lam 0.1 (output cosine 0.97)",
        "NeuTRENO lam 0.6 (broken: output cosine 0.2)",
    }
    assert list(lines["NeuTRENO lam 0.1 (output cosine 0.97)"].get_ydata()) == [0.1, 0.3, 0.52, 0.41]
    assert lines["NeuTRENO lam 0.6 (broken: output cosine 0.2)"].get_linestyle() == "--"
    assert lines["NeuTRENO lam 0.1 (output cosine 0.97)"].get_linestyle() == "-"
    assert [line.get_label() for line in untrained.get_lines()] == ["softmax", "NeuTRENO lam 0.6"]
    assert all("claimed: NeuTRENO lower" in ax.get_title().replace("\n", " ") for ax in (untrained, pretrained))


def test_the_lambda_plot_shows_each_continuations_gain_over_its_control(tmp_path, monkeypatch):
    """The bold line is the mean of (accuracy at lambda - control's) over the seeds that ran every
    lambda (seed 0), by hand; a lambda more seeds ran (0.6: seeds 0 and 1) gets the mean over all of
    them beside it, its n in the legend, so no line mixes two sets of seeds."""
    from oversmooth.claims import report

    records = [adapted(0, 0.880, {0.2: 0.881, 0.6: 0.886, 1.8: 0.870}), adapted(1, 0.890, {0.6: 0.892})]
    figures = []
    monkeypatch.setattr(report, "save_figure", lambda fig, stem, formats: figures.append(fig))
    report.plot_lambdas(records, tmp_path / "lambda.png")
    ax = figures[0].axes[0]
    bold = max(ax.get_lines(), key=lambda line: line.get_linewidth())
    assert list(bold.get_xdata()) == [0.2, 0.6, 1.8]
    assert list(bold.get_ydata()) == pytest.approx([0.1, 0.6, -1.0])
    squares = [line for line in ax.get_lines() if line.get_marker() == "s"]
    assert len(squares) == 1 and list(squares[0].get_ydata()) == pytest.approx([(0.6 + 0.2) / 2])
    labels = ax.get_legend_handles_labels()[1]
    assert labels == [
        "mean over the seeds that ran every lambda (n = 1), 95 % CI",
        "lambda 0.6: mean over every seed that ran it (n = 2), 95 % CI",
    ]
    (shaded,) = [p for p in ax.patches if p.get_alpha() == 0.08]  # claim 8's side: above 0
    assert shaded.get_y() == 0 and shaded.get_y() + shaded.get_height() == pytest.approx(ax.get_ylim()[1])
    assert "claimed: 8 higher than 0 (shaded); 2c highest at lambda 0.6" in ax.get_title().replace("\n", " ")


def test_the_adaptation_table_gives_each_arms_recovery():
    """Two seeds: NeuTRENO patched in drops val accuracy to 80 / 82 % at step 0 and the
    continuation brings it to 89 / 90 %; the control stays at 89 %. Means and sample SDs by hand."""
    from oversmooth.claims.report import adaptation_table

    def arm(start, val, test, cos_start, cos_after):
        return {
            "status": "completed",
            "start": {"accuracy": start},
            "val": {"accuracy": val},
            "test": {"accuracy": test},
            "start_cos_sim_last": cos_start,
            "cos_sim_last": cos_after,
        }

    records = [
        {
            "seed": 0,
            "arms": {"neutreno-lam0.6": arm(0.80, 0.89, 0.88, 0.1, 0.2), "control": arm(0.89, 0.89, 0.88, 0.3, 0.3)},
        },
        {
            "seed": 1,
            "arms": {"neutreno-lam0.6": arm(0.82, 0.90, 0.87, 0.1, 0.4), "control": arm(0.89, 0.89, 0.88, 0.3, 0.3)},
        },
    ]
    rows = adaptation_table(records).splitlines()[2:]
    sd = math.sqrt(2) / 2  # two values 1 apart (pp): sample SD
    assert rows[0] == "| control | 0-1 | 89.00 ± 0.00 | 89.00 ± 0.00 | 88.00 ± 0.00 | 0.30 ± 0.00 | 0.30 ± 0.00 |"
    assert rows[1] == (
        f"| neutreno-lam0.6 | 0-1 | 81.00 ± {2 * sd:.2f} | 89.50 ± {sd:.2f} | 87.50 ± {sd:.2f} | 0.10 ± 0.00 "
        f"| 0.30 ± {0.2 * sd:.2f} |"
    )


def test_archived_cells_load_and_follow_the_stream_numbering(tmp_path):
    """The real archives under results/ (written before the one-cache change) still load, their
    analysis.json streams have depth + 1 states (0 = embeddings) and blocks 1..depth, and the
    report is written from them."""
    root = Path(__file__).resolve().parents[1] / "results"
    studies = [study for study in sorted(root.iterdir()) if (study / "study.json").is_file()] if root.is_dir() else []
    if not studies:
        pytest.skip("no archived results/ in this checkout")
    cells = [cell for study in studies for cell in read_study(study)]
    measured = [cell for cell in cells if cell.analysis]
    assert measured
    for cell in measured:
        assert len(cell.analysis["stream"]["cos_sim"]) == cell.depth + 1
        assert [block["layer"] for block in cell.analysis["blocks"]] == list(range(1, cell.depth + 1))
    claims, report = render_claims(cells)
    report.write(tmp_path / "rep")
    assert [c.id for c in claims] == list(CLAIMS)
    assert (tmp_path / "rep" / "report.md").is_file()


def test_the_report_reads_only_archives_that_hold_a_file(tmp_path):
    """An archive folder without a result file (a script's mkdir before its first result, a file being
    written, a hidden one) is left out of the report's command, as in a clean clone."""
    from oversmooth.claims.evidence import protocol_archives

    (tmp_path / "fmnist-p7" / "cells" / "a").mkdir(parents=True)
    (tmp_path / "fmnist-p7" / "cells" / "a" / "results.json").write_text("{}")
    (tmp_path / "fourth-step" / "smollm2-8-fair" / "s20").mkdir(parents=True)
    (tmp_path / "fourth-step" / "smollm2-8-fair" / "s20" / "adapt.json.tmp").write_text("{")  # being written
    (tmp_path / "claim3").mkdir()
    (tmp_path / "claim3" / ".DS_Store").write_text("")
    assert protocol_archives(tmp_path) == [tmp_path / "fmnist-p7"]


def test_docs_results_are_the_report_of_the_committed_results(tmp_path):
    """docs/results is what the committed results/ decide, archived probes included: claims.json and
    report.md as `make results` writes them (scripts/claims_report.sh, run_claims.sh's last step), each figure as the
    report draws it today (up to 0.1 % of its pixels, for a different CPU's rounding), and no file
    the report does not write (a stale figure would sit beside the text that no longer shows it)."""
    import shlex

    from matplotlib import image as plt_image

    from oversmooth.claims.evidence import (
        FOURTH_STEP_STUDIES,
        SINK_STUDIES,
        THIRD_PROTOCOL_STUDIES,
        protocol_archives,
        read_folders,
    )
    from oversmooth.claims.report import render_claims
    from oversmooth.study.report import cell_hours

    root = Path(__file__).resolve().parents[1]
    docs = root / "docs" / "results"
    archives = protocol_archives(root / "results")
    if not archives or not (docs / "claims.json").is_file():
        pytest.skip("no committed results/ or docs/results/claims.json in this checkout")
    title = "oversmooth: the claims protocol at CPU scale"
    writer = (root / "scripts" / "claims_report.sh").read_text()
    assert "claims --out docs/results --force" in writer and f'--title "{title}"' in writer
    assert 'PY="$py" scripts/claims_report.sh' in (root / "scripts" / "run_claims.sh").read_text()
    relative = [str(Path(a).relative_to(root)) for a in archives]
    command = shlex.join(["oversmooth", "claims", *relative, "--out", "docs/results", "--title", title])
    found = read_folders(archives)
    claims, report = render_claims(
        found.cells,
        found.probes,
        found.commands,
        title,
        command,
        adapted=found.adapted,
        benchmark=found.benchmark,
        third_protocol=found.third_protocol,
        fair_adapted=found.fair_adapted,
        budget=found.budget,
        sinks_root=found.sinks_root,
    )
    written = {row["id"]: row for row in json.loads((docs / "claims.json").read_text())}
    assert sorted(written) == sorted(claim.id for claim in claims)
    for claim in claims:
        assert json.loads(json.dumps(claim.to_json())) == written[claim.id], claim.id
    assert (docs / "report.md").read_text() == report.markdown
    expected = {*report.figure_files(), "report.md", "claims.json"} | ({"cells.csv"} if found.cells else set())
    assert {f.name for f in docs.iterdir()} == expected
    report.write(tmp_path / "now")
    for name in expected - {"report.md", "claims.json"}:
        now, committed = tmp_path / "now" / name, docs / name
        if name.endswith(".png"):
            now, committed = plt_image.imread(now), plt_image.imread(committed)
            assert now.shape == committed.shape, name
            assert (abs(now - committed) > 1 / 255).any(axis=-1).mean() < 0.001, name
        else:
            assert now.read_text() == committed.read_text(), name
    # docs/studies.md quotes the second protocol's hours of training: the report's total less the
    # third protocol's, the fourth step's and the sink claims' cells (they keep arriving; the report's
    # total counts them as they do)
    total = float(re.search(r"trained for ([0-9.]+) hours in all", report.markdown)[1])
    later = (*THIRD_PROTOCOL_STUDIES, *FOURTH_STEP_STUDIES, *SINK_STUDIES)
    third = cell_hours([c for c in found.cells if c.study in later])
    studies = (root / "docs" / "studies.md").read_text()
    second = re.search(r"second protocol's own cells and\s+adaptations trained for \*\*([0-9.]+) hours\*\*", studies)
    assert second and abs(float(second[1]) - (total - third)) <= 0.1, (total, third)  # both rounded


def test_docs_studies_quotes_smollm2s_regime_as_archived():
    """The third protocol's registration quotes claim 8 on SmolLM2's regime as results/ holds it: the mean of the
    controls' last-layer cos_sim over the seeds it names, and null.json's random inits and
    pretrained value (measured by scripts/smollm2_8.py)."""
    from oversmooth.adapt.result import AdaptResult

    root = Path(__file__).resolve().parents[1]
    archive = root / "results" / "third-protocol" / "smollm2-8"
    if not (archive / "null.json").is_file():
        pytest.skip("no committed results/third-protocol/smollm2-8/null.json in this checkout")
    null = json.loads((archive / "null.json").read_text())
    controls = [
        AdaptResult.from_dict(json.loads((archive / f"s{seed}" / "adapt.json").read_text())).control.cos_sim_last
        for seed in (0, 1, 10, 11)
    ]
    studies = (root / "docs" / "registrations" / "third-protocol.md").read_text()
    paragraph = " ".join(studies.split("*Claim 8 on SmolLM2, its regime beside the null")[1].split("\n\n")[0].split())
    assert f"**{statistics.fmean(controls):.3f}** (mean of seeds 0, 1, 10 and 11," in paragraph
    assert f"at random init on the same probe, {null['mean']:.3f} ± {null['sd']:.3f}**" in paragraph
    assert f"({len(null['random_init'])} inits; the pretrained model before adaptation: {null['pretrained']:.3f})" in (
        paragraph
    )


def test_the_1b_retests_row_says_what_its_last_layer_did():
    """The registered measure averages over layers; the record's sentence (scripts/retest_1b.py)
    adds each model's last-layer change, which the third protocol's registration quotes for MiniLM (+0.0046)."""
    root = Path(__file__).resolve().parents[1]
    path = root / "results" / "third-protocol" / "retest-1b.json"
    if not path.is_file():
        pytest.skip("no committed results/third-protocol/retest-1b.json in this checkout")
    record = json.loads(path.read_text())
    changes = [
        model["per_layer_mean"]["neutreno"][-1] - model["per_layer_mean"]["plain"][-1]
        for model in record["models"].values()
    ]
    assert record["sentence"].endswith(f"last layer's mean change, MiniLM {changes[0]:+.4f}, SmolLM2 {changes[1]:+.4f}")
    assert f"(+{changes[0]:.4f})" in (root / "docs" / "registrations" / "third-protocol.md").read_text()
