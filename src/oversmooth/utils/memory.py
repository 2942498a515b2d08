"""Will it fit? Free memory, and a refusal in one line before a run asks for more than there is;
and how much a stretch of work held at most (``PeakMemory``)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
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


class PeakMemory:
    """The most memory a stretch of work held, watched from construction to ``read``.

    On CUDA: torch's allocated bytes (``max_memory_allocated``, its peak reset at the start). On a
    Linux CPU: the process's resident set, its peak (``VmHWM``) reset at the start through
    ``/proc/self/clear_refs`` and freed heap first handed back to the system (glibc's
    ``malloc_trim``), so what an earlier stretch freed counts for neither it nor this one.
    Elsewhere nothing is measured (``read`` gives None)."""

    def __init__(self, device) -> None:
        import torch

        self.cuda = torch.device(device).type == "cuda"
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.start = torch.cuda.memory_allocated()
            return
        gc.collect()
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        try:
            Path("/proc/self/clear_refs").write_text("5")  # 5: reset the peak resident set to the current
            self.start = _status_bytes("VmRSS")
        except OSError:
            self.start = None

    @property
    def measure(self) -> str:
        return "CUDA memory allocated by torch" if self.cuda else "resident memory of the process (RSS)"

    def read(self) -> dict | None:
        """``{"measure", "start_mib", "peak_mib"}``: what was held at the start and at most since, or None."""
        import torch

        if self.cuda:
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
        elif self.start is None:
            return None
        else:
            peak = _status_bytes("VmHWM")
        return {"measure": self.measure, "start_mib": self.start / 2**20, "peak_mib": peak / 2**20}


def _status_bytes(field: str) -> int:
    """A ``kB`` field of ``/proc/self/status`` in bytes (``VmRSS``: resident now, ``VmHWM``: its peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise OSError(f"no {field} in /proc/self/status")
