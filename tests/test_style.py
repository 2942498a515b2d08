"""The tree is formatted and linted as pyproject.toml's [tool.ruff] says (make test checks it).

Fix a failure with ``.venv/bin/ruff format . && .venv/bin/ruff check --fix .``.
"""

from __future__ import annotations

import re
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


#: a citation of the design notes kept outside the repository ("DESIGN 9.8", "DESIGN §4", "DESIGN.md")
OUTSIDE_CITATION = re.compile(r"\bDESIGN\b")


def outside_citations(root: Path) -> list[str]:
    """``path:line`` of each line under ``root`` that cites the design notes outside the repository."""
    return [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE_CITATION.search(line)
    ]


@pytest.mark.parametrize("folder", ["src", "scripts", "benchmarks"])
def test_code_cites_papers_and_repository_documents_only(folder):
    """A reader of the code has the papers and docs/ (docs/registrations/, docs/design.md), not the
    design notes the project started from: cite the paper by name and equation, or the document."""
    assert outside_citations(ROOT / folder) == []


def test_the_citation_check_finds_an_outside_citation(tmp_path):
    (tmp_path / "gates.py").write_text('"""The gates (DESIGN 9.3)."""\n\nREDESIGNED = "a word that is no citation"\n')
    (tmp_path / "holm.py").write_text("# Holm within each family (docs/registrations/second-protocol.md)\n")
    assert outside_citations(tmp_path) == ["gates.py:1"]
