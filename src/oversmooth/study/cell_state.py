"""Where a cell stands, read from its own folder (the single source of truth) and the Slurm queue.

``state.json`` records the last thing that happened to the cell: ``submitted`` (with its job id),
``running`` (a process trains it), ``preempted`` (the scheduler stopped it; it resumes from its
checkpoint), ``interrupted`` (its train process was stopped by a signal) or ``failed`` (it exited
with an error). ``cell_status`` turns that, the cell's ``.lock``, its ``results.json`` and the
queue into one of: pending, running, completed, diverged, preempted, interrupted (local cells:
Ctrl-C or a signal stopped them), failed.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from oversmooth.study.files import CHECKPOINT_FILE, LOCK_FILE, LOG_FILE, RESULTS_FIELDS, RESULTS_FILE
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.json_files import read_table

STATE_FILE = "state.json"
LOG_TAIL_LINES = 5
RERUN = {True: "resumes it from its last checkpoint", False: "starts it again (it reached no checkpoint)"}


@dataclass(frozen=True)
class CellState:
    """One line of a cell's history: what happened, under which executor and job id."""

    state: str
    executor: str = "local"
    job: str = ""
    returncode: int | None = None

    def write(self, folder: Path) -> None:
        with atomic_write(folder / STATE_FILE) as handle:
            json.dump(
                {
                    "state": self.state,
                    "executor": self.executor,
                    "job": self.job,
                    "returncode": self.returncode,
                    "host": socket.gethostname(),
                    "pid": os.getpid(),
                    "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                },
                handle,
                indent=2,
            )

    @classmethod
    def read(cls, folder: Path) -> CellState | None:
        try:
            data = json.loads((folder / STATE_FILE).read_text())
        except (OSError, ValueError):
            return None
        return cls(data["state"], data.get("executor", "local"), data.get("job", ""), data.get("returncode"))


def is_locked(folder: Path) -> bool:
    """Whether a process holds the cell's lock (trains it now); creates nothing."""
    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def log_tail(folder: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` non-empty lines of the cell's ``train.log``."""
    try:
        with open(folder / LOG_FILE, "rb") as log:
            log.seek(max(0, log.seek(0, 2) - 8192))
            text = log.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join([line for line in text.splitlines() if line.strip()][-lines:])


@dataclass(frozen=True)
class CellStatus:
    """A cell's state for people (``oversmooth study ... --status``) and for the runner."""

    state: str
    job: str = ""
    detail: str = ""
    queued: bool = False  # Slurm holds its job in the queue

    @property
    def finished(self) -> bool:
        return self.state in ("completed", "diverged")

    @property
    def active(self) -> bool:
        """Somebody (a process or the queue) has it in hand: do not submit it again."""
        return self.state == "running" or self.queued


def cell_status(folder: Path, queue: dict[str, str]) -> CellStatus:
    """``queue``: job id -> Slurm state of the jobs still queued (``oversmooth.study.slurm.queued``)."""
    if (folder / RESULTS_FILE).is_file():
        return CellStatus(
            read_table(folder / RESULTS_FILE, RESULTS_FIELDS, f"delete {folder} to train the cell again")["status"]
        )
    last = CellState.read(folder)
    if is_locked(folder):
        return CellStatus("running", last.job if last else "")
    if last is None:
        return CellStatus("pending")
    in_queue = queue.get(last.job) if last.executor == "slurm" else None
    if in_queue == "RUNNING":
        return CellStatus("running", last.job)
    if in_queue is not None:  # queued: for the first time, or again after a requeue
        return CellStatus("pending" if last.state == "submitted" else "preempted", last.job, in_queue.lower(), True)
    if last.state in ("preempted", "interrupted") and last.executor == "local":
        saved = (folder / CHECKPOINT_FILE).is_file()
        return CellStatus(last.state, last.job, f"a rerun {RERUN[saved]}")
    return CellStatus("failed", last.job, log_tail(folder) or f"no log; last state {last.state}")
