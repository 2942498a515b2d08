"""`oversmooth study`: the grid, its files, skipping finished cells, resuming, stopping, bad input."""

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oversmooth.cli import main
from oversmooth.errors import UsageError
from oversmooth.study import StudyConfig, Variant
from oversmooth.study.results import read_study

TINY = {
    "name": "tiny",
    "model": "vit",
    "tasks": ["synthetic"],
    "depths": [1, 2],
    "methods": ["softmax", {"label": "neutreno", "lam": 0.5}],
    "train": {"width": 8, "heads": 2, "epochs": 1, "batch_size": 32, "probe_size": 8},
}


def _write(tmp_path: Path, study: dict, suffix: str = ".json") -> Path:
    path = tmp_path / f"study{suffix}"
    path.write_text(json.dumps(study))
    return path


def test_cells_cover_the_grid_in_run_order():
    study = StudyConfig.from_dict({**TINY, "norms": ["pre", "post"], "seeds": [0, 1]})
    cells = study.cells()
    assert len(cells) == 2 * 2 * 2 * 2 and len({c.name for c in cells}) == len(cells)
    assert [c.seed for c in cells] == [0] * 8 + [1] * 8  # the first seed's grid finishes first
    grid = {(c.norm, c.depth, c.variant.label, c.seed) for c in cells}
    assert grid == {
        (n, d, m, s) for n in ("pre", "post") for d in (1, 2) for m in ("softmax", "neutreno") for s in (0, 1)
    }
    spec = next(c for c in cells if c.variant.label == "neutreno").spec()
    assert (spec.method, spec.knobs, spec.batch_size, spec.width) == ("neutreno", {"lam": 0.5}, 32, 8)


def test_a_method_can_be_kept_to_some_norm_placements():
    study = StudyConfig.from_dict(
        {
            **TINY,
            "norms": ["pre", "post"],
            "depths": [3],
            "methods": ["softmax", {"label": "deesc", "method": "deescalate", "tau": 1.0, "norms": ["post"]}],
        }
    )
    assert [c.name for c in study.cells()] == [
        "synthetic-pre-d3-softmax-s0",
        "synthetic-post-d3-softmax-s0",
        "synthetic-post-d3-deesc-s0",
    ]
    assert study.to_dict()["methods"][1] == {"label": "deesc", "method": "deescalate", "tau": 1.0, "norms": ["post"]}
    with pytest.raises(UsageError, match="asks for norm\\(s\\) post that the study does not train"):
        StudyConfig.from_dict({**TINY, "methods": [{"label": "d", "method": "deescalate", "norms": ["post"]}]})


def test_a_method_can_be_kept_to_some_depths_and_its_cells_read_back_without_a_depths_knob(tmp_path):
    """A variant's ``depths`` keeps it to those depths, alone or with ``norms``; it is written to the
    study file (only where set) and to cell.json's variant, never read back as a knob."""
    from oversmooth.study.results import read_cell

    deesc = {"label": "deesc", "method": "deescalate", "tau": 1.0, "norms": ["post"], "depths": [3]}
    study = StudyConfig.from_dict(
        {**TINY, "norms": ["pre", "post"], "depths": [1, 3], "methods": ["softmax", deesc], "seeds": [0, 1]}
    )
    names = [c.name for c in study.cells()]
    assert names == [
        f"synthetic-{cell}-s{seed}"
        for seed in (0, 1)
        for cell in ("pre-d1-softmax", "pre-d3-softmax", "post-d1-softmax", "post-d3-softmax", "post-d3-deesc")
    ]
    assert study.to_dict()["methods"] == [{"label": "softmax", "method": "softmax"}, deesc]
    cell = study.cells()[4]
    folder = tmp_path / cell.name
    folder.mkdir()
    (folder / "cell.json").write_text(json.dumps(cell.to_dict()))
    assert read_cell(folder).knobs == {"tau": 1.0}
    with pytest.raises(UsageError, match=r"method 'deesc' asks for depth\(s\) 3 that the study does not train"):
        study.narrowed(depths=(1, 2))


