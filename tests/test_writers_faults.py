"""Fault injection: every result writer, interrupted mid-write (disk full) or at its rename,
leaves the previous file as it was and no temporary behind."""

from __future__ import annotations

import errno
import json
import os

import pytest
import torch

from oversmooth.metrics import measure
from oversmooth.metrics.suite import write_csv


def disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


class HalfWritten:
    """A file handle whose first write stores half its data, then fails with ENOSPC."""

    def __init__(self, handle):
        self._handle = handle

    def write(self, data):
        self._handle.write(data[: len(data) // 2])
        disk_full()

    def writelines(self, lines):
        self.write("".join(lines))

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._handle.__exit__(*exc)


def write_table(path, version):
    write_csv(measure([torch.full((1, 3, 2), float(version)) + torch.eye(3, 2)], metrics=("t_sim",)), path)


def write_checkpoint(path, version):
    from oversmooth.train.checkpoint import save_checkpoint

    save_checkpoint(path, {"step": version, "weights": torch.full((4,), float(version))})


def write_records(path, version):
    from oversmooth.train.loop import _write_records

    assert path.name == "metrics.jsonl"
    _write_records(path.parent, [{"epoch": e} for e in range(version)])


def write_results(path, version):
    from oversmooth.train.loop import _write_results

    assert path.name == "results.json"
    _write_results(path.parent, {"status": "completed", "version": version})


def write_png(path, version):
    from oversmooth.utils.plotting import figure, save_figure

    with figure(1, 1, 2, 2) as (fig, axes):
        axes[0][0].plot([0, 1], [0, version])
        save_figure(fig, path.with_suffix(""))


def write_study_file(path, version):
    from oversmooth.study.presets import study_preset
    from oversmooth.study.runner import write_study

    assert path.name == "study.json"
    write_study(study_preset("quick"), path.parent, command=f"version {version}")


FILE_WRITERS = {
    "metrics.csv": write_table,
    "checkpoint.pt": write_checkpoint,
    "metrics.jsonl": write_records,
    "results.json": write_results,
    "plot.png": write_png,
    "study.json": write_study_file,
}


@pytest.mark.parametrize("name", FILE_WRITERS)
@pytest.mark.parametrize("fault", ["mid-write", "rename"])
def test_an_interrupted_write_keeps_the_previous_file(tmp_path, monkeypatch, name, fault):
    path = tmp_path / name
    FILE_WRITERS[name](path, 1)
    before = path.read_bytes()
    if fault == "mid-write":
        real = os.fdopen
        monkeypatch.setattr("oversmooth.utils.atomic.os.fdopen", lambda *a, **k: HalfWritten(real(*a, **k)))
    else:
        monkeypatch.setattr("oversmooth.utils.atomic.os.replace", disk_full)
    with pytest.raises(OSError, match="No space left"):
        FILE_WRITERS[name](path, 2)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    FILE_WRITERS[name](path, 3)  # and the next write works
    assert path.read_bytes() != before


def test_an_interrupted_model_save_keeps_the_previous_model(tmp_path, monkeypatch):
    from oversmooth.models import ViT, ViTConfig, load_model, save_model

    model = ViT(ViTConfig.preset("vit-cpu", depth=1, width=16, heads=2))
    save_model(model, tmp_path / "model")
    before = {p.name: p.read_bytes() for p in (tmp_path / "model").iterdir()}
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    monkeypatch.setattr("oversmooth.utils.atomic.os.replace", disk_full)
    with pytest.raises(OSError):
        save_model(model, tmp_path / "model")
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in (tmp_path / "model").iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    load_model(tmp_path / "model")


def test_a_killed_writer_leaves_a_temporary_that_the_next_write_removes(tmp_path):
    """A writer killed mid-write (simulated: its temporary is left under a dead pid) is cleaned
    up by the next write of the same file; a live writer's temporary is left alone."""
    path = tmp_path / "results.json"
    dead = tmp_path / ".results.json.999999999.abcd.tmp"
    live = tmp_path / f".results.json.{os.getppid()}.efgh.tmp"
    dead.write_text('{"half')
    live.write_text('{"being written')
    write_results(path, 1)
    assert json.loads(path.read_text())["version"] == 1
    assert not dead.exists() and live.exists()
