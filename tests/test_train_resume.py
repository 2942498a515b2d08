"""A run killed with SIGKILL mid-epoch and resumed ends exactly like an uninterrupted one (CPU):
an LM with NeuTRENO, and a ViT with the spectral map and augmented images, sigmaReparam, an LM
with softpick and gated attention, a ViT with registers."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from oversmooth.train import load_checkpoint

SRC = Path(__file__).resolve().parents[1] / "src"
STEPS_PER_EPOCH = 256 // 16  # synthetic train split / batch size
COMMAND = [
    sys.executable,
    *(
        "-m oversmooth train --task synthetic --depth 2 --width 48 --heads 4 --epochs 4 "
        "--batch-size 16 --lr 3e-3 --seed 7 --checkpoint-every 5 --threads 1 --device cpu "
        "--no-progress"
    ).split(),
]
RUNS = {
    "lm-neutreno": ["--model", "lm", "--method", "neutreno"],
    "vit-spectral-augment": ["--model", "vit", "--method", "spectral", "--spectral", "sharpen", "--augment"],
    # sigmaReparam's power-iteration vector is a buffer that every training step moves
    "vit-sigma-reparam": ["--model", "vit", "--method", "sigma_reparam"],
    # the methods that train the sink away: a rectified softmax and gates; learned extra tokens
    "lm-softpick-gated": ["--model", "lm", "--method", "softpick+gated_attention"],
    "vit-registers": ["--model", "vit", "--method", "registers", "--registers", "2"],
}


def env():
    return {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def run(kind, out, *extra):
    done = subprocess.run([*COMMAND, *RUNS[kind], "--out", str(out), *extra], env=env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def kill_after_first_checkpoint(kind, out) -> int:
    """Start a run, SIGKILL it as soon as a mid-epoch checkpoint exists; return that step."""
    process = subprocess.Popen(
        [*COMMAND, *RUNS[kind], "--out", str(out)], env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while not (out / "checkpoint.pt").exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL, "the run ended before it could be killed"
    return load_checkpoint(out / "checkpoint.pt")["step"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", RUNS)
def test_killed_and_resumed_run_matches_an_uninterrupted_one(tmp_path, kind):
    run(kind, tmp_path / "whole")
    for attempt in range(3):  # a loaded machine may let the run reach an epoch end first
        out = tmp_path / f"killed{attempt}"
        step = kill_after_first_checkpoint(kind, out)
        if step % STEPS_PER_EPOCH:
            break
    assert step % STEPS_PER_EPOCH, "could not kill the run mid-epoch"
    assert not (out / "results.json").exists()
    run(kind, out, "--resume", "auto")

    whole, resumed = (load_file(str(d / "model" / "model.safetensors")) for d in (tmp_path / "whole", out))
    assert whole.keys() == resumed.keys()
    for name in whole:
        assert torch.equal(whole[name], resumed[name]), name
    assert (out / "metrics.jsonl").read_text() == (tmp_path / "whole" / "metrics.jsonl").read_text()
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records] == [1, 2, 3, 4] and [row["layer"] for row in records[0]["layers"]] == [0, 1, 2]
    a, b = (json.loads((d / "results.json").read_text()) for d in (tmp_path / "whole", out))
    assert a["test"] == b["test"] and a["val"] == b["val"] and a["steps"] == b["steps"] == 4 * STEPS_PER_EPOCH
    print(f"killed at step {step} (epoch {step // STEPS_PER_EPOCH + 1}), resumed to identical weights")
