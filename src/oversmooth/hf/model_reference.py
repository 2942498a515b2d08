"""A model folder that stands for another checkpoint, unchanged: its ``same_as.json`` names that
checkpoint (an absolute path: a folder or a .gguf file). ``oversmooth adapt``'s distillation control
takes no step, so its model is its source: it refers to it instead of saving a copy (88 MB for
MiniLM). ``hf.load.resolve`` follows the reference, so whatever reads the folder (``analyze``,
``adapt`` of it, a resumed adaptation, ``load``) reads the source."""

from __future__ import annotations

import json
from pathlib import Path

from oversmooth.errors import UsageError
from oversmooth.utils.atomic import atomic_directory
from oversmooth.utils.json_files import read_table

REFERENCE_FILE = "same_as.json"


def write_reference(folder: str | Path, target: str | Path) -> None:
    """Make ``folder`` (created whole, atomically) stand for the checkpoint at ``target``."""
    with atomic_directory(folder) as staging:
        (staging / REFERENCE_FILE).write_text(json.dumps({"model": str(Path(target).resolve())}, indent=2) + "\n")


def referenced(folder: str | Path) -> Path | None:
    """The checkpoint ``folder`` stands for, or None (a folder that holds no reference); a damaged
    reference, or one to a checkpoint that is gone, is a UsageError naming it."""
    path = Path(folder) / REFERENCE_FILE
    if not path.is_file():
        return None
    target = Path(read_table(path, {"model": str}, "run the adaptation that wrote it again")["model"])
    if not target.exists():
        raise UsageError(
            f"{folder} stands for {target} (its {REFERENCE_FILE}: the model unchanged), which is gone; "
            "put that model back there, or load it from where it is now"
        )
    return target
