"""Run the cells of a study through a submitit executor (``oversmooth.study.executors``): local
processes, ``jobs`` at a time, or one Slurm job array. Each cell is one ``CellJob``: its own
``oversmooth train --spec`` process.

Folder layout::

    DIR/study.json                  the study config (rewritten by every run)
    DIR/cells/<cell>/cell.json      what the cell is (task, norm, depth, method, seed, its RunSpec)
    DIR/cells/<cell>/spec.json      the RunSpec the train process runs (the cell's, with out, threads...)
    DIR/cells/<cell>/train.log      the train process's output (appended on every attempt)
    DIR/cells/<cell>/state.json     what last happened to it: submitted, running, preempted... (``cell_state``)
    DIR/cells/<cell>/...            the train run itself: checkpoint.pt, metrics.jsonl, results.json
    DIR/submitit/<job>/             submitit's own files: pickled jobs, the job processes' logs
    DIR/submitit/controllers.log    what submitit's local controllers print (``executors.run_local``)

A cell whose ``results.json`` exists (completed or diverged) is skipped, and so is one that a
process trains or Slurm holds in its queue; any other cell runs with ``resume = "auto"``, so a
cell killed mid-run continues from its last checkpoint. Every file is written atomically, so the
study can be killed at any moment and reported on at any moment.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oversmooth.errors import UsageError
from oversmooth.study import slurm
from oversmooth.study.archive import archive_study, archived, is_archived
from oversmooth.study.cell_job import CellJob
from oversmooth.study.cell_state import CellState, CellStatus, cell_status
from oversmooth.study.config import Cell, StudyConfig, stored_spec
from oversmooth.study.executor_settings import ExecutorSettings
from oversmooth.study.executors import make_executor, run_local, submit_array
from oversmooth.study.files import ANALYSIS_FILE, CELL_FILE, CELLS_DIR, MODEL_DIR, RESULTS_FILE, SPEC_FILE, STUDY_FILE
from oversmooth.study.results import read_cell
from oversmooth.train.run_spec import RunSpec
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.json_files import read_json, read_table

WAIT_POLL_SECONDS = 2.0  # how often --wait looks at a Slurm study's cells


def check_cells(study: StudyConfig) -> None:
    """Check every cell's run as ``train.run`` does before it writes: its fields, method and knobs,
    its data (each task read once), and its model built on that data (a patch size or batch that
    does not fit, outputs that overflow before training). A cell that would fail on its settings
    fails here (UsageError naming the cell) before any cell runs."""
    from oversmooth.train import task_factory
    from oversmooth.train.run import build_model, check_run, data_options

    tasks = {}
    with tempfile.TemporaryDirectory() as scratch:
        for cell in study.cells():
            try:
                spec = dataclasses.replace(cell.spec(), out=scratch)
                check_run(spec)
                key = (spec.task, spec.model, data_options(spec))
                if key not in tasks:
                    tasks[key] = task_factory.make_task(spec.task, spec.model, data_options(spec))[0]
                build_model(spec, tasks[key])
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


@dataclass
class CellOutcome:
    """How one cell ended: ``completed``, ``diverged``, ``failed`` (exit code != 0, see its
    train.log), ``interrupted`` (stopped by a signal), ``preempted``, ``skipped`` (finished
    before), ``busy`` (another process or a queued job has it) or ``submitted`` (to Slurm)."""

    cell: Cell
    status: str
    returncode: int = 0


def write_study(study: StudyConfig, out: Path, command: str = "") -> None:
    with atomic_write(out / STUDY_FILE) as handle:
        json.dump({**study.to_dict(), "command": command}, handle, indent=2)


def _unmeasured(folder: Path, target: Path | None, analysis: str | None) -> bool:
    """A trained model here whose measurements (by module ``analysis``) the archive lacks."""
    measured = analysis is None or target is None or (target / ANALYSIS_FILE).is_file()
    return (folder / MODEL_DIR).is_dir() and not measured


def check_archive(study: StudyConfig, archive: Path) -> None:
    """Refuse (UsageError) when a cell archived under ``archive`` is damaged or lacks a file the
    report reads (``read_cell`` names it: it would be skipped as finished, and its seed dropped
    later), or was trained in another setting (``RunSpec.setting``) than the study's cell of that
    name (it would be skipped as finished, wrongly). Cells archived with ``train_args`` instead of
    a spec are read back (``stored_spec``)."""
    for cell in study.cells():
        folder = archived(archive, cell.study, cell.name)
        if folder.is_dir() and read_cell(folder).spec.setting() != cell.spec().setting():
            raise UsageError(
                f"{folder} was trained with other settings than this study's {cell.name}; "
                "move it away or use another --results folder"
            )


def check_folder(study: StudyConfig, out: Path) -> None:
    """Refuse (UsageError) a study folder begun with another study, or holding a cell of this name
    trained in another setting: its checkpoint would be refused, or its results taken for ours. A
    damaged ``study.json`` or ``cell.json`` there is a UsageError naming it."""
    info = out / STUDY_FILE
    fix = "restore it, or choose another --out"
    name = read_table(info, {"name": str}, fix)["name"] if info.is_file() else study.name
    if name != study.name:
        raise UsageError(f"{out} holds study {name!r}, not {study.name!r}; choose another --out")
    for cell in study.cells():
        info = cell_dir(out, cell) / CELL_FILE
        fix = f"delete {info.parent} to begin that cell again"
        if info.is_file() and stored_spec(read_json(info, fix), info, fix).setting() != cell.spec().setting():
            raise UsageError(
                f"{info.parent} was begun with another grid (other settings than this study's "
                f"{cell.name}); choose another --out or move that folder away"
            )


def check_study(study: StudyConfig, out: Path, archive: Path | None, executor: ExecutorSettings) -> None:
    """Everything that can refuse the study, before anything is written or submitted."""
    executor.checked()
    check_folder(study, out)
    if archive is not None:
        check_archive(study, archive)
    if executor.kind == "slurm":
        slurm.check_partition(executor.partition)


def _queue(out: Path, cells: list[Cell]) -> dict[str, str]:
    """The Slurm queue's word on the cells that were last submitted there."""
    states = [CellState.read(cell_dir(out, cell)) for cell in cells]
    return slurm.queued({state.job for state in states if state is not None and state.executor == "slurm"})


