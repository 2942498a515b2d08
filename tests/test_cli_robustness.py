"""Every command, driven with generated argument lists: it ends with exit 0 or 2 (or reaches the
real work, stubbed out here), never with a traceback, and a refusal (exit 2) writes nothing.

Numbers include nan, inf, huge and negative values; paths include missing ones, files where a
folder is meant and folders under a file; names include unknown ones.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from hf_tiny import WORDS, save_tiny
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oversmooth.cli import main


class Reached(Exception):
    """The command got past its checks to the real work (stubbed out)."""


def stop(*args, **kwargs):
    raise Reached


NUMBERS = st.sampled_from(["nan", "inf", "-inf", "1e308", "-1", "0", "0.5", "1", "3", "abc", ""])
COUNTS = st.sampled_from(["0", "-3", "1", "2", "3", "16", "100000", "x", "1.5"])


def flags(options: dict[str, st.SearchStrategy]) -> st.SearchStrategy[list[str]]:
    """Some of ``options``' flags with a drawn value each (a value of None: the flag alone)."""

    def render(chosen):
        words = []
        for flag, value in chosen:
            words += [flag] if value is None else [flag, value]
        return words

    pairs = st.one_of(*(st.tuples(st.just(flag), values) for flag, values in options.items()))
    return st.lists(pairs, max_size=4).map(render)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A scratch folder with a model, a states file, a plain file and a text file."""
    root = tmp_path_factory.mktemp("world")
    save_tiny("bert", root / "bert")
    torch.save(torch.randn(3, 2, 5, 4), root / "states.pt")
    (root / "a_file").write_text("not a folder")
    (root / "text.txt").write_text(" ".join(WORDS * 3))
    (root / "empty.txt").write_text("")
    return root


def outs(root: Path) -> st.SearchStrategy[str]:
    return st.sampled_from(
        [
            str(root / "out" / "new"),
            str(root / "a_file"),
            str(root / "a_file" / "sub"),
            str(root / "missing" / "deep" / "out"),
        ]
    )


def snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def exit_code(argv: list[str]) -> int:
    """``main(argv)``, with argparse's refusals (SystemExit) read as their exit code."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


def check(root: Path, argv: list[str], capsys) -> None:
    """Run ``argv``: exit 0, or exit 2 with one stderr line and no new file, or Reached."""
    capsys.readouterr()  # drop what earlier examples printed
    before = snapshot(root)
    try:
        code = exit_code(argv)
    except Reached:
        return
    err = capsys.readouterr().err.strip()
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        assert len(err.splitlines()) == 1, (argv, err)
        assert snapshot(root) == before, (argv, sorted(snapshot(root) - before))


SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SLOW
@given(data=st.data())
def test_metrics(world, capsys, data):
    argv = [
        "metrics",
        data.draw(
            st.sampled_from(
                [str(world / "states.pt"), str(world / "a_file"), str(world / "missing.pt"), str(world / "text.txt")]
            )
        ),
    ]
    argv += data.draw(
        flags(
            {
                "--out": outs(world).map(lambda p: p + ".csv"),
                "--exclude": COUNTS,
                "--metrics": st.sampled_from(["cos_sim", "bogus", "t_sim,stable_rank"]),
                "--json": st.none(),
            }
        )
    )
    check(world, argv, capsys)


@SLOW
@given(data=st.data())
def test_theory(world, capsys, data, monkeypatch):
    monkeypatch.setattr("oversmooth.utils.atomic.atomic_directory", stop)
    monkeypatch.setattr("oversmooth.theory.experiment.run_preset", stop)
    argv = [
        "theory",
        data.draw(st.sampled_from(["smoothing", "escalation", "all", "bogus"])),
        "--out",
        data.draw(outs(world)),
    ]
    argv += data.draw(flags({f"--{name}": COUNTS for name in ("depth", "tokens", "dim", "sequences", "seed")}))
    check(world, argv, capsys)


TRAIN_OPTIONS = {
    **{
        f"--{name}": NUMBERS
        for name in (
            "lr",
            "weight-decay",
            "warmup",
            "grad-clip",
            "label-smoothing",
            "dropout",
            "mlp-ratio",
            "lam",
            "tau",
            "value-mix",
        )
    },
    **{
        f"--{name}": COUNTS
        for name in (
            "depth",
            "width",
            "heads",
            "batch-size",
            "seq-len",
            "val-size",
            "threads",
            "probe-size",
            "checkpoint-every",
            "limit-train",
        )
    },
    "--method": st.sampled_from(["softmax", "neutreno", "deescalate", "featscale+attnscale", "bogus"]),
    "--norm": st.sampled_from(["pre", "post", "middle"]),
    "--spectral": st.sampled_from(["sharpen", "flat"]),
    "--resume": st.sampled_from(["auto", "sometimes"]),
}


