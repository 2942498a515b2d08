"""DDP: two CPU processes (gloo) under torchrun match one process at the same global batch.

Tolerance: weights to 1e-4 absolute (observed ~5e-6 after 8 AdamW steps), losses to 1e-5 relative.
Gradients are averaged in a different order than one full-batch backward, so bits differ.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

SRC = Path(__file__).resolve().parents[1] / "src"
TRAIN = (
    "-m oversmooth train --task synthetic --model vit --depth 2 --width 32 --heads 2 --method "
    "featscale --epochs 1 --batch-size 32 --lr 3e-3 --threads 1 --device cpu --no-progress"
).split()


def run(prefix, out):
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, *prefix, *TRAIN, "--out", str(out)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "results.json").read_text())


@pytest.mark.slow
def test_two_processes_match_one_at_the_same_global_batch(tmp_path):
    torchrun = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    single, double = run([], tmp_path / "one"), run(torchrun, tmp_path / "two")
    assert single["world_size"] == 1 and double["world_size"] == 2
    a, b = (load_file(str(tmp_path / d / "model" / "model.safetensors")) for d in ("one", "two"))
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    print(f"largest weight difference, 1 vs 2 processes: {worst:.2e}")
    assert worst < 1e-4
    for split in ("val", "test"):
        assert double[split]["loss"] == pytest.approx(single[split]["loss"], rel=1e-5)
    records = [json.loads((tmp_path / d / "metrics.jsonl").read_text()) for d in ("one", "two")]
    assert records[0]["train_loss"] == pytest.approx(records[1]["train_loss"], rel=1e-5)
    assert [row["layer"] for row in records[1]["layers"]] == [0, 1, 2]  # embeddings, after blocks 1 and 2


@pytest.mark.slow
def test_workers_stop_when_the_torchrun_agent_is_killed(tmp_path):
    """SIGKILL the torchrun agent mid-training: its two workers exit within seconds."""
    import signal
    import time

    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        *TRAIN,
        "--epochs",
        "200",
        "--out",
        str(tmp_path / "run"),
    ]  # the last --epochs wins
    agent = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    workers: list[int] = []
    while len(workers) < 2 and time.time() < deadline:
        time.sleep(0.5)
        found = subprocess.run(["pgrep", "-P", str(agent.pid)], capture_output=True, text=True).stdout.split()
        workers = [int(pid) for pid in found]
    assert len(workers) == 2, "torchrun did not start its workers"
    while not (tmp_path / "run" / "metrics.jsonl").exists() and time.time() < deadline:
        time.sleep(0.5)  # until the workers are set up and training
    assert (tmp_path / "run" / "metrics.jsonl").exists(), "training did not start"
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    deadline = time.time() + 30
    alive = workers
    while alive and time.time() < deadline:
        time.sleep(0.5)
        alive = [pid for pid in workers if _running(pid)]
    for pid in alive:  # do not leave them behind if the test fails
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"workers {alive} outlived their agent"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"
