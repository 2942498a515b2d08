"""The analysis of a pretrained model, built on the adapter (``oversmooth.hf``): per-layer measures
of the stream, the spectral diagnosis, what each patched mitigation changes, the task quality it
keeps, and the report ``oversmooth analyze`` writes. Models are seen only through ``oversmooth.hf``.
The names below import torch on first use only, so that ``settings`` (read by ``--help``) stays torch-free.
"""

import sys

from oversmooth.utils.lazy import CallablePackage, lazy_exports

_LAZY = {
    "BASELINE": "analysis",
    "Analysis": "analysis",
    "check_inputs": "analysis",
    "run_analysis": "analysis",
    "AnalysisSettings": "settings",
    "Budget": "settings",
    "FrontierPoint": "frontier",
    "Sweep": "settings",
    "default_exclude": "settings",
    "best_within_budget": "frontier",
    "default_sweeps": "settings",
    "parse_sweep": "settings",
    "parse_sweeps": "settings",
    "analysis_inputs": "inputs",
    "check_token_ids": "inputs",
    "read_text": "inputs",
    "text_batch": "inputs",
    "Quality": "quality",
    "QualityProbe": "quality",
    "QualityRow": "quality",
    "mask_tokens": "quality",
    "block_totals": "sublayers",
    "sublayer_changes": "sublayers",
    "Watch": "watch",
    "watch": "watch",
}
__all__ = list(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY)


#: ``oversmooth.analyze`` is this package *and* the notebook's ``analyze(model, ...)``: calling the
#: package calls it, and ``help`` / ``inspect.signature`` show its docstring and signature
__call_target__ = "oversmooth.analyze.notebook:analyze"
sys.modules[__name__].__class__ = CallablePackage
