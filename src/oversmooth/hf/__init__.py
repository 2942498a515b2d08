"""The adapter to pretrained Hugging Face models: load, lay out, capture hook points, patch mitigations in.

Any transformers 5.x family that declares its blocks and attention modules and uses the
standard attention interface is discovered from the loaded model (``discover.layout``); the
tested ones are listed in ``KNOWN_FAMILIES`` (``SUPPORTED``). Models load from hub-style folders, GGUF
files or installed packages (``oversmooth.hf.load.load``), on the device and in the dtype
``oversmooth.hf.placement.placement`` says. What is built on top (``oversmooth.analyze``) knows
models only through the names exported here.
"""

from oversmooth.hf.capture import HOOKS, NORM_HOOKS, capture
from oversmooth.hf.discover import layout
from oversmooth.hf.families import KNOWN_FAMILIES, SUPPORTED, Family, Layout
from oversmooth.hf.heads import Task, task_of
from oversmooth.hf.load import Loaded, load
from oversmooth.hf.model_inputs import check_model_inputs
from oversmooth.hf.patch import (
    DEFAULT_KNOBS,
    PATCHABLE,
    SWEEP_GRIDS,
    ZERO_KNOBS,
    patch,
    patched,
    patched_method,
    setting_text,
    supported_methods,
    unpatch,
)
from oversmooth.hf.placement import placement
from oversmooth.mitigations.registry import check_patchable, patch_knobs

__all__ = [
    "HOOKS",
    "NORM_HOOKS",
    "capture",
    "layout",
    "KNOWN_FAMILIES",
    "SUPPORTED",
    "Family",
    "Layout",
    "Task",
    "task_of",
    "Loaded",
    "load",
    "check_model_inputs",
    "placement",
    "DEFAULT_KNOBS",
    "PATCHABLE",
    "SWEEP_GRIDS",
    "ZERO_KNOBS",
    "check_patchable",
    "patch",
    "patched",
    "patched_method",
    "patch_knobs",
    "setting_text",
    "supported_methods",
    "unpatch",
]
