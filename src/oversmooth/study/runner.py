"""Run the cells of a study, each as its own ``oversmooth train --spec`` process, ``jobs`` at a time.

Folder layout::

    DIR/study.json                  the study config (rewritten by every run)
    DIR/cells/<cell>/cell.json      what the cell is (task, norm, depth, method, seed, its RunSpec)
    DIR/cells/<cell>/spec.json      the RunSpec the train process runs (the cell's, with out, threads...)
    DIR/cells/<cell>/train.log      the train process's output (appended on every attempt)
    DIR/cells/<cell>/...            the train run itself: checkpoint.pt, metrics.jsonl, results.json

A cell whose ``results.json`` exists (completed or diverged) is skipped; any other cell runs with
``resume = "auto"``, so a cell killed mid-run continues from its last checkpoint. Every file is
written atomically, so the study can be killed at any moment and reported on at any moment.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from oversmooth.atomic import atomic_write
from oversmooth.errors import UsageError
from oversmooth.run_lock import LOCK_FD, acquire
from oversmooth.study.archive import archive_cell, archive_study, archived, is_archived
from oversmooth.run_spec import RunSpec
from oversmooth.study.config import Cell, StudyConfig, stored_spec
from oversmooth.study.files import ANALYSIS_FILE, CELL_FILE, CELLS_DIR, LOG_FILE, MODEL_DIR, RESULTS_FILE, \
    SPEC_FILE, STUDY_FILE


def check_cells(study: StudyConfig) -> None:
    """Check every cell's run as ``train.run`` would, and read each task's data once: bad fields,
    methods or knobs, or missing data, fail here (UsageError naming the cell) before anything runs."""
    from oversmooth.train import task_factory
    from oversmooth.train.run import check_run

    checked_tasks = set()
    with tempfile.TemporaryDirectory() as scratch:
        for cell in study.cells():
            try:
                spec = dataclasses.replace(cell.spec(), out=scratch)
                check_run(spec)
                if cell.task not in checked_tasks:
                    task_factory.check_data(cell.task, spec.data_dir)
                    checked_tasks.add(cell.task)
            except UsageError as error:
                raise UsageError(f"cell {cell.name}: {error}") from None


def cell_dir(out: Path, cell: Cell) -> Path:
    return out / CELLS_DIR / cell.name


def is_finished(folder: Path) -> bool:
    """A train run that ended (completed or diverged) has its ``results.json``."""
    return (folder / RESULTS_FILE).is_file()


def worker_spec(cell: Cell, folder: Path, threads: int) -> RunSpec:
    """The cell's run as its train process runs it: in ``folder``, resumed if begun, no progress bar."""
    return dataclasses.replace(cell.spec(), out=str(folder), resume="auto", progress=False, threads=threads)


def train_command(spec_file: Path) -> list[str]:
    """The train process of a cell whose ``worker_spec`` is saved in ``spec_file``."""
    return [sys.executable, "-m", "oversmooth", "train", "--spec", str(spec_file)]


def analysis_command(folder: Path, threads: int) -> list[str]:
    """Measure a finished cell's trained model (``oversmooth.study.cell_analysis``)."""
    return [sys.executable, "-m", "oversmooth.study.cell_analysis", str(folder), "--threads", str(threads)]


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


def _unmeasured(folder: Path, target: Path | None) -> bool:
    """A trained model here whose measurements the archive lacks."""
    return (folder / MODEL_DIR).is_dir() and target is not None and not (target / ANALYSIS_FILE).is_file()


def run_cell(cell: Cell, out: Path, threads: int, processes: _Processes,
             archive: Path | None = None) -> CellOutcome:
    folder = cell_dir(out, cell)
    target = archived(archive, cell.study, cell.name) if archive is not None else None
    if target is not None and is_archived(target) and not _unmeasured(folder, target):
        return CellOutcome(cell, "skipped")
    trained = is_finished(folder)
    if trained and target is None:
        return CellOutcome(cell, "skipped")
    try:
        lock = acquire(folder)
    except UsageError:
        return CellOutcome(cell, "busy")
    try:
        if not trained:
            with atomic_write(folder / CELL_FILE) as handle:
                json.dump(cell.to_dict(), handle, indent=2)
            worker_spec(cell, folder, threads).save(folder / SPEC_FILE)
            code = processes.run(train_command(folder / SPEC_FILE), folder / LOG_FILE, lock)
            if code != 0 or not is_finished(folder):
                return CellOutcome(cell, "failed", code)
        if target is not None:
            if (folder / MODEL_DIR).is_dir() and not (folder / ANALYSIS_FILE).is_file():
                processes.run(analysis_command(folder, threads), folder / LOG_FILE, lock)  # failure: logged
            archive_cell(folder, target)
    finally:
        os.close(lock)
    return CellOutcome(cell, "skipped" if trained else json.loads((folder / RESULTS_FILE).read_text())["status"])


def check_archive(study: StudyConfig, archive: Path) -> None:
    """Refuse (UsageError) when a cell archived under ``archive`` was trained in another setting
    (``RunSpec.setting``) than the study's cell of that name: it would be skipped as finished,
    wrongly. Cells archived with ``train_args`` instead of a spec are read back (``stored_spec``)."""
    for cell in study.cells():
        info = archived(archive, cell.study, cell.name) / CELL_FILE
        if info.is_file() and stored_spec(json.loads(info.read_text())).setting() != cell.spec().setting():
            raise UsageError(f"{info.parent} was trained with other settings than this study's {cell.name}; "
                             "move it away or use another --results folder")


def run_study(study: StudyConfig, out: str | Path, jobs: int = 1, threads: int = 1,
              on_done: Callable[[CellOutcome], None] = lambda outcome: None, command: str = "",
              archive: str | Path | None = None) -> list[CellOutcome]:
    """Run every unfinished cell, ``jobs`` processes at a time with ``threads`` torch threads each.

    ``command`` (the command line that started the study) is kept in ``study.json`` for the report.
    ``archive``: the root of the tracked copy (``results/``): cells archived there are skipped,
    finished ones are measured and copied there.
    ``on_done(outcome)`` is called as each cell ends. A failing cell does not stop the others.
    Ctrl-C (KeyboardInterrupt) terminates the running cells (their checkpoints stay) and re-raises.
    """
    out = Path(out)
    archive = None if archive is None else Path(archive)
    if archive is not None:
        check_archive(study, archive)
    out.mkdir(parents=True, exist_ok=True)
    write_study(study, out, command)
    if archive is not None:
        archive_study(out / STUDY_FILE, archive, study.name)
    processes = _Processes()

    def one(cell: Cell) -> CellOutcome:
        outcome = run_cell(cell, out, threads, processes, archive)
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
