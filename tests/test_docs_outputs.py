"""Output pasted into README.md and docs/*.md is what its command prints today.

The convention (docs/design.md, "Pasted output and numbers in the docs"): pasted output is a fenced ``text`` block right
after ``<!-- output: COMMAND -->``, or ``<!-- output (slow): COMMAND -->`` when COMMAND takes more
than a few seconds (those tests are marked slow). COMMAND is an ``oversmooth ...`` command line;
the test runs it in a fresh temporary folder, so a relative ``--out`` prints as written, and
checks that the block's lines are consecutive lines of what it prints on stdout (a block may be
an excerpt; every line it shows is checked). The match is exact, with no tolerance: the commands
pasted so far print no timings, and their numbers come from fixed seeds. Every other fenced block
says what it is instead: ``bash``, ``python``, ``toml`` or ``markdown`` (what you type or write)
or ``diagram`` (drawn by hand), so output cannot be pasted unchecked.
"""

from __future__ import annotations

import functools
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
NOT_OUTPUT = {"bash", "python", "toml", "markdown", "diagram"}
MARKER = re.compile(r"<!-- output( \(slow\))?: (.+?) -->")


@dataclass(frozen=True)
class Fence:
    """One fenced block of a page: where it opens, its language, the line above it, its lines."""

    page: str
    line: int  # 1-based line of the opening fence
    language: str
    above: str  # the last non-blank line before the fence
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Pasted:
    """One block of pasted output and the command that printed it."""

    where: str  # page:line
    command: str
    slow: bool
    lines: tuple[str, ...]


def fences(name: str, text: str) -> list[Fence]:
    """The page's fenced blocks (CommonMark: closed by a fence of at least as many backticks)."""
    found, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if opening := re.match(r"(`{3,})(.*)", lines[i]):
            ticks = len(opening.group(1))
            end = next((j for j in range(i + 1, len(lines)) if re.fullmatch(rf"`{{{ticks},}}\s*", lines[j])), None)
            assert end is not None, f"{name}:{i + 1}: a fenced block that never closes"
            above = next((line for line in reversed(lines[:i]) if line.strip()), "")
            found.append(Fence(name, i + 1, opening.group(2).strip(), above, tuple(lines[i + 1 : end])))
            i = end
        i += 1
    return found


def misfiled(fence: Fence) -> str | None:
    """Why this block breaks the convention, or None."""
    marker = MARKER.fullmatch(fence.above.strip())
    if fence.language == "text":
        return None if marker else "a ```text block (pasted output) must follow <!-- output: COMMAND -->"
    if marker:
        return "<!-- output: ... --> must be followed by a ```text block"
    if fence.language in NOT_OUTPUT:
        return None
    return (
        f"a fenced block tagged {fence.language!r}: tag it {', '.join(sorted(NOT_OUTPUT))}, or paste "
        "output as ```text after <!-- output: COMMAND --> so that tests/test_docs_outputs.py checks it"
    )


def pasted(fence_list: list[Fence]) -> list[Pasted]:
    return [
        Pasted(f"{f.page}:{f.line}", m.group(2), bool(m.group(1)), f.lines)
        for f in fence_list
        if f.language == "text" and (m := MARKER.fullmatch(f.above.strip()))
    ]


def is_excerpt(block: tuple[str, ...], printed: str) -> bool:
    """True when ``block`` is a run of consecutive lines of ``printed`` (trailing spaces ignored)."""
    want = [line.rstrip() for line in block]
    have = [line.rstrip() for line in printed.splitlines()]
    return bool(want) and any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


@functools.cache
def printed(command: str) -> str:
    """stdout of ``command`` (``oversmooth ...``), run from a fresh temporary folder."""
    argv = shlex.split(command)
    assert argv[0] == "oversmooth", f"pasted output must come from an `oversmooth` command, not {command!r}"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-m", "oversmooth", *argv[1:]],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    assert done.returncode == 0, f"`{command}` exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


ALL_FENCES = [f for page in PAGES for f in fences(page.name, page.read_text())]
PASTED = pasted(ALL_FENCES)


def test_every_fenced_block_is_checked_output_or_says_what_it_is():
    assert len(ALL_FENCES) > 20 and len(PASTED) >= 5  # the pages have blocks: this test reads them
    wrong = [f"{f.page}:{f.line}: {why}" for f in ALL_FENCES if (why := misfiled(f))]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    "block", [pytest.param(p, marks=[pytest.mark.slow] if p.slow else [], id=p.where) for p in PASTED]
)
def test_pasted_output_is_what_the_command_prints(block):
    out = printed(block.command)
    assert is_excerpt(block.lines, out), (
        f"{block.where}: the block is not what `{block.command}` prints now; paste its current output:\n{out}"
    )


def test_the_readme_shows_what_make_demo_runs():
    """The README's first pasted output is the demo's, and its command is the Makefile's demo recipe."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^demo:.*\n\t(.+)$", makefile, re.M).group(1).replace("$(BIN)/", "")
    assert PASTED[0].where.startswith("README.md") and PASTED[0].command == recipe


def test_a_changed_number_or_a_gap_is_caught():
    text = "a\nlayer 1  0.124\nlayer 2  0.135\nb\n"
    assert is_excerpt(("layer 1  0.124  ", "layer 2  0.135"), text)
    assert not is_excerpt(("layer 1  0.125", "layer 2  0.135"), text)  # a stale number
    assert not is_excerpt(("a", "layer 2  0.135"), text)  # lines that are not consecutive
    assert not is_excerpt((), text)


def test_the_convention_is_enforced_on_a_made_up_page():
    page = (
        "<!-- output: oversmooth --version -->\n```text\noversmooth 0.0.0\n```\n\n"
        "```\n1.0 2.0\n```\n\n```text\nunmarked\n```\n"
    )
    found = fences("made-up.md", page)
    assert [misfiled(f) is None for f in found] == [True, False, False]
    (stale,) = pasted(found)
    assert stale.command == "oversmooth --version" and not stale.slow
    assert not is_excerpt(stale.lines, printed(stale.command))  # the real version is not 0.0.0
    assert is_excerpt(tuple(printed(stale.command).splitlines()), printed(stale.command))
