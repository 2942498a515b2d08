"""Pretrained Hugging Face models: capture hook points, diagnose, patch mitigations in place.

Any transformers 5.x family that declares its blocks and attention modules and uses the
standard attention interface is discovered from the loaded model (``families.layout``); the
tested ones are listed in ``KNOWN_FAMILIES`` (``SUPPORTED``). Models load from hub-style folders, GGUF
files or installed packages (``oversmooth.hf.load.load``), on the device and in the dtype
``oversmooth.hf.placement.placement`` says.
"""

from oversmooth.hf.capture import HOOKS, NORM_HOOKS, capture
from oversmooth.hf.families import KNOWN_FAMILIES, SUPPORTED, layout
from oversmooth.hf.patch import DEFAULT_KNOBS, METHODS, patch, unpatch
from oversmooth.hf.sublayers import block_totals, sublayer_changes

__all__ = ["HOOKS", "NORM_HOOKS", "capture", "KNOWN_FAMILIES", "SUPPORTED", "layout",
           "DEFAULT_KNOBS", "METHODS", "patch", "unpatch", "sublayer_changes", "block_totals"]
