"""The analysis of a pretrained model, built on the adapter (``oversmooth.hf``): per-layer measures
of the stream, the spectral diagnosis, what each patched mitigation changes, the task quality it
keeps, and the report ``oversmooth analyze`` writes. Models are seen only through ``oversmooth.hf``.
"""

from oversmooth.analyze.analysis import BASELINE, Analysis, AnalysisSettings, check_inputs, run_analysis
from oversmooth.analyze.frontier import FrontierPoint, Sweep, best_within_budget, default_sweeps, parse_sweep
from oversmooth.analyze.inputs import analysis_inputs, read_text, sample_text, text_batch
from oversmooth.analyze.quality import Budget, Quality, QualityRow, mask_tokens, similarity_verdict
from oversmooth.analyze.sublayers import block_totals, sublayer_changes

__all__ = [
    "BASELINE",
    "Analysis",
    "AnalysisSettings",
    "check_inputs",
    "run_analysis",
    "FrontierPoint",
    "Sweep",
    "best_within_budget",
    "default_sweeps",
    "parse_sweep",
    "analysis_inputs",
    "read_text",
    "sample_text",
    "text_batch",
    "Budget",
    "Quality",
    "QualityRow",
    "mask_tokens",
    "similarity_verdict",
    "block_totals",
    "sublayer_changes",
]
