"""One analysis of a loaded model: metrics per layer for the baseline and each patched method,
the model's quality beside them, attention measures, the spectral diagnosis, and on request the
similarity / quality frontier of each method over a grid of its knob.

States are the residual stream in the toolkit's one numbering (``oversmooth.activations``):
layer 0 is the embedding output, layer i the output of block i, layer L *before* any final
norm; attention rows carry the layer their block makes (1 to L). Each method is a separate
forward pass with ``patch`` applied, then ``unpatch``.
Attention measures (entropy, |lambda_2|, similarity of successive layers, the sink's mass and
rate) and the per-head dynamics verdict need eigen-decompositions of n x n maps, so they run on
the unpatched model over the first ``attention_sequences`` sequences cut to ``attention_tokens``
tokens. The sink's stream measures (``SINK_METRICS``: massive activations and where the largest
sits, the first token's norm, the representation entropy, cos_sim without the outliers) describe
the same unpatched model and are taken on the same sample's stream, beside cos_sim there. The full-spectrum
measures (effective_rank, stable_rank) need a full eigensolve per sequence, the costliest part
on large batches: by default they are taken over the first ``rank_sequences=8`` sequences only
(noted in the table's ``notes``; ``None`` = every sequence). Every other measure sees every
sequence. Every forward pass is also scored on the model's task (``oversmooth.analyze.quality``):
a method that lowers similarity by breaking the model is reported as broken.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pandas as pd
from torch import Tensor

from oversmooth.activations import ActivationCache, hook_name, stream_names
from oversmooth.analyze.diagnose import LayerSpectrum, add_dynamics, spectra
from oversmooth.analyze.frontier import FrontierPoint
from oversmooth.analyze.layerwise import LayerwiseMeasures
from oversmooth.analyze.null import measure_null, measure_shuffled, shuffled_patches, shuffled_tokens
from oversmooth.analyze.quality import Quality, QualityProbe
from oversmooth.analyze.representation import layer_cka
from oversmooth.analyze.settings import AnalysisSettings, Budget
from oversmooth.analyze.sublayers import STAGE_METRICS, StageChange, changes_from_rows, stage_hooks, stage_states
from oversmooth.errors import FieldError, UsageError
from oversmooth.hf import Layout, Task, capture, check_model_inputs, layout, patched, setting_text
from oversmooth.metrics import METRICS, SINK_METRICS, massive_location, measure
from oversmooth.metrics.attention import counted_eigenvalues
from oversmooth.metrics.massive import LOCATION_COLUMNS
from oversmooth.metrics.tokens import valid_tokens
from oversmooth.mitigations.registry import flat_knobs, make_knobs, method
from oversmooth.utils.threads import single_thread, thread_map

BASELINE = "baseline"


@dataclass
class Analysis:
    """Everything the report writer needs."""

    family: str
    norm_placement: str  # the block wiring: pre, post (-LN) or parallel
    last_state: str
    sequences: int
    tokens: int
    tables: dict[str, pd.DataFrame]  # BASELINE and each method: ``metric_table``s
    knobs: dict[str, dict[str, dict]]  # each patched entry (a method or a stack): its methods' knobs
    attention: pd.DataFrame | None  # ``metric_table`` of the attention measures
    attention_shape: tuple[int, int]
    spectrum: list[LayerSpectrum]
    task: Task
    budget: Budget
    quality: dict[str, Quality]  # BASELINE and each method
    sublayers: list[StageChange]  # unpatched: similarity before / after each sublayer and norm
    frontier: list[FrontierPoint] = field(default_factory=list)
    null: pd.DataFrame | None = None  # per layer, each measure's mean and spread over random inits
    shuffled: pd.DataFrame | None = None  # per layer, each measure's mean and spread over shuffled token orders
    cka: Tensor | None = None  # [layers, layers] linear CKA of the model's stream (``settings.cka``)
    cka_compare: Tensor | None = None  # [layers, other's layers] with the compared model
    sinks: pd.DataFrame | None = None  # ``sink_table`` of the attention sample (unpatched), layer 0 = embeddings


def _stream_table(
    model, inputs: dict[str, Tensor], settings: AnalysisSettings, stages: bool = False
) -> tuple[pd.DataFrame, object, list[StageChange], int]:
    """The metrics of every stream state, measured layer by layer as the forward pass makes them
    (``LayerwiseMeasures``), the pass's outputs, with ``stages`` the sublayer changes, and the
    tokens per sequence."""
    lay = layout(model)
    names = stream_names(lay.depth)
    wanted = {name: STAGE_METRICS for _, _, name in stage_states(lay.family, lay.depth)} if stages else {}
    wanted.update({name: METRICS for name in names})
    mask = inputs.get("attention_mask")
    measures = LayerwiseMeasures(
        wanted, None if mask is None else mask.bool(), settings.exclude, settings.rank_sequences, stream=tuple(names)
    )
    hooks = ("resid_pre", "resid_post", *(stage_hooks(lay.family) if stages else ()))
    outputs, _ = capture(model, inputs, hooks=hooks, sink=measures)
    measures.finish()
    sublayers = changes_from_rows(measures.rows, lay.family, lay.depth) if stages else []
    return measures.table(names, METRICS), outputs, sublayers, measures.tokens


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
    with single_thread():  # a small batch: a second thread only adds synchronisation
        return capture(model, subset, hooks=("resid_pre", "resid_post"), pattern=True)[1]


#: the columns of ``sink_table``: cos_sim and the sink's stream measures of the attention sample
SINK_TABLE_METRICS = ("cos_sim", *SINK_METRICS)


def sink_table(sample: ActivationCache, exclude: tuple[int, ...]) -> pd.DataFrame:
    """cos_sim and the sink's stream measures (``SINK_METRICS``) at every stream state of the
    attention sample (layer 0 = embeddings), a ``metric_table``, with ``LOCATION_COLUMNS``: where
    each layer's largest activation sits (``massive_location``). The first-token measures read
    every real token whatever ``exclude`` says (docs/metrics.md)."""
    states = sample.stream()
    table = measure(states, sample.mask, exclude=exclude, metrics=SINK_TABLE_METRICS)
    located = [massive_location(state, sample.mask) for state in states]
    for column in LOCATION_COLUMNS:
        table[column] = [where[column] for where in located]
    return table


def _diagnose(
    lay: Layout, sample: ActivationCache | None, exclude: tuple[int, ...]
) -> tuple[list[LayerSpectrum], pd.DataFrame | None, pd.DataFrame | None]:
    """W_V W_O spectra, and with an attention sample its measures, the dynamics verdicts and the
    sink table."""
    diagnosis = spectra(lay)
    if sample is None:
        return diagnosis, None, None
    patterns = sample.layer_stack("pattern")
    # One eigensolve per head and sequence, over the valid tokens: the dynamics verdict's, and
    # |lambda_2|'s too when no position is excluded (its counted tokens are then the valid ones).
    eigenvalues = thread_map(lambda pattern: counted_eigenvalues(pattern, sample.mask), patterns)
    full = measure(
        sample.stream()[1:],
        sample.mask,
        attentions=patterns,
        exclude=exclude,
        metrics=(),
        attention_eigenvalues=None if exclude else eigenvalues,
    )
    add_dynamics(diagnosis, eigenvalues)
    attention = full.assign(layer=full["layer"] + 1)  # block l makes state l + 1
    attention.attrs["hook"] = "attn.hook_pattern"
    return diagnosis, attention, sink_table(sample, exclude)


def _sweep(
    model,
    inputs: dict[str, Tensor],
    settings: AnalysisSettings,
    probe: QualityProbe,
    base_seen: dict,
    baseline: pd.DataFrame,
    step: Callable[[str], None],
) -> list[FrontierPoint]:
    """Every point of every sweep; a value of 0 is the unpatched model and reuses its pass."""
    base_cos, base_t = baseline[["cos_sim", "t_sim"]].iloc[-1].tolist()
    points = []
    for sweep in settings.sweeps:
        for value in sweep.values:
            if value == 0:
                seen, cos, t = base_seen, base_cos, base_t
            else:
                last = hook_name(layout(model).depth - 1, "resid_post")
                mask = inputs.get("attention_mask")
                measures = LayerwiseMeasures(
                    {last: STAGE_METRICS}, None if mask is None else mask.bool(), settings.exclude
                )
                with patched(model, sweep.method, **sweep.knobs(value)):
                    outputs, _ = capture(model, inputs, hooks=("resid_post",), sink=measures)
                    measures.finish()
                    seen = probe.observe(model, outputs)
                cos, t = measures.rows[last]["cos_sim"], measures.rows[last]["t_sim"]
            quality = probe.judge(sweep.method, f"{sweep.knob}={value:g}", seen, base_seen, settings.budget)
            points.append(FrontierPoint(sweep.method, sweep.knob, value, cos, t, quality))
            step(f"{sweep.method} {sweep.knob}={value:g}")
    return points


def _first_short(inputs: dict[str, Tensor], exclude: tuple[int, ...], least: int) -> tuple[int, int] | None:
    """``(sequence, tokens counted)`` of the first text sequence with fewer than ``least`` tokens
    counted after ``exclude``, or None."""
    kept = valid_tokens(inputs["input_ids"], inputs.get("attention_mask"), exclude).sum(dim=1).tolist()
    return next(((i, k) for i, k in enumerate(kept) if k < least), None)


def _null(model, inputs: dict[str, Tensor], settings: AnalysisSettings, step: Callable[[str], None]) -> pd.DataFrame:
    """``analyze --null N``: the null (``oversmooth.analyze.null``) of the stream's measures on
    ``settings.null_inits`` random initialisations, same inputs and positions."""
    null = measure_null(model, settings.null_inits, lambda fresh: _stream_table(fresh, inputs, settings)[0], METRICS)
    step("null")
    return null


def _shuffled(
    model, inputs: dict[str, Tensor], settings: AnalysisSettings, step: Callable[[str], None], tokenizer
) -> pd.DataFrame | None:
    """``analyze --null N``'s second null: the model on ``settings.null_inits`` shuffles of each
    sequence's counted tokens, special tokens ([CLS], [SEP], BOS), left-out positions and padding
    in place; an image's patches shuffled. None for an image model whose patch size is unknown."""
    if "input_ids" in inputs:
        ids, mask = inputs["input_ids"], inputs.get("attention_mask")
        special = () if tokenizer is None else tokenizer.all_special_ids
        shuffle = lambda g: {**inputs, "input_ids": shuffled_tokens(ids, mask, settings.exclude, g, special)}  # noqa: E731
    else:
        patch = getattr(model.config, "patch_size", None)
        if patch is None:
            return None
        patch = patch if isinstance(patch, int) else patch[0]
        shuffle = lambda g: {**inputs, "pixel_values": shuffled_patches(inputs["pixel_values"], patch, g)}  # noqa: E731
    table = measure_shuffled(settings.null_inits, shuffle, lambda x: _stream_table(model, x, settings)[0], METRICS)
    step("shuffled")
    return table


