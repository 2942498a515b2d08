"""The ``oversmooth`` command. Each module of this package adds one subcommand.

A subcommand module defines ``register(subparsers)``, which adds its parser and sets
``run=function(args) -> int``. Modules import torch and friends inside ``run`` so that
``oversmooth --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import shlex
import sys

from oversmooth.errors import UsageError
from oversmooth.utils.arguments import OneLineParser


class _Version(argparse.Action):
    """``--version``: the version, the git commit it runs from, Python and the libraries
    (``utils.provenance.version_line``, read only when asked: it runs git)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from oversmooth.utils.provenance import version_line

        print(version_line())
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="oversmooth",
        description="Measure, diagnose and mitigate oversmoothing in deep Transformers.",
    )
    parser.add_argument(
        "--version", action=_Version, help="the version, its git commit, and Python's, torch's and transformers'"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):  # _arguments: shared argument types, no subcommand
            importlib.import_module(f"{__name__}.{info.name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.invocation = shlex.join(["oversmooth", *(sys.argv[1:] if argv is None else argv)])  # as typed
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return int(args.run(args) or 0)
    except UsageError as error:
        print(f"oversmooth {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"oversmooth {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `oversmooth metrics --json | head`: the reader stopped early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
    except OSError as error:  # a full disk, a folder gone or made read-only while we ran
        where = f" ({error.filename})" if error.filename else ""
        print(
            f"oversmooth {args.command}: error: cannot read or write{where}: {error.strerror or error}; "
            "free some space or choose another path (files written so far are whole: writes are atomic)",
            file=sys.stderr,
        )
        return 2
