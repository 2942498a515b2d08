"""`oversmooth report`: the report on a user's own study, about its cells only: scores with their
seed spread, each method's paired differences from its baseline by seed (checked against
scipy.stats.t, computed here by hand), the figures, and no claim of the source papers.

Cells are written as `oversmooth study` archives them (``test_claims_report.make_cell``).
"""

import math

import numpy as np
import pytest
from scipy import stats
from test_claims_report import depth_cells, make_cell

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
        task, norm, depth, _, n, listed, found = difference_row(report, pair)
        assert (task, norm, depth, n, listed) == ("fmnist", "pre", "8", str(len(differences)), seeds)
        mean, low, high = t_interval(differences)
        assert found == f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
    assert "| softmax - softmax |" not in report
    # by hand: d = 0.5, 2.0, 0.1; sd 1.0017, se 0.5783, t(0.975, 2) = 4.3027: half-width 2.488
    assert difference_row(report, "neutreno - softmax")[-1] == "+0.867 [-1.622, +3.355]"


def test_without_softmax_each_method_is_compared_with_the_first(tmp_path):
    """fmnist-p7-spectral has no softmax arm: smooth (its first method) is the baseline; one seed
    gives the difference alone."""
    for label, accuracy in (("smooth", 0.90), ("sharpen", 0.91), ("free", 0.88)):
        make_cell(tmp_path, "fmnist-p7-spectral", label, 0, accuracy)
    assert main(["report", str(tmp_path / "fmnist-p7-spectral"), "--out", str(tmp_path / "rep")]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    assert difference_row(report, "sharpen - smooth")[4:] == ["1", "0", "+1.000"]
    assert difference_row(report, "free - smooth")[4:] == ["1", "0", "-2.000"]
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


def test_report_has_no_probes_flag(tmp_path, capsys):
    study = user_study(tmp_path)
    with pytest.raises(SystemExit) as refused:
        main(["report", str(study), "--no-probes"])
    assert refused.value.code == 2 and "--no-probes" in capsys.readouterr().err


def test_every_panel_names_its_methods_in_one_colour_each(tmp_path, monkeypatch):
    """Panels may hold different methods (de-escalation only in the post-norm one): each panel has
    its own legend, and a method keeps its colour across panels."""
    import matplotlib.colors

    from oversmooth.study import report

    depth_cells(tmp_path)
    cells = [c for c in read_study(tmp_path / "depth-w32") if c.depth == 48]
    figures = []
    monkeypatch.setattr(report, "save_png", lambda plt, fig, path: figures.append(fig))
    report.plot_curves(cells, tmp_path / "curves.png")
    report.plot_layers(cells, tmp_path / "layers.png")
    for fig in figures:
        colours = {}
        for index, ax in enumerate(fig.axes):  # row by row: the first two are the pre- and post-norm panels
            lines = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
            if index < 2:  # the top row names what its column shows
                assert {t.get_text().split(" (")[0] for t in ax.get_legend().get_texts()} == {
                    line.get_label().split(" (")[0] for line in lines
                }
            for line in lines:
                colours.setdefault(line.get_label().split(" (")[0], set()).add(
                    matplotlib.colors.to_hex(line.get_color())
                )
        assert set(colours) == {"softmax", "deescalate"} and all(len(c) == 1 for c in colours.values())
        assert colours["softmax"] != colours["deescalate"]
