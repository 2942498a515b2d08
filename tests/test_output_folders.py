"""An output folder is never merged into (``oversmooth.utils.outputs``): every command refuses an
``--out`` that already holds files other than its own resumable state with one line naming the way
on (``--force``, or resume for ``train``), exit 2, and nothing written; with ``--force`` the files of
an earlier run that are not written again are gone, other files are kept, and ``analyze`` says every
file it wrote. ``report`` never replaces a ``report.md`` another command wrote."""

import json
import re
import shutil
from pathlib import Path

import pytest
from hf_tiny import WORDS, save_tiny

from oversmooth.claims.report import OUTPUTS as CLAIMS_OUTPUTS
from oversmooth.cli import main
from oversmooth.study.report import OUTPUTS as REPORT_OUTPUTS
from oversmooth.theory.run import OUTPUTS as THEORY_OUTPUTS

ROOT = Path(__file__).resolve().parents[1]
ANALYZE = ["--text", " ".join(WORDS * 3), "--max-sequences", "2", "--max-length", "16", "--attention-sequences", "1"]
THEORY = ["--depth", "3", "--tokens", "4", "--dim", "4", "--sequences", "2", "--no-progress"]
TRAIN = "--task synthetic --model lm --depth 1 --width 16 --heads 2 --epochs 1 --threads 1 --no-progress".split()
ADAPT = ["--text", "sample", "--seq-len", "16", "--eval-sequences", "4", "--steps", "2", "--no-progress"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """A tiny BERT, a study of two cells and a claims archive (claim 3's rounds: a claims report of
    it takes seconds)."""
    from claims_cells import make_cell

    root = tmp_path_factory.mktemp("inputs")
    shutil.copytree(ROOT / "results" / "claim3", root / "claim3")
    for label in ("softmax", "neutreno"):
        make_cell(root, "fmnist-p7", label, 0, 0.90)
    grid = root / "grid.json"
    train = {"width": 8, "heads": 2, "epochs": 1, "batch_size": 32, "probe_size": 8}
    study = {"name": "tiny", "model": "vit", "tasks": ["synthetic"], "depths": [1], "methods": ["softmax"]}
    grid.write_text(json.dumps({**study, "train": train}))
    return {
        "bert": save_tiny("bert", root / "bert"),
        "study": root / "fmnist-p7",
        "claims": root / "claim3",
        "grid": grid,
    }


def state(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its modification time and size."""
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*")}


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err.strip()


def listing(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


@pytest.mark.parametrize(
    "command, needle",
    [
        ("analyze", "pass --force"),
        ("theory", "pass --force"),
        ("report", "pass --force"),
        ("claims", "pass --force"),
        ("train", "pass --resume auto to continue the run in it"),
        ("adapt", "choose a new or empty --out"),
        ("study", "but no study.json (it is not this command's folder); choose a new or empty folder, or pass --force"),
    ],
)
def test_a_folder_that_holds_files_is_refused_and_left_as_it_was(command, needle, inputs, tmp_path, capsys):
    argv = {
        "analyze": ["analyze", str(inputs["bert"]), *ANALYZE, "--methods", "none"],
        "theory": ["theory", "smoothing", *THEORY],
        "report": ["report", str(inputs["study"])],
        "claims": ["claims", str(inputs["claims"]), "--no-probes"],
        "train": ["train", *TRAIN],
        "adapt": ["adapt", str(inputs["bert"]), *ADAPT],
        "study": ["study", str(inputs["grid"])],
    }[command]
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    before = state(tmp_path)
    code, _, err = run(capsys, [*argv, "--out", str(out)])
    assert code == 2 and len(err.splitlines()) == 1 and needle in err, err
    assert err.startswith(f"oversmooth {command}: error: --out {out}")
    assert state(tmp_path) == before


def test_analyze_with_force_replaces_its_own_files_and_says_every_file_it_wrote(inputs, tmp_path, capsys):
    out = tmp_path / "out"
    sweep = ["--methods", "neutreno", "--sweep", "neutreno:lam=0,0.1"]
    code, printed, _ = run(capsys, ["analyze", str(inputs["bert"]), *ANALYZE, *sweep, "--out", str(out)])
    wrote = re.search(rf"^wrote {re.escape(str(out))}/: (.+)$", printed, re.M).group(1).split(", ")
    assert code == 0 and {"frontier.csv", "frontier.png"} <= set(wrote) and set(wrote) == listing(out)
    (out / "notes.txt").write_text("mine")
    code, printed, _ = run(capsys, ["analyze", str(inputs["bert"]), *ANALYZE, "--methods", "none", "--out", str(out)])
    assert code == 2  # refused without --force
    argv = ["analyze", str(inputs["bert"]), *ANALYZE, "--methods", "none", "--out", str(out), "--force"]
    code, printed, _ = run(capsys, argv)
    wrote = re.search(r"^wrote .+/: (.+)$", printed, re.M).group(1).split(", ")
    assert code == 0 and "frontier.csv" not in listing(out)  # no stale frontier beside a report without one
    assert listing(out) == {*wrote, "notes.txt"}  # every file written is named; the user's file is kept


def test_theory_with_force_leaves_no_file_of_an_earlier_run(tmp_path, capsys):
    out = tmp_path / "out"
    assert run(capsys, ["theory", "all", *THEORY, "--format", "png,pdf,svg", "--out", str(out)])[0] == 0
    assert listing(out) == set(THEORY_OUTPUTS)  # OUTPUTS names every file a run may write, in every format
    (out / "notes.txt").write_text("mine")
    assert run(capsys, ["theory", "lnflip", *THEORY, "--out", str(out), "--force"])[0] == 0
    assert listing(out) == {"lnflip.png", "predictions.csv", "trajectories.csv", "provenance.json", "notes.txt"}


@pytest.mark.parametrize(
    "command, folder, outputs, own",
    [
        (["report"], "study", REPORT_OUTPUTS, "study.json"),
        (["claims", "--no-probes"], "claims", CLAIMS_OUTPUTS, "rounds.json"),
    ],
)
def test_a_report_with_force_replaces_an_earlier_one_and_rewrites_its_folders_own(
    command, folder, outputs, own, inputs, tmp_path, capsys
):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "gone-study_layers.png").write_text("a figure of a study no longer reported")
    assert run(capsys, [*command, str(inputs[folder]), "--out", str(out), "--force"])[0] == 0
    written = listing(out) - {"notes.txt"}
    assert "gone-study_layers.png" not in written and "report.md" in written
    assert ("claims.json" in written) is (command[0] == "claims")
    assert all(any(Path(name).match(p) for p in outputs) for name in written)
    copy = tmp_path / "copy"
    shutil.copytree(inputs[folder], copy)
    for _ in range(2):  # a study folder holds its own report: rewritten, never refused
        assert run(capsys, [*command, str(copy)])[0] == 0
    assert (copy / "report.md").is_file() and (copy / own).is_file()


def test_report_with_force_removes_the_claims_files_an_earlier_report_wrote(inputs, tmp_path, capsys):
    """`oversmooth report` once wrote the claims beside its study sections: its claims.json and
    claims' figures do not stay beside a report that decides no claim; the user's files do."""
    out = tmp_path / "out"
    out.mkdir()
    earlier = ["report.md", "cells.csv", "claims.json", "claims.png", "claim4_depth.png", "claims_8_2c_lambda.png"]
    for name in [*earlier, "probes.png", "notes.txt"]:
        (out / name).write_text("an earlier report's" if name != "notes.txt" else "mine")
    assert run(capsys, ["report", str(inputs["study"]), "--out", str(out), "--force"])[0] == 0
    assert listing(out) == {"report.md", "cells.csv", "fmnist-p7_curves.png", "fmnist-p7_layers.png", "notes.txt"}
    assert (out / "notes.txt").read_text() == "mine"


def test_a_study_resumes_only_in_a_folder_that_holds_a_study(inputs, tmp_path, capsys):
    """A folder holding a study's ``study.json`` is resumed (here: its one cell, as a dry run), and
    ``--status`` on a folder holding other files says it holds no study; ``--force`` begins the
    study beside the files there."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("analyze's")
    code, _, err = run(capsys, ["study", str(inputs["grid"]), "--out", str(out), "--status"])
    assert code == 2 and "holds no study (no study.json in it)" in err, err
    code, printed, _ = run(capsys, ["study", str(inputs["grid"]), "--out", str(out), "--dry-run", "--force"])
    assert code == 0 and printed.endswith("1 cells\n")
    (out / "study.json").write_text(json.dumps({"name": "tiny"}))  # as a first run leaves it
    code, printed, _ = run(capsys, ["study", str(inputs["grid"]), "--out", str(out), "--dry-run"])
    assert code == 0 and printed.endswith("1 cells\n")
    assert listing(out) == {"report.md", "study.json"}


def test_report_never_replaces_a_report_it_did_not_write(inputs, tmp_path, capsys):
    """`oversmooth report DIR` rewrites the report it wrote in DIR, but not ``analyze``'s ``report.md``
    in a folder that holds both (a study begun there with ``--force``): one line naming ``--out``
    and ``--force``, exit 2, the folder as it was; with ``--force`` it is replaced, as asked."""
    folder = tmp_path / "demo"
    code, _, _ = run(capsys, ["analyze", str(inputs["bert"]), *ANALYZE, "--methods", "none", "--out", str(folder)])
    shutil.copytree(inputs["study"], folder, dirs_exist_ok=True)  # the study's files beside analyze's
    analyzed = (folder / "report.md").read_text()
    before = state(tmp_path)
    code, _, err = run(capsys, ["report", str(folder)])
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{folder / 'report.md'} was not written by `oversmooth report`" in err and "--out DIR" in err
    assert "--force" in err and state(tmp_path) == before
    for _ in range(2):  # asked with --force: replaced; then the report is this command's own, rewritten
        assert run(capsys, ["report", str(folder), *(["--force"] if _ == 0 else [])])[0] == 0
        assert (folder / "report.md").read_text() != analyzed
    assert run(capsys, ["claims", str(folder), "--no-probes"])[0] == 2  # `report`'s is not `claims`' either
