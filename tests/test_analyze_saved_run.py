"""Our own runs analysed (issue 43): `analyze` and `oversmooth.load` accept every model folder
`train` and `adapt` write, measure it on its own validation split beside its job, and give the
numbers `train` recorded for the same weights and inputs; `train` ends with the last-layer cos_sim
and its pictures."""

import csv
import json

import numpy as np
import pytest
import torch

from oversmooth.cli import main
from tests.reference_metrics import cos_sim as naive_cos_sim

PROBE = 16  # the run's probe size: analyze with --max-sequences PROBE sees the probe's inputs


@pytest.fixture(scope="module")
def vit_run(tmp_path_factory):
    """A tiny finished ViT run on the synthetic task, through the command line; its printed lines."""
    out = tmp_path_factory.mktemp("runs") / "vit"
    args = "train --task synthetic --model vit --depth 2 --width 16 --heads 2 --epochs 2 --batch-size 32"
    with pytest.MonkeyPatch.context() as patch:
        lines = []
        patch.setattr("builtins.print", lambda *a, **k: lines.append(" ".join(map(str, a))))
        code = main([*args.split(), "--probe-size", str(PROBE), "--threads", "1", "--no-progress", "--out", str(out)])
    assert code == 0
    return out, lines


def last_record(run):
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line]
    return [r for r in records if "val" in r][-1]


def test_train_ends_with_the_last_layer_cos_sim_and_its_pictures(vit_run):
    run, lines = vit_run
    last = last_record(run)["layers"][-1]["cos_sim"]
    assert f"last-layer cos_sim {last:.3f} (probe)" in lines[-1]
    for picture in ("curves.png", "similarity.png"):
        assert (run / picture).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("where", ["run", "model"])
