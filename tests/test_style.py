"""The tree is formatted and linted as pyproject.toml's [tool.ruff] says (make test checks it).

Fix a failure with ``.venv/bin/ruff format . && .venv/bin/ruff check --fix .``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["format", "--check"], ["check"]], ids=["format", "lint"])
def test_ruff_passes(command):
    done = subprocess.run([sys.executable, "-m", "ruff", *command, "."], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_ruff_would_catch_an_unformatted_or_undefined_line(tmp_path):
    """The check can fail: a file with an undefined name and cramped spacing is flagged by both."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("x=undefined_name+1\n")
    for command in (["format", "--check"], ["check"]):
        done = subprocess.run([sys.executable, "-m", "ruff", *command, "."], cwd=tmp_path, capture_output=True)
        assert done.returncode != 0, command
