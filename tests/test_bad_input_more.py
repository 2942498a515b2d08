"""More classes of bad input, each refused with one line naming the option as it was given (a
flag, or a study file's key) and the fix, exit code 2, and nothing written; and the Python API's
own names for the same refusals."""

import json

import pytest
import torch
from test_study_executors import TINY  # a one-cell study of seconds

from oversmooth.cli import main
from oversmooth.errors import FieldError, UsageError
from oversmooth.layers import StackConfig
from oversmooth.metrics.similarity import cos_sim
from oversmooth.mitigations.deescalation import deescalate
from oversmooth.mitigations.featscale import featscale
from oversmooth.models import ViTConfig, load_model
from oversmooth.spectra.dynamics import attention_eigenvalues, predict_dynamics
from oversmooth.spectra.value_output import value_output_eigenvalues
from oversmooth.study import StudyConfig
from oversmooth.study.executor_settings import ExecutorSettings
from oversmooth.theory import run as theory_run
from oversmooth.theory.experiment import Setup
from oversmooth.theory.run import needed_bytes
from oversmooth.train.run_spec import RunSpec
from oversmooth.utils import memory

TRAIN = "train --task synthetic --model vit --depth 1 --width 8 --heads 2 --batch-size 32 --threads 1 --no-progress"


def _write(tmp_path, study, name="study.json"):
    path = tmp_path / name
    path.write_text(json.dumps(study))
    return str(path)


def _files(folder):
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def refused(args, capsys, *named):
    """``oversmooth ARGS`` exits 2 with one line on stderr that holds every one of ``named``."""
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(text in err for text in named), err
    return err


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--cpus-per-task", "2"], "--cpus-per-task"),
        (["--wait"], "--wait"),
        (["--partition", "gpu"], "--partition"),
        (["--sbatch=--qos=low"], "--sbatch"),
        (["--executor", "local", "--time", "5", "--cpus-per-task", "2"], "--cpus-per-task"),
    ],
)
def test_slurm_only_flags_with_the_local_executor_are_refused(tmp_path, capsys, args, flag):
    out = tmp_path / "out"
    refused(
        ["study", _write(tmp_path, TINY), "--out", str(out), *args],
        capsys,
        f"{flag} is a Slurm setting",
        "--executor slurm",
    )
    assert not out.exists()


def test_a_study_files_slurm_settings_need_kind_slurm_there(tmp_path, capsys):
    """In the file they are named as its keys; with ``--executor local`` a Slurm study file runs
    here without them, and a Slurm flag given with it is still refused."""
    out = tmp_path / "out"
    local = _write(tmp_path, {**TINY, "executor": {"cpus_per_task": 4}}, "local.json")
    refused(
        ["study", local, "--out", str(out)], capsys, "[executor] cpus_per_task is a Slurm setting", "--executor slurm"
    )
    slurm = _write(tmp_path, {**TINY, "executor": {"kind": "slurm", "partition": "cpu", "wait": True}}, "slurm.json")
    assert main(["study", slurm, "--out", str(out), "--executor", "local", "--dry-run"]) == 0
    refused(["study", slurm, "--out", str(out), "--executor", "local", "--wait"], capsys, "--wait is a Slurm setting")
    assert not out.exists()


def test_executor_settings_refuse_slurm_settings_locally_by_one_rule():
    for setting in ({"partition": "cpu"}, {"sbatch": ("--qos=low",)}, {"cpus_per_task": 2}, {"wait": True}):
        name = next(iter(setting))
        with pytest.raises(FieldError, match=f"^{name} is a Slurm setting"):
            ExecutorSettings(**setting).checked()
        with pytest.raises(FieldError, match=f"^{name} is a Slurm setting"):
            ExecutorSettings(**setting).updated()  # what the command line makes of a file's table
        assert ExecutorSettings("slurm", **setting).checked().kind == "slurm"
        # a file's table without kind, run with --executor slurm: the flag decides, not the file alone
        table = {name: list(value) if isinstance(value, tuple) else value for name, value in setting.items()}
        assert ExecutorSettings.from_dict(table).updated(kind="slurm").kind == "slurm"
    slurm = ExecutorSettings("slurm", partition="cpu", cpus_per_task=2, sbatch=("--qos=low",), wait=True)
    assert slurm.updated(kind="local") == ExecutorSettings(jobs=slurm.jobs)
    with pytest.raises(FieldError, match="^partition is a Slurm setting"):
        slurm.updated(kind="local", partition="gpu")
    with pytest.raises(UsageError, match="wait must be true or false"):
        ExecutorSettings.from_dict({"kind": "slurm", "wait": "yes"})


def test_more_processes_than_gpus_per_cell_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["study", _write(tmp_path, TINY), "--out", str(out), "--tasks-per-node", "2", "--gpus-per-node", "1"]
    refused(args, capsys, "--tasks-per-node 2 with --gpus-per-node 1", "give --gpus-per-node 2, or 0")
    assert not out.exists()


