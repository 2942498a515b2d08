"""`train --compile`: the compiled run learns what the eager run learns; without a working
compiler it says so in one line and is the eager run, bit for bit."""

import json

import pytest
import torch
from safetensors.torch import load_file
from torch._dynamo.exc import TorchDynamoException

import oversmooth.train.compiled as compiled
from oversmooth.cli import main

ARGS = (
    "train --task synthetic --model vit --depth 2 --width 16 --heads 2 --patch-size 4 --method "
    "neutreno --dropout 0.1 --epochs 2 --batch-size 32 --lr 3e-3 --seed 3 --threads 1 "
    "--no-progress"
).split()


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
    assert notes == [
        "--compile: torch.compile failed (InvalidCxxCompiler: No working C++ compiler found); training eagerly instead"
    ]
    assert records == eager_records and results["test"] == eager_results["test"]
    assert not results["compiled"] and not eager_results["compiled"]
    assert all(torch.equal(weights[k], eager_weights[k]) for k in eager_weights)


def test_auto_compiles_long_vit_runs_only(tmp_path, capsys, monkeypatch):
    """Compile mode auto (the default) compiles a ViT of at least AUTO_MIN_STEPS steps on a CPU;
    the failing compiler makes the attempt visible."""
    import oversmooth.train.compile_rule as rule

    monkeypatch.setattr(compiled.torch, "compile", failing_compile)
    monkeypatch.setattr(rule, "AUTO_MIN_STEPS", 16)  # this run: 2 epochs x 8 steps
    train_run(tmp_path / "long")
    assert "--compile: torch.compile failed" in capsys.readouterr().err
    monkeypatch.setattr(rule, "AUTO_MIN_STEPS", 17)
    train_run(tmp_path / "short")
    assert "--compile" not in capsys.readouterr().err
    train_run(tmp_path / "off", "--compile", "off")
    assert "--compile" not in capsys.readouterr().err


def test_a_compiled_run_resumes_eagerly_and_back(tmp_path, monkeypatch):
    """The checkpoint holds nothing of the compile mode: either mode continues the other's run
    (here "compiling" keeps the module, so the runs must match bit for bit)."""
    from oversmooth.train import loop

    monkeypatch.setattr(compiled.torch, "compile", lambda module: module)
    whole_records, whole, _ = train_run(tmp_path / "whole", "--compile", "off")
    write_records = loop._write_records

    def stop_after_epoch_1(out_dir, records):
        write_records(out_dir, records)
        if len(records) == 1:
            raise KeyboardInterrupt

    for first, then in (("on", "off"), ("off", "on")):
        out = tmp_path / f"{first}-{then}"
        with monkeypatch.context() as patch:
            patch.setattr(loop, "_write_records", stop_after_epoch_1)
            assert main([*ARGS, "--out", str(out), "--compile", first]) == 130
        records, results, _ = train_run(out, "--compile", then, "--resume", "auto")
        assert results["compiled"] == (then == "on") and records == whole_records
        assert results["test"] == whole["test"]


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
