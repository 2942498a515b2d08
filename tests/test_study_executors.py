"""Executor settings of `oversmooth study`: refusals before anything is written or submitted,
a study file's [executor] table, and `--status` on a local study (no Slurm needed)."""

import json

import pytest

from oversmooth.cli import main
from oversmooth.errors import UsageError
from oversmooth.study import StudyConfig
from oversmooth.study.executor_settings import ExecutorSettings, slurm_minutes

TINY = {
    "name": "tiny",
    "model": "vit",
    "tasks": ["synthetic"],
    "depths": [1],
    "methods": ["softmax"],
    "train": {"width": 8, "heads": 2, "epochs": 1, "batch_size": 32, "probe_size": 8},
}


def _write(tmp_path, study, name="study.json"):
    path = tmp_path / name
    path.write_text(json.dumps(study))
    return str(path)


@pytest.mark.parametrize(
    "text, minutes", [("90", 90), ("1:30", 2), ("1:30:00", 90), ("2-00", 2880), ("1-02:03", 1563), ("0-00:00:30", 1)]
)
def test_slurm_time_limits_in_minutes(text, minutes):
    assert slurm_minutes(text) == minutes


def test_a_study_file_sets_the_executor_and_flags_override_it(tmp_path):
    study = StudyConfig.load(
        _write(
            tmp_path,
            {**TINY, "executor": {"kind": "slurm", "jobs": 3, "time": "10", "sbatch": ["--qos=low", "--exclusive"]}},
        )
    )
    assert study.executor == ExecutorSettings("slurm", 3, "10", sbatch=("--qos=low", "--exclusive"))
    assert study.executor.sbatch_options() == {"qos": "low", "exclusive": True}
    assert study.executor.updated(jobs=None, kind="local").kind == "local"
    assert "executor" not in study.to_dict()  # where it runs is not what it trains
    with pytest.raises(UsageError, match="unknown executor setting\\(s\\) queue"):
        ExecutorSettings.from_dict({"queue": "x"})


@pytest.mark.parametrize(
    "args, message",
    [
        (["--executor", "cloud"], "unknown executor 'cloud'; choose local or slurm"),
        (["--time", "soon"], "time limit 'soon' does not parse"),
        (["--executor", "slurm", "--time", "soon"], "time limit 'soon' does not parse"),
        (["--partition", "gpu"], "--partition is a Slurm setting: drop it, or run on Slurm (--executor slurm)"),
        (["--executor", "slurm", "--sbatch", "qos=low"], "is not of the form --name or --name=value"),
        (["--tasks-per-node", "0"], "tasks_per_node must be a whole number of at least 1"),
    ],
)
def test_bad_executor_settings_exit_2_and_write_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "out"
    assert main(["study", _write(tmp_path, TINY), "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_slurm_where_none_is_reachable_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "no-such-slurm.conf"))
    out = tmp_path / "out"
    assert main(["study", _write(tmp_path, TINY), "--out", str(out), "--executor", "slurm"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--executor slurm: no Slurm" in err and "--executor local" in err, err
    assert not out.exists()


def test_a_folder_begun_with_another_grid_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["study", _write(tmp_path, TINY), "--out", str(out)]) == 0
    assert main(["study", _write(tmp_path, TINY), "--out", str(out), "--status"]) == 0
    assert "synthetic-pre-d1-softmax-s0  completed" in capsys.readouterr().out
    before = sorted(p.name for p in out.rglob("*"))
    changed = {**TINY, "train": {**TINY["train"], "epochs": 2}}
    assert main(["study", _write(tmp_path, changed, "changed.json"), "--out", str(out)]) == 2
    assert "was begun with another grid" in capsys.readouterr().err
    assert main(["study", _write(tmp_path, {**TINY, "name": "other"}, "other.json"), "--out", str(out)]) == 2
    assert "holds study 'tiny', not 'other'" in capsys.readouterr().err
    assert before == sorted(p.name for p in out.rglob("*"))


@pytest.mark.parametrize("damaged", ["study.json", "cell.json"])
@pytest.mark.parametrize("content", ['{"name": "ti', '["a list"]', '{"spec": 3}'])
def test_a_damaged_study_or_cell_file_in_the_folder_is_named(tmp_path, capsys, damaged, content):
    """Truncated, the wrong kind of JSON, or a table without what it must hold: one line naming
    the file, exit 2, nothing written (the folder is as it was)."""
    out = tmp_path / "out"
    assert main(["study", _write(tmp_path, TINY), "--out", str(out)]) == 0
    capsys.readouterr()
    path = out / damaged if damaged == "study.json" else next(out.glob(f"cells/*/{damaged}"))
    path.write_text(content)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert main(["study", _write(tmp_path, TINY), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path} is damaged" in err, err
    assert before == {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_status_of_a_study_not_begun_is_refused_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["study", _write(tmp_path, TINY), "--out", str(out), "--status"]) == 2
    assert "holds no study" in capsys.readouterr().err and not out.exists()