@pytest.mark.slow
def test_a_local_cell_of_two_ddp_processes_trains_and_is_reported_completed(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["study", _write(tmp_path, TINY), "--out", str(out), "--tasks-per-node", "2"]) == 0
    assert "tiny: 1 completed" in capsys.readouterr().out
    assert main(["study", _write(tmp_path, TINY), "--out", str(out), "--status"]) == 0
    assert "synthetic-pre-d1-softmax-s0  completed" in capsys.readouterr().out


@pytest.mark.parametrize("field, values", [("seeds", [0, 0]), ("depths", [1, 2, 1]), ("tasks", ["synthetic"] * 2)])
def test_a_study_list_naming_a_value_twice_is_refused(tmp_path, capsys, field, values):
    out = tmp_path / "out"
    refused(
        ["study", _write(tmp_path, {**TINY, field: values}), "--out", str(out)],
        capsys,
        f"study field '{field}' must be unique; {values[0]} given more than once",
    )
    grid = {"tasks": ("synthetic",), "depths": (1,), "variants": ("softmax",), field: tuple(values)}
    with pytest.raises(FieldError, match=f"^{field} must be unique"):
        StudyConfig("x", "vit", **grid)
    assert not out.exists()


@pytest.mark.parametrize("flag, value", [("--seeds", "0,1,0"), ("--depths", "2,2")])
def test_a_list_flag_naming_a_value_twice_is_refused(tmp_path, capsys, flag, value):
    out = tmp_path / "out"
    refused(
        ["study", _write(tmp_path, TINY), "--out", str(out), flag, value, "--dry-run"], capsys, f"{flag} must be unique"
    )
    assert not out.exists()


def test_method_labels_given_twice_are_named(tmp_path, capsys):
    study = {**TINY, "methods": ["softmax", {"label": "softmax", "method": "neutreno"}]}
    refused(
        ["study", _write(tmp_path, study), "--out", str(tmp_path / "out")], capsys, "'methods' labels must be unique"
    )


@pytest.mark.parametrize(
    "args, flag",
    [(["--depth", "100000000"], "lower --depth"), (["--tokens", "100000", "--depth", "2"], "lower --tokens")],
)
def test_a_theory_run_too_large_for_memory_is_refused_up_front(tmp_path, capsys, monkeypatch, args, flag):
    monkeypatch.setattr(memory, "available_bytes", lambda: 8 * 2**30)
    for stage in ("_presets", "_escalation"):  # without the check, fail at once instead of running for days
        monkeypatch.setattr(theory_run, stage, lambda *args: pytest.fail("the run started"))
    out = tmp_path / "theory"
    err = refused(["theory", *args, "--out", str(out)], capsys, "needs about", "8.0 GiB is free", flag)
    assert " or " not in err.rpartition("lower")[2]  # only the size that was raised is named
    assert not out.exists()


def test_theory_memory_grows_with_every_size():
    base = needed_bytes(Setup())
    for change in ({"depth": 640}, {"tokens": 80}, {"dim": 80}, {"sequences": 40}, {"attention": "softmax"}):
        assert needed_bytes(Setup(**change)) > base, change


@pytest.mark.parametrize(
    "args, message",
    [
        ("--width 0", "--width must be a positive integer, got 0"),
        ("--depth 0", "--depth must be a positive integer, got 0"),
        ("--dropout 1.5", "--dropout must lie in [0, 1), got 1.5"),
        ("--heads 3", "--heads (3) must divide width (8); pick --heads from [1, 2, 4, 8]"),
        ("--mlp-ratio 0", "--mlp-ratio must be > 0"),
        ("--norm mid", "--norm 'mid' unknown; choose from pre, post"),
        ("--ln-sign up", "--ln-sign 'up' unknown"),
        ("--patch-size 3", "--patch-size (3) must divide the image size (8); pick --patch-size from [1, 2, 4, 8]"),
        ("--preset lm-cpu", "--preset 'lm-cpu' is no ViTConfig preset"),
        ("--model lm --label-smoothing 0.2", "--label-smoothing applies to vit runs only"),
        ("--model lm --augment", "--augment applies to vit runs only"),
    ],
)
def test_model_settings_are_named_by_their_train_flags(tmp_path, capsys, args, message):
    out = tmp_path / "run"
    refused([*TRAIN.split(), "--epochs", "1", "--out", str(out), *args.split()], capsys, message)
    assert not out.exists()


def test_the_python_api_names_the_config_fields():
    with pytest.raises(FieldError, match=r"^width must be a positive integer, got 0$"):
        StackConfig(width=0)
    with pytest.raises(FieldError, match=r"^dropout must lie in \[0, 1\)"):
        ViTConfig(dropout=1.0)
    assert RunSpec("synthetic", "vit", 1, augment=True).check()  # synthetic images are augmented too


