"""The tracked copy of finished cells: ``results/<study>/<cell>/``, small files only.

A finished cell's description and scores (``cell.json``, ``results.json``, ``metrics.jsonl``,
the measurements on its trained model ``analysis.json`` when made, and the last lines of its
``train.log``) are copied into ``ROOT/<study>/<cell>/``, never its weights or checkpoints. The
runner skips a cell that is archived there, so a fresh clone with ``results/`` committed
continues where the last machine stopped, and the report reads the archive.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from oversmooth.study.files import ANALYSIS_FILE, CELL_FILE, LOG_FILE, METRICS_FILE, RESULTS_FILE, STUDY_FILE
from oversmooth.utils.atomic import atomic_directory

LOG_TAIL_BYTES = 8192  # the end of train.log: the per-epoch lines and the final one


def archived(root: Path, study: str, cell: str) -> Path:
    """``root/<study>/<cell>``."""
    return root / study / cell


def is_archived(folder: Path) -> bool:
    return (folder / RESULTS_FILE).is_file() and (folder / CELL_FILE).is_file()


def archive_cell(folder: Path, target: Path) -> None:
    """Copy the small files of the finished cell in ``folder`` into ``target``, all or nothing."""
    with atomic_directory(target) as staging:
        for name in (CELL_FILE, METRICS_FILE, ANALYSIS_FILE, RESULTS_FILE):
            if (folder / name).is_file():
                shutil.copyfile(folder / name, staging / name)
        if (folder / LOG_FILE).is_file():
            with open(folder / LOG_FILE, "rb") as log:
                log.seek(max(0, log.seek(0, 2) - LOG_TAIL_BYTES))
                (staging / LOG_FILE).write_bytes(log.read())


def archive_study(study_file: Path, root: Path, study: str) -> None:
    """Keep the study's ``study.json`` (methods, command) beside its archived cells."""
    with atomic_directory(root / study) as staging:
        shutil.copyfile(study_file, staging / STUDY_FILE)