def study_status(
    study: StudyConfig, out: str | Path, archive: str | Path | None = None
) -> list[tuple[Cell, CellStatus]]:
    """Each cell's state (``cell_state.cell_status``); a cell archived under ``archive`` counts as finished."""
    out, cells = Path(out), study.cells()
    queue = _queue(out, cells)
    found = []
    for cell in cells:
        target = archived(Path(archive), cell.study, cell.name) if archive is not None else None
        if target is not None and is_archived(target):
            status = CellStatus(json.loads((target / RESULTS_FILE).read_text())["status"], detail="archived")
        else:
            status = cell_status(cell_dir(out, cell), queue)
        found.append((cell, status))
    return found


def _skip(cell: Cell, out: Path, archive: Path | None, queue: dict[str, str], analysis: str | None) -> str | None:
    """Why ``cell`` needs no job now (skipped: finished and archived; busy: in hand elsewhere), or None."""
    folder = cell_dir(out, cell)
    target = archived(archive, cell.study, cell.name) if archive is not None else None
    if target is not None and is_archived(target) and not _unmeasured(folder, target, analysis):
        return "skipped"
    if is_finished(folder) and target is None:
        return "skipped"
    return "busy" if cell_status(folder, queue).active else None


def _prepare(cell: Cell, out: Path, threads: int) -> None:
    """Write what the cell's job reads: ``cell.json`` and ``spec.json``."""
    folder = cell_dir(out, cell)
    folder.mkdir(parents=True, exist_ok=True)
    if not is_finished(folder):
        with atomic_write(folder / CELL_FILE) as handle:
            json.dump(cell.to_dict(), handle, indent=2)
        worker_spec(cell, folder, threads).save(folder / SPEC_FILE)


