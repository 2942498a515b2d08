"""``RunSpec``: a typed, JSON-able run that train and study share; older cells' ``train_args``
are read back as the same run; the spec path trains what the hand-wired loop trains, bit for bit."""

import argparse
import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.cli import build_parser, main
from oversmooth.cli.train import add_arguments, run_spec
from oversmooth.errors import FieldError, UsageError
from oversmooth.mitigations.registry import knob_owners
from oversmooth.study import StudyConfig
from oversmooth.study.cell_job import train_command
from oversmooth.study.config import stored_spec
from oversmooth.study.results import read_cell
from oversmooth.study.runner import check_archive, worker_spec
from oversmooth.train import load_checkpoint
from oversmooth.train.run_spec import RunSpec, training_key

LEGACY = Path(__file__).parent / "data" / "legacy_cells"  # copies of cell.json files archived in results/
BUSY = RunSpec(
    task="text:a.txt,b.txt",
    model="lm",
    epochs=3,
    depth=4,
    mlp_ratio=2.0,
    norm="post",
    dropout=0.1,
    method="neutreno+featscale",
    knobs={"lam": -0.25, "tau_learnable": True, "spectral": "sharpen"},
    augment=True,
    limit_train=100,
    lr=2e-3,
    seed=7,
    out="/tmp/x",
    resume="auto",
    bf16=False,
    compile="on",
    threads=2,
    progress=False,
    tensorboard=True,
)


def test_a_spec_survives_json_and_its_command_line(tmp_path):
    BUSY.save(tmp_path / "spec.json")
    assert RunSpec.load(tmp_path / "spec.json") == BUSY
    assert json.loads((tmp_path / "spec.json").read_text())["knobs"] == {
        "lam": -0.25,
        "tau_learnable": True,
        "spectral": "sharpen",
    }
    words = BUSY.command_line()
    assert words[words.index("--lam") + 1] == "-0.25" and "--no-bf16" in words and "--no-progress" in words
    assert RunSpec.from_args(words) == BUSY
    assert RunSpec.from_args(["--task", "fmnist", "--model", "vit", "--epochs", "1", "--compile"]).compile == "on"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"epochs": 0}, "epochs must be at least 1, got 0"),
        ({"batch_size": 2.5}, "batch_size must be a whole number, got 2.5"),
        ({"lr": float("nan")}, "lr must be a finite number, got nan"),
        ({"warmup": 1.0}, "warmup must lie in [0, 1), got 1.0"),
        ({"compile": "yes"}, "compile must be one of auto | on | off, got 'yes'"),
        ({"augment": "true"}, "augment must be true or false, got 'true'"),
        ({"data_dir": "/no/such/folder"}, "data_dir /no/such/folder is not a folder"),
    ],
)
def test_checks_name_the_field(change, message):
    with pytest.raises(FieldError) as caught:
        dataclasses.replace(BUSY, **{"task": "austen", "augment": False, **change}).check()  # augment: a ViT's
    assert str(caught.value).startswith(message)
    field = next(iter(change))
    assert caught.value.message(lambda f: "--" + f.replace("_", "-")).startswith("--" + field.replace("_", "-"))


def test_unknown_or_missing_fields_are_refused(tmp_path):
    with pytest.raises(UsageError, match="unknown run field\\(s\\) colour"):
        RunSpec.from_dict({**BUSY.to_dict(), "colour": "red"})
    with pytest.raises(UsageError, match="needs epochs"):
        RunSpec.from_dict({"task": "fmnist", "model": "vit"})
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(UsageError, match="not valid JSON"):
        RunSpec.load(tmp_path / "bad.json")


