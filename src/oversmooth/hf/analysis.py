"""One analysis of a loaded model: metrics per layer for the baseline and each patched method,
attention measures and the spectral diagnosis.

States are the residual stream (``hook_resid_pre`` of block 0, then ``hook_resid_post`` of every
block): layer 0 is the embedding output, layer L the last block's output *before* any final
norm. Each method is a separate forward pass with ``patch`` applied, then ``unpatch``.
Attention measures (entropy, |lambda_2|, similarity of successive layers) and the per-head
dynamics verdict need eigen-decompositions of n x n maps, so they run on the unpatched model over
the first ``attention_sequences`` sequences cut to ``attention_tokens`` tokens. The full-spectrum
measures (effective_rank, stable_rank) need a full eigensolve per sequence, the costliest part
on large batches: by default they are taken over the first ``rank_sequences=8`` sequences only
(noted in the table's ``notes``; ``None`` = every sequence). Every other measure sees every
sequence.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor

from oversmooth.hf.capture import ActivationCache, capture
from oversmooth.hf.diagnose import LayerSpectrum, add_dynamics, spectra
from oversmooth.hf.families import Layout, layout
from oversmooth.hf.patch import check_method, patch, resolve_knobs, unpatch
from oversmooth.errors import UsageError
from oversmooth.metrics import ATTENTION_METRICS, METRICS, MetricTable, measure
from oversmooth.metrics.suite import RANK_METRICS

BASELINE = "baseline"


@dataclass(frozen=True)
class AnalysisSettings:
    """Which methods (with knob overrides) to compare, and how much data the attention pass sees."""

    methods: tuple[str, ...] = ("neutreno", "deescalate", "attnscale", "featscale")
    knobs: dict[str, dict] = field(default_factory=dict)
    attention_sequences: int = 2
    attention_tokens: int = 128
    exclude: tuple[int, ...] = ()
    rank_sequences: int | None = 8  # effective / stable rank on the first k sequences; None = all

    def __post_init__(self) -> None:
        if self.rank_sequences is not None and self.rank_sequences < 1:
            raise UsageError(f"rank_sequences must be at least 1 (or None for all), got {self.rank_sequences}")

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


def _stream_table(model, inputs: dict[str, Tensor], settings: AnalysisSettings) -> tuple[MetricTable, int]:
    """The metrics of every stream state, and the number of token positions."""
    _, cache = capture(model, inputs, hooks=("resid_pre", "resid_post"))
    states, mask, sample = cache.stream(), cache.mask, settings.rank_sequences
    tokens = int(mask.shape[1])
    if sample is None or sample >= mask.shape[0]:
        return measure(states, mask, exclude=settings.exclude), tokens
    table = measure(states, mask, exclude=settings.exclude,
                    metrics=[m for m in METRICS if m not in RANK_METRICS])
    ranks = measure([s[:sample] for s in states], mask[:sample], exclude=settings.exclude,
                    metrics=RANK_METRICS)
    table.rows = [{**row, **extra} for row, extra in zip(table.rows, ranks.rows)]
    table.metrics = (*table.metrics, *RANK_METRICS)
    table.notes["rank_sequences"] = (f"{', '.join(RANK_METRICS)}: first {sample} of {table.sequences} "
                                     "sequences")
    return table, tokens


def attention_subset(inputs: dict[str, Tensor], sequences: int, tokens: int) -> dict[str, Tensor]:
    """The first ``sequences`` sequences, text cut to its first ``tokens`` tokens (images kept whole)."""
    subset = {k: v[:sequences] for k, v in inputs.items()}
    if "input_ids" in subset:
        subset = {k: v[:, :tokens] for k, v in subset.items()}
    return subset


def _attention_sample(model, inputs: dict[str, Tensor], settings: AnalysisSettings) -> ActivationCache | None:
    """The unpatched model's stream and attention patterns on the attention sample, or None."""
    if settings.attention_sequences == 0:
        return None
    subset = attention_subset(inputs, settings.attention_sequences, settings.attention_tokens)
    return capture(model, subset, hooks=("resid_pre", "resid_post"), pattern=True)[1]


def _diagnose(lay: Layout, sample: ActivationCache | None,
              exclude: tuple[int, ...]) -> tuple[list[LayerSpectrum], MetricTable | None]:
    """W_V W_O spectra, and with an attention sample its measures and the dynamics verdicts."""
    diagnosis = spectra(lay)
    if sample is None:
        return diagnosis, None
    patterns = sample.stack("pattern")
    full = measure(sample.stream()[1:], sample.mask, attentions=patterns, exclude=exclude, metrics=())
    rows = [{**row, "layer": row["layer"] + 1} for row in full.rows]  # block l makes state l + 1
    add_dynamics(diagnosis, patterns, sample.mask)
    return diagnosis, MetricTable(rows, ATTENTION_METRICS, hook="attn.hook_pattern", exclude=full.exclude,
                                  sequences=full.sequences)


def run_analysis(model, inputs: dict[str, Tensor], settings: AnalysisSettings = AnalysisSettings(),
                 step: Callable[[str], None] = lambda name: None) -> Analysis:
    """Measure the baseline and each method, spectra and attention; ``step(name)`` after each part.

    The spectra and the attention sample's eigen-work depend on neither the batch nor the patched
    methods, so they run on a background thread beside the forward passes, in the cycles a forward
    leaves idle (``benchmarks/bench_analyze.py``; docs/analyze.md has the numbers).
    """
    lay = layout(model)
    knobs = settings.resolved_knobs()
    sample = _attention_sample(model, inputs, settings)  # before patching: the unpatched attention
    with ThreadPoolExecutor(1, thread_name_prefix="oversmooth-diagnose") as background:
        diagnosing = background.submit(_diagnose, lay, sample, settings.exclude)
        baseline, tokens = _stream_table(model, inputs, settings)
        tables = {BASELINE: baseline}
        step(BASELINE)
        for method in settings.methods:
            patch(model, method, **knobs[method])
            try:
                tables[method], _ = _stream_table(model, inputs, settings)
            finally:
                unpatch(model)
            step(method)
        diagnosis, attention = diagnosing.result()
    step("spectra")
    if sample is not None:
        step("attention")
    return Analysis(
        family=lay.family.name, norm_placement=lay.family.norm_placement,
        last_state="before the final norm" if lay.family.final_norm else "no final norm (post-LN blocks)",
        sequences=baseline.sequences, tokens=tokens, tables=tables, knobs=knobs, attention=attention,
        attention_shape=(0, 0) if sample is None else tuple(sample.mask.shape),
        spectrum=diagnosis,
    )