def test_a_damaged_saved_model_config_names_its_file(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"family": "vit", "config": {"width": 0}}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(UsageError, match=r"config.json is damaged \(width must be a positive integer") as caught:
        load_model(tmp_path)
    assert not isinstance(caught.value, FieldError)  # names the file's key, never a command's flag


def test_resuming_with_other_settings_names_each_flag_and_both_values(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*TRAIN.split(), "--epochs", "1", "--out", str(out)]) == 0
    capsys.readouterr()
    before = _files(out)
    refused(
        [*TRAIN.split(), "--epochs", "2", "--lr", "0.002", "--out", str(out), "--resume", "auto"],
        capsys,
        f"--out {out} holds a run with different settings (--epochs 1, now 2; --lr 0.001, now 0.002)",
        "give the same ones to resume it, or another --out",
    )
    assert _files(out) == before


@pytest.mark.parametrize(
    "call, named",
    [
        (lambda: deescalate([[1.0]], 1.0), "the tokens x are a list; pass a torch tensor"),
        (lambda: featscale([[[1.0]]], torch.ones(1), torch.ones(1)), "the tokens z are a list; pass a torch tensor"),
        (lambda: value_output_eigenvalues([[1.0]], torch.eye(1)), "the weights W_V are a list; pass a torch tensor"),
        (lambda: attention_eigenvalues([[1.0]]), "attention maps are a list; pass a torch tensor"),
        (lambda: predict_dynamics(torch.eye(2), [0.5]), "lambda_h (the eigenvalues of H) are a list"),
        (lambda: cos_sim(torch.ones(3, 4)), "states have shape (3, 4); pass [batch, tokens, features]"),
    ],
    ids=["deescalate", "featscale", "value-output", "attention-eigenvalues", "predict-dynamics", "cos-sim-2d"],
)
def test_the_python_api_names_an_argument_that_is_not_the_tensor_it_takes(call, named):
    """A list, or a tensor of the wrong rank, is one UsageError naming the argument, not an
    AttributeError or a RuntimeError from deep inside the computation."""
    with pytest.raises(UsageError) as error:
        call()
    assert named in str(error.value)


def test_a_refused_resume_names_the_setting_given_not_what_the_model_derived_from_it(tmp_path):
    """The LM's vocabulary is given (data.vocab_size) and reached (model_config.vocab_size, one
    more here): the message shows the values given."""
    from oversmooth.train.loop import _changed

    stored = {"model_config": {"vocab_size": 301}, "data": {"vocab_size": 300}}
    now = {"model_config": {"vocab_size": 401}, "data": {"vocab_size": 400}}
    assert "vocab_size 300, now 400" in str(_changed(tmp_path, stored, now))


def test_theory_counts_the_escalation_studys_memory_only_when_it_runs():
    setup = Setup(tokens=2000)
    assert needed_bytes(setup, escalation=False) < needed_bytes(setup) / 10


@pytest.mark.parametrize(
    "argv, hint",
    [
        (["train", "--task", "synthetic", "--model", "vit", "--epochs", "1", "--method", "neutrino"], "'neutreno'"),
        (["study", "quik"], "'quick'"),
        (["analyze", "--methods", "featscal"], "'featscale'"),
    ],
)
def test_a_mistyped_name_gets_a_did_you_mean(tmp_path, capsys, argv, hint):
    from oversmooth.cli import main

    out = tmp_path / "out"
    capsys.readouterr()
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"(did you mean {hint}?)" in err, err
    assert not out.exists()