def test_train_cli_names_flags_and_spec_takes_no_other_flag(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    dataclasses.replace(BUSY, task="synthetic", batch_size=0, out=str(tmp_path / "run")).save(spec)
    assert main(["train", "--spec", str(spec)]) == 2
    assert "error: --batch-size must be at least 1, got 0" in capsys.readouterr().err
    assert main(["train", "--spec", str(spec), "--epochs", "2"]) == 2
    assert "--spec " in capsys.readouterr().err
    assert main(["train", "--task", "synthetic", "--model", "vit"]) == 2
    assert "required: --epochs, --out" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_every_run_field_has_one_train_flag_and_every_flag_is_a_field_or_a_knob():
    train_parser = argparse.ArgumentParser()
    add_arguments(train_parser)
    options = [o for action in train_parser._actions for o in action.option_strings]
    switched_off = {"bf16", "progress"}  # on by default: their flag turns them off
    fields = {f.name for f in dataclasses.fields(RunSpec)} - {"knobs"}
    expected = (
        {"--" + name.replace("_", "-") for name in fields - switched_off}
        | {"--no-" + name for name in switched_off}
        | {"--" + knob.replace("_", "-") for knob in knob_owners("train")}
        | {"-h", "--help", "--spec"}
    )
    assert sorted(options) == sorted(expected)  # and no flag twice


def test_train_flags_give_the_spec_built_by_hand():
    words = (
        "--task text:a.txt,b.txt --model lm --epochs 3 --depth 4 --mlp-ratio 2 --norm post "
        "--dropout 0.1 --method neutreno+featscale --lam -0.25 --tau-learnable --spectral sharpen "
        "--augment --limit-train 100 --lr 2e-3 --seed 7 --out /tmp/x --resume auto --no-bf16 "
        "--compile --threads 2 --no-progress --tensorboard"
    ).split()
    assert run_spec(build_parser().parse_args(["train", *words])) == BUSY
    fewest = build_parser().parse_args(["train", "--task", "fmnist", "--model", "vit", "--epochs", "2", "--out", "o"])
    assert run_spec(fewest) == RunSpec("fmnist", "vit", 2, out="o")
    every_default = (
        "--val-size 5000 --label-smoothing 0.1 --seq-len 64 --vocab-size 4096 --passage-chars 8000 "
        "--batch-size 128 --lr 0.001 --weight-decay 0.05 --warmup 0.05 --grad-clip 1 --seed 0 "
        "--resume never --checkpoint-every 0 --device auto --compile auto --probe-size 32 --method "
        "softmax"
    ).split()
    explicit = build_parser().parse_args(
        ["train", "--task", "fmnist", "--model", "vit", "--epochs", "2", "--out", "o", *every_default]
    )
    assert run_spec(explicit) == RunSpec("fmnist", "vit", 2, out="o")


@pytest.mark.parametrize(
    "study, cell", [("austen-lm", "austen-pre-d8-softmax-s0"), ("postnorm-pilot", "fmnist-post-d24-softmax-s0")]
)
def test_cells_archived_with_train_args_are_their_presets_cells(tmp_path, study, cell):
    """A ``cell.json`` written before specs (``train_args`` only) describes the same run as the
    preset's cell of that name: the archive check passes, and its training key pairs."""
    info = json.loads((LEGACY / study / cell / "cell.json").read_text())
    assert "spec" not in info
    (ours,) = [c for c in CLAIMS_PRESETS[study].cells() if c.name == cell]
    assert stored_spec(info).setting() == ours.spec().setting()
    archive = tmp_path / "results"
    shutil.copytree(LEGACY / study, archive / study)
    check_archive(CLAIMS_PRESETS[study], archive)  # recognised: no refusal
    (archive / study / cell / "results.json").write_text(  # a completed run has its test scores
        '{"status": "completed", "test": {"loss": 1.0, "perplexity": 2.7, "accuracy": 0.9}}'
    )
    assert training_key(read_cell(archive / study / cell).spec) == training_key(ours.spec())

    preset = CLAIMS_PRESETS[study]
    changed = dataclasses.replace(preset, train={**preset.train, "lr": 2 * preset.train["lr"]})
    with pytest.raises(UsageError, match="trained with other settings"):
        check_archive(changed, archive)


def test_a_cell_of_the_first_fashion_mnist_recipe_is_refused_by_the_current_one(tmp_path):
    """fmnist-vit's first recipe (augmented, 10 epochs) failed its gate and was replaced; its
    archived cell has the current preset's cell name but not its settings: refused, never mixed in."""
    archive = tmp_path / "results"
    shutil.copytree(LEGACY / "fmnist-vit", archive / "fmnist-vit")
    with pytest.raises(UsageError, match="trained with other settings"):
        check_archive(CLAIMS_PRESETS["fmnist-vit"], archive)


def _tiny_cell():
    study = StudyConfig(
        name="tiny",
        model="vit",
        tasks=("synthetic",),
        depths=(2,),
        variants=("softmax", {"label": "neutreno", "lam": 0.5}),
        train={
            "width": 16,
            "heads": 2,
            "patch_size": 4,
            "dropout": 0.1,
            "augment": True,
            "epochs": 2,
            "batch_size": 32,
            "lr": 3e-3,
            "checkpoint_every": 3,
            "probe_size": 8,
        },
    )
    return study.cells()[1]


def _by_hand(out: Path, seed: int) -> None:
    """The tiny cell trained with the loop, wired by hand (no RunSpec): the reference."""
    from oversmooth.layers import MitigationConfig
    from oversmooth.models import ViT, ViTConfig
    from oversmooth.train import TrainConfig, train
    from oversmooth.train.task_factory import DataOptions, make_task

    options = DataOptions(augment=True)
    task, _ = make_task("synthetic", "vit", options)
    config = ViTConfig.preset(
        "vit-cpu",
        depth=2,
        width=16,
        heads=2,
        dropout=0.1,
        patch_size=4,
        image_size=task.image_size[0],
        channels=1,
        num_classes=task.classes,
        mitigation=MitigationConfig.parse("neutreno", lam=0.5),
    )
    torch.manual_seed(seed)
    model = ViT(config)
    description = {
        "task": "synthetic",
        "model": "vit",
        "model_config": config.to_dict(),
        "data": {**{k: v for k, v in vars(options).items() if k != "text_column"}, "data_dir": None},  # none given
        "method": config.mitigation.name,
    }
    train(
        model,
        task,
        TrainConfig(epochs=2, batch_size=32, lr=3e-3, seed=seed, checkpoint_every=3, probe_size=8, progress=False),
        out,
        description=description,
    )


def test_a_study_cell_run_from_its_spec_file_is_the_hand_wired_run_bit_for_bit(tmp_path):
    cell = _tiny_cell()
    spec = worker_spec(cell, tmp_path / "cell", threads=1)
    spec.save(tmp_path / "spec.json")
    assert train_command(tmp_path / "spec.json")[-2:] == ["--spec", str(tmp_path / "spec.json")]
    torch.set_num_threads(1)
    assert main(["train", "--spec", str(tmp_path / "spec.json")]) == 0
    _by_hand(tmp_path / "hand", cell.seed)
    got, want = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("cell", "hand"))
    assert got["description"] == want["description"] and got["test"] == want["test"] and not got["compiled"]
    assert (tmp_path / "cell" / "metrics.jsonl").read_text() == (tmp_path / "hand" / "metrics.jsonl").read_text()
    weights = load_file(str(tmp_path / "cell" / "model" / "model.safetensors"))
    hand = load_checkpoint(tmp_path / "hand" / "checkpoint.pt")["model"]  # its final weights
    assert weights and all(torch.equal(weights[name], hand[name]) for name in weights)


