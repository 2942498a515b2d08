"""One analysis of a loaded model: metrics per layer for the baseline and each patched method,
attention measures and the spectral diagnosis.

States are the residual stream (``hook_resid_pre`` of block 0, then ``hook_resid_post`` of every
block): layer 0 is the embedding output, layer L the last block's output *before* any final
norm. Each method is a separate forward pass with ``patch`` applied, then ``unpatch``.
Attention measures (entropy, |lambda_2|, similarity of successive layers) and the predicted
dominant mode need eigen-decompositions of n x n maps, so they run on the unpatched model over
the first ``attention_sequences`` sequences cut to ``attention_tokens`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor

from oversmooth.hf.capture import capture
from oversmooth.hf.diagnose import LayerSpectrum, predict, single_thread, spectra
from oversmooth.hf.families import layout
from oversmooth.hf.patch import check_method, patch, resolve_knobs, unpatch
from oversmooth.metrics import ATTENTION_METRICS, MetricTable, measure

BASELINE = "baseline"


@dataclass(frozen=True)
class AnalysisSettings:
    """Which methods (with knob overrides) to compare, and how much data the attention pass sees."""

    methods: tuple[str, ...] = ("neutreno", "deescalate", "attnscale", "featscale")
    knobs: dict[str, dict] = field(default_factory=dict)
    attention_sequences: int = 2
    attention_tokens: int = 128
    exclude: tuple[int, ...] = ()

    def resolved_knobs(self) -> dict[str, dict]:
        return {m: resolve_knobs(check_method(m), self.knobs.get(m, {})) for m in self.methods}


@dataclass
class Analysis:
    """Everything the report writer needs."""

    family: str
    norm_placement: str
    last_state: str
    sequences: int
    tokens: int
    tables: dict[str, MetricTable]  # BASELINE and each method
    knobs: dict[str, dict]
    attention: MetricTable | None
    attention_shape: tuple[int, int]
    spectrum: list[LayerSpectrum]


def _stream_table(model, inputs: dict[str, Tensor], exclude) -> tuple[MetricTable, int]:
    """The metrics of every stream state, and the number of token positions."""
    _, cache = capture(model, inputs, hooks=("resid_pre", "resid_post"))
    with single_thread():  # SVD-based metrics: 4-6x faster single-threaded on a shared CPU
        return measure(cache.stream(), cache.mask, exclude=exclude), int(cache.mask.shape[1])


def attention_subset(inputs: dict[str, Tensor], sequences: int, tokens: int) -> dict[str, Tensor]:
    """The first ``sequences`` sequences, text cut to its first ``tokens`` tokens (images kept whole)."""
    subset = {k: v[:sequences] for k, v in inputs.items()}
    if "input_ids" in subset:
        subset = {k: v[:, :tokens] for k, v in subset.items()}
    return subset


def run_analysis(model, inputs: dict[str, Tensor], settings: AnalysisSettings = AnalysisSettings(),
                 step: Callable[[str], None] = lambda name: None) -> Analysis:
    """Measure the baseline and each method, then attention and spectra; ``step(name)`` after each part."""
    lay = layout(model)
    knobs = settings.resolved_knobs()
    baseline, tokens = _stream_table(model, inputs, settings.exclude)
    tables = {BASELINE: baseline}
    step(BASELINE)
    for method in settings.methods:
        patch(model, method, **knobs[method])
        try:
            tables[method], _ = _stream_table(model, inputs, settings.exclude)
        finally:
            unpatch(model)
        step(method)
    diagnosis = spectra(lay)
    step("spectra")
    attention, shape = None, (0, 0)
    if settings.attention_sequences > 0:
        subset = attention_subset(inputs, settings.attention_sequences, settings.attention_tokens)
        _, cache = capture(model, subset, hooks=("resid_pre", "resid_post"), pattern=True)
        patterns = cache.stack("pattern")
        with single_thread():
            full = measure(cache.stream()[1:], cache.mask, attentions=patterns, exclude=settings.exclude,
                           metrics=())
        rows = [{**row, "layer": row["layer"] + 1} for row in full.rows]  # block l makes state l + 1
        attention = MetricTable(rows, ATTENTION_METRICS, hook="attn.hook_pattern", exclude=full.exclude,
                                sequences=full.sequences)
        predict(diagnosis, patterns, cache.mask)
        shape = (patterns[0].shape[0], patterns[0].shape[-1])
        step("attention")
    return Analysis(
        family=lay.family.name, norm_placement=lay.family.norm_placement,
        last_state="before the final norm" if lay.family.final_norm else "no final norm (post-LN blocks)",
        sequences=baseline.sequences, tokens=tokens, tables=tables, knobs=knobs, attention=attention, attention_shape=shape, spectrum=diagnosis,
    )
