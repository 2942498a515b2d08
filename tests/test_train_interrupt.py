"""Ctrl-C before a run's first checkpoint leaves its folder as it found it, so the same command
starts the run again; after a checkpoint, the folder is kept for ``--resume auto``."""

from oversmooth.cli import main
from oversmooth.train import loop

ARGS = (
    "train --task synthetic --model vit --depth 1 --width 16 --heads 2 --patch-size 4 --epochs 2 "
    "--batch-size 32 --lr 3e-3 --seed 3 --threads 1 --no-progress"
).split()


def interrupt_at(monkeypatch, records_written: int) -> None:
    """Ctrl-C the run as it writes ``metrics.jsonl`` with ``records_written`` records."""
    write = loop._write_records

    def stop(out_dir, records):
        write(out_dir, records)
        if len(records) == records_written:
            raise KeyboardInterrupt

    monkeypatch.setattr(loop, "_write_records", stop)


def test_interrupted_before_its_first_checkpoint_a_run_leaves_nothing(tmp_path, monkeypatch, capsys):
    made, kept = tmp_path / "new", tmp_path / "kept"
    kept.mkdir()  # an empty folder made beforehand
    for out in (made, kept):
        with monkeypatch.context() as patch:
            interrupt_at(patch, 0)  # the empty metrics.jsonl every run writes first
            assert main([*ARGS, "--out", str(out)]) == 130
        assert "interrupted" in capsys.readouterr().err
    assert not made.exists()  # the run made the folder: it is gone
    assert kept.is_dir() and not any(kept.iterdir())  # the folder found empty stays, empty
    assert main([*ARGS, "--out", str(made)]) == 0  # the same command now just runs


def test_interrupted_after_a_checkpoint_a_run_is_kept_for_resume(tmp_path, monkeypatch):
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        interrupt_at(patch, 1)  # after epoch 1, whose checkpoint is taken
        assert main([*ARGS, "--out", str(out)]) == 130
    assert (out / loop.FILENAME).is_file()
    assert main([*ARGS, "--out", str(out), "--resume", "auto"]) == 0
