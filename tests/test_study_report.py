"""`oversmooth report`: the report on a user's own study, about its cells only: scores with their
seed spread, each method's paired differences from its baseline by seed (checked against
scipy.stats.t, computed here by hand), the figures, and no claim of the source papers.

Cells are written as `oversmooth study` archives them (``claims_cells.make_cell``).
"""

import json
import math
import shutil

import numpy as np
import pytest
from claims_cells import depth_cells, make_cell
from scipy import stats

from oversmooth.cli import main
from oversmooth.study.results import read_study

SOFTMAX = [0.900, 0.910, 0.920]
NEUTRENO = [0.905, 0.930, 0.921]  # +0.5, +2.0, +0.1 pp
FEATSCALE = [0.899, 0.915]  # seeds 0 and 1 only: -0.1, +0.5 pp


def user_study(root):
    """fmnist-p7's grid as a user might run it: three seeds of softmax and NeuTRENO, two of
    FeatScale, and NeuTRENO's seed 3 unfinished (no pair)."""
    for seed, (base, neutreno) in enumerate(zip(SOFTMAX, NEUTRENO)):
        make_cell(root, "fmnist-p7", "softmax", seed, base)
        make_cell(root, "fmnist-p7", "neutreno", seed, neutreno)
    for seed, featscale in enumerate(FEATSCALE):
        make_cell(root, "fmnist-p7", "featscale", seed, featscale)
    make_cell(root, "fmnist-p7", "neutreno", 3, 0.95, status="partial")
    return root / "fmnist-p7"


def t_interval(differences):
    """Mean and 95 % t interval of ``differences``, from scipy's t quantile."""
    d = np.asarray(differences)
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean(), d.mean() - half, d.mean() + half


