"""oversmooth: measure, diagnose and mitigate oversmoothing in deep Transformers."""

__version__ = "0.1.0"

_LAZY = {"patch": "oversmooth.hf.patch", "unpatch": "oversmooth.hf.patch"}


def __getattr__(name: str):
    """``oversmooth.patch`` / ``oversmooth.unpatch`` import torch and transformers on first use only."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'oversmooth' has no attribute {name!r}")
