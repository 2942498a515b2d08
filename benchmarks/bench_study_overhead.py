"""Per-cell cost of running a study's cells through submitit's local executor, vs what the runner
did before it (one ``oversmooth train --spec`` process per cell, started directly).

Tiny cells (synthetic task, depth 1, width 8, one epoch of 8 steps), one at a time, so the
cell's own work is small and the launch cost shows. Rounds are interleaved (direct, submitit,
direct, ...) because a shared machine's speed drifts; printed are the median seconds per cell of
each and their difference, the overhead per cell.

Run: python benchmarks/bench_study_overhead.py [--rounds 3] [--cells 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from oversmooth.study import StudyConfig, run_study, worker_spec
from oversmooth.study.cell_job import train_command
from oversmooth.study.executors import this_code
from oversmooth.study.runner import cell_dir


def tiny(cells: int) -> StudyConfig:
    return StudyConfig.from_dict(
        {
            "name": "bench",
            "model": "vit",
            "tasks": ["synthetic"],
            "depths": [1],
            "methods": ["softmax"],
            "seeds": list(range(cells)),
            "train": {"width": 8, "heads": 2, "epochs": 1, "batch_size": 32, "probe_size": 8},
        }
    )


def direct(study: StudyConfig, out: Path) -> None:
    """The former runner: each cell's train process started directly, output to its train.log."""
    for cell in study.cells():
        folder = cell_dir(out, cell)
        folder.mkdir(parents=True)
        worker_spec(cell, folder, 1).save(folder / "spec.json")
        with open(folder / "train.log", "a") as log, this_code():
            subprocess.run(train_command(folder / "spec.json"), stdout=log, stderr=subprocess.STDOUT, check=True)


def through_submitit(study: StudyConfig, out: Path) -> None:
    outcomes = run_study(study, out, jobs=1, threads=1)
    assert all(outcome.status == "completed" for outcome in outcomes), outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cells", type=int, default=3)
    args = parser.parse_args()
    study = tiny(args.cells)
    seconds: dict[str, list[float]] = {"direct": [], "submitit": []}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for name, run in (("direct", direct), ("submitit", through_submitit)):
                started = time.perf_counter()
                run(study, Path(scratch) / f"{name}{round_}")
                seconds[name].append((time.perf_counter() - started) / args.cells)
    old, new = (statistics.median(seconds[name]) for name in ("direct", "submitit"))
    for name, values in seconds.items():
        print(f"{name:9s} s/cell: " + " ".join(f"{value:.2f}" for value in values))
    print(
        f"median per cell: direct {old:.2f} s, submitit local {new:.2f} s; overhead {new - old:+.2f} s "
        f"({100 * (new - old) / old:+.0f} %) per cell"
    )


if __name__ == "__main__":
    main()
