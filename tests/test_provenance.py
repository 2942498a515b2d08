"""Provenance in every result (``oversmooth.utils.provenance``): the version, git commit and
dirtiness (checked against git itself, in a repository made here), the library versions (against
the imported libraries), the device, the command, the seeds and the data's identity; models named
by identity or by a path relative to the output folder, never a machine's absolute path.

How to compare two results across machines or runs: cut a report at ``PROVENANCE_HEADING``
and drop a JSON file's ``"provenance"`` table (``test_two_analyses_differ_only_in_their_provenance``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import platform
import shlex
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import torch
import transformers
from hf_tiny import WORDS, save_tiny

from oversmooth.cli import main
from oversmooth.utils import provenance
from oversmooth.utils.provenance import PROVENANCE_HEADING, Provenance, digest

SRC = Path(__file__).resolve().parents[1] / "src" / "oversmooth"
TEXT = " ".join(WORDS * 3)
FAST = ["--max-sequences", "2", "--max-length", "16", "--attention-tokens", "8", "--methods", "none"]


def git(folder: Path, *words: str) -> str:
    return subprocess.run(["git", *words], cwd=folder, check=True, capture_output=True, text=True).stdout.strip()


def module_in(root: Path, monkeypatch):
    """``utils/provenance.py`` copied into a package folder ``root/pkg`` and imported from there."""
    (root / "pkg" / "utils").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    shutil.copy(SRC / "utils" / "provenance.py", root / "pkg" / "utils" / "provenance.py")
    spec = importlib.util.spec_from_file_location("copied_provenance", root / "pkg" / "utils" / "provenance.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_commit_and_dirtiness_are_gits(tmp_path, monkeypatch):
    copied = module_in(tmp_path, monkeypatch)
    assert copied.checkout() == (None, None)  # files no repository tracks: an installed package
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "pkg")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    copied.checkout.cache_clear()
    assert copied.checkout() == (git(tmp_path, "rev-parse", "HEAD"), False)
    (tmp_path / "notes.txt").write_text("untracked files change no tracked file")
    copied.checkout.cache_clear()
    assert copied.checkout()[1] is False
    (tmp_path / "pkg" / "__init__.py").write_text("x = 1\n")
    copied.checkout.cache_clear()
    assert copied.checkout()[1] is True


def test_versions_are_the_imported_libraries_and_version_prints_them(capsys):
    found = Provenance.gather("oversmooth x", "cpu", {"seed": 3}, {"inputs": "a"})
    assert found.libraries == {"torch": torch.__version__, "transformers": transformers.__version__}
    assert found.python == platform.python_version() and found.device == "cpu"
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    printed = capsys.readouterr().out
    assert printed.startswith("oversmooth 0.") and torch.__version__ in printed and transformers.__version__ in printed
    commit = provenance.checkout()[0]
    assert commit is None or commit[:12] in printed
    assert Provenance.from_json(json.loads(json.dumps(found.to_json()))) == found  # JSON and back


def test_a_gpu_is_named_with_its_model(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: f"GPU {index}")
    assert provenance.device_name(torch.device("cuda", 1)) == "cuda:1 (GPU 1)"
    assert provenance.device_name("cpu") == "cpu"


def test_a_digest_is_the_datas_identity():
    assert digest(["ab", b"c"]) == hashlib.sha256(b"abc").hexdigest()
    x = torch.arange(6, dtype=torch.int64)
    assert digest([x]) == digest([x.clone()]) != digest([x.reshape(2, 3)])  # same bytes, other shape
    assert digest([x.reshape(2, 3).t()]) != digest([x.reshape(2, 3)])  # the values in order, not the storage
    assert digest([torch.ones(2, dtype=torch.bfloat16)]) != digest([torch.ones(2)])


def test_the_bundled_model_is_named_by_its_package_and_version():
    from oversmooth.hf.load import DEFAULT_MODEL, resolve

    if importlib.util.find_spec(DEFAULT_MODEL.replace("-", "_")) is None:
        pytest.skip("the bundled model package is not installed")
    origin = resolve(None).origin
    assert origin == f"{DEFAULT_MODEL} {metadata.version(DEFAULT_MODEL)} (installed package)"


def test_two_analyses_differ_only_in_their_provenance(tmp_path):
    """Cut at PROVENANCE_HEADING and without the "provenance" table, two analyses of one model and
    text into two folders are the same but for the model's path, relative to each folder; nothing
    but the command as typed holds an absolute path."""
    bert = save_tiny("bert", tmp_path / "bert")
    reports, spectra = [], []
    for out, shown in ((tmp_path / "a", "../bert"), (tmp_path / "deeper" / "b", "../../bert")):
        assert main(["analyze", str(bert), "--text", TEXT, "--out", str(out), *FAST, "--no-progress"]) == 0
        report = (out / "report.md").read_text()
        spectrum = json.loads((out / "spectrum.json").read_text())
        recorded = spectrum.pop("provenance")
        assert str(tmp_path) not in report.replace(recorded["command"], "")
        assert report.startswith(f"# oversmooth analyze: {shown}\n") and recorded["data"]["model"] == shown
        assert shlex.split(recorded["command"])[:3] == ["oversmooth", "analyze", str(bert)]
        assert recorded["device"] == "cpu" and recorded["seeds"] == {}
        reports.append(report[: report.index(PROVENANCE_HEADING)].replace(shown, "MODEL"))
        spectra.append((spectrum, recorded["data"]["inputs sha256"]))
    assert reports[0] == reports[1] and spectra[0] == spectra[1]
    assert main(["analyze", str(bert), "--text", "she " + TEXT, "--out", str(tmp_path / "c"), *FAST]) == 0
    other = json.loads((tmp_path / "c" / "spectrum.json").read_text())["provenance"]["data"]["inputs sha256"]
    assert other != spectra[0][1]  # other text, other inputs


def test_a_train_runs_provenance_reruns_it(tmp_path, monkeypatch):
    """results.json records the command, seed and data digest; its command, run again into
    another folder, trains the same run on the same data."""
    monkeypatch.chdir(tmp_path)
    args = "train --task synthetic --model vit --depth 1 --width 8 --heads 2 --batch-size 32 --epochs 1 --seed 4"
    assert main([*args.split(), "--threads", "1", "--no-progress", "--out", "first"]) == 0
    first = json.loads(Path("first/results.json").read_text())
    recorded = first["provenance"]
    assert recorded["seeds"] == {"seed": 4} and recorded["data"]["task"] == "synthetic"
    again = shlex.split(recorded["command"])
    again[again.index("--out") + 1] = "again"
    assert main(again[1:]) == 0
    second = json.loads(Path("again/results.json").read_text())
    assert second["test"] == first["test"] and second["provenance"]["data"] == recorded["data"]


def test_theory_and_the_study_report_record_theirs(tmp_path):
    from claims_cells import make_cell

    assert main(["theory", "lnflip", "--depth", "4", "--out", str(tmp_path / "t"), "--no-progress"]) == 0
    recorded = json.loads((tmp_path / "t" / "provenance.json").read_text())["provenance"]
    assert recorded["seeds"] == {"seed": 0} and recorded["command"].startswith("oversmooth theory lnflip")
    for seed in (0, 1):
        make_cell(tmp_path, "fmnist-p7", "softmax", seed, 0.9)
    assert main(["report", str(tmp_path / "fmnist-p7"), "--out", str(tmp_path / "r")]) == 0
    report = (tmp_path / "r" / "report.md").read_text()
    section = report[report.index(PROVENANCE_HEADING) :]
    assert "- cells: 2 of fmnist-p7" in section and "- cells sha256: " in section
