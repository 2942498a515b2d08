"""`oversmooth study --executor slurm` on a real one-node Slurm cluster (tests/slurm_cluster.py):
an array matches the local executor bit for bit, a requeued cell resumes bit-identically, a
cancelled one is reported failed and resubmitted by a rerun, a two-task cell trains with DDP.
Skips, saying why, where Slurm, munge or root is missing."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from slurm_cluster import SlurmCluster, missing

from oversmooth.cli import main

pytestmark = pytest.mark.slow

TINY = {
    "name": "tiny",
    "model": "vit",
    "tasks": ["synthetic"],
    "depths": [1],
    "methods": ["softmax", {"label": "neutreno", "lam": 0.5}],
    "train": {"width": 8, "heads": 2, "epochs": 1, "batch_size": 32, "probe_size": 8},
}
#: one cell long enough (a few seconds) to be stopped mid-training, checkpointed every 4 steps
LONG = {**TINY, "name": "long", "methods": ["softmax"], "train": {**TINY["train"], "epochs": 40, "checkpoint_every": 4}}
DEADLINE = 420  # seconds any one wait may take on a busy 2-core machine (a requeued job waited > 240 s once)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = missing()
    if reason:
        pytest.skip(reason)
    found = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    before = os.environ.get("SLURM_CONF")
    try:
        found.start()
        os.environ.update(found.env)
        yield found
    finally:
        found.stop()
        if before is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = before


def study_file(tmp_path: Path, study: dict) -> str:
    path = tmp_path / f"{study['name']}.json"
    path.write_text(json.dumps(study))
    return str(path)


def weights(folder: Path) -> dict:
    return load_file(str(folder / "model" / "model.safetensors"))


def assert_identical(a: Path, b: Path) -> None:
    """Two finished cells with the same weights, bit for bit, and the same records."""
    first, second = weights(a), weights(b)
    assert first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)
    assert (a / "metrics.jsonl").read_text() == (b / "metrics.jsonl").read_text()
    assert json.loads((a / "results.json").read_text())["test"] == json.loads((b / "results.json").read_text())["test"]


def wait_until(ready, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def job_of(cell: Path) -> str:
    return json.loads((cell / "state.json").read_text())["job"]


def queued(job: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True).stdout.strip()


def test_an_array_matches_the_local_executor(cluster, tmp_path, capsys):
    path = study_file(tmp_path, TINY)
    assert main(["study", path, "--out", str(tmp_path / "local"), "--jobs", "2"]) == 0
    assert (
        main(
            [
                "study",
                path,
                "--out",
                str(tmp_path / "slurm"),
                *"--executor slurm --jobs 2 --partition debug --time 10 --wait".split(),
            ]
        )
        == 0
    )
    assert "2 completed" in capsys.readouterr().out
    cells = sorted(p.name for p in (tmp_path / "slurm" / "cells").iterdir())
    jobs = [job_of(tmp_path / "slurm" / "cells" / name) for name in cells]
    assert len({job.split("_")[0] for job in jobs}) == 1 and all("_" in job for job in jobs)  # one array
    for name in cells:
        assert_identical(tmp_path / "local" / "cells" / name, tmp_path / "slurm" / "cells" / name)
    # a rerun, under either executor, submits nothing
    assert main(["study", path, "--out", str(tmp_path / "slurm"), "--executor", "slurm", "--wait"]) == 0
    assert "2 skipped" in capsys.readouterr().out
    assert main(["study", path, "--out", str(tmp_path / "slurm"), "--status"]) == 0
    assert "tiny: 2 completed" in capsys.readouterr().out


def test_a_requeued_cell_resumes_bit_identically(cluster, tmp_path, capsys):
    path = study_file(tmp_path, LONG)
    assert main(["study", path, "--out", str(tmp_path / "whole")]) == 0
    out = tmp_path / "slurm"
    assert main(["study", path, "--out", str(out), "--executor", "slurm"]) == 0
    (cell,) = (out / "cells").iterdir()
    wait_until(lambda: (cell / "checkpoint.pt").is_file(), "a first checkpoint")
    assert not (cell / "results.json").exists(), "the cell ended before it could be requeued; lengthen LONG"
    subprocess.run(["scontrol", "requeue", job_of(cell)], check=True)
    requeued = time.time()
    wait_until(lambda: queued(job_of(cell)) == "PENDING", "the job to be queued again")
    capsys.readouterr()
    assert main(["study", path, "--out", str(out), "--status"]) == 0
    assert f"{cell.name}  preempted  job {job_of(cell)}" in capsys.readouterr().out
    # Slurm holds a requeued job for about 2 minutes (BeginTime); let it start now, but not within
    # the second of the requeue: slurmd revokes the killed run's credential with one-second
    # resolution and refuses to launch the job again in that second ("Job credential revoked")
    time.sleep(max(0.0, requeued + 2.0 - time.time()))
    subprocess.run(["scontrol", "update", f"JobId={job_of(cell)}", "StartTime=now"], check=True)
    wait_until(lambda: "resuming" in (cell / "train.log").read_text(), "the requeued job to resume")
    wait_until(lambda: (cell / "results.json").is_file(), "the requeued cell to finish")
    wait_until(lambda: not queued(job_of(cell)), "the job to leave the queue")
    assert_identical(tmp_path / "whole" / "cells" / cell.name, cell)
    capsys.readouterr()


def test_a_cancelled_cell_is_failed_with_its_log_and_a_rerun_resubmits_it(cluster, tmp_path, capsys):
    path, out = study_file(tmp_path, LONG), tmp_path / "slurm"
    assert main(["study", path, "--out", str(out), "--executor", "slurm"]) == 0
    (cell,) = (out / "cells").iterdir()
    wait_until(lambda: (cell / "checkpoint.pt").is_file(), "a first checkpoint")
    first = job_of(cell)
    subprocess.run(["scancel", first], check=True)
    wait_until(lambda: not queued(first), "the cancelled job to leave the queue")
    capsys.readouterr()
    assert main(["study", path, "--out", str(out), "--status"]) == 0
    status = capsys.readouterr().out
    assert f"{cell.name}  failed  job {first}" in status and "    | " in status, status
    assert main(["study", path, "--out", str(out), "--executor", "slurm", "--wait"]) == 0
    assert "1 completed" in capsys.readouterr().out and job_of(cell) != first
    assert "resuming" in (cell / "train.log").read_text()


def test_a_two_task_cell_trains_with_ddp(cluster, tmp_path, capsys):
    """Within the tolerance of tests/test_train_ddp.py: weights to 1e-4, losses to 1e-5 relative."""
    study = {**TINY, "methods": ["softmax"]}
    path = study_file(tmp_path, study)
    assert main(["study", path, "--out", str(tmp_path / "one")]) == 0
    assert (
        main(["study", path, "--out", str(tmp_path / "two"), "--executor", "slurm", "--tasks-per-node", "2", "--wait"])
        == 0
    )
    assert "1 completed" in capsys.readouterr().out
    (name,) = [p.name for p in (tmp_path / "one" / "cells").iterdir()]
    one, two = tmp_path / "one" / "cells" / name, tmp_path / "two" / "cells" / name
    assert not queued(job_of(two))  # --wait returns once the job has ended: its model is saved after results.json
    single, double = (json.loads((d / "results.json").read_text()) for d in (one, two))
    assert single["world_size"] == 1 and double["world_size"] == 2
    a, b = weights(one), weights(two)
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-4
    assert double["test"]["loss"] == pytest.approx(single["test"]["loss"], rel=1e-5)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--executor", "slurm", "--partition", "nope"], "partition 'nope' does not exist; choose from debug"),
        (["--executor", "slurm", "--time", "soon"], "time limit 'soon' does not parse"),
    ],
)
def test_bad_slurm_settings_exit_2_and_submit_nothing(cluster, tmp_path, capsys, args, message):
    out, before = tmp_path / "out", job_ids()
    assert main(["study", study_file(tmp_path, TINY), "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.exists() and job_ids() <= before


def job_ids() -> set[str]:
    """The ids of the jobs Slurm knows now (finished ones are kept for MinJobAge)."""
    found = subprocess.run(["scontrol", "-o", "show", "jobs"], capture_output=True, text=True).stdout
    return {word.split("=", 1)[1] for word in found.split() if word.startswith("JobId=")}
