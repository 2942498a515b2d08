"""The regime pilot in the claims report (docs/registrations/fourth-step.md, third-protocol.md): per
configuration its tokens, validation accuracy, last-layer cos_sim beside the random-init null, and
whether it oversmooths (cos_sim >= 0.5) and trains (gate W's (a) and (c): plateaued, and above its
logistic regression on the same images)."""

import json

from claims_cells import depth_logistic, make_cell

from oversmooth.cli import main


def set_last_cos_sim(folder, value):
    """Every layer of the cell's last epoch at ``value`` (the probe the report reads)."""
    path = folder / "metrics.jsonl"
    epochs = [json.loads(line) for line in path.read_text().splitlines()]
    for layer in epochs[-1]["layers"]:
        layer["cos_sim"] = value
    path.write_text("".join(json.dumps(e) + "\n" for e in epochs))


def report_of(root, capsys) -> str:
    out = root / "rep"
    folders = [str(root / name) for name in ("regime-pilot", "regime-pilot-p2", "depth-w32")]
    assert main(["claims", *folders, "--out", str(out), "--force", "--no-probes"]) == 0
    capsys.readouterr()
    return (out / "report.md").read_text().split("## Where a trained softmax ViT oversmooths")[1].split("\n## ")[0]


def test_the_regime_table_says_which_configuration_oversmooths_and_trains(tmp_path, capsys):
    make_cell(tmp_path, "depth-w32", "softmax", 2, 0.84, depth=48, cell_analysis=depth_logistic(0.844))
    make_cell(tmp_path, "regime-pilot", "softmax", 0, 0.84, depth=12, val=[0.80, 0.850])
    make_cell(tmp_path, "regime-pilot-p2", "softmax", 0, 0.81, depth=12, val=[0.80, 0.822])
    # above the floor but 1.5 pp short of its best (gate W's (a) allows 0.5): it does not train
    make_cell(tmp_path, "regime-pilot", "softmax", 0, 0.85, depth=24, val=[0.870, 0.855])
    set_last_cos_sim(tmp_path / "regime-pilot" / "fmnist-pre-d12-softmax-s0", 0.366)
    set_last_cos_sim(tmp_path / "regime-pilot-p2" / "fmnist-pre-d12-softmax-s0", 0.567)
    (tmp_path / "regime-pilot-p2" / "null.json").write_text(
        json.dumps(
            {
                "arms": [
                    {
                        **dict(task="fmnist", norm="pre", label="softmax", depth=12, cos_sim=[0.4, 0.45]),
                        **dict(mean=0.425, sd=0.035, inits=2, probe_examples=32),
                    }
                ]
            }
        )
    )
    section = report_of(tmp_path, capsys)
    assert "logistic regression on the same images (84.40 %" in section
    assert "| width 64, 4 × 4 patches, depth 12 | 50 | 85.00 % | 0.366 | – | no | yes |" in section
    assert "| width 64, 2 × 2 patches, depth 12 | 197 | 82.20 % | 0.567 | 0.425 ± 0.035 | yes | no |" in section
    assert "| width 64, 4 × 4 patches, depth 24 | 50 | 85.50 % | 0.300 | – | no | no |" in section
    assert "No configuration does both" in section
    set_last_cos_sim(tmp_path / "regime-pilot" / "fmnist-pre-d12-softmax-s0", 0.5)  # at the bar: oversmooths
    section = report_of(tmp_path, capsys)
    assert "| 0.500 | – | yes | yes |" in section and "A configuration does both" in section
