"""The analysis of a pretrained model, built on the adapter (``oversmooth.hf``): per-layer measures
of the stream, the spectral diagnosis, what each patched mitigation changes, the task quality it
keeps, and the report ``oversmooth analyze`` writes. Models are seen only through ``oversmooth.hf``.
The names below import torch on first use only, so that ``settings`` (read by ``--help``) stays torch-free.
"""

import sys
import types

from oversmooth.utils.lazy import lazy_exports

_LAZY = {
    "BASELINE": "analysis",
    "Analysis": "analysis",
    "check_inputs": "analysis",
    "run_analysis": "analysis",
    "AnalysisSettings": "settings",
    "Budget": "settings",
    "FrontierPoint": "frontier",
    "Sweep": "settings",
    "best_within_budget": "frontier",
    "default_sweeps": "settings",
    "parse_sweep": "settings",
    "parse_sweeps": "settings",
    "analysis_inputs": "inputs",
    "check_token_ids": "inputs",
    "read_text": "inputs",
    "sample_text": "inputs",
    "text_batch": "inputs",
    "Quality": "quality",
    "QualityRow": "quality",
    "mask_tokens": "quality",
    "block_totals": "sublayers",
    "sublayer_changes": "sublayers",
    "Watch": "watch",
    "watch": "watch",
}
__all__ = list(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY)


class _CallablePackage(types.ModuleType):
    """``oversmooth.analyze`` is this package *and* the notebook's ``analyze(model, ...)``
    (``oversmooth.analyze.notebook.analyze``): once the package is imported, the attribute
    ``oversmooth.analyze`` is the package, so calling it must call the function."""

    def __call__(self, *args, **kwargs):
        from oversmooth.analyze.notebook import analyze

        return analyze(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
