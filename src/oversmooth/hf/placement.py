"""Where a model runs and in which precision: ``--device``, ``--dtype``, ``--device-map``.

- device ``auto``: CUDA when a GPU is present, else the CPU; or ``cpu``, ``cuda``, ``cuda:N``.
- dtype ``auto``: bfloat16 on a GPU, float32 on the CPU; or ``float32``, ``bfloat16``, ``float16``.
- device map ``auto``: ``accelerate`` spreads the layers over the GPUs, the CPU and disk, for a
  model that does not fit one device (then ``--device`` must stay ``auto``).

Metrics are computed in float64 (float32 states keep float32 products with float64 sums)
whatever the model's dtype.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import torch

from oversmooth.errors import UsageError
from oversmooth.utils import memory

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Placement:
    """The device inputs go to, the weights' dtype, and the device map (None: all on ``device``)."""

    device: torch.device
    dtype: torch.dtype
    device_map: str | None = None

    def pretrained_kwargs(self) -> dict:
        """``from_pretrained`` arguments that put the model here."""
        return {"dtype": self.dtype, "device_map": self.device_map or self.device}

    def available_bytes(self) -> int | None:
        """Free memory on the device (None: no check, e.g. with a device map)."""
        if self.device_map is not None:
            return None
        if self.device.type == "cuda":
            return torch.cuda.mem_get_info(self.device)[0]
        return memory.available_bytes()


def placement(device: str = "auto", dtype: str = "auto", device_map: str | None = None) -> Placement:
    """Resolve the three options; UsageError on a device that is absent, an unknown dtype, or a
    device map without ``accelerate``."""
    if device_map is not None:
        if device_map != "auto":
            raise UsageError(f"--device-map takes 'auto', got {device_map!r}")
        if device != "auto":
            raise UsageError("--device-map auto places the model itself; leave --device at auto")
        if importlib.util.find_spec("accelerate") is None:
            raise UsageError("--device-map auto needs the accelerate package (pip install accelerate==1.15.0)")
    if device == "auto":
        resolved = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            resolved = torch.device(device)
        except RuntimeError:
            raise UsageError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N") from None
        if resolved.type == "cuda" and not torch.cuda.is_available():
            raise UsageError(f"device {device} requested but no CUDA GPU is available; use --device cpu")
        if resolved.type not in ("cpu", "cuda"):
            raise UsageError(f"device {device!r} is not supported; use auto, cpu, cuda or cuda:N")
    if dtype == "auto":
        chosen = torch.bfloat16 if resolved.type == "cuda" else torch.float32
    elif dtype in DTYPES:
        chosen = DTYPES[dtype]
    else:
        raise UsageError(f"unknown dtype {dtype!r}; use auto, {', '.join(DTYPES)}")
    return Placement(resolved, chosen, device_map)
