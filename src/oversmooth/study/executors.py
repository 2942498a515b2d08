"""The submitit executors that run a study's cells: local processes, ``jobs`` at a time, or one
Slurm job array. Their own files (pickled jobs, the job processes' logs, the local controllers'
output in ``controllers.log``) live in ``DIR/submitit/``; the cells' files stay in their folders."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import submitit

import oversmooth
from oversmooth.study.cell_job import STOP_SECONDS, CellJob
from oversmooth.study.cell_state import is_locked
from oversmooth.study.executor_settings import ExecutorSettings

SUBMITIT_DIR = "submitit"
CONTROLLERS_LOG = "controllers.log"  # DIR/submitit/: what submitit's local controllers print
POLL_SECONDS = 0.05  # how often the local runner looks for a finished cell


def make_executor(settings: ExecutorSettings, out: Path, threads: int) -> submitit.Executor:
    """The submitit executor of ``settings``, its files in ``out/submitit``."""
    folder = out / SUBMITIT_DIR / "%j"
    if settings.kind == "local":
        executor = submitit.LocalExecutor(folder)
        executor.update_parameters(
            timeout_min=settings.minutes, tasks_per_node=settings.tasks_per_node, gpus_per_node=settings.gpus_per_node
        )
        return executor
    executor = submitit.SlurmExecutor(folder)
    parameters = {
        "ntasks_per_node": settings.tasks_per_node,
        "cpus_per_task": settings.cpus_per_task or threads,
        "array_parallelism": settings.jobs,
        "job_name": "oversmooth-cell",
        "additional_parameters": settings.sbatch_options(),
    }
    if settings.gpus_per_node:
        parameters["gpus_per_node"] = settings.gpus_per_node
    if settings.time is not None:  # else the partition's default
        parameters["time"] = settings.minutes
    if settings.partition:
        parameters["partition"] = settings.partition
    executor.update_parameters(**parameters)
    return executor


@contextlib.contextmanager
def stderr_into(path: Path) -> Iterator[None]:
    """Processes started inside write their stderr to ``path`` (appended), not to ours: submitit's
    local controller prints the traceback of the KeyboardInterrupt it is stopped with, which the
    terminal of a study stopped by Ctrl-C must not show."""
    sys.stderr.flush()
    ours = os.dup(2)
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(ours, 2)
        os.close(ours)


@contextlib.contextmanager
def this_code() -> Iterator[None]:
    """Jobs submitted inside import this ``oversmooth`` (its folder first on ``PYTHONPATH``, which
    the local job processes and sbatch inherit), not another copy installed elsewhere."""
    before = os.environ.get("PYTHONPATH")
    root = str(Path(oversmooth.__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join([root, *([before] if before else [])])
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def run_local(
    executor: submitit.Executor, jobs: list[CellJob], slots: int, on_done: Callable[[int, tuple[str, int]], None]
) -> None:
    """Run ``jobs``, ``slots`` at a time; ``on_done(index, result)`` as each ends. An interrupt
    (KeyboardInterrupt) stops the running ones, each train process first, and re-raises.

    submitit stops a local job with SIGINT, and a process started with SIGINT ignored (a shell's
    background job, ``nohup ... &``) hands that on to the jobs it starts: they start with Python's
    default instead, so that they can be stopped."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    waiting, live = list(enumerate(jobs)), {}
    log = Path(executor.folder).parent / CONTROLLERS_LOG  # executor.folder: DIR/submitit/%j
    try:
        while waiting or live:
            while waiting and len(live) < slots:
                index, job = waiting.pop(0)
                with this_code(), stderr_into(log):
                    live[index] = executor.submit(job)
            for index, handle in list(live.items()):
                if handle.done():
                    del live[index]
                    on_done(index, _result(handle))
            time.sleep(POLL_SECONDS)
    except BaseException:
        for handle in live.values():
            handle.cancel()
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline and any(
            not handle.done() or is_locked(Path(jobs[index].folder)) for index, handle in live.items()
        ):
            time.sleep(POLL_SECONDS)  # each job process stops its train process; the last one frees the lock
        raise


def _result(handle: submitit.Job) -> tuple[str, int]:
    """Task 0's ``CellJob`` result (with ``tasks_per_node`` > 1 the others are DDP workers)."""
    try:
        return handle.results()[0]
    except Exception as error:  # the job process itself failed: its log is in DIR/submitit/
        return "failed", getattr(error, "returncode", 1)


def submit_array(executor: submitit.Executor, jobs: list[CellJob]) -> list[str]:
    """Submit ``jobs`` as one job array; their job ids (``ARRAY_INDEX``)."""
    with this_code(), executor.batch():
        handles = [executor.submit(job) for job in jobs]
    return [handle.job_id for handle in handles]
