"""Will it fit? Free memory, and a refusal in one line before a run asks for more than there is."""

from __future__ import annotations

from pathlib import Path

from oversmooth.errors import UsageError


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else None (no check)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_memory(needed: float, what: str, fix: str, available: int | None = -1) -> None:
    """UsageError when ``what`` needs more than 80 % of the free memory, naming the ``fix``.

    ``available``: free bytes where the work runs (a GPU's), None for no check; by default the
    host's (``available_bytes``).

    >>> check_memory(2**80, "this run", "make it smaller")
    Traceback (most recent call last):
    ...
    oversmooth.errors.UsageError: this run needs about 1125899906842624.0 GiB but ... GiB is free; make it smaller
    """
    if available == -1:
        available = available_bytes()
    if available is not None and needed > 0.8 * available:
        raise UsageError(f"{what} needs about {needed / 2**30:.1f} GiB but {available / 2**30:.1f} GiB is free; {fix}")
