"""`oversmooth train` argument errors: one line on stderr, exit 2, before any training."""

import pytest

from oversmooth.cli import main

BASE = ["train", "--epochs", "1", "--threads", "1", "--no-progress"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--task", "mnist", "--model", "vit"], "unknown task 'mnist'"),
        (["--task", "synthetic", "--model", "cnn"], "unknown model 'cnn'"),
        (["--task", "austen", "--model", "vit"], "make --model lm"),
        (["--task", "synthetic", "--model", "vit", "--method", "magic"], "unknown mitigation 'magic'"),
        (["--task", "synthetic", "--model", "vit", "--depth", "0"], "depth must be a positive integer"),
        (["--task", "synthetic", "--model", "lm", "--heads", "5"], "heads (5) must divide width"),
        (["--task", "synthetic", "--model", "lm", "--method", "neutreno", "--lam", "-1"], "lambda"),
        (["--task", "fmnist", "--model", "vit", "--data-dir", "/no/such/folder"], "--data-dir /no/such/folder"),
        (["--task", "text:/no/such/file.txt", "--model", "lm"], "no such file or folder"),
        (["--task", "synthetic", "--model", "vit", "--batch-size", "0"], "--batch-size must be at least 1"),
        (["--task", "synthetic", "--model", "vit", "--lr", "0"], "--lr must be > 0"),
        (["--task", "synthetic", "--model", "vit", "--warmup", "1.5"], "--warmup must lie in [0, 1)"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, args, message):
    assert main([*BASE, "--out", str(tmp_path / "run"), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("oversmooth train: error:") and message in err


def test_unwritable_out_dir_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")
    args = ["--task", "synthetic", "--model", "vit", "--out", str(tmp_path / "file" / "run")]
    assert main([*BASE, *args]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_missing_fmnist_files_is_a_usage_error(tmp_path, capsys):
    args = ["--task", "fmnist", "--model", "vit", "--data-dir", str(tmp_path), "--out", str(tmp_path / "run")]
    assert main([*BASE, *args]) == 2
    assert "train-images-idx3-ubyte" in capsys.readouterr().err


def test_a_finished_run_is_not_overwritten_without_resume(tmp_path, capsys):
    args = [
        *"--task synthetic --model lm --depth 1 --width 16 --heads 2 --out".split(),
        str(tmp_path / "run"),
    ]
    assert main([*BASE, *args]) == 0
    assert "test_perplexity" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        ".lock",
        "checkpoint.pt",
        "curves.png",
        "metrics.jsonl",
        "model",
        "results.json",
        "similarity.png",
    ]
    trained = (tmp_path / "run" / "model" / "model.safetensors").read_bytes()
    assert main([*BASE, *args]) == 2
    assert "--resume auto" in capsys.readouterr().err
    assert main([*BASE, *args, "--resume", "auto"]) == 0  # finished: returns its results
    assert (tmp_path / "run" / "model" / "model.safetensors").read_bytes() == trained


def test_a_diverging_run_is_a_result_exit_0(tmp_path, capsys):
    args = [
        *"--task synthetic --model lm --depth 2 --width 16 --heads 2 --norm post --lr 1e30 --warmup 0 --out".split(),
        str(tmp_path / "run"),
    ]
    assert main([*BASE, *args]) == 0
    captured = capsys.readouterr()
    assert "diverged: loss became nan" in captured.err and "results.json" in captured.out
    assert '"status": "diverged"' in (tmp_path / "run" / "results.json").read_text()
    assert not (tmp_path / "run" / "model").exists()


def test_tensorboard_logs_the_same_numbers_as_metrics_jsonl(tmp_path, capsys):
    import json

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    args = [
        *"--task synthetic --model vit --depth 2 --width 16 --heads 2 --epochs 2 --tensorboard --out".split(),
        str(out),
    ]
    assert main([*BASE[:1], *BASE[3:], *args]) == 0  # BASE without its --epochs 1
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    logged = {tag: events.Scalars(tag) for tag in events.Tags()["scalars"]}

    def expect(tag, values):
        assert [s.step for s in logged[tag]] == [r["epoch"] for r in records]
        assert [s.value for s in logged[tag]] == pytest.approx(values, rel=1e-6)  # stored as float32

    expect("val/accuracy", [r["val"]["accuracy"] for r in records])
    expect("train/loss", [r["train_loss"] for r in records])
    expect("layers/t_sim/layer01", [r["layers"][1]["t_sim"] for r in records])
