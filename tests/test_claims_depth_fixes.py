"""Claim 4's third family in the claims report (docs/studies.md: a described comparison once the
deep pilots found post-norm training): every arm's scores, each arm minus post-norm softmax of the
same depth paired by seed (checked against scipy's t interval), the plot, and no verdict."""

from test_claims_report import make_cell
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