def test_a_changed_run_field_is_named_in_the_description():
    """The description is prose about the preset's values; after `--set` it must not claim them."""
    study = StudyConfig.from_dict({**TINY, "description": "1 epoch"})
    changed = study.narrowed(train={"epochs": 30, "batch_size": 32})
    assert changed.description == "1 epoch (changed: epochs=30)"  # batch_size 32 is the preset's own
    assert changed.train["epochs"] == 30 and study.narrowed(train={"epochs": 1}) is study


def test_toml_study_file(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text(
        'model = "lm"\ntasks = ["synthetic"]\ndepths = [1]\n'
        'methods = ["softmax", { label = "sharp", method = "spectral", spectral = "sharpen" }]\n'
        "[train]\nepochs = 2\n"
    )
    study = StudyConfig.load(path)
    assert study.name == "grid" and study.variants[1] == Variant("sharp", "spectral", {"spectral": "sharpen"})
    assert study.cells()[1].spec().epochs == 2


def test_recipes_run_the_grid_once_each_and_override_its_training():
    recipes = [{"label": "fast", "lr": 4e-3, "grad_clip": 0.0}, {"label": "wide", "width": 16}]
    grid = {**TINY, "depths": [1], "methods": ["softmax"], "train": {**TINY["train"], "lr": 1e-3}}
    study = StudyConfig.from_dict({**grid, "recipes": recipes})
    cells = study.cells()
    assert [c.name for c in cells] == ["synthetic-fast-pre-d1-softmax-s0", "synthetic-wide-pre-d1-softmax-s0"]
    assert (cells[0].spec().lr, cells[0].spec().grad_clip, cells[0].spec().width) == (4e-3, 0.0, 8)
    assert (cells[1].spec().lr, cells[1].spec().width) == (1e-3, 16)
    assert cells[0].to_dict()["recipe"] == "fast" and "recipe" not in StudyConfig.from_dict(TINY).cells()[0].to_dict()
    assert StudyConfig.from_dict(study.to_dict()) == study  # the file form round-trips


@pytest.mark.parametrize(
    "change, message",
    [
        ({"recipes": [{"label": "a"}, {"label": "a"}]}, "'recipes' labels must be unique; a given more than once"),
        ({"recipes": [{"label": "a", "depth": 2}]}, "recipe 'a' may not set depth"),
        ({"recipes": [{"lr": 0.1}]}, "a recipe entry must be a table with a 'label'"),
        ({"recipes": [{"label": "a b"}]}, "recipe label 'a b' may use letters"),
        ({"colour": "red"}, "unknown study field(s) colour"),
        ({"train": {"depth": 3}}, "may not set depth"),
        ({"methods": ["softmax", "softmax"]}, "labels must be unique"),
        ({"methods": [{"label": "x", "method": "neutreno", "gamma": 1}]}, "unknown knob(s) gamma"),
        ({"depths": [2, "four"]}, "'depths' must be a non-empty list"),
        ({"model": "cnn"}, "must be vit or lm"),
    ],
)
def test_bad_study_fields_are_usage_errors(change, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        StudyConfig.from_dict({**TINY, **change})


@pytest.mark.parametrize(
    "args, message",
    [
        (["nope"], "unknown study preset 'nope'"),
        (["@file", "--set", "colour=red"], "unknown run field(s) colour"),
        (["@file", "--set", "method=neutreno"], "may not set method"),
        (["@file", "--set", "lr=-1"], "cell synthetic-pre-d1-softmax-s0: lr must be > 0"),
        (["@file", "--set", "epochs=two"], "epochs must be a whole number, got 'two'"),
        (["@file", "--methods", "softmax,magic"], "magic not in this study"),
        (["@file", "--depths", "1,x"], "--depths takes comma-separated whole numbers"),
        (["@file", "--jobs", "0"], "--jobs must be at least 1"),
        (["@file", "--set", "data_dir=/no/such/dir"], "data_dir applies to fmnist and austen runs only"),  # synthetic
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, args, message):
    study = _write(tmp_path, TINY)
    args = [str(study) if a == "@file" else a for a in args]
    out = tmp_path / "out"
    assert main(["study", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_missing_data_is_caught_before_anything_runs(tmp_path, capsys):
    study = _write(tmp_path, {**TINY, "tasks": ["text:/no/such/book.txt"], "model": "lm"})
    assert main(["study", str(study), "--out", str(tmp_path / "out")]) == 2
    assert "no such file or folder: /no/such/book.txt" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_compile_setting_reaches_every_cell(tmp_path, capsys):
    """A study file's ``compile = true/false`` is compile mode on/off; ``--compile MODE`` overrides
    it; unset, cells run in the default mode (auto)."""
    study = _write(tmp_path, {**TINY, "train": {**TINY["train"], "compile": False}})
    for switch, words in (([], " --compile off"), (["--compile", "on"], " --compile on"), (["--compile", "auto"], "")):
        assert main(["study", str(study), "--out", str(tmp_path / "out"), "--dry-run", *switch]) == 0
        commands = [line for line in capsys.readouterr().out.splitlines() if ": oversmooth train" in line]
        assert len(commands) == 4 and all(words in c and c.count("--compile") == bool(words) for c in commands)
    assert main(["study", str(_write(tmp_path, TINY)), "--out", str(tmp_path / "out"), "--dry-run"]) == 0
    assert " --compile" not in capsys.readouterr().out


def test_every_preset_is_a_valid_grid(monkeypatch):
    """Each preset's cells (the claims protocol's and the generic ones) parse as `oversmooth train`
    command lines (flags, methods, knobs)."""
    from oversmooth.cli.study import presets
    from oversmooth.study.runner import check_cells
    from oversmooth.train import task_factory

    monkeypatch.setattr(task_factory, "check_data", lambda spec, data_dir=None: None)  # data: tested apart
    for study in presets().values():
        check_cells(study)


def test_study_runs_skips_finished_and_resumes_interrupted_cells(tmp_path, capsys):
    out = tmp_path / "out"
    study = _write(tmp_path, TINY)
    assert main(["study", str(study), "--out", str(out), "--jobs", "2"]) == 0
    assert "4 completed" in capsys.readouterr().out
    cells = read_study(out)
    assert [c.status for c in cells] == ["completed"] * 4
    assert [c.label for c in cells][:2] == ["softmax", "softmax"]  # the study's method order
    for cell in cells:  # each cell is a real train run with its own files and the study's settings
        folder = out / "cells" / cell.name
        assert {"cell.json", "train.log", "checkpoint.pt", "metrics.jsonl", "results.json"} <= {
            p.name for p in folder.iterdir()
        }
        description = json.loads((folder / "results.json").read_text())["description"]
        assert description["model_config"]["depth"] == cell.depth
        assert description["model_config"]["mitigation"]["methods"] == ([] if cell.label == "softmax" else ["neutreno"])
    assert json.loads((out / "study.json").read_text())["command"].startswith("oversmooth study ")

    # A re-run trains nothing; a cell that lost its results.json (killed at the very end) resumes
    # from its checkpoint and ends with the same scores.
    victim = out / "cells" / cells[0].name
    before = json.loads((victim / "results.json").read_text())
    (victim / "results.json").unlink()
    stamps = {c.name: (out / "cells" / c.name / "results.json").stat().st_mtime_ns for c in cells[1:]}
    assert main(["study", str(study), "--out", str(out)]) == 0
    assert "1 completed, 3 skipped" in capsys.readouterr().out
    assert "resuming" in (victim / "train.log").read_text()
    assert json.loads((victim / "results.json").read_text())["test"] == before["test"]
    assert stamps == {c.name: (out / "cells" / c.name / "results.json").stat().st_mtime_ns for c in cells[1:]}


def test_sigterm_stops_the_running_cells_and_keeps_their_checkpoints(tmp_path):
    # a checkpoint within seconds, and no way to finish before the signal however loaded the machine
    study = _write(tmp_path, {**TINY, "train": {**TINY["train"], "epochs": 100_000, "checkpoint_every": 5}})
    out = tmp_path / "out"
    process = subprocess.Popen(  # with SIGINT ignored, as a shell starts `nohup oversmooth study ... &`
        [sys.executable, "-m", "oversmooth", "study", str(study), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    deadline = time.time() + 120
    while not list(out.glob("cells/*/checkpoint.pt")) and time.time() < deadline:
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=300)  # stopping saves a checkpoint: slow on a loaded machine
    assert process.returncode == 130 and "interrupted" in err
    (cell,) = [p for p in out.glob("cells/*") if (p / "checkpoint.pt").is_file()]
    assert not (cell / "results.json").exists()  # unfinished: a re-run resumes it
    with open(cell / ".lock") as handle:  # the train process is gone: nobody holds the cell's lock
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_ctrl_c_stops_the_study_in_one_line_and_a_rerun_resumes_the_interrupted_cell(tmp_path, capsys):
    """Ctrl-C in a terminal sends SIGINT to the study's whole process group (the study, submitit's
    controller, the cell's job and its train process): one line and exit 130, no traceback; the
    cell reads `interrupted` in --status, and the next run resumes it from its checkpoint."""
    train = {**TINY["train"], "epochs": 15, "checkpoint_every": 4}  # a checkpoint within a second, then seconds more
    study = _write(tmp_path, {**TINY, "depths": [1], "methods": ["softmax"], "train": train})
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "oversmooth", "study", str(study), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    deadline = time.time() + 120
    while not list(out.glob("cells/*/checkpoint.pt")) and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130 and err == "oversmooth study: interrupted\n", err
    (cell,) = (out / "cells").iterdir()
    assert not (cell / "results.json").exists()
    assert main(["study", str(study), "--out", str(out), "--status"]) == 0
    status = capsys.readouterr().out
    assert f"{cell.name}  interrupted  job" in status and "a rerun resumes it from its last checkpoint" in status
    assert main(["study", str(study), "--out", str(out)]) == 0
    assert "tiny: 1 completed" in capsys.readouterr().out
    assert "resuming" in (cell / "train.log").read_text()


def test_quick_preset_trains_on_real_data_and_reports(tmp_path, capsys):
    from oversmooth.data import FASHION_MNIST_DIR

    if not FASHION_MNIST_DIR.is_dir():
        pytest.skip(f"Fashion-MNIST not installed in {FASHION_MNIST_DIR} (make installs it)")
    out = tmp_path / "quick"
    assert (
        main(["study", "quick", "--out", str(out), "--jobs", "2", "--set", "limit_train=256", "--set", "epochs=1"]) == 0
    )
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "4 completed" in printed and "wrote" in printed
    report = (out / "report.md").read_text()
    assert "| fmnist | pre | softmax |" in report and "not tested" not in report


def test_the_study_names_the_files_train_writes():
    """The runner repeats train's file names (to keep torch out of `--help`): they must agree."""
    from oversmooth import train
    from oversmooth.study import files
    from oversmooth.train.checkpoint import FILENAME

    assert (files.METRICS_FILE, files.RESULTS_FILE) == (train.METRICS_FILE, train.RESULTS_FILE)
    assert files.CHECKPOINT_FILE == FILENAME


def test_finished_cells_are_archived_and_an_archived_cell_is_never_trained_again(tmp_path, capsys):
    study, archive = _write(tmp_path, {**TINY, "depths": [1]}), tmp_path / "results"
    assert main(["study", str(study), "--out", str(tmp_path / "a"), "--results", str(archive)]) == 0
    assert "2 completed" in capsys.readouterr().out
    for cell in ("synthetic-pre-d1-softmax-s0", "synthetic-pre-d1-neutreno-s0"):
        files = {p.name for p in (archive / "tiny" / cell).iterdir()}
        assert files == {"cell.json", "results.json", "metrics.jsonl", "analysis.json", "train.log"}, files
    assert json.loads((archive / "tiny" / "study.json").read_text())["command"].endswith(f"--results {archive}")
    archived = read_study(archive / "tiny")
    assert [c.status for c in archived] == ["completed"] * 2 and archived[0].label == "softmax"

    # another machine: an empty study folder, the archive committed; nothing is trained
    assert main(["study", str(study), "--out", str(tmp_path / "b"), "--results", str(archive)]) == 0
    assert "2 skipped" in capsys.readouterr().out and not (tmp_path / "b" / "cells").exists()

    # a study whose settings changed does not take the archived cells for its own
    changed = _write(tmp_path, {**TINY, "depths": [1], "train": {**TINY["train"], "epochs": 2}}, ".toml.json")
    assert main(["study", str(changed), "--out", str(tmp_path / "c"), "--results", str(archive)]) == 2
    assert "was trained with other settings" in capsys.readouterr().err and not (tmp_path / "c").exists()

    # a damaged archived file is named before anything is written (skipping the cell as finished
    # would drop its seed from every pair later)
    results = archive / "tiny" / "synthetic-pre-d1-softmax-s0" / "results.json"
    intact = results.read_text()
    results.write_text(intact[:-20])
    assert main(["study", str(study), "--out", str(tmp_path / "d"), "--results", str(archive)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{results} is damaged" in err and not (tmp_path / "d").exists()
    results.write_text(intact)

    # a cell archived before its model was measured is measured from the local weights, not retrained
    (archive / "tiny" / "synthetic-pre-d1-neutreno-s0" / "analysis.json").unlink()
    stamp = (tmp_path / "a" / "cells" / "synthetic-pre-d1-neutreno-s0" / "results.json").stat().st_mtime_ns
    (tmp_path / "a" / "cells" / "synthetic-pre-d1-neutreno-s0" / "analysis.json").unlink()
    assert main(["study", str(study), "--out", str(tmp_path / "a"), "--results", str(archive)]) == 0
    assert (archive / "tiny" / "synthetic-pre-d1-neutreno-s0" / "analysis.json").is_file()
    assert stamp == (tmp_path / "a" / "cells" / "synthetic-pre-d1-neutreno-s0" / "results.json").stat().st_mtime_ns


@pytest.mark.slow
def test_depth_fixes_preset_trains_every_fix_and_reports_them_by_depth(tmp_path, capsys):
    """The depth-fixes comparison end to end on a tiny grid: every arm trains at two depths, and the
    report's depth table and plot hold each arm with its last-layer cos_sim and time per step."""
    from oversmooth.data import FASHION_MNIST_DIR

    if not FASHION_MNIST_DIR.is_dir():
        pytest.skip(f"Fashion-MNIST not installed in {FASHION_MNIST_DIR} (make installs it)")
    out = tmp_path / "fixes"
    tiny = ["width=8", "heads=2", "limit_train=128", "epochs=1", "val_size=64", "batch_size=32", "probe_size=8"]
    argv = ["study", "depth-fixes", "--out", str(out), "--jobs", "2", "--depths", "1,2", "--seeds", "0"]
    assert main([*argv, *(a for pair in (("--set", t) for t in tiny) for a in pair)]) == 0
    assert main(["report", str(out)]) == 0
    report = (out / "report.md").read_text()
    arms = [("pre", "softmax"), ("pre", "layerscale")] + [
        ("post", m) for m in ("softmax", "deescalate", "deepnorm", "rezero", "sigma_reparam", "mv_split")
    ]
    for norm, method in arms:
        for depth in (1, 2):
            row = re.search(
                rf"^\| fmnist \| {norm} \| {method} \| {depth} \| 1 \| ([^|]+)\|([^|]+)\|([^|]+)\|([^|]+)\|$",
                report,
                flags=re.M,
            )
            assert row, (norm, method, depth)
            accuracy, cos_sim, escalation, step = (float(v.strip()) for v in row.groups())
            assert 0 <= accuracy <= 100 and -1 <= cos_sim <= 1 and -1 <= escalation <= 1 and step > 0
    assert (out / "depth-fixes_scores.png").is_file()
