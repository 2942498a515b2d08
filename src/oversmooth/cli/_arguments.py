"""Argument types shared by several subcommands (a helper module: it registers no subcommand)."""

from __future__ import annotations

import argparse
import math


def finite_float(text: str) -> float:
    """A float that is a real number: ``nan`` and ``inf`` are refused with one line.

    >>> finite_float("1e-3"), finite_float("-2")
    (0.001, -2.0)
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positions(text: str) -> tuple[int, ...]:
    """``"0"`` or ``"0,-1"`` -> token positions; ``"none"`` -> ``()``.

    >>> positions("0,-1"), positions("none")
    ((0, -1), ())
    """
    if text.strip() == "none":
        return ()
    try:
        return tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"positions must be integers like 0 or 0,-1 (or none), got {text!r}") from None