def difference_row(report: str, pair: str) -> list[str]:
    """The cells of the differences table's row for ``pair`` ("neutreno - softmax")."""
    row = next(line for line in report.splitlines() if f"| {pair} |" in line)
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_report_on_a_users_study_shows_its_cells_first_and_no_claims(tmp_path, capsys):
    study = user_study(tmp_path)
    assert main(["report", str(study), "--out", str(tmp_path / "rep")]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("wrote") and "held" not in printed  # no verdict lines
    report = (tmp_path / "rep" / "report.md").read_text()
    lines = report.splitlines()
    assert "`oversmooth claims`" in lines[2]  # the one line that points at the papers' claims
    assert lines.index("## Study `fmnist-p7`") < 10 and "| pre | softmax |" in "\n".join(lines[:20])
    for claims_only in ("not tested", "Holm", "held", "probes", "NeuTRENO lowers", "claims.png", "Without training"):
        assert claims_only not in report, claims_only
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == [
        "cells.csv",
        "fmnist-p7_curves.png",
        "fmnist-p7_layers.png",
        "report.md",
    ]


def test_the_paired_differences_by_seed_are_the_t_intervals_scipy_gives(tmp_path):
    study = user_study(tmp_path)
    assert main(["report", str(study), "--out", str(tmp_path / "rep")]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "mean difference in test accuracy (pp)" in report
    for pair, method, seeds in (("neutreno - softmax", NEUTRENO, "0-2"), ("featscale - softmax", FEATSCALE, "0-1")):
        differences = [100 * (m - b) for m, b in zip(method, SOFTMAX)]  # unfinished seed 3 has no pair
        task, norm, depth, _, n, listed, found, each = difference_row(report, pair)
        assert (task, norm, depth, n, listed) == ("fmnist", "pre", "8", str(len(differences)), seeds)
        mean, low, high = t_interval(differences)
        assert found == f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
        assert [float(d) for d in each.split(", ")] == pytest.approx(differences, abs=5e-4)
    assert "| softmax - softmax |" not in report
    # by hand: d = 0.5, 2.0, 0.1; sd 1.0017, se 0.5783, t(0.975, 2) = 4.3027: half-width 2.488
    assert difference_row(report, "neutreno - softmax")[-2:] == ["+0.867 [-1.622, +3.355]", "+0.500, +2.000, +0.100"]


def test_without_softmax_each_method_is_compared_with_the_first(tmp_path):
    """fmnist-p7-spectral has no softmax arm: smooth (its first method) is the baseline; one seed
    gives the difference alone."""
    for label, accuracy in (("smooth", 0.90), ("sharpen", 0.91), ("free", 0.88)):
        make_cell(tmp_path, "fmnist-p7-spectral", label, 0, accuracy)
    assert main(["report", str(tmp_path / "fmnist-p7-spectral"), "--out", str(tmp_path / "rep")]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    assert difference_row(report, "sharpen - smooth")[4:] == ["1", "0", "+1.000", "+1.000"]
    assert difference_row(report, "free - smooth")[4:] == ["1", "0", "-2.000", "-2.000"]
    assert "- sharpen |" not in report and "- free |" not in report


def test_report_of_a_claims_archive_says_to_use_claims_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "claim3").mkdir()
    (tmp_path / "claim3" / "rounds.json").write_text("{}")
    assert main(["report", str(tmp_path / "claim3"), "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a study folder" in err and "`oversmooth claims`" in err
    assert not (tmp_path / "rep").exists()


def test_each_commands_help_says_what_it_does_and_points_at_the_other(capsys):
    for command, says, other in (
        ("report", "paired by seed", "`oversmooth claims`"),
        ("claims", "Holm", "`oversmooth report`"),
    ):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert says in text and other in text, command


def test_report_refuses_the_claims_no_probes_flag_pointing_at_claims(tmp_path, capsys):
    study = user_study(tmp_path)
    with pytest.raises(SystemExit) as refused:
        main(["report", str(study), "--no-probes", "--out", str(tmp_path / "rep")])
    err = capsys.readouterr().err.strip()
    assert refused.value.code == 2 and len(err.splitlines()) == 1
    assert "--no-probes" in err and "`oversmooth claims`" in err and "unrecognized" not in err
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize("twice", ["same folder", "folder and archive"])
def test_a_cell_read_twice_is_refused_not_counted_twice(tmp_path, capsys, twice):
    """The same folder given twice, or a study folder (its cells under cells/) beside its archive
    (cells right under it): exit 2, one line naming both folders and the cell, nothing written."""
    archive = user_study(tmp_path / "results")
    other = archive
    if twice == "folder and archive":
        other = tmp_path / "runs" / "fmnist-p7"
        shutil.copytree(archive, other / "cells")
        shutil.move(other / "cells" / "study.json", other / "study.json")
    out = tmp_path / "rep"
    assert main(["report", str(archive), str(other), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "read twice" in err, err
    assert f"from {archive} and from {other}" in err and "fmnist-p7/fmnist-pre-d8-" in err
    assert not out.exists()
    assert main(["report", str(other), "--out", str(out)]) == 0  # each alone is read
    assert "| fmnist | pre | 8 | neutreno - softmax | 3 |" in (out / "report.md").read_text()


def test_a_diverged_seed_is_marked_in_the_differences_and_the_arms(tmp_path):
    """A diverged cell counts with its last validation score, as the score table does: its pairs
    and its arm say so (†, a note under the table); a study without one has neither."""
    study = user_study(tmp_path)
    for depth in (8, 48):  # several depths: the arm table is written
        make_cell(tmp_path / "deep", "depth-w32", "softmax", 2, 0.80, norm="post", depth=depth)
        make_cell(tmp_path / "deep", "depth-w32", "deescalate", 2, 0.81, norm="post", depth=depth, status="diverged")
    assert main(["report", str(study), str(tmp_path / "deep" / "depth-w32"), "--out", str(tmp_path / "rep")]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    fmnist, deep = report.split("## Study `depth-w32`")
    assert "†" not in fmnist.split("last validation score):")[1]  # the score table's legend names it; no mark
    # the diverged arm's last validation accuracy 0.81 against softmax's test 0.80: +1.000 pp, one seed
    assert difference_row(deep, "deescalate - softmax")[4:] == ["1", "2", "+1.000†", "+1.000"]
    arm = next(line for line in deep.splitlines() if line.startswith("| fmnist | post | deescalate | 48 |"))
    assert arm.split(" | ")[4:6] == ["1", "81.00†"]
    note = "† a seed diverged: it counts with its last validation score"
    assert deep.count(note) == 2 and note not in fmnist


def test_the_command_is_the_one_the_study_recorded_as_it_ran(tmp_path):
    """The user's own --seeds/--methods stay in the command (the claims report drops them: its
    claims need the whole grid); a study.json without a command gets no Command line."""
    study = user_study(tmp_path)
    info = json.loads((study / "study.json").read_text())
    ran = "oversmooth study fmnist-p7 --out runs/mine --seeds 0,1,2,3 --methods=softmax,neutreno,featscale"
    (study / "study.json").write_text(json.dumps({**info, "command": ran}))
    assert main(["report", str(study), "--out", str(tmp_path / "rep")]) == 0
    assert f"Command: `{ran}`" in (tmp_path / "rep" / "report.md").read_text().splitlines()
    del info["command"]
    (study / "study.json").write_text(json.dumps(info))
    assert main(["report", str(study), "--out", str(tmp_path / "rep"), "--force"]) == 0
    assert "Command:" not in (tmp_path / "rep" / "report.md").read_text()


def test_every_panel_names_its_methods_in_one_colour_each(tmp_path, monkeypatch):
    """Panels may hold different methods (de-escalation only in the post-norm one): each column has
    its own legend (under its bottom panel), and a method keeps its colour across panels."""
    import matplotlib.colors

    from oversmooth.study import report

    depth_cells(tmp_path)
    cells = [c for c in read_study(tmp_path / "depth-w32") if c.depth == 48]
    figures = []
    monkeypatch.setattr(report, "save_figure", lambda fig, stem, formats: figures.append(fig))
    report.plot_curves(cells, tmp_path / "curves.png")
    report.plot_layers(cells, tmp_path / "layers.png")
    for fig in figures:
        colours = {}
        for index, ax in enumerate(fig.axes):  # row by row: the last two are the pre- and post-norm panels
            lines = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
            if index >= len(fig.axes) - 2:  # the bottom row names what its column shows
                assert {t.get_text().split(" (")[0] for t in ax.get_legend().get_texts()} == {
                    line.get_label().split(" (")[0] for line in lines
                }
            for line in lines:
                colours.setdefault(line.get_label().split(" (")[0], set()).add(
                    matplotlib.colors.to_hex(line.get_color())
                )
        assert set(colours) == {"softmax", "deescalate"} and all(len(c) == 1 for c in colours.values())
        assert colours["softmax"] != colours["deescalate"]
