"""Run the cells of a study, each as its own ``oversmooth train`` process, ``jobs`` at a time.

Folder layout::

    DIR/study.json                  the study config (rewritten by every run)
    DIR/cells/<cell>/cell.json      what the cell is (task, norm, depth, method, seed, train args)
    DIR/cells/<cell>/train.log      the train process's output (appended on every attempt)
    DIR/cells/<cell>/...            the train run itself: checkpoint.pt, metrics.jsonl, results.json

A cell whose ``results.json`` exists (completed or diverged) is skipped; any other cell runs with
``--resume auto``, so a cell killed mid-run continues from its last checkpoint. Every file is
written atomically, so the study can be killed at any moment and reported on at any moment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from oversmooth.atomic import atomic_write
from oversmooth.errors import UsageError
from oversmooth.run_lock import LOCK_FD, acquire
from oversmooth.study.config import Cell, StudyConfig

CELLS_DIR, CELL_FILE, STUDY_FILE, LOG_FILE = "cells", "cell.json", "study.json", "train.log"
# The files `oversmooth train` writes (oversmooth.train.METRICS_FILE / RESULTS_FILE), named again
# here so that `oversmooth --help` does not import torch; a test keeps the two in step.
METRICS_FILE, RESULTS_FILE = "metrics.jsonl", "results.json"


def cell_dir(out: Path, cell: Cell) -> Path:
    return out / CELLS_DIR / cell.name


def is_finished(folder: Path) -> bool:
    """A train run that ended (completed or diverged) has its ``results.json``."""
    return (folder / RESULTS_FILE).is_file()


def train_command(cell: Cell, folder: Path, threads: int) -> list[str]:
    """The full command line of one cell (this Python, ``-m oversmooth train``)."""
    return [sys.executable, "-m", "oversmooth", "train", *cell.train_args(), "--out", str(folder),
            "--resume", "auto", "--no-progress", "--threads", str(threads)]


@dataclass
class CellOutcome:
    """How one cell's process ended: ``completed``, ``diverged``, ``failed`` (exit code != 0,
    see its train.log), ``skipped`` (finished before) or ``busy`` (another process is training it)."""

    cell: Cell
    status: str
    returncode: int = 0


class _Processes:
    """The live train processes, so an interrupted study can stop them all."""

    def __init__(self) -> None:
        self._lock, self._live = threading.Lock(), set()
        self.stopping = False

    def run(self, command: list[str], log: Path, lock: int) -> int:
        """Run ``command`` with its output appended to ``log``; the child inherits the cell's
        ``lock`` descriptor, so the cell stays locked while the child lives, even if we die."""
        with open(log, "a") as handle, self._lock:
            if self.stopping:
                return -1
            process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env={**os.environ, "PYTHONUNBUFFERED": "1", LOCK_FD: str(lock)},
                                       pass_fds=(lock,))
            self._live.add(process)
        try:
            return process.wait()
        finally:
            with self._lock:
                self._live.discard(process)

    def stop(self) -> None:
        with self._lock:
            self.stopping = True
            for process in self._live:
                process.terminate()
        for process in list(self._live):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def write_study(study: StudyConfig, out: Path, command: str = "") -> None:
    with atomic_write(out / STUDY_FILE) as handle:
        json.dump({**study.to_dict(), "command": command}, handle, indent=2)


def run_cell(cell: Cell, out: Path, threads: int, processes: _Processes) -> CellOutcome:
    folder = cell_dir(out, cell)
    if is_finished(folder):
        return CellOutcome(cell, "skipped")
    try:
        lock = acquire(folder)
    except UsageError:
        return CellOutcome(cell, "busy")
    try:
        with atomic_write(folder / CELL_FILE) as handle:
            json.dump(cell.to_dict(), handle, indent=2)
        code = processes.run(train_command(cell, folder, threads), folder / LOG_FILE, lock)
    finally:
        os.close(lock)
    if code != 0 or not is_finished(folder):
        return CellOutcome(cell, "failed", code)
    return CellOutcome(cell, json.loads((folder / RESULTS_FILE).read_text())["status"])


def run_study(study: StudyConfig, out: str | Path, jobs: int = 1, threads: int = 1,
              on_done: Callable[[CellOutcome], None] = lambda outcome: None, command: str = "") -> list[CellOutcome]:
    """Run every unfinished cell, ``jobs`` processes at a time with ``threads`` torch threads each.

    ``command`` (the command line that started the study) is kept in ``study.json`` for the report.
    ``on_done(outcome)`` is called as each cell ends. A failing cell does not stop the others.
    Ctrl-C (KeyboardInterrupt) terminates the running cells (their checkpoints stay) and re-raises.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_study(study, out, command)
    processes = _Processes()

    def one(cell: Cell) -> CellOutcome:
        outcome = run_cell(cell, out, threads, processes)
        if not processes.stopping:  # cells stopped by an interrupt are not news
            on_done(outcome)
        return outcome

    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = [pool.submit(one, cell) for cell in study.cells()]
        return [future.result() for future in futures]
    except BaseException:
        processes.stop()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
