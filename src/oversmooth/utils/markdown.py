"""Markdown tables, the one way every report writes them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def markdown_table(header: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """The table's lines: ``| a | b |``, then ``|---|---|``, then one line per row, each cell as
    ``str`` gives it (a ``|`` inside a cell escaped, so it stays in its column).

    >>> print(markdown_table(["x", "y"], [[1, "a|b"]]))
    | x | y |
    |---|---|
    | 1 | a\\|b |
    """
    return "\n".join([_line(header), "|---" * len(header) + "|", *map(_line, rows)])


def _line(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"
