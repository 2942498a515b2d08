"""Markdown tables, the one way every report writes them."""

from __future__ import annotations

import statistics
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


def mean_sd(values: Sequence[float], spec: str = ".2f") -> str:
    """A table cell: the mean ± SD of ``values`` in format ``spec`` (one value: alone; none: –).

    >>> mean_sd([1.0, 2.0, 3.0]), mean_sd([0.5], ".3f"), mean_sd([])
    ('2.00 ± 1.00', '0.500', '–')
    """
    if not values:
        return "–"
    spread = f" ± {statistics.stdev(values):{spec}}" if len(values) > 1 else ""
    return f"{statistics.fmean(values):{spec}}{spread}"
