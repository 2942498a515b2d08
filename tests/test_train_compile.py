"""`train --compile`: the compiled run learns what the eager run learns; without a working
compiler it says so in one line and is the eager run, bit for bit."""

import json

import pytest
import torch
from safetensors.torch import load_file
from torch._dynamo.exc import TorchDynamoException

import oversmooth.train.compiled as compiled
from oversmooth.cli import main

ARGS = ["train", "--task", "synthetic", "--model", "vit", "--depth", "2", "--width", "16", "--heads", "2",
        "--patch-size", "4", "--method", "neutreno", "--dropout", "0.1", "--epochs", "2", "--batch-size", "32",
        "--lr", "3e-3", "--seed", "3", "--threads", "1", "--no-progress"]


def train_run(out, *extra) -> tuple[list[dict], dict, dict]:
    assert main([*ARGS, "--out", str(out), *extra]) == 0
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return records, json.loads((out / "results.json").read_text()), load_file(str(out / "model" / "model.safetensors"))


def failing_compile(module):
    """What a machine without a C++ compiler gets: the error surfaces on the first call."""
    def forward(*args):
        torch.rand(3)  # the compiler had drawn from the RNG before failing: must not shift the run
        raise TorchDynamoException("InvalidCxxCompiler: No working C++ compiler found\nmore detail")
    return forward


def test_without_a_compiler_the_run_is_the_eager_run_and_says_so_once(tmp_path, capsys, monkeypatch):
    eager_records, eager_results, eager_weights = train_run(tmp_path / "eager")
    capsys.readouterr()
    monkeypatch.setattr(compiled.torch, "compile", failing_compile)
    records, results, weights = train_run(tmp_path / "compiled", "--compile")
    notes = [line for line in capsys.readouterr().err.splitlines() if "--compile" in line]
    assert notes == ["--compile: torch.compile failed (InvalidCxxCompiler: No working C++ compiler found); "
                     "training eagerly instead"]
    assert records == eager_records and results["test"] == eager_results["test"]
    assert not results["compiled"] and not eager_results["compiled"]
    assert all(torch.equal(weights[k], eager_weights[k]) for k in eager_weights)


def test_model_errors_are_not_taken_for_compiler_errors():
    def broken(forward):
        raise ValueError("a bug in the model")
    runner = compiled.CompiledForward(torch.nn.Identity(), enabled=False)
    with pytest.raises(ValueError, match="a bug"):
        runner.run(broken)


@pytest.mark.slow
def test_compiled_run_follows_the_eager_loss_curve(tmp_path):
    """Compiling on the CPU (inductor, C++) takes seconds even for this tiny model."""
    eager_records, _, eager_weights = train_run(tmp_path / "eager")
    records, results, weights = train_run(tmp_path / "compiled", "--compile")
    assert results["compiled"]
    for got, want in zip(records, eager_records):
        assert got["train_loss"] == pytest.approx(want["train_loss"], rel=1e-4)
        assert got["val"]["loss"] == pytest.approx(want["val"]["loss"], rel=1e-4)
    for name, want in eager_weights.items():
        assert torch.allclose(weights[name], want, atol=1e-4), name