def check_inputs(inputs: dict[str, Tensor], settings: AnalysisSettings) -> None:
    """UsageError unless ``inputs`` is a dict of tensors a model takes; FieldError unless, after
    ``settings.exclude`` (``settings`` as ``for_model`` gives them), every text sequence keeps at
    least 2 tokens to compare and every sequence of the attention sample at least 1."""
    check_model_inputs(inputs)
    if "input_ids" not in inputs:
        return
    exclude = settings.exclude or ()  # None: settings not yet resolved for a model, nothing excluded
    after = " after {exclude} " + ",".join(map(str, exclude)) if exclude else ""
    short = _first_short(inputs, exclude, 2)
    if short:
        sequence, kept = short
        last = len(inputs["input_ids"]) - 1
        fix = (
            "pass {max_sequences} %d to leave it out, or more text" % sequence
            if sequence == last > 0
            else "raise {max_length} or pass more text" + (", or exclude fewer positions" if exclude else "")
        )
        raise FieldError(
            "sequence %d keeps %d token(s) to compare%s, and every sequence needs 2: %s" % (sequence, kept, after, fix)
        )
    if not settings.attention_sequences:
        return
    try:
        short = _first_short(
            attention_subset(inputs, settings.attention_sequences, settings.attention_tokens), exclude, 1
        )
    except UsageError:  # the cut holds only excluded positions, or not all of them
        short = (0, 0)
    if short:
        raise FieldError(
            "{attention_tokens} %d leaves the attention sample a sequence with no token to measure%s; "
            "raise {attention_tokens}" % (settings.attention_tokens, after)
        )


