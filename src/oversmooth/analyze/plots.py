"""Per-layer pictures of an analysis, for the notebook and the report alike: ``tidy_table`` turns
an ``Analysis`` into one long table (``method, layer, <measure>, <measure>_std, ...,
within_budget, quality, knobs``) and ``plot_layers`` draws one measure of it: a line per method with a
band of one std over sequences, a method that broke the model dashed and labelled with its
quality."""

from __future__ import annotations

import pandas as pd

from oversmooth.analyze.analysis import BASELINE, Analysis
from oversmooth.hf import setting_text
from oversmooth.metrics import ATTENTION_METRICS, METRICS, SINK_METRICS, measure_columns
from oversmooth.mitigations.registry import flat_knobs
from oversmooth.utils.plotting import COLUMN, integer_ticks, legend_below, set_title


def tidy_table(
    analysis: Analysis, model: str, inputs: str = "", attention: bool = False, sinks: bool = False
) -> pd.DataFrame:
    """Every method's stream measures (``attention``: the unpatched model's attention measures;
    ``sinks``: its sink measures, ``SINK_METRICS``, on the attention sample) per layer with its
    quality and the knobs it was patched with (``lam=0.6``; a stack's by their global names;
    ``""`` for the baseline); ``attrs``: ``model``, ``inputs`` (in words) and ``quality_measure``."""
    if attention or sinks:
        tables = {BASELINE: analysis.attention if attention else analysis.sinks}
        measures = ATTENTION_METRICS if attention else SINK_METRICS
    else:
        tables, measures = analysis.tables, METRICS
    frames = []
    for method, table in tables.items():
        quality = analysis.quality[method]
        frame = table[["layer", *measure_columns(measures)]].copy()
        frame.insert(0, "method", method)
        frame["within_budget"] = quality.within_budget
        frame["quality"] = quality.rows[0].value
        frame["knobs"] = setting_text(flat_knobs(analysis.knobs[method])) if method in analysis.knobs else ""
        frames.append(frame)
    tidy = pd.concat(frames, ignore_index=True)
    tidy.attrs.update(model=model, inputs=inputs, quality_measure=analysis.quality[BASELINE].rows[0].measure)
    return tidy


def plot_layers(
    table: pd.DataFrame,
    measure: str = "cos_sim",
    ax=None,
    null: pd.DataFrame | None = None,
    shuffled: pd.DataFrame | None = None,
):
    """``measure`` vs layer, one line per method of an ``analyze`` table, a band of one std over
    sequences; a method outside the quality budget dashed and labelled broken; with the nulls
    (``oversmooth.analyze.null``), the random-init mean dashed grey with its spread over inits and
    the shuffled-order mean dotted; the legend under the axes, off the data. Returns the Axes."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(COLUMN, 3.4), layout="constrained")
    for index, (method, rows) in enumerate(table.groupby("method", sort=False)):
        broken = not bool(rows["within_budget"].iloc[0])
        measure_name = table.attrs.get("quality_measure", "quality").replace("_", " ")
        label = f"{method} (broken: {measure_name} {rows['quality'].iloc[0]:.2f})"
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
    if null is not None:
        mean, spread = null[f"{measure}_null"], null[f"{measure}_null_sd"].fillna(0)
        label = f"random init ({null.attrs.get('inits', '?')} inits)"
        ax.plot(null["layer"], mean, ls="--", color="grey", label=label)
        ax.fill_between(null["layer"], mean - spread, mean + spread, color="grey", alpha=0.15)
    if shuffled is not None:
        label = f"token order shuffled ({shuffled.attrs.get('inits', '?')})"
        ax.plot(shuffled["layer"], shuffled[f"{measure}_shuffled"], ls=":", color="black", label=label)
    ax.set_xlabel("layer (0 = embeddings)")
    integer_ticks(ax)
    ax.set_ylabel(measure)
    title = "\n".join(t for t in (table.attrs.get("model", ""), table.attrs.get("inputs", "")) if t)
    set_title(ax, title)
    ax.grid(alpha=0.3)
    legend_below(ax)
    return ax
