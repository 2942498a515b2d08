"""Claim 4's third family in the claims report (docs/studies.md: a described comparison once the
deep pilots found post-norm training): every arm's scores, each arm minus post-norm softmax of the
same depth paired by seed (checked against scipy's t interval), the plot, and no verdict."""

import json

import pytest
from claims_cells import make_cell
from test_study_report import difference_row, t_interval

from oversmooth.cli import main

POST_SOFTMAX = [0.840, 0.850]  # seeds 10, 11
DEEPNORM = [0.845, 0.862]
LAYERSCALE = [0.830, 0.836]  # pre-norm: compared with post-norm softmax all the same


def test_each_fix_is_described_against_post_norm_softmax_at_its_depth(tmp_path, capsys):
    for seed in (0, 1):
        for label, scores, norm in (("softmax", POST_SOFTMAX, "post"), ("deepnorm", DEEPNORM, "post")):
            make_cell(tmp_path, "depth-fixes", label, 10 + seed, scores[seed], norm=norm, depth=96)
        make_cell(tmp_path, "depth-fixes", "layerscale", 10 + seed, LAYERSCALE[seed], norm="pre", depth=96)
    make_cell(tmp_path, "depth-fixes", "rezero", 10, 0.10, norm="post", depth=96)  # no pair on seed 11
    make_cell(tmp_path, "depth-fixes", "softmax", 10, 0.86, norm="pre", depth=8)  # no post-norm softmax at 8
    out = tmp_path / "rep"
    assert main(["claims", str(tmp_path / "depth-fixes"), "--out", str(out), "--no-probes"]) == 0
    capsys.readouterr()
    report = (out / "report.md").read_text()
    section = report.split("## Claim 4's third family")[1].split("\n## ")[0]
    assert "(described, not decided)" in section
    assert "No verdict: the deep pilots have not found post-norm training" in section
    for name, scores in (("post-norm deepnorm", DEEPNORM), ("pre-norm layerscale", LAYERSCALE)):
        mean, low, high = t_interval([100 * (m - b) for m, b in zip(scores, POST_SOFTMAX)])
        row = difference_row(section, f"{name} - post-norm softmax")
        assert row[1:3] + row[4:7] == [name.split("-")[0], "96", "2", "10-11", f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"]
    assert difference_row(section, "post-norm rezero - post-norm softmax")[4:] == ["1", "10", "-74.000", "-74.000"]
    assert "| 8 | pre-norm softmax - post-norm softmax |" not in section  # nothing to pair it with
    for verdict in ("held", "contradicted", "inconclusive"):
        assert verdict not in section
    assert "![depth fixes by depth](depth_fixes.png)" in section and (out / "depth_fixes.png").stat().st_size > 0
    assert "cos_sim at random init" not in section  # no null.json: no column of dashes


def test_an_arm_with_a_null_shows_its_random_init_cos_sim_beside_the_trained_one(tmp_path, capsys):
    """results/depth-fixes/null.json (scripts/random_init_null.py) adds the column; an arm it lacks reads –."""
    for label in ("softmax", "deepnorm"):
        make_cell(tmp_path, "depth-fixes", label, 10, 0.85, norm="post", depth=96)
    arm = {"task": "fmnist", "norm": "post", "label": "softmax", "depth": 96, "cos_sim": [0.1, 0.146]}
    arm |= {"mean": 0.123, "sd": 0.0325, "inits": 2, "probe_examples": 32}
    (tmp_path / "depth-fixes" / "null.json").write_text(json.dumps({"arms": [arm]}))
    out = tmp_path / "rep"
    assert main(["claims", str(tmp_path / "depth-fixes"), "--out", str(out), "--no-probes"]) == 0
    capsys.readouterr()
    section = (out / "report.md").read_text().split("## Claim 4's third family")[1].split("\n## ")[0]
    rows = {line.split(" | ")[2]: line for line in section.splitlines() if line.startswith("| fmnist | post |")}
    assert "| s / step | cos_sim at random init |" in section
    assert rows["softmax"].endswith("| 0.123 |") and rows["deepnorm"].endswith("| – |")


def test_no_line_is_drawn_through_a_depth_its_arm_never_trained(tmp_path, monkeypatch):
    """depth-w32 gives post-norm softmax a depth-48 point; DeepNorm has only depths 8 and 96, so its
    points at 8 and 96 are drawn apart (two segments of one point, one label), never joined across 48;
    the differences plot draws DeepNorm minus post-norm softmax of the same seed and depth. Each seed
    is a dot beside its arm's mean, and a t interval of two far-apart seeds (85 % and 10 % at depth 48)
    runs off a panel that ends at what accuracy can take."""
    from oversmooth.study import report
    from oversmooth.study.results import read_studies

    for seed in (10, 11):
        for depth in (8, 96):
            make_cell(tmp_path, "depth-fixes", "softmax", seed, POST_SOFTMAX[seed - 10], norm="post", depth=depth)
            make_cell(tmp_path, "depth-fixes", "deepnorm", seed, DEEPNORM[seed - 10], norm="post", depth=depth)
    make_cell(tmp_path, "depth-w32", "softmax", 2, 0.85, norm="post", depth=48)
    make_cell(tmp_path, "depth-w32", "softmax", 3, 0.10, norm="post", depth=48)
    cells, _ = read_studies([tmp_path / "depth-fixes", tmp_path / "depth-w32"])
    drawn = {}
    monkeypatch.setattr(report, "save_figure", lambda fig, stem, formats: drawn.update(fig=fig))
    report.plot_depth(cells, tmp_path / "depth.png", "fixes")
    accuracy = drawn["fig"].axes[0]

    def depth(x):
        """The depth an arm's point stands beside (the arms are dodged apart around it)."""
        return min((8, 48, 96), key=lambda d: abs(d - x))

    lines = {}
    for bars in accuracy.containers:  # one error-bar container per segment
        lines.setdefault(bars.lines[0].get_color(), []).append([depth(x) for x in bars.lines[0].get_xdata()])
    assert sorted(lines.values()) == [[[8], [96]], [[8, 48, 96]]]  # deepnorm apart; softmax joined
    labels = sorted(b.get_label() for b in accuracy.containers if not b.get_label().startswith("_"))
    assert labels == ["post-norm deepnorm (2/2)", "post-norm softmax (2/2/2)"]
    dots = [
        (depth(line.get_xdata()[0]), sorted(round(y, 6) for y in line.get_ydata()))
        for line in accuracy.lines
        if line.get_marker() == "."
    ]
    assert (48, [10.0, 85.0]) in dots  # the two seeds apart from their mean (47.5)
    assert len(dots) == 5  # softmax at 8, 48 and 96, deepnorm at 8 and 96
    low, high = accuracy.get_ylim()
    assert -2.0 <= low <= 10.0 and 85.0 <= high <= 102.0  # the interval (about +-476 pp) runs off the panel
    report.plot_differences(cells, tmp_path / "differences.png", "fixes", ("post", "softmax"))
    accuracy = drawn["fig"].axes[0]
    means = [list(b.lines[0].get_ydata()) for b in accuracy.containers]
    expected = 100 * sum(d - p for d, p in zip(DEEPNORM, POST_SOFTMAX)) / 2  # the same at 8 and 96
    assert means == [[pytest.approx(expected)], [pytest.approx(expected)]]  # apart again: no deepnorm at 48


def test_the_depth_fixes_figure_colours_each_arm_as_claim_4s_figure_does(tmp_path, monkeypatch):
    """Side by side in the report, an arm has one colour: DeepNorm's differences are drawn in the
    colour claim 4's figure gives it (its place among claim 4's arms), not the next free one. Its
    differences (+5.0 and +5.2 pp) lie well above 0, and the panel still shows 0, where the eye reads
    "no difference"."""
    from oversmooth.claims import depth_fixes
    from oversmooth.claims.claim4_depth import ARMS
    from oversmooth.study import report
    from oversmooth.study.results import read_studies

    for seed, softmax, deepnorm in ((10, 0.840, 0.890), (11, 0.850, 0.902)):
        make_cell(tmp_path, "depth-fixes", "softmax", seed, softmax, norm="post", depth=96)
        make_cell(tmp_path, "depth-fixes", "deepnorm", seed, deepnorm, norm="post", depth=96)
    cells, _ = read_studies([tmp_path / "depth-fixes"])
    drawn = {}
    monkeypatch.setattr(report, "save_figure", lambda fig, stem, formats: drawn.update(fig=fig))
    _, files = depth_fixes.depth_fixes_section(cells, "")
    files["depth_fixes"](tmp_path / "depth_fixes", ("png",))
    accuracy = drawn["fig"].axes[0]
    (bars,) = accuracy.containers
    assert bars.lines[0].get_color() == f"C{ARMS.index(('post', 'deepnorm'))}" == "C3"
    assert list(bars.lines[0].get_ydata()) == [pytest.approx(5.1)]
    low, high = accuracy.get_ylim()
    assert low < 0.0 < high


def test_a_study_of_more_arms_than_colours_gets_no_figure_by_depth_and_says_so(tmp_path, monkeypatch):
    """Past the figure's colours (10; 2 here), arms would share one: the section says so in a line
    instead of drawing the figure by depth; within them it draws it."""
    from oversmooth.study import report
    from oversmooth.study.results import read_studies

    for seed in (10, 11):
        for depth in (8, 96):
            for label in ("softmax", "deepnorm", "deescalate"):
                make_cell(tmp_path, "depth-fixes", label, seed, 0.85, norm="post", depth=depth)
    cells, _ = read_studies([tmp_path / "depth-fixes"])
    files = {}
    monkeypatch.setattr(report, "COLOURS", 2)
    lines = report.study_section("depth-fixes", cells, files, None)
    assert "No figure by depth: its 3 arms are more than the 2 colours a figure tells apart." in lines
    assert "depth-fixes_scores" not in files and "depth-fixes_layers" in files
    monkeypatch.setattr(report, "COLOURS", 3)
    report.study_section("depth-fixes", cells, files, None)
    assert "depth-fixes_scores" in files
