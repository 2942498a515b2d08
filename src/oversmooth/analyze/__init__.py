"""The analysis of a pretrained model, built on the adapter (``oversmooth.hf``): per-layer measures
of the stream, the spectral diagnosis, what each patched mitigation changes, the task quality it
keeps, and the report ``oversmooth analyze`` writes. Models are seen only through ``oversmooth.hf``.
The names below import torch on first use only, so that ``settings`` (read by ``--help``) stays torch-free.
"""

_LAZY = {
    "BASELINE": "analysis",
    "Analysis": "analysis",
    "check_inputs": "analysis",
    "run_analysis": "analysis",
    "AnalysisSettings": "settings",
    "Budget": "settings",
    "FrontierPoint": "frontier",
    "Sweep": "frontier",
    "best_within_budget": "frontier",
    "default_sweeps": "frontier",
    "parse_sweep": "frontier",
    "parse_sweeps": "frontier",
    "analysis_inputs": "inputs",
    "read_text": "inputs",
    "sample_text": "inputs",
    "text_batch": "inputs",
    "Quality": "quality",
    "QualityRow": "quality",
    "mask_tokens": "quality",
    "block_totals": "sublayers",
    "sublayer_changes": "sublayers",
}
__all__ = list(_LAZY)


def __getattr__(name: str):
    """``from oversmooth.analyze import run_analysis`` imports ``oversmooth.analyze.analysis`` (and torch) then."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"oversmooth.analyze.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'oversmooth.analyze' has no attribute {name!r}")