def test_status_of_a_study_that_does_not_exist_is_refused(tmp_path, capsys):
    from oversmooth.cli import main

    capsys.readouterr()
    assert main(["study", "quick", "--out", str(tmp_path / "none"), "--status"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds no study" in err and "oversmooth study quick" in err
    assert not (tmp_path / "none").exists()


def _tiny_bert(folder, tokenizer=None, **changes):
    """A tiny random BERT saved with ``tokenizer`` (default: the tiny word-level one), its config
    the tiny one's with ``changes``."""
    import transformers as tf
    from hf_tiny import CONFIGS, tiny_tokenizer

    config = CONFIGS["bert"]()
    for name, value in changes.items():
        setattr(config, name, value)
    torch.manual_seed(0)
    tf.AutoModel.from_config(config).eval().save_pretrained(folder)
    (tokenizer or tiny_tokenizer()).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("command", ["analyze", "adapt"])
def test_a_tokenizer_beyond_the_models_vocabulary_names_the_model(tmp_path, capsys, command):
    """A cached model whose vocabulary (20) is smaller than its tokenizer's (46): one line naming
    the model and both sizes, not an IndexError from its embedding table."""
    from hf_tiny import prose

    model = _tiny_bert(tmp_path / "small-vocab", vocab_size=20)
    text = tmp_path / "t.txt"
    text.write_text(prose([150] * 40))
    source = ["--text", str(text)] if command == "analyze" else ["--text", f"text:{text}", "--seq-len", "16"]
    capsys.readouterr()
    refused([command, str(model), *source, "--out", str(tmp_path / "out")], capsys, str(model), "vocabulary of 20")
    assert not (tmp_path / "out").exists()


def test_a_tokenizer_that_gives_no_ids_says_so(tmp_path, capsys):
    """A tokenizer that reads none of the text's characters (BPE without an unknown token drops
    them): the message says the tokenizer gave no ids and names --text."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE(vocab={"a": 0, "b": 1}, merges=[])))
    model = _tiny_bert(tmp_path / "no-ids", tokenizer)
    capsys.readouterr()
    argv = ["analyze", str(model), "--text", "xyz zz", "--out", str(tmp_path / "out")]
    refused(argv, capsys, "no token ids", "--text")
    assert not (tmp_path / "out").exists()


def test_a_list_as_mask_or_probe_mask_is_named():
    from hf_tiny import tiny_inputs, tiny_model

    import oversmooth

    states = [torch.randn(2, 3, 4) for _ in range(2)]
    with pytest.raises(UsageError, match="mask is a list; pass a torch tensor"):
        oversmooth.measure(states, [[1, 1, 0], [1, 1, 1]])
    probe = tiny_inputs("bert")
    probe["attention_mask"] = probe["attention_mask"].tolist()
    with pytest.raises(UsageError, match=r"probe\['attention_mask'\] are a list; pass a torch tensor"):
        oversmooth.watch(tiny_model("bert"), probe)


CSV_TEXT = 'id,text,label\n1,"It is a truth, universally acknowledged",0\n2,"However little\nknown",1\n'


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "--text", "{csv}"],
        ["train", "--task", "text:{csv}", "--model", "lm", "--epochs", "1"],
        ["adapt", "--text", "text:{csv}", "--steps", "1"],
        ["analyze", "--text", "{tsv}"],
    ],
    ids=["analyze", "train", "adapt", "analyze-tsv"],
)
def test_a_table_given_as_text_is_refused_with_the_column_flag(tmp_path, capsys, args):
    """A CSV or TSV read as prose would run its fields together: refused, naming --text-column and
    the file's columns."""
    files = {"csv": tmp_path / "data.csv", "tsv": tmp_path / "data.tsv"}
    files["csv"].write_text(CSV_TEXT)
    files["tsv"].write_text(CSV_TEXT.replace(",", "\t"))
    argv = [word.format(**files) for word in args]
    refused([*argv, "--out", str(tmp_path / "out")], capsys, "looks like", "--text-column NAME", "id, text, label")
    assert not (tmp_path / "out").exists()
    refused([*argv, "--text-column", "body", "--out", str(tmp_path / "out")], capsys, "no such column", "id, text")


def test_a_text_column_is_read_row_by_row_and_trains_as_the_same_prose(tmp_path, capsys):
    """``--text-column`` reads that field of every row (quoted commas and newlines kept), one row a
    paragraph: trained on, it is the same data as those paragraphs in a .txt file."""
    from hf_tiny import prose

    from oversmooth.data import read_text_file

    (tmp_path / "data.csv").write_text(CSV_TEXT)
    rows = ["It is a truth, universally acknowledged", "However little\nknown"]
    assert read_text_file(tmp_path / "data.csv", "text") == "\n\n".join(rows)
    paragraphs = prose([150] * 30).split("\n\n")
    with open(tmp_path / "essays.csv", "w", newline="") as handle:
        import csv

        writer = csv.writer(handle)
        writer.writerow(["title", "body"])
        writer.writerows([f"essay {i}", body] for i, body in enumerate(paragraphs))
    (tmp_path / "essays.txt").write_text("\n\n".join(paragraphs))
    digests = []
    for task, extra in (("essays.csv", ["--text-column", "body"]), ("essays.txt", [])):
        out = tmp_path / task.replace(".", "-")
        argv = ["train", "--task", f"text:{tmp_path / task}", "--model", "lm", "--epochs", "1", "--depth", "1"]
        argv += ["--width", "8", "--heads", "2", "--batch-size", "8", "--vocab-size", "300", "--threads", "1"]
        assert main([*argv, *extra, "--no-progress", "--out", str(out)]) == 0
        digests.append(json.loads((out / "results.json").read_text())["provenance"]["data"]["data sha256"])
    assert digests[0] == digests[1]
    capsys.readouterr()
    refused(["analyze", "--text-column", "body", "--out", str(tmp_path / "x")], capsys, "--text-column", "--text")
