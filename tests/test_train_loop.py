"""The loop in-process: divergence handling, refusal to mix runs, determinism with a seed."""

import json

import pytest
import torch
from torch import nn

from oversmooth.data import synthetic_images
from oversmooth.errors import UsageError
from oversmooth.train import ImageClassification, TrainConfig, load_checkpoint, train


def image_task():
    splits = {k: (torch.from_numpy(s.images), torch.from_numpy(s.labels)) for k, s in synthetic_images().items()}
    return ImageClassification(splits, classes=4)


class ExplodesAfter(nn.Module):
    """A linear classifier whose training forward returns NaN from call ``calls + 1`` on."""

    def __init__(self, calls: int):
        super().__init__()
        self.net, self.calls, self.seen = nn.Sequential(nn.Flatten(), nn.Linear(64, 4)), calls, 0

    def forward(self, x):
        out = self.net(x)
        if self.training:
            self.seen += 1
            if self.seen > self.calls:
                out = out * float("nan")
        return out


CONFIG = TrainConfig(epochs=2, batch_size=32, lr=1e-2, checkpoint_every=2, progress=False)


def test_non_finite_loss_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path):
    torch.manual_seed(0)
    model = ExplodesAfter(calls=5)
    results = train(model, image_task(), CONFIG, tmp_path)
    assert results["status"] == "diverged" and "nan" in results["diverged"] and "step 6" in results["diverged"]
    assert results["test"] is None and results["steps"] == 5
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["status"] == "diverged"
    state = load_checkpoint(tmp_path / "checkpoint.pt")
    assert state["step"] == 4  # checkpoints at steps 2 and 4; step 6 never happened
    assert all(torch.isfinite(t).all() for t in state["model"].values())
    assert (tmp_path / "metrics.jsonl").read_text() == ""


def test_same_seed_same_run_and_existing_runs_are_protected(tmp_path):
    runs = []
    for name in ("a", "b"):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 4))
        train(model, image_task(), CONFIG, tmp_path / name)
        runs.append(model.state_dict())
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])
    assert (tmp_path / "a" / "metrics.jsonl").read_text() == (tmp_path / "b" / "metrics.jsonl").read_text()
    records = [json.loads(line) for line in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records] == [1, 2] and [r["step"] for r in records] == [8, 16]
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 4))
    with pytest.raises(UsageError, match="pass resume auto"):
        train(model, image_task(), CONFIG, tmp_path / "a")
    (tmp_path / "a" / "results.json").unlink()  # an unfinished run
    other = TrainConfig(epochs=2, batch_size=32, lr=5e-3, progress=False)
    with pytest.raises(UsageError, match=r"different settings \(lr 0.01, now 0.005\)"):
        train(model, image_task(), other, tmp_path / "a", resume=True)


def test_a_finished_run_without_its_checkpoint_is_refused_other_settings_not_trained_over(tmp_path):
    """Without a checkpoint (``adapt`` deletes it; an archive keeps only the records) the finished run's
    ``results.json`` is what resume compares: other settings are refused, the records left as they are."""
    torch.manual_seed(0)
    train(nn.Sequential(nn.Flatten(), nn.Linear(64, 4)), image_task(), CONFIG, tmp_path)
    (tmp_path / "checkpoint.pt").unlink()
    kept = {name: (tmp_path / name).read_text() for name in ("results.json", "metrics.jsonl")}
    other = TrainConfig(epochs=2, batch_size=32, lr=5e-3, progress=False)
    with pytest.raises(UsageError, match=r"different settings \(lr 0.01, now 0.005\)"):
        train(nn.Sequential(nn.Flatten(), nn.Linear(64, 4)), image_task(), other, tmp_path, resume=True)
    assert {name: (tmp_path / name).read_text() for name in kept} == kept


def test_compile_may_change_on_resume_and_older_runs_still_resume(tmp_path):
    """``compile`` changes float rounding, not the run: a run kept from before it was a free
    choice (``compile`` stored among its settings) resumes too."""
    import dataclasses

    from oversmooth.train import save_checkpoint

    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 4))
    train(model, image_task(), CONFIG, tmp_path)
    (tmp_path / "results.json").unlink()
    state = load_checkpoint(tmp_path / "checkpoint.pt")
    state["description"]["train"]["compile"] = False
    save_checkpoint(tmp_path / "checkpoint.pt", state)
    config = dataclasses.replace(CONFIG, epochs=3, compile=False)
    with pytest.raises(UsageError, match="different settings"):  # epochs did change
        train(model, image_task(), config, tmp_path, resume=True)
    results = train(model, image_task(), dataclasses.replace(CONFIG, compile=True), tmp_path, resume=True)
    assert results["status"] == "completed" and results["steps"] == 16


def test_max_steps_and_record_every_stop_and_record_where_asked(tmp_path):
    """8 steps an epoch; 11 steps recorded every 4: records at 4, 8 and 11, the schedule spanning
    11 steps (lr 0 after the last), and the description of a run without them unchanged."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 4))
    config = TrainConfig(epochs=2, batch_size=32, lr=1e-2, progress=False, max_steps=11, record_every=4)
    results = train(model, image_task(), config, tmp_path)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [4, 8, 11] and results["steps"] == 11
    assert records[-1]["lr"] == pytest.approx(0.0, abs=1e-12)
    assert "max_steps" not in CONFIG.settings() and "record_every" not in CONFIG.settings()


def test_a_run_refused_by_anothers_lock_leaves_that_runs_files_alone(tmp_path, monkeypatch):
    """The other run writes a file between this one's look at the folder and its refusal (its
    first record, an atomic write's temporary): the refused run must not take it for its own."""
    from oversmooth.train import loop
    from oversmooth.train.run_lock import LOCK_FILE, run_lock

    real = loop.run_lock

    def written_by_the_other_run_then_locked(folder):
        (folder / "metrics.jsonl").write_text('{"step": 75}\n')
        return real(folder)

    monkeypatch.setattr(loop, "run_lock", written_by_the_other_run_then_locked)
    with run_lock(tmp_path):  # the other run, holding the folder
        with pytest.raises(UsageError, match="is in use by process"):
            train(nn.Sequential(nn.Flatten(), nn.Linear(64, 4)), image_task(), CONFIG, tmp_path, resume=True)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([LOCK_FILE, "metrics.jsonl"])
