"""What one submitit job does for one cell, wherever it runs: lock the cell, run its
``oversmooth train --spec`` process (output appended to ``train.log``), measure and archive it.

With several tasks (``tasks_per_node`` > 1) every task runs one train process of a torch.distributed
group (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``... from submitit); task 0 holds the lock and
writes the cell's state. When the scheduler preempts the job or its time runs out, submitit calls
``checkpoint``: the train process is stopped (its checkpoint stays), the cell is marked
``preempted`` and the same job is requeued; it resumes from the checkpoint, bit-identical.
Ctrl-C (SIGINT, from the terminal or from the local controller stopping the job) marks the cell
``interrupted`` at once, before the train process is stopped: the controller kills the job a
second later, and a rerun resumes the cell from its last checkpoint.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import submitit

from oversmooth.errors import UsageError
from oversmooth.study.archive import archive_cell
from oversmooth.study.cell_state import CellState
from oversmooth.study.files import ANALYSIS_FILE, LOG_FILE, MODEL_DIR, RESULTS_FIELDS, RESULTS_FILE, SPEC_FILE
from oversmooth.train.run_lock import LOCK_FD, acquire
from oversmooth.utils.json_files import read_table

_PR_SET_PDEATHSIG = 1
STOP_SECONDS = 30  # a train process asked to stop gets this long before SIGKILL


def train_command(spec_file: Path) -> list[str]:
    """The train process of a cell whose ``worker_spec`` is saved in ``spec_file``."""
    return [sys.executable, "-m", "oversmooth", "train", "--spec", str(spec_file)]


def analysis_command(module: str, folder: Path, threads: int) -> list[str]:
    """Measure a finished cell's trained model with ``python -m module`` (``CellJob.analysis``)."""
    return [sys.executable, "-m", module, str(folder), "--threads", str(threads)]


def _die_with_parent() -> None:  # in the child, before exec: SIGTERM when this job process dies
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class CellJob(submitit.helpers.Checkpointable):
    """Train (unless ``results.json`` exists) and, with ``archive`` (the cell's folder in the
    tracked copy), measure and archive the cell in ``folder``. Returns ``(status, returncode)``:
    completed, diverged, failed, interrupted or busy (another process holds the cell).

    ``analysis``: the module that measures the trained model before it is archived, run as
    ``python -m ANALYSIS FOLDER --threads N`` to write the cell's ``analysis.json`` (the claims'
    ``oversmooth.claims.cell_analysis``); None: archived unmeasured."""

    folder: str
    threads: int
    archive: str | None = None
    executor: str = "local"
    analysis: str | None = None

    def __post_init__(self) -> None:
        self._process: subprocess.Popen | None = None

    def __call__(self) -> tuple[str, int]:
        folder = Path(self.folder)
        job = submitit.JobEnvironment()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if job.num_tasks > 1:
            env.update({key: str(value) for key, value in _distributed().items()})
        if job.global_rank != 0:
            return "worker", self._run(train_command(folder / SPEC_FILE), folder, env, None)
        try:
            lock = acquire(folder)
        except UsageError:
            return "busy", 0
        interrupted = signal.signal(signal.SIGINT, self._interrupted(folder, job.job_id))
        try:
            trained = (folder / RESULTS_FILE).is_file()
            if not trained:
                CellState("running", self.executor, job.job_id).write(folder)
                code = self._run(train_command(folder / SPEC_FILE), folder, env, lock)
                if code != 0 or not (folder / RESULTS_FILE).is_file():
                    stopped = code in (130, -signal.SIGTERM, -signal.SIGKILL, -signal.SIGINT)
                    state = "interrupted" if stopped else "failed"
                    if CellState.read(folder) != CellState("preempted", self.executor, job.job_id):
                        CellState(state, self.executor, job.job_id, code).write(folder)
                    return state, code
            if self.archive is not None:
                measured = self.analysis is None or (folder / ANALYSIS_FILE).is_file()
                if (folder / MODEL_DIR).is_dir() and not measured:
                    command = analysis_command(self.analysis, folder, self.threads)
                    self._run(command, folder, env, lock)  # failure: logged
                archive_cell(folder, Path(self.archive))
        finally:
            signal.signal(signal.SIGINT, interrupted)
            os.close(lock)
        return "skipped" if trained else _status(folder), 0

    def _interrupted(self, folder: Path, job_id: str) -> Callable:
        """The SIGINT handler of the cell in ``folder``: mark it ``interrupted`` (unless it has
        finished) and stop as Ctrl-C does, ignoring a second SIGINT (the terminal's and the local
        controller's both come) so that nothing cuts the stop short."""

        def handler(signum, frame) -> None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if not (folder / RESULTS_FILE).is_file():
                CellState("interrupted", self.executor, job_id).write(folder)
            raise KeyboardInterrupt

        return handler

    def _run(self, command: list[str], folder: Path, env: dict[str, str], lock: int | None) -> int:
        """Run ``command`` with its output appended to the cell's log; a child inherits the cell's
        ``lock``, so the cell stays locked while it lives, and dies with this process."""
        if lock is not None:
            env = {**env, LOCK_FD: str(lock)}
        with open(folder / LOG_FILE, "a") as log:
            self._process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                pass_fds=() if lock is None else (lock,),
                preexec_fn=_die_with_parent,
            )
        try:
            return self._process.wait()
        except BaseException:  # Ctrl-C, or the local controller stopping us: stop the child first
            self._stop()
            raise
        finally:
            self._process = None

    def _stop(self) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def checkpoint(self, *args, **kwargs) -> submitit.helpers.DelayedSubmission:
        """Preempted or out of time: stop the train process (its last checkpoint stays), mark the
        cell preempted, and have submitit requeue this same job."""
        self._stop()
        job = submitit.JobEnvironment()
        if job.global_rank == 0:
            CellState("preempted", self.executor, job.job_id).write(Path(self.folder))
        return submitit.helpers.DelayedSubmission(
            CellJob(self.folder, self.threads, self.archive, self.executor, self.analysis)
        )

    def __getstate__(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key != "_process"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._process = None


def _distributed() -> dict[str, object]:
    """torch.distributed's environment for this task of the job (what torchrun would set)."""
    where = submitit.helpers.TorchDistributedEnvironment()
    return {
        "MASTER_ADDR": where.master_addr,
        "MASTER_PORT": where.master_port,
        "RANK": where.rank,
        "WORLD_SIZE": where.world_size,
        "LOCAL_RANK": where.local_rank,
        "LOCAL_WORLD_SIZE": where.local_world_size,
    }


def _status(folder: Path) -> str:
    return read_table(folder / RESULTS_FILE, RESULTS_FIELDS, f"delete {folder} to train the cell again")["status"]
