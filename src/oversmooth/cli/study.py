"""``oversmooth study PRESET|FILE --out DIR``: train a grid of task x norm x depth x method x seed."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import signal
import sys

from oversmooth.cli._arguments import add_progress_flag
from oversmooth.study.executor_settings import ExecutorSettings
from oversmooth.train.compile_rule import COMPILE_MODES
from oversmooth.train.run_spec import literal


def presets() -> dict:
    """Every preset ``oversmooth study`` runs by name: the claims protocol's, then the generic ones."""
    from oversmooth.claims.presets import CLAIMS_PRESETS
    from oversmooth.study.presets import STUDY_PRESETS

    return {**CLAIMS_PRESETS, **STUDY_PRESETS}


def register(subparsers) -> None:
    named = presets()
    parser = subparsers.add_parser(
        "study",
        help="train every method at several depths side by side (a grid of train runs)",
        description="Run a grid of `oversmooth train` runs, one folder per cell under DIR/cells/. "
        "Finished cells are skipped on a re-run and interrupted ones resume from their "
        "last checkpoint, so the command can be killed and started again at any time; "
        "`oversmooth report DIR` reports on whatever has finished. Presets: "
        + "; ".join(f"{name}: {study.description}" for name, study in named.items())
        + ".",
    )
    parser.add_argument(
        "study",
        metavar="PRESET|FILE",
        help=f"a preset ({', '.join(named)}) or a .json/.toml study file (see docs/studies.md)",
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="study folder: new, empty, or one that holds this study (resumed); a folder holding other files is "
        "refused",
    )
    parser.add_argument(
        "--force", action="store_true", help="begin the study in an --out that holds other files (they are kept)"
    )
    parser.add_argument(
        "--results",
        metavar="ROOT",
        help="tracked copy of finished cells (e.g. results): cells in ROOT/<study>/<cell>/ are "
        "skipped; each cell that finishes is measured and its small files copied there",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="cells trained at once: local processes, or the Slurm array's parallelism (default 1)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads per cell (default 1)")
    parser.add_argument("--seeds", metavar="LIST", help="override the seeds, e.g. 0,1,2")
    parser.add_argument("--depths", metavar="LIST", help="override the depths, e.g. 4,8,16,32")
    parser.add_argument("--methods", metavar="LIST", help="keep only these method labels, e.g. softmax,neutreno")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="set a run field (an `oversmooth train` flag) for every cell, e.g. --set epochs=10 "
        "--set data_dir=/my/fmnist (repeatable)",
    )
    parser.add_argument(
        "--compile",
        choices=COMPILE_MODES,
        default=None,
        help="compile mode of every cell: auto, on or off (default: the study's train.compile, "
        "else auto: compiled only where it was measured faster, see oversmooth train --help)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list the cells and their equivalent train commands, run nothing"
    )
    parser.add_argument(
        "--status",
        action="store_true",
        help="show each cell's state (pending, running, completed, diverged, preempted, interrupted, failed "
        "with the tail of its log) and run nothing",
    )
    slurm = parser.add_argument_group(
        "executor",
        "where cells run (also a study file's [executor] table; docs/slurm.md). A rerun submits only "
        "the cells that are neither finished nor running nor queued, under either executor",
    )
    slurm.add_argument(
        "--executor",
        metavar="KIND",
        help="local (default: processes on this machine) or slurm (one job array; returns once submitted)",
    )
    slurm.add_argument("--wait", action="store_true", help="slurm: wait until the submitted cells have ended")
    slurm.add_argument("--partition", help="slurm: partition (default: the cluster's)")
    slurm.add_argument(
        "--time",
        metavar="LIMIT",
        help="time limit per cell, as Slurm writes it (90, 1:30:00, 2-00); "
        "a cell out of time is checkpointed and requeued",
    )
    slurm.add_argument("--cpus-per-task", type=int, metavar="N", help="slurm: CPUs per process (default --threads)")
    slurm.add_argument("--gpus-per-node", type=int, metavar="N", help="GPUs per cell (default 0)")
    slurm.add_argument(
        "--tasks-per-node",
        type=int,
        metavar="N",
        help="processes per cell (default 1; more: one DDP group, gloo on CPU, nccl on GPU)",
    )
    slurm.add_argument(
        "--sbatch",
        action="append",
        default=[],
        metavar="OPTION",
        help="slurm: extra sbatch option, e.g. --sbatch=--qos=low (repeatable)",
    )
    add_progress_flag(parser)
    parser.set_defaults(run=run)


def _ints(text: str | None, flag: str) -> tuple[int, ...]:
    from oversmooth.errors import UsageError

    if not text:
        return ()
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"{flag} takes comma-separated whole numbers, got {text!r}") from None