def check_patch_inputs(inputs: dict[str, Tensor], knobs: dict[str, dict[str, dict]]) -> None:
    """UsageError, before any work, when a patched method's knobs (``AnalysisSettings.resolved_knobs``:
    per entry, per method) cannot act on these text sequences (``Patcher.check``: a sink position
    past a sequence's end); an image's tokens are the model's."""
    if "input_ids" not in inputs:
        return
    valid = valid_tokens(inputs["input_ids"], inputs.get("attention_mask"))
    for stack in knobs.values():
        for name, values in stack.items():
            check = method(name).patcher.check
            if check is not None:
                check(make_knobs(name, values, scope="patch"), valid)


def run_analysis(
    model,
    inputs: dict[str, Tensor],
    settings: AnalysisSettings = AnalysisSettings(),
    step: Callable[[str], None] = lambda name: None,
    tokenizer=None,
    other=None,
) -> Analysis:
    """Measure the baseline and each method, their quality, spectra and attention, and the sweeps;
    ``step(name)`` after each part. ``tokenizer`` is needed for masked LMs (their mask token).

    The spectra and the attention sample's eigen-work depend on neither the batch nor the patched
    methods, so they run on a background thread beside the forward passes, in the cycles a forward
    leaves idle, as the rank measures do on a thread of their own (``LayerwiseMeasures``;
    ``benchmarks/bench_analyze.py``, docs/benchmarks.md has the numbers).
    ``settings`` take the model's defaults first (``AnalysisSettings.for_model``). ``other``: a
    model to compare layer by layer (CKA) on the same inputs.
    """
    settings = settings.for_model(model)
    check_inputs(inputs, settings)
    lay = layout(model)
    knobs = settings.resolved_knobs(lay.family.causal)
    check_patch_inputs(inputs, knobs)
    probe = QualityProbe.for_model(model, inputs, tokenizer)
    sample = _attention_sample(model, inputs, settings)  # before patching: the unpatched attention
    with ThreadPoolExecutor(1, thread_name_prefix="oversmooth-diagnose") as background:
        diagnosing = background.submit(_diagnose, lay, sample, settings.exclude)
        baseline, outputs, sublayers, tokens = _stream_table(model, inputs, settings, stages=True)
        base_seen = probe.observe(model, outputs)
        del outputs
        tables = {BASELINE: baseline}
        quality = {BASELINE: probe.judge(BASELINE, "", base_seen, base_seen, settings.budget)}
        step(BASELINE)
        for method in settings.methods:
            with patched(model, method, knobs[method]):
                tables[method], outputs, _, _ = _stream_table(model, inputs, settings)
                seen = probe.observe(model, outputs)
            quality[method] = probe.judge(
                method, setting_text(flat_knobs(knobs[method])), seen, base_seen, settings.budget
            )
            step(method)
        frontier = _sweep(model, inputs, settings, probe, base_seen, baseline, step)
        null = _null(model, inputs, settings, step) if settings.null_inits else None
        shuffled = _shuffled(model, inputs, settings, step, tokenizer) if settings.null_inits else None
        cka = layer_cka(model, inputs, settings.exclude) if settings.cka else None
        compared = None if other is None else layer_cka(model, inputs, settings.exclude, other)
        diagnosis, attention, sinks = diagnosing.result()
    step("spectra")
    if sample is not None:
        step("attention")
    return Analysis(
        family=lay.family.name,
        norm_placement=lay.family.residual,
        last_state="before the final norm" if lay.family.final_norm else "no final norm (post-LN blocks)",
        sequences=baseline.attrs["sequences"],
        tokens=tokens,
        tables=tables,
        knobs=knobs,
        attention=attention,
        attention_shape=(0, 0) if sample is None else tuple(sample.mask.shape),
        spectrum=diagnosis,
        task=probe.task,
        budget=settings.budget,
        quality=quality,
        sublayers=sublayers,
        frontier=frontier,
        null=null,
        shuffled=shuffled,
        cka=cka,
        cka_compare=compared,
        sinks=sinks,
    )
