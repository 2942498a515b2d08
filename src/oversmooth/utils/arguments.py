"""Command-line parsing with one-line errors: a bad flag or value is one line naming it, exit 2,
instead of argparse's usage dump."""

from __future__ import annotations

import argparse


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) instead of a usage dump; its subparsers are too."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")