@SLOW
@given(data=st.data())
def test_train(world, capsys, data, monkeypatch):
    monkeypatch.setattr("oversmooth.train.run.train", stop)  # where run() looks it up
    argv = [
        "train",
        "--task",
        data.draw(st.sampled_from(["synthetic", "text:" + str(world / "missing.txt"), "bogus"])),
        "--model",
        data.draw(st.sampled_from(["vit", "lm", "cnn"])),
        "--epochs",
        data.draw(COUNTS),
        "--out",
        data.draw(outs(world)),
        "--no-progress",
    ]
    argv += data.draw(flags(TRAIN_OPTIONS))
    check(world, argv, capsys)


@SLOW
@given(data=st.data())
def test_analyze(world, capsys, data, monkeypatch):
    monkeypatch.setattr("oversmooth.analyze.analysis.run_analysis", stop)
    argv = [
        "analyze",
        data.draw(
            st.sampled_from(
                [str(world / "bert"), str(world / "missing"), str(world / "a_file"), "not_a_module_xyz", "json"]
            )
        ),
        "--out",
        data.draw(outs(world)),
    ]
    argv += data.draw(
        flags(
            {
                "--text": st.sampled_from(
                    [str(world / "text.txt"), str(world / "empty.txt"), str(world / "gone.txt"), "a short string"]
                ),
                "--images": st.sampled_from([str(world), str(world / "missing")]),
                "--methods": st.sampled_from(["neutreno", "none", "attnscale,magic"]),
                **{f"--{name}": NUMBERS for name in ("lam", "tau", "omega", "s-dc", "s-hc")},
                **{
                    f"--{name}": COUNTS
                    for name in (
                        "max-sequences",
                        "max-length",
                        "attention-sequences",
                        "attention-tokens",
                        "rank-sequences",
                    )
                },
                "--exclude": st.sampled_from(["0", "none", "0,-1", "x", "999"]),
                "--budget": st.sampled_from(["perplexity=1.1", "kl=nan", "speed=2", "cosine=2"]),
                "--sweep": st.sampled_from(["neutreno:lam=0,0.1", "neutreno:lam=inf", "featscale:s_dc=x", "bogus"]),
            }
        )
    )
    check(world, argv, capsys)


@SLOW
@given(data=st.data())
def test_study(world, capsys, data, monkeypatch):
    monkeypatch.setattr("oversmooth.study.run_study", stop)
    argv = [
        "study",
        data.draw(st.sampled_from(["quick", "bogus", str(world / "text.txt"), str(world / "missing.json")])),
        "--out",
        data.draw(outs(world)),
        "--dry-run",
    ]
    argv += data.draw(
        flags(
            {
                "--jobs": COUNTS,
                "--threads": COUNTS,
                "--seeds": st.sampled_from(["0,1", "x", "-1", ""]),
                "--depths": st.sampled_from(["1,2", "0", "x", "100000"]),
                "--set": st.sampled_from(["epochs=1", "lr=nan", "bogus=1", "noequals"]),
            }
        )
    )
    check(world, argv, capsys)


def test_refusals_leave_no_folder(world, capsys):
    """A refused train never creates its --out (it used to be made before the checks)."""
    out = world / "refused"
    assert (
        exit_code(["train", "--task", "synthetic", "--model", "vit", "--epochs", "1", "--lr", "inf", "--out", str(out)])
        == 2
    )
    assert not out.exists()
    assert (
        exit_code(
            [
                *"train --task synthetic --model vit --epochs 1 --batch-size 100000 --out".split(),
                str(out),
            ]
        )
        == 2
    )
    assert "exceeds" in capsys.readouterr().err and not out.exists()


def test_two_runs_on_one_folder(tmp_path):
    """The second run on a locked folder is refused, naming the holder's pid."""
    from oversmooth.errors import UsageError
    from oversmooth.train.run_lock import run_lock

    with run_lock(tmp_path), pytest.raises(UsageError, match=f"in use by process {os.getpid()}"):
        with run_lock(tmp_path):
            pass
    with run_lock(tmp_path):  # released: free again
        pass


def test_a_folder_without_write_permission_is_refused(tmp_path, monkeypatch):
    """(Root may write anywhere, so the permission is taken away through os.access.)"""
    from oversmooth.errors import UsageError
    from oversmooth.utils.outputs import check_output_dir, check_output_file

    locked = tmp_path / "locked"
    locked.mkdir()
    monkeypatch.setattr("oversmooth.utils.outputs.os.access", lambda path, mode: Path(path) != locked)
    for check, target in (
        (check_output_dir, locked),
        (check_output_dir, locked / "new" / "out"),
        (check_output_file, locked / "table.csv"),
    ):
        with pytest.raises(UsageError, match="no permission"):
            check(target)
    assert check_output_dir(tmp_path / "free") == tmp_path / "free" and not (tmp_path / "free").exists()