def test_analyze_measures_a_train_run_as_train_recorded_it(vit_run, tmp_path, where):
    run, _ = vit_run
    out = tmp_path / "analysis"
    target = run if where == "run" else run / "model"
    args = ["analyze", str(target), "--max-sequences", str(PROBE), "--null", "2", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    recorded = last_record(run)
    assert [int(r["layer"]) for r in rows] == [0, 1, 2]
    for row, layer in zip(rows, recorded["layers"]):
        assert float(row["cos_sim"]) == pytest.approx(layer["cos_sim"], rel=1e-5, abs=1e-7)  # float32 forwards
        assert float(row["cos_sim_excess"]) == pytest.approx(float(row["cos_sim"]) - float(row["cos_sim_null"]))
    quality = json.loads((out / "quality.json").read_text())
    assert quality["accuracy"] == pytest.approx(recorded["val"]["accuracy"])
    assert {"report.md", "cos_sim.png", "block_influence.png"} <= {p.name for p in out.iterdir()}


def test_the_last_layer_cos_sim_matches_a_naive_reference(vit_run, tmp_path):
    from oversmooth.models import load_model
    from oversmooth.train.task_factory import make_task

    run, _ = vit_run
    out = tmp_path / "analysis"
    assert main(["analyze", str(run), "--max-sequences", "4", "--out", str(out), "--no-progress"]) == 0
    measured = float(list(csv.DictReader((out / "metrics.csv").open()))[-1]["cos_sim"])
    model, task = load_model(run / "model"), make_task("synthetic", "vit")[0]
    with torch.no_grad():
        _, cache = model.run_with_cache(task.batch("val", torch.arange(4))[0])
    last = cache.stream()[-1].double().numpy()
    assert measured == pytest.approx(np.mean([naive_cos_sim(x) for x in last]), rel=1e-6)  # float32 forwards


def test_an_adaptation_arm_is_measured_on_its_source_runs_task(vit_run, tmp_path, monkeypatch, capsys):
    """adapt takes the run's model/ folder; its arm is measured on the source run's task, named by
    its own method, from another folder than the one adapt ran in (a relative model name)."""
    from oversmooth.adapt import AdaptConfig, adapt

    run, _ = vit_run
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "vit").symlink_to(run)
    monkeypatch.chdir(tmp_path / "work")
    config = AdaptConfig(model="vit/model", out="a", steps=2, record_every=2, progress=False, batch_size=16)
    patched = next(name for name in adapt(config).arms if name != "control")
    monkeypatch.chdir(tmp_path)
    arm = tmp_path / "work" / "a" / "arms" / patched
    assert main(["analyze", str(arm), "--max-sequences", "4", "--out", "analysis", "--no-progress"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "neutreno; adapted by" in first and "the first 4 validation images of synthetic" in first
    assert json.loads((tmp_path / "analysis" / "quality.json").read_text())["accuracy"] > 0


def test_an_lm_run_is_measured_by_its_perplexity_with_both_nulls(tmp_path, capsys):
    out = tmp_path / "lm"
    args = "train --task synthetic --model lm --depth 2 --width 16 --heads 2 --epochs 1 --threads 1 --no-progress"
    assert main([*args.split(), "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    analysis = tmp_path / "analysis"
    assert main(["analyze", str(out), "--max-sequences", "4", "--null", "2", "--out", str(analysis)]) == 0
    quality = json.loads((analysis / "quality.json").read_text())
    assert quality["perplexity"] == pytest.approx(results["val"]["perplexity"], rel=1e-5)
    rows = list(csv.DictReader((analysis / "metrics.csv").open()))
    assert {"cos_sim_null", "cos_sim_shuffled", "cos_sim_shuffled_sd"} <= set(rows[0])
    assert "perplexity" in capsys.readouterr().out


def test_patching_our_own_run_is_refused_in_one_line(vit_run, tmp_path, capsys):
    run, _ = vit_run
    out = tmp_path / "analysis"
    for flag in (["--methods", "neutreno"], ["--exclude", "0"], ["--dtype", "bfloat16"], ["--max-length", "0"]):
        assert main(["analyze", str(run), *flag, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"drop {flag[0]}" in err[0] and "oversmooth adapt" in err[0], err
    assert not out.exists()


def test_the_python_loader_takes_a_train_run(vit_run):
    import oversmooth

    run, _ = vit_run
    saved = oversmooth.load(str(run))
    table = oversmooth.analyze(saved, sequences=PROBE)
    assert list(table["method"].unique()) == ["softmax"] and list(table["layer"]) == [0, 1, 2]
    assert table["cos_sim"].tolist() == pytest.approx(
        [r["cos_sim"] for r in last_record(run)["layers"]], rel=1e-5, abs=1e-7
    )
    with pytest.raises(ValueError, match="trained with"):
        oversmooth.analyze(saved, methods=["neutreno"])


def test_cka_and_compare_for_our_runs(vit_run, tmp_path, capsys):
    """``--cka``: 1 on the diagonal, symmetric; ``--compare`` with the same run's model gives the
    same matrix (the same states, example by example); a model of other inputs is refused."""
    run, _ = vit_run
    out = tmp_path / "analysis"
    args = ["analyze", str(run), "--max-sequences", "8", "--cka", "--compare", str(run / "model"), "--out", str(out)]
    assert main(args) == 0
    read = lambda name: {  # noqa: E731
        (int(r["layer_a"]), int(r["layer_b"])): float(r["cka"]) for r in csv.DictReader((out / name).open())
    }
    own, compared = read("cka.csv"), read("cka_compare.csv")
    assert all(own[(i, i)] == pytest.approx(1.0) for i in range(3))
    assert all(own[(a, b)] == pytest.approx(own[(b, a)]) for a, b in own)
    assert compared == pytest.approx(own)
    assert main(["analyze", str(run), "--compare", str(tmp_path), "--out", str(tmp_path / "no")]) == 2
    assert "--compare" in capsys.readouterr().err and not (tmp_path / "no").exists()
