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

from oversmooth.atomic import atomic_write

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
    """Read a checkpoint onto the CPU (tensors and plain containers only: no pickled code)."""
    return torch.load(Path(path), map_location="cpu", weights_only=True)
