"""The three lines a notebook wants: load a model, measure it per layer with and without patched
methods as one tidy table, plot that table. ``oversmooth.load``, ``oversmooth.analyze`` and
``oversmooth.plot_layers`` are these functions; ``oversmooth.patched`` patches a method in for a
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

from collections.abc import Sequence

import pandas as pd

from oversmooth.analyze.analysis import BASELINE, run_analysis
from oversmooth.analyze.inputs import analysis_inputs
from oversmooth.analyze.settings import AnalysisSettings
from oversmooth.hf import Loaded
from oversmooth.hf import load as load_model
from oversmooth.metrics import METRICS

#: quality columns of ``analyze``'s table: whether each method kept the model's job, and how well
QUALITY = ("within_budget", "quality")


def load(model: str | None = None, sequences: int = 8, tokens: int = 128) -> Loaded:
    """A pretrained model and its tokenizer (or image settings), ready to ``analyze``: ``model`` is
    a checkpoint folder, a ``.gguf`` file, an installed model package or a Hugging Face model name
    (None: the bundled all-MiniLM-L6-v2); ``sequences`` x ``tokens`` is the batch you will measure
    at most (the memory check before loading is for that batch)."""
    return load_model(model, sequences, tokens)


def analyze(
    loaded: Loaded,
    text: str | None = None,
    methods: Sequence[str] = (),
    sequences: int = 8,
    tokens: int = 128,
    **knobs,
) -> pd.DataFrame:
    """Per layer, every measure of ``oversmooth.metrics`` (mean and ``_std`` over sequences) of
    ``loaded`` unpatched (``method`` "baseline") and with each of ``methods`` patched in (knobs by
    name, e.g. ``lam=0.4``), as one tidy table: ``method, layer, <measure>, <measure>_std, ...,
    within_budget, quality``. ``quality`` is the method's headline quality measure (an encoder's
    output cosine to the unpatched model, an LM's perplexity) and ``within_budget`` whether it
    stays within the default budget: lower similarity in a broken model is no mitigation. ``text``:
    a file or a string (None: the built-in sample)."""
    inputs, _ = analysis_inputs(loaded, text, None, sequences, tokens)
    by_method: dict[str, dict] = {}
    for name, values in knobs.items():
        owner = next((m for m in methods if name in _knob_names(m)), None)
        if owner is None:
            raise ValueError(f"knob {name}={values!r} belongs to none of methods {list(methods)}")
        by_method.setdefault(owner, {})[name] = values
    settings = AnalysisSettings(methods=tuple(methods), knobs=by_method, attention_sequences=0)
    result = run_analysis(loaded.model, inputs, settings, tokenizer=loaded.tokenizer)
    frames = []
    for method, table in result.tables.items():
        quality = result.quality[method]
        frame = table[["layer", *(c for m in METRICS for c in (m, f"{m}_std"))]].copy()
        frame.insert(0, "method", method)
        frame["within_budget"] = quality.within_budget
        frame["quality"] = quality.rows[0].value
        frames.append(frame)
    tidy = pd.concat(frames, ignore_index=True)
    tidy.attrs.update(model=loaded.name, quality_measure=result.quality[BASELINE].rows[0].measure)
    return tidy


def _knob_names(method: str) -> set[str]:
    from oversmooth.mitigations.registry import method as registry_method

    return {f.name for f in registry_method(method).fields("patch")}


def plot_layers(table: pd.DataFrame, measure: str = "cos_sim", ax=None):
    """``measure`` vs layer, one line per method of an ``analyze`` table, a band of one std over
    sequences; a method outside the quality budget dashed and labelled broken. Returns the Axes."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(5, 3.4))
    for index, (method, rows) in enumerate(table.groupby("method", sort=False)):
        broken = not bool(rows["within_budget"].iloc[0])
        label = f"{method} (broken: {table.attrs.get('quality_measure', 'quality')} {rows['quality'].iloc[0]:.2f})"
        ax.plot(
            rows["layer"],
            rows[measure],
            marker="o",
            color=f"C{index}",
            ls="--" if broken else "-",
            label=label if broken else method,
        )
        ax.fill_between(
            rows["layer"],
            rows[measure] - rows[f"{measure}_std"],
            rows[measure] + rows[f"{measure}_std"],
            color=f"C{index}",
            alpha=0.15,
        )
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel(measure)
    ax.set_title(table.attrs.get("model", ""), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.figure.tight_layout()
    return ax
