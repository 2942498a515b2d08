"""``oversmooth adapt`` refuses bad input with one line naming the flag and the fix, exit 2, and
writes nothing: knobs that overflow the patched model, settings out of range, a bad ``--out``.
Its flags come from ``AdaptConfig``'s fields, with the defaults and help they had when written
by hand."""

import dataclasses
import shutil

import pytest
import torch
from hf_tiny import save_tiny
from test_adapt import vit_run  # noqa: F401 (a fixture: a tiny finished train run)

from oversmooth.adapt import AdaptConfig
from oversmooth.cli import build_parser, main
from oversmooth.cli.adapt import config_of
from oversmooth.errors import UsageError

PRETRAINED = ["--text", "sample", "--seq-len", "16", "--eval-sequences", "4"]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return save_tiny("bert", tmp_path_factory.mktemp("bert") / "bert")


def refusal(capsys, args: list[str]) -> str:
    """The one line ``oversmooth adapt ARGS`` prints as it exits 2."""
    code = main(["adapt", *args, "--steps", "2", "--no-progress", "--device", "cpu"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("source", ["train run", "pretrained"])
def test_a_knob_that_overflows_the_model_is_refused_before_anything_is_written(source, vit_run, bert, tmp_path, capsys):  # noqa: F811
    model, extra = (vit_run, ["--batch-size", "16"]) if source == "train run" else (bert, PRETRAINED)
    out = tmp_path / "out"
    # the first arm is fine, the second overflows: neither arm trains
    line = refusal(capsys, [str(model), "--out", str(out), "--lam", "0.6,1e30", *extra])
    assert "with --method neutreno --lam 1e+30 this model's states overflow" in line
    assert line.endswith("bring the knobs closer to their defaults (--lam 0.6)")  # NeuTRENO's default
    assert "weights" not in line  # not blamed on the model
    assert not out.exists()


def test_a_model_that_overflows_unpatched_is_blamed_on_its_weights(vit_run, tmp_path, capsys):  # noqa: F811
    from oversmooth.models import load_model, save_model

    broken = tmp_path / "broken"
    shutil.copytree(vit_run, broken)
    model = load_model(broken / "model")
    with torch.no_grad():
        next(p for name, p in model.named_parameters() if name.endswith("weight") and p.ndim == 2).fill_(1e38)
    shutil.rmtree(broken / "model")
    save_model(model, broken / "model")
    out = tmp_path / "out"
    line = refusal(capsys, [str(broken), "--out", str(out), "--batch-size", "16"])
    assert "unpatched too" in line and "weights" in line and "--lam" not in line
    assert not out.exists()


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--batch-size", "0"], "--batch-size must be a whole number >= 1"),
        (["--seq-len", "0"], "--seq-len must be a whole number >= 1"),
        (["--eval-sequences", "0"], "--eval-sequences must be a whole number >= 1"),
        (["--record-every", "0"], "--record-every must be a whole number >= 1"),
        (["--weight-decay", "-1"], "--weight-decay must be a number >= 0"),
        (["--batch-size", "10000"], "--batch-size 10000 exceeds the 256 training examples"),
    ],
)
def test_messages_name_the_flags(flags, words, vit_run, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "out"
    assert words in refusal(capsys, [str(vit_run), "--out", str(out), *flags])
    assert not out.exists()


def test_out_messages_name_the_flag(vit_run, tmp_path, capsys):  # noqa: F811
    (tmp_path / "file").write_text("x")
    assert refusal(capsys, [str(vit_run), "--out", str(tmp_path / "file")]).startswith(
        f"oversmooth adapt: error: --out {tmp_path / 'file'} is a file"
    )
    (tmp_path / "full" / "other").mkdir(parents=True)
    assert "choose a new or empty --out" in refusal(capsys, [str(vit_run), "--out", str(tmp_path / "full")])


def test_the_library_names_the_fields():
    with pytest.raises(UsageError, match=r"^batch_size must be a whole number >= 1, got 0$"):
        AdaptConfig(batch_size=0).check()


def test_flags_are_the_fields_with_their_defaults():
    parser = build_parser()
    # defaults as the hand-written flags had them
    assert config_of(parser.parse_args(["adapt", "--out", "x"])) == AdaptConfig(
        model=None, out="x", method="neutreno", steps=200, seq_len=128, warmup=0.1, eval_sequences=64, dtype="float32"
    )
    given = config_of(
        parser.parse_args(
            ["adapt", "m", "--out", "x", "--lam", "0.2,1", "--batch-size", "3", "--lr", "1e-3", "--no-progress"]
            + ["--gradient-checkpointing", "--lora", "2", "--weight-decay", "0", "--objective", "distill"]
        )
    )
    assert given == AdaptConfig(
        model="m",
        out="x",
        knobs=({"lam": 0.2}, {"lam": 1}),
        batch_size=3,
        lr=1e-3,
        progress=False,
        gradient_checkpointing=True,
        lora=2,
        weight_decay=0.0,
        objective="distill",
    )
    subparsers = next(action for action in parser._actions if action.dest == "command")
    text = subparsers.choices["adapt"].format_help()
    for shown in ("(default neutreno)", "(default 200)", "(default 0.1)", "(default 64)", "--lora RANK", "--out DIR"):
        assert shown in text
    flags = {option for action in subparsers.choices["adapt"]._actions for option in action.option_strings}
    for f in dataclasses.fields(AdaptConfig):
        if f.name not in ("model", "knobs"):
            assert ("--no-" if f.default is True else "--") + f.name.replace("_", "-") in flags


def test_a_train_run_takes_a_knob_whose_global_name_differs_from_its_field(vit_run, tmp_path, capsys):  # noqa: F811
    """ContraNorm's ``s`` is ``--contranorm-s`` (``contranorm_s`` in a model's config): an arm
    patched with it is built with that strength, not refused as an unknown field."""
    from oversmooth.adapt.train_run import TrainRunSource
    from oversmooth.train.saved_run import saved_run

    config = AdaptConfig(model=str(vit_run), out=str(tmp_path / "out"), method="contranorm", knobs=({"s": 0.2},))
    model = TrainRunSource(config, saved_run(vit_run)).arm("contranorm", config.knobs[0])
    assert model.cfg.mitigation.contranorm_s == 0.2
