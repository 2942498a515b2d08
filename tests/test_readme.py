"""The README and docs say what the code does: their Python examples run and print what they
promise, and every ``oversmooth COMMAND --flag`` they show is a flag of that command's parser."""

import argparse
import contextlib
import io
import pathlib
import re

import pytest

from oversmooth.cli import build_parser

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
BLOCKS = [
    (page, code)
    for page in PAGES[:1] + (ROOT / "docs" / "metrics.md", ROOT / "docs" / "studies.md")
    for code in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
]
# `oversmooth SUB ...` up to the end of its code span / line; a trailing backslash continues the line
COMMAND = re.compile(r"oversmooth (adapt|analyze|metrics|report|study|theory|train)\b((?:[^`\n]|\\\n)*)")


def subcommand_flags() -> dict[str, set[str]]:
    """Every subcommand's option strings, read from the real parser."""
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: {option for a in sub._actions for option in a.option_strings} for name, sub in action.choices.items()}


def shown_flags() -> list[tuple[str, str, str]]:
    """``(page, subcommand, --flag)`` for every flag written after ``oversmooth SUB`` in the pages."""
    found = []
    for page in PAGES:
        for command, rest in COMMAND.findall(page.read_text()):
            rest = rest.split("#")[0]  # a shell comment is prose
            found += [(page.name, command, flag) for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", rest)]
    return found


def test_every_flag_the_pages_show_exists():
    flags, shown = subcommand_flags(), shown_flags()
    assert len(shown) > 30  # the pages do show commands: this test reads them
    missing = sorted({(page, command, flag) for page, command, flag in shown if flag not in flags[command]})
    assert not missing, f"flags in the docs that the command does not take: {missing}"


def test_the_readme_starts_with_the_two_commands_that_make_and_ci_run():
    """The README opens with ``make demo`` and ``make test``; both are Makefile targets, and CI runs the second."""
    first = re.search(r"```bash\n(.*?)```", PAGES[0].read_text(), re.S)
    assert PAGES[0].read_text()[: first.start()].strip() == "# oversmooth"
    assert [line.split("#")[0].strip() for line in first.group(1).splitlines()] == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == "make test"


def test_a_made_up_flag_would_be_caught():
    assert "--no-such-flag" not in subcommand_flags()["train"]


@pytest.mark.parametrize("page, code", BLOCKS, ids=[f"{page.stem}{i}" for i, (page, _) in enumerate(BLOCKS)])
def test_python_block_runs_and_prints(page, code, tmp_path, monkeypatch):
    """Each example runs as written; one with ``print(...)`` prints something, and the comment
    lines right below a ``print(`` line are what it prints (``shown_output``)."""
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(page), "exec"), {"__name__": "readme"})
    if "print(" in code:
        assert out.getvalue().strip()
    printed = out.getvalue().splitlines()
    for shown in shown_output(code):
        first = shown[0][0]
        start = next((i for i, line in enumerate(printed) if line.startswith(first)), None)
        assert start is not None, f"{page.name}: nothing printed starts with {first!r}"
        assert len(printed) - start >= len(shown), f"{page.name}: the page shows more lines than were printed"
        for line, (expected, cut) in zip(printed[start:], shown):
            same = line.startswith(expected) if cut else line == expected
            assert same, f"{page.name}: printed {line!r}, the page shows {expected!r}"


def shown_output(code: str) -> list[list[tuple[str, bool]]]:
    """The output a block shows: per run of comment lines right below a ``print(`` line, the lines
    it shows (``# ``-stripped; a ``#   `` line continues the one above it), each with whether it is
    cut (a trailing ``...``: the rest of that line is left out; else the printed line is exactly it)."""
    runs, lines = [], code.splitlines()
    for i, line in enumerate(lines):
        if "print(" not in line:
            continue
        shown: list[str] = []
        for comment in lines[i + 1 :]:
            if not comment.lstrip().startswith("#"):
                break
            text = comment.lstrip()[1:]
            if text.startswith("   ") and shown:
                shown[-1] += " " + text.strip()
            else:
                shown.append(text.strip())
        if shown:
            runs.append(
                [(s.removesuffix("...").rstrip(" ,"), True) if s.endswith("...") else (s, False) for s in shown]
            )
    return runs


def test_shown_output_reads_the_comments_below_a_print():
    code = "for x in xs:\n    print(x)\n    # a | one,\n    #   two, ...\n    # b\ny = 1\n# not output\n"
    assert shown_output(code) == [[("a | one, two", True), ("b", False)]]


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def check_flag_table(command: str, table: str, page: str) -> None:
    """A page's table of ``oversmooth COMMAND``'s flags cannot drift: every option of the command's
    parser (what ``--help`` prints) is in ``table``, and every ``--flag`` in it is one of them."""
    options, shown = subcommand_flags()[command] - {"-h", "--help"}, set(FLAG.findall(table))
    assert not sorted(options - shown), f"{command} flags missing from {page}'s table: {sorted(options - shown)}"
    assert not sorted(shown - options), f"{page}'s table shows flags {command} lacks: {sorted(shown - options)}"


def test_training_md_flag_table_lists_every_train_flag_and_method():
    """docs/training.md's flag table: every ``oversmooth train`` flag and every method of the registry
    that trains."""
    from oversmooth.mitigations.registry import trainable

    text = (ROOT / "docs" / "training.md").read_text()
    table = text[text.index("## Flags") :].split("\n\n")[1]
    check_flag_table("train", table, "docs/training.md")
    methods = next(line for line in table.splitlines() if line.startswith("| mitigation"))
    assert not [name for name in trainable() if not re.search(rf"[`|]{name}[`\\]", methods)]


def test_analyze_md_usage_block_lists_every_analyze_flag():
    """docs/analyze.md's usage block: every ``oversmooth analyze`` flag, each knob of the registry
    that patches (its flag), and no flag the command lacks."""
    from oversmooth.mitigations.registry import knob_owners

    block = re.search(r"```diagram\n(oversmooth analyze .*?)```", (ROOT / "docs" / "analyze.md").read_text(), re.S)
    check_flag_table("analyze", block.group(1), "docs/analyze.md")
    assert {f"--{k.replace('_', '-')}" for k in knob_owners("patch")} <= set(FLAG.findall(block.group(1)))


def test_a_flag_table_that_drifted_would_be_caught():
    with pytest.raises(AssertionError, match=r"missing from page's table: \['--threads'\]"):
        check_flag_table(
            "theory",
            "--depth --tokens --dim --seed --sequences --attention --out --format --force --no-progress",
            "page",
        )
    with pytest.raises(AssertionError, match=r"shows flags theory lacks: \['--made-up'\]"):
        check_flag_table(
            "theory",
            "--depth --tokens --dim --seed --sequences --attention --out --format --force --no-progress --threads "
            "--made-up",
            "page",
        )
