"""The three lines a notebook wants: load a model, measure it per layer with and without patched
methods as one tidy table, plot that table. ``oversmooth.load``, ``oversmooth.analyze`` and
``oversmooth.plot_layers`` (``analyze/plots.py``) are these functions; ``oversmooth.patched`` patches a method in for a
``with`` block, ``oversmooth.measure`` measures states you captured yourself.

>>> import oversmooth
>>> model = oversmooth.load()  # the bundled all-MiniLM-L6-v2; or a folder, a .gguf file, a hub name
>>> table = oversmooth.analyze(model, methods=["contranorm"], sequences=2, tokens=32)
>>> sorted(set(table["method"])), list(table.columns[:4])
(['baseline', 'contranorm'], ['method', 'layer', 'cos_sim', 'cos_sim_std'])
>>> ax = oversmooth.plot_layers(table, "cos_sim")  # a matplotlib Axes; saving is yours
>>> ax.get_ylabel()
'cos_sim'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from oversmooth.analyze.analysis import run_analysis
from oversmooth.analyze.inputs import analysis_inputs
from oversmooth.analyze.plots import tidy_table
from oversmooth.analyze.saved_run_analysis import analyze_saved
from oversmooth.analyze.settings import AnalysisSettings
from oversmooth.hf import Loaded
from oversmooth.hf import load as load_model
from oversmooth.mitigations.registry import assign_knobs, patch_stack
from oversmooth.train.saved_run import SavedRun, saved_run

#: quality columns of ``analyze``'s table: whether each method kept the model's job, and how well
QUALITY = ("within_budget", "quality")


def load(model: str | None = None, sequences: int = 8, tokens: int = 128) -> Loaded | SavedRun:
    """A model ready to ``analyze``: ``model`` is a checkpoint folder, a ``.gguf`` file, an installed
    model package or a Hugging Face model name (None: the bundled all-MiniLM-L6-v2), returned with
    its tokenizer (or image settings); or a model this tool trained (a ``train`` run, its
    ``model/``, an adaptation arm's ``model/``), returned as its ``SavedRun`` (model, task, recipe).
    ``sequences`` x ``tokens`` is the batch you will measure at most (the memory check before
    loading a pretrained model is for that batch)."""
    return saved_run(model) or load_model(model, sequences, tokens)


def analyze(
    loaded: Loaded | SavedRun,
    text: str | None = None,
    methods: Sequence[str] = (),
    sequences: int = 8,
    tokens: int = 128,
    knobs: Mapping[str, Mapping[str, Any]] | None = None,
    text_column: str | None = None,
    **bare: Any,
) -> pd.DataFrame:
    """Per layer, every measure of ``oversmooth.metrics`` (mean and ``_std`` over sequences) of
    ``loaded`` unpatched (``method`` "baseline") and with each of ``methods`` patched in (``a+b``:
    stacked), as one tidy table: ``method, layer, <measure>, <measure>_std, ..., within_budget,
    quality, knobs``. Knobs per method, ``knobs={"deescalate": {"tau": 0.5}}``, or bare,
    ``lam=0.4``, when the name fits one method only (``tau`` fits de-escalation and ContraNorm:
    refused, naming them); the ``knobs`` column holds each row's, defaults included.
    ``quality`` is the method's headline quality measure (an encoder's output cosine to the
    unpatched model, an LM's perplexity) and ``within_budget`` whether it stays within the
    default budget: lower similarity in a broken model is no mitigation. ``text``: a text source
    (``oversmooth.data.text_source``: a file, a folder, a string, ``austen``; None: the built-in
    sample; ``text_column``: the column of a CSV or TSV file). A model this tool trained is
    measured on its own validation split (``text``, ``methods`` and knobs do not apply),
    ``quality`` its validation accuracy."""
    if isinstance(loaded, SavedRun):
        return _saved_table(loaded, text or text_column, methods, sequences, tokens, {**(knobs or {}), **bare})
    members = tuple(dict.fromkeys(name for entry in methods for name in patch_stack(entry)))
    by_method = assign_knobs(members, bare, knobs)  # before the inputs: a refusal costs nothing
    inputs, source = analysis_inputs(loaded, text, None, sequences, tokens, text_column)
    settings = AnalysisSettings(methods=tuple(methods), knobs=by_method, attention_sequences=0)
    result = run_analysis(loaded.model, inputs, settings, tokenizer=loaded.tokenizer)
    return tidy_table(result, loaded.name, f"{result.sequences} sequences x {result.tokens} tokens from {source}")


def _saved_table(
    saved: SavedRun, text: str | None, methods: Sequence[str], sequences: int, tokens: int, knobs: dict
) -> pd.DataFrame:
    """``analyze``'s tidy table for one of our runs: its own method, inputs of its validation split,
    ``quality`` its validation perplexity (an LM) or accuracy."""
    if text is not None or methods or knobs or tokens != 128:
        raise ValueError(
            f"{saved.name} is measured on its own validation split with the method it was trained with; "
            "drop text, methods, knobs and tokens (oversmooth adapt continues it with another method)"
        )
    return analyze_saved(saved, sequences).tidy()