def run_study(
    study: StudyConfig,
    out: str | Path,
    jobs: int = 1,
    threads: int = 1,
    on_done: Callable[[CellOutcome], None] = lambda outcome: None,
    command: str = "",
    archive: str | Path | None = None,
    executor: ExecutorSettings | None = None,
    analysis: str | None = None,
) -> list[CellOutcome]:
    """Run every cell that is not finished or in hand elsewhere, with ``threads`` torch threads each.

    ``executor``: where (default: local processes, ``jobs`` at a time). Locally the call returns
    when the cells have ended; on Slurm once the array is submitted, or with ``executor.wait`` when
    its cells have ended (finished, failed or preempted and left the queue).
    ``command`` (the command line that started the study) is kept in ``study.json`` for the report.
    ``archive``: the root of the tracked copy (``results/``): cells archived there are skipped,
    finished ones are measured (by module ``analysis``, ``CellJob.analysis``) and copied there.
    ``on_done(outcome)`` is called as each cell ends. A failing cell does not stop the others.
    Ctrl-C (KeyboardInterrupt) stops the local cells (their checkpoints stay; each reads
    ``interrupted``, resumed by the next run) and re-raises.
    """
    out = Path(out).absolute()
    archive = None if archive is None else Path(archive).absolute()
    executor = executor or ExecutorSettings(jobs=jobs)
    check_study(study, out, archive, executor)
    check_cells(study)
    out.mkdir(parents=True, exist_ok=True)
    write_study(study, out, command)
    if archive is not None:
        archive_study(out / STUDY_FILE, archive, study.name)
    cells, queue = study.cells(), _queue(out, study.cells())
    outcomes: dict[int, CellOutcome] = {}
    todo: list[int] = []
    for index, cell in enumerate(cells):
        reason = _skip(cell, out, archive, queue, analysis)
        if reason is None:
            _prepare(cell, out, threads)
            todo.append(index)
        else:
            outcomes[index] = CellOutcome(cell, reason)
            on_done(outcomes[index])
    jobs_ = [
        CellJob(
            str(cell_dir(out, cells[i])),
            threads,
            None if archive is None else str(archived(archive, study.name, cells[i].name)),
            executor.kind,
            analysis,
        )
        for i in todo
    ]
    submitter = make_executor(executor, out, threads)
    if executor.kind == "local":

        def ended(position: int, result: tuple[str, int]) -> None:
            outcomes[todo[position]] = CellOutcome(cells[todo[position]], *result)
            on_done(outcomes[todo[position]])

        run_local(submitter, jobs_, executor.jobs, ended)
    elif jobs_:
        for index, job_id in zip(todo, submit_array(submitter, jobs_)):
            folder = cell_dir(out, cells[index])
            if (CellState.read(folder) or CellState("")).job != job_id:  # unless the job already began
                CellState("submitted", "slurm", job_id).write(folder)
            outcomes[index] = CellOutcome(cells[index], "submitted")
        if executor.wait:
            _wait_for(out, {i: cells[i] for i in todo}, outcomes, on_done)
    return [outcomes[index] for index in range(len(cells))]


def _wait_for(
    out: Path, cells: dict[int, Cell], outcomes: dict[int, CellOutcome], on_done: Callable[[CellOutcome], None]
) -> None:
    """Until every one of ``cells`` has left the Slurm queue and no process trains it (a cell whose
    ``results.json`` is written still saves its model, plots and archive until its job ends)."""
    left = dict(cells)
    while left:
        time.sleep(WAIT_POLL_SECONDS)
        queue = _queue(out, list(left.values()))
        for index, cell in list(left.items()):
            folder = cell_dir(out, cell)
            status, job = cell_status(folder, queue), (CellState.read(folder) or CellState("")).job
            if not status.active and job not in queue:
                outcomes[index] = CellOutcome(cell, status.state)
                on_done(outcomes[index])
                del left[index]
