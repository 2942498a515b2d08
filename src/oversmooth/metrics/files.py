"""Read captured hidden states from ``.pt``, ``.npy``, ``.npz`` or ``.safetensors`` files.

Accepted layouts: one ``[layers, batch, tokens, features]`` tensor, or a dict of per-layer
``[batch, tokens, features]`` tensors (ordered by the number in each key, e.g. ``layer.3``)
with an optional boolean ``mask: [batch, tokens]``.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from oversmooth.errors import UsageError

SUFFIXES = (".pt", ".npy", ".npz", ".safetensors")
_LAYOUT = (
    "expected a [layers, batch, tokens, features] tensor or a dict of per-layer "
    "[batch, tokens, features] tensors (+ optional 'mask')"
)


def _read(path: Path) -> Tensor | dict[str, Tensor]:
    if path.suffix == ".pt":
        return torch.load(path, map_location="cpu", weights_only=True)
    if path.suffix == ".npy":
        return torch.from_numpy(np.load(path, allow_pickle=False))
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as arrays:
            return {key: torch.from_numpy(arrays[key]) for key in arrays.files}
    from safetensors.torch import load_file

    return load_file(path)


def _layer_number(key: str) -> int:
    digits = re.findall(r"\d+", key)
    if not digits:
        raise UsageError(f"cannot tell which layer key {key!r} is: name per-layer tensors like 'layer.0'")
    return int(digits[-1])


def load_hidden_states(path: str | Path) -> tuple[list[Tensor], Tensor | None]:
    """Per-layer states ``[batch, tokens, features]`` and the mask (or None) stored in ``path``."""
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise UsageError(f"{path}: unsupported file type {path.suffix or '(none)'}; use one of {', '.join(SUFFIXES)}")
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        content = _read(path)
    except pickle.UnpicklingError:  # torch's own text here suggests weights_only=False: not for us
        raise UsageError(f"{path}: not a file of tensors written by torch.save; {_LAYOUT}") from None
    except Exception as error:  # any reader failure is a bad file, reported in one line
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UsageError(f"{path}: cannot read it as {path.suffix} ({reason})") from None
    mask = None
    if isinstance(content, dict):
        content = dict(content)
        mask = content.pop("mask", None)
        if not content or not all(isinstance(v, Tensor) for v in content.values()):
            raise UsageError(f"{path}: {_LAYOUT}")
        if len(content) == 1 and next(iter(content.values())).dim() == 4:
            states = list(next(iter(content.values())).unbind(0))
        else:
            states = [content[key] for key in sorted(content, key=_layer_number)]
    elif isinstance(content, Tensor) and content.dim() == 4:
        states = list(content.unbind(0))
    else:
        shape = tuple(content.shape) if isinstance(content, Tensor) else type(content).__name__
        raise UsageError(f"{path}: {_LAYOUT}, got {shape}")
    shapes = {tuple(s.shape[:2]) for s in states}
    if any(s.dim() != 3 for s in states) or len(shapes) != 1:
        raise UsageError(f"{path}: {_LAYOUT}, got layers of shapes {sorted({tuple(s.shape) for s in states})}")
    if not all(s.is_floating_point() for s in states):
        raise UsageError(f"{path}: hidden states must be floating point, got {states[0].dtype}")
    if mask is not None and tuple(mask.shape) != next(iter(shapes)):
        raise UsageError(f"{path}: mask has shape {tuple(mask.shape)}, expected {next(iter(shapes))}")
    return states, None if mask is None else mask.bool()