def resolve_study(args: argparse.Namespace):
    """The preset or file, with the command-line overrides applied."""
    from pathlib import Path

    from oversmooth.errors import FieldError, UsageError
    from oversmooth.study import StudyConfig, study_preset

    is_file = args.study.endswith((".json", ".toml")) or Path(args.study).is_file()
    study = StudyConfig.load(args.study) if is_file else study_preset(args.study, presets())
    train = {} if args.compile is None else {"compile": args.compile}
    for item in args.set:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set takes FLAG=VALUE, got {item!r}")
        train[key.strip().lstrip("-").replace("-", "_")] = literal(text.strip())
    labels = tuple(m.strip() for m in (args.methods or "").split(",") if m.strip())
    try:
        return study.narrowed(
            seeds=_ints(args.seeds, "--seeds"), depths=_ints(args.depths, "--depths"), labels=labels, train=train
        )
    except FieldError as error:  # a list given twice over: name our flag
        raise UsageError(error.message(lambda name: f"--{name}")) from None


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tqdm.auto import tqdm

    from oversmooth.errors import UsageError
    from oversmooth.study import run_study, worker_spec
    from oversmooth.study.files import STUDY_FILE
    from oversmooth.study.runner import cell_dir, check_cells, check_study
    from oversmooth.utils.outputs import check_output_dir

    for flag in ("jobs", "threads"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            raise UsageError(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    # a study is resumed only in its own folder; --status reads any folder, and says when it holds no study
    out = check_output_dir(args.out, force=None if args.status else args.force, resumes=STUDY_FILE)
    for flag, folder in (("--results", Path(args.results) if args.results else None),):
        if folder is not None and folder.exists() and not folder.is_dir():
            raise UsageError(f"{flag} {folder} is a file; give a folder")
    study = resolve_study(args)
    executor = executor_settings(args, study)
    if args.status:
        if not (out / STUDY_FILE).is_file() and not args.results:
            why = f"no {STUDY_FILE} in it" if out.exists() else "it does not exist"
            raise UsageError(
                f"--status: {out} holds no study ({why}); start one with "
                f"`oversmooth study {args.study} --out {out}`, or give --results where its cells were archived"
            )
        return print_status(study, out, args.results)
    cells = study.cells()
    if args.dry_run:  # (run_study makes the same checks)
        check_cells(study)
        check_study(study, out.absolute(), Path(args.results).absolute() if args.results else None, executor)
        for cell in cells:
            spec = worker_spec(cell, cell_dir(out, cell), args.threads)
            print(f"{cell.name}: {spec.command()}")
        print(f"{len(cells)} cells")
        return 0

    counts: dict[str, int] = {}
    # shown from the first cell's end: a study refused by run_study's checks prints its one line alone
    bar = tqdm(
        total=len(cells), desc=study.name, unit="cell", file=sys.stderr, delay=float("inf"), disable=not args.progress
    )

    def done(outcome) -> None:
        bar.delay = 0
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
        bar.set_postfix_str(", ".join(f"{k} {v}" for k, v in sorted(counts.items())), refresh=False)
        bar.update()
        if outcome.status == "failed":
            tqdm.write(
                f"cell {outcome.cell.name} failed (exit {outcome.returncode}); "
                f"see {cell_dir(out, outcome.cell) / 'train.log'}",
                file=sys.stderr,
            )

    from oversmooth.claims import cell_analysis  # what every archived cell is measured by

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        outcomes = run_study(
            study,
            out,
            threads=args.threads,
            on_done=done,
            command=command_line(args),
            archive=args.results,
            executor=executor,
            analysis=cell_analysis.__name__,
        )
    finally:
        bar.close()
    failed = [o.cell.name for o in outcomes if o.status in ("failed", "busy", "interrupted", "preempted")]
    print(
        f"{study.name}: "
        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        + f"; report with: oversmooth report {out}"
    )
    if counts.get("submitted"):
        print(f"submitted to Slurm; follow with: {command_line(args)} --status")
    if failed:
        print(
            f"not finished: {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''} "
            "(failed: see their train.log; busy: trained by another process or queued)",
            file=sys.stderr,
        )
        return 1
    return 0


#: ExecutorSettings field -> the ``args`` attribute of its flag (each field's own name, but ``kind``'s)
EXECUTOR_FLAGS = {f.name: "executor" if f.name == "kind" else f.name for f in dataclasses.fields(ExecutorSettings)}


def executor_settings(args: argparse.Namespace, study):
    """The study file's executor settings with the flags given on the command line. A setting
    refused is named as it was given: its flag, or its key in the file's ``[executor]`` table."""
    from oversmooth.errors import FieldError, UsageError

    given = {field: _given(getattr(args, name)) for field, name in EXECUTOR_FLAGS.items()}

    def named(field: str) -> str:
        flag = "--" + EXECUTOR_FLAGS[field].replace("_", "-")
        return flag if field == "kind" or given[field] is not None else f"[executor] {field}"

    try:
        return study.executor.updated(**given)
    except FieldError as error:
        raise UsageError(error.message(named)) from None


def _given(value):
    """A flag's value as a setting; None where the flag was not given (a switch left off, no repeats)."""
    if value is False or value == []:
        return None
    return tuple(value) if isinstance(value, list) else value


def print_status(study, out, results: str | None) -> int:
    """One line per cell (its state and job), the tail of a failed cell's log below it, and the counts."""
    from oversmooth.study.runner import study_status

    counts: dict[str, int] = {}
    for cell, status in study_status(study, out, results):
        counts[status.state] = counts.get(status.state, 0) + 1
        job = f"  job {status.job}" if status.job else ""
        print(
            f"{cell.name}  {status.state}{job}"
            + (f"  ({status.detail})" if status.detail and status.state != "failed" else "")
        )
        if status.state == "failed":
            print("\n".join(f"    | {line}" for line in status.detail.splitlines()))
    print(f"{study.name}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return 0


def command_line(args: argparse.Namespace) -> str:
    """The command that reruns this study (the options that were given)."""
    words = [
        "oversmooth",
        "study",
        args.study,
        "--out",
        args.out,
        *(["--results", args.results] if args.results else []),
    ]
    for flag in ("jobs", "threads"):
        if getattr(args, flag) not in (None, 1):
            words += [f"--{flag}", str(getattr(args, flag))]
    if args.compile is not None:
        words += ["--compile", args.compile]
    for flag in ("seeds", "depths", "methods"):
        if getattr(args, flag):
            words += [f"--{flag}", getattr(args, flag)]
    for item in args.set:
        words += ["--set", item]
    return shlex.join(words)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
