"""``oversmooth --help`` and every subcommand's ``--help`` import neither torch nor transformers:
help is instant, whatever the command does when it runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from oversmooth.cli import build_parser

COMMANDS = ["adapt", "analyze", "claims", "methods", "metrics", "report", "study", "theory", "train"]
# In a fresh interpreter: print the help of ``args``, then which heavy packages were imported.
HELP = """
import sys
from oversmooth.cli import main
try:
    main({args!r})
except SystemExit as done:
    assert done.code == 0, done.code
print("imported:", sorted(name for name in ("torch", "transformers") if name in sys.modules))
"""


def test_the_list_here_is_every_subcommand():
    subparsers = next(action for action in build_parser()._actions if action.dest == "command")
    assert sorted(subparsers.choices) == COMMANDS


@pytest.mark.parametrize("args", [["--help"], *([command, "--help"] for command in COMMANDS)], ids=" ".join)
def test_help_imports_no_torch(args):
    result = subprocess.run([sys.executable, "-c", HELP.format(args=args)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    *help_text, last = result.stdout.splitlines()
    assert "usage: oversmooth" in "\n".join(help_text)
    assert last == "imported: []", last
