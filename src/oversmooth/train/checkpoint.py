"""Training checkpoints: one file, written atomically, holding everything a resume needs.

Contents: model, optimiser and scheduler state, the torch RNG states (CPU and CUDA), the global
``step`` (the data-order position is ``step`` modulo the steps per epoch: each epoch's order is
a pure function of the seed and the epoch), the running training-loss sums of the current
epoch, the metric records so far, and the run's config (a resume refuses a different config).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from oversmooth.errors import UsageError
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.json_files import NUMBER, check_table

#: what ``loop._Run.checkpoint`` stores, and a resume reads.
FIELDS = {
    "model": dict,
    "optimizer": dict,
    "scheduler": dict,
    "rng": dict,
    "step": int,
    "records": list,
    "epoch_loss": torch.Tensor,
    "description": dict,
    "elapsed": NUMBER,
}

FILENAME = "checkpoint.pt"


def rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` via temp file + rename: a kill leaves the previous checkpoint."""
    with atomic_write(path, "wb") as handle:
        torch.save(state, handle)


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Read a checkpoint onto the CPU (tensors and plain containers only: no pickled code); a
    truncated or damaged one is a UsageError naming it and the fix."""
    fix = f"delete {Path(path).parent} to train the run again"
    try:
        state = torch.load(Path(path), map_location="cpu", weights_only=True)
    except Exception as error:  # EOFError, OSError, UnpicklingError, RuntimeError: torch says "damaged" many ways
        reason = getattr(error, "strerror", None) or type(error).__name__  # torch's own text runs to many lines
        raise UsageError(f"checkpoint {path} is damaged or unreadable ({reason}); {fix}") from None
    return check_table(state, path, FIELDS, fix)