@pytest.mark.parametrize(
    "task, model, change, field",
    [
        ("synthetic", "vit", {"seq_len": 8}, "seq_len"),
        ("fmnist", "vit", {"vocab_size": 100}, "vocab_size"),
        ("austen", "lm", {"augment": True}, "augment"),
        ("austen", "lm", {"patch_size": 4}, "patch_size"),
        ("text:a.txt", "lm", {"data_dir": "."}, "data_dir"),
        ("synthetic", "lm", {"passage_chars": 10}, "passage_chars"),
        ("austen", "lm", {"val_size": 10}, "val_size"),
    ],
)
def test_a_setting_the_model_or_task_does_not_read_is_refused(task, model, change, field):
    with pytest.raises(FieldError, match=f"^{field} applies to .* runs only, not to model {model}"):
        RunSpec(task, model, 1, **change).check()
    assert RunSpec(task, model, 1).check()  # the defaults apply everywhere


def test_grad_clip_zero_turns_clipping_off_and_a_negative_one_is_refused():
    from oversmooth.errors import FieldError
    from oversmooth.train.run_spec import RunSpec

    assert RunSpec(task="synthetic", model="vit", epochs=1, grad_clip=0.0).check().grad_clip == 0.0
    with pytest.raises(FieldError):
        RunSpec(task="synthetic", model="vit", epochs=1, grad_clip=-1.0).check()
