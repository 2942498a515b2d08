"""Write an analysis to a folder, all or nothing: metrics.csv, quality.csv, spectrum.json, one figure
per metric, with an attention sample sinks (the sink measures beside cos_sim), report.md, and
with a sweep frontier.csv and the frontier figure (each figure a PNG, or the ``--format``s asked
for); and the compact per-layer table with the quality block printed on the terminal.
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict
from pathlib import Path

from oversmooth.analyze.analysis import BASELINE, Analysis
from oversmooth.analyze.frontier import best_within_budget, frontier_rows, quality_loss
from oversmooth.analyze.null import by_layer, excess_columns
from oversmooth.analyze.plots import plot_layers, tidy_table
from oversmooth.analyze.quality import QualityRow, ratio_text
from oversmooth.analyze.representation import cka_rows, plot_cka
from oversmooth.analyze.sublayers import block_totals
from oversmooth.hf import setting_text
from oversmooth.metrics import ATTENTION_METRICS, LAYER_MEASURES, METRICS, RANK_METRICS, SINK_METRICS, measure_columns
from oversmooth.metrics.attention import SINK_EPSILON
from oversmooth.metrics.massive import LOCATION_COLUMNS
from oversmooth.mitigations.registry import METHODS as REGISTRY
from oversmooth.mitigations.registry import flat_knobs
from oversmooth.utils.atomic import atomic_directory
from oversmooth.utils.json_files import json_text
from oversmooth.utils.plotting import (
    COLUMN,
    DEFAULT_FORMATS,
    FORMATS,
    PAGE,
    embed,
    figure,
    figure_files,
    figure_legend,
    fill,
    integer_ticks,
    place_labels,
    save_figure,
    set_title,
)
from oversmooth.utils.provenance import Provenance

SHORT = {BASELINE: "base", **{name: m.short or name for name, m in REGISTRY.items()}}
BROKEN_MARK = "!"
SUBLAYER_COLUMNS = {"attention": "dcos:attn", "mlp": "dcos:mlp", "norm": "dcos:norm"}  # per kind of stage
QUALITY_COLUMNS = ("method", "setting", "measure", "value", "baseline", "ratio", "within_budget")


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _attention_row(analysis: Analysis, layer: int) -> dict:
    if analysis.attention is None:
        return {}
    return next((row for row in analysis.attention.to_dict("records") if row["layer"] == layer), {})


def _sink_row(analysis: Analysis, layer: int) -> dict:
    """The attention sample's sink measures at ``layer`` (``analysis.sinks``), or {}."""
    if analysis.sinks is None:
        return {}
    return next((row for row in analysis.sinks.to_dict("records") if row["layer"] == layer), {})


def _verdict(analysis: Analysis, layer: int) -> str:
    """The dynamics verdict of the block that makes state ``layer``; '-' for layer 0 and without
    an attention sample."""
    dynamics = analysis.spectrum[layer - 1].dynamics if layer else None
    return dynamics["verdict"] if dynamics else "-"


def _sublayer_cells(analysis: Analysis, layer: int) -> list[str]:
    """The change of cos_sim across block ``layer``'s attention, MLP and norms (``'-'`` where none)."""
    totals = {t.kind: t.cos_sim_change for t in block_totals(analysis.sublayers) if t.layer == layer}
    return [f"{totals[kind]:+.3f}" if kind in totals else "-" for kind in SUBLAYER_COLUMNS]


def _column_name(analysis: Analysis, method: str) -> str:
    """``cos:neutreno``, with ``!`` when the method breaks the quality budget."""
    broken = not analysis.quality[method].within_budget
    return f"cos:{SHORT.get(method, method)}{BROKEN_MARK if broken else ''}"


def _aligned(header: list[str], lines: list[list[str]], left: int = 0) -> str:
    """Columns padded to their widest cell; the first ``left`` columns left-aligned."""
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    return "\n".join(
        "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        for row in [header, *lines]
    )


def format_table(analysis: Analysis) -> str:
    """cos_sim per method side by side (``!`` = outside the quality budget), baseline t_sim and
    |lambda_2|, the block's verdict and the change of cos_sim across its attention, MLP and norms;
    then the quality block and the static-NeuTRENO line."""
    methods = list(analysis.tables)
    header = [
        "layer",
        *(_column_name(analysis, m) for m in methods),
        "t_sim",
        "|l2|",
        "verdict",
        *SUBLAYER_COLUMNS.values(),
    ]
    lines = []
    for layer, base in enumerate(analysis.tables[BASELINE].to_dict("records")):
        lines.append(
            [
                str(layer),
                *(_fmt(analysis.tables[m]["cos_sim"].iloc[layer]) for m in methods),
                _fmt(base["t_sim"]),
                _fmt(_attention_row(analysis, layer).get("attn_lambda2")),
                _verdict(analysis, layer),
                *_sublayer_cells(analysis, layer),
            ]
        )
    return "\n".join([_aligned(header, lines), *format_null(analysis), "", format_quality(analysis)])


def format_null(analysis: Analysis) -> list[str]:
    """With a null: the last layer's cos_sim and anisotropy beside their random-init means, and
    their means with the token order shuffled."""
    if analysis.null is None:
        return []
    last, null = analysis.tables[BASELINE].iloc[-1], analysis.null.iloc[-1]
    parts = [
        f"{m} {last[m]:.3f} vs {null[f'{m}_null']:.3f} ± {null[f'{m}_null_sd']:.3f} "
        f"(excess {last[m] - null[f'{m}_null']:+.3f})"
        for m in ("cos_sim", "anisotropy")
    ]
    inits = analysis.null.attrs["inits"]
    lines = [f"last layer against the null ({inits} random inits of the same architecture): " + "; ".join(parts)]
    if analysis.shuffled is not None:
        shuffled = analysis.shuffled.iloc[-1]
        orders = "; ".join(
            f"{m} {shuffled[f'{m}_shuffled']:.3f} ± {shuffled[f'{m}_shuffled_sd']:.3f}"
            for m in ("cos_sim", "anisotropy")
        )
        count = analysis.shuffled.attrs["inits"]
        lines.append(f"last layer with each sequence's token order shuffled ({count} shuffles): {orders}")
    return lines


def format_quality(analysis: Analysis) -> str:
    """One line per method: its setting, every quality measure, and whether it is within budget."""
    measures = [row.measure for row in analysis.quality[BASELINE].rows]
    header = ["method", "setting", *measures, "within budget"]
    lines = []
    for method, quality in analysis.quality.items():
        values = [_quality_value(row) for row in quality.rows]
        verdict = "yes" if quality.within_budget else f"NO: {quality.headline()}"
        lines.append([method, quality.rows[0].setting or "-", *values, verdict])
    note = (
        f"quality on the same passages ({analysis.task.replace('_', ' ')}); budget: "
        f"{analysis.budget.describe(analysis.task)}"
    )
    broken = [m for m, q in analysis.quality.items() if not q.within_budget]
    tail = (
        [
            f"{BROKEN_MARK} = outside the quality budget: lower similarity in a broken model is not a "
            f"mitigation ({', '.join(broken)})"
        ]
        if broken
        else []
    )
    return "\n".join([note, _aligned(header, lines, left=2), *tail])


def _quality_value(row: QualityRow) -> str:
    """The value, and for losses and perplexities its ratio to the unpatched model."""
    if row.ratio is None:
        return f"{row.value:.3f}"
    value = f"{row.value:.4g}"
    return value if row.method == BASELINE else f"{value} (x{ratio_text(row.ratio)})"


def csv_rows(analysis: Analysis) -> list[dict]:
    """One row per method x layer; the sink and attention columns (the attention sample's, with
    where the largest activation sits) filled for the baseline only; with a null (``analyze --null
    N``), each measure's null mean and spread over the random inits and the row's excess over that
    mean."""
    stream_columns, attention_columns = measure_columns(METRICS), measure_columns(ATTENTION_METRICS)
    sink_columns = [*measure_columns(SINK_METRICS), *LOCATION_COLUMNS]
    null, shuffled = by_layer(analysis.null), by_layer(analysis.shuffled)
    rows = []
    for method, table in analysis.tables.items():
        for row in table.to_dict("records"):
            out = {"method": method, "layer": row["layer"], **{c: row.get(c) for c in stream_columns}}
            sinks = _sink_row(analysis, row["layer"]) if method == BASELINE else {}
            out.update({c: sinks.get(c) for c in sink_columns})
            attention = _attention_row(analysis, row["layer"]) if method == BASELINE else {}
            out.update({c: attention.get(c) for c in attention_columns})
            if null or shuffled:
                layer = int(row["layer"])
                out.update(excess_columns(row, null.get(layer), shuffled.get(layer), METRICS))
            rows.append(out)
    return rows


def spectrum_document(analysis: Analysis, provenance: Provenance) -> dict:
    """``spectrum.json``: the model's family and norm placement, the attention sample's shape, per
    layer its spectrum (``spectra.summary``), and the provenance."""
    return {
        "family": analysis.family,
        "norm_placement": analysis.norm_placement,
        "attention_sample": {"sequences": analysis.attention_shape[0], "tokens": analysis.attention_shape[1]},
        "layers": [s.to_dict() for s in analysis.spectrum],
        "provenance": provenance.to_json(),
    }


def plot_metric(analysis: Analysis, metric: str, stem: Path, meta: dict, formats=DEFAULT_FORMATS) -> None:
    """``metric`` vs layer (``plots.plot_layers``: one line per method with its std band, a broken
    method dashed; attention and sink measures: the unpatched model only, titled with the attention
    sample they read), titled with the model and inputs; a log axis for a measure that spans
    decades (``Measure.log``)."""
    record = LAYER_MEASURES[metric]
    attention, sinks = record.kind == "attention", record.sink
    model, inputs = (_sample_title if attention or sinks else _title)(analysis, meta).split("\n")
    tidy = tidy_table(analysis, model, inputs, attention=attention, sinks=sinks)
    nulls = (None, None) if attention or sinks else (analysis.null, analysis.shuffled)
    with figure(height=3.4) as (fig, axes):
        plot_layers(tidy, metric, axes[0][0], *nulls)
        if record.log:
            axes[0][0].set_yscale("log")
        save_figure(fig, stem, formats)


def _sample_title(analysis: Analysis, meta: dict) -> str:
    """The title of a figure of the attention sample: the model, and the sample."""
    sequences, tokens = analysis.attention_shape
    return (
        f"{meta['model']}\nattention sample, unpatched: {sequences} sequences x {tokens} tokens from {meta['source']}"
    )


def plot_sinks(analysis: Analysis, stem: Path, meta: dict, formats=DEFAULT_FORMATS) -> None:
    """The sink beside cos_sim, per layer, on the attention sample of the unpatched model (means over
    its sequences), four panels for a paper's column: cos_sim with and without the first token and
    the massive channels; the sink rate; the massive-activation ratio (log) with Sun et al.'s 1 000;
    the first token's norm over the median (log). The legend sits under the panels."""
    with figure(2, 2, COLUMN, 3.9) as (fig, axes):
        _draw_sinks(analysis, fig, axes, meta)
        save_figure(fig, stem, formats)


def _draw_sinks(analysis: Analysis, fig, axes, meta: dict) -> None:
    sinks, attention = analysis.sinks, analysis.attention
    style = {"marker": "o", "markersize": 2.5, "linewidth": 1}
    ax = axes[0][0]
    ax.plot(sinks["layer"], sinks["cos_sim"], color="C0", label="cos_sim", **style)
    ax.plot(
        sinks["layer"],
        sinks["cos_sim_outlier_free"],
        color="C1",
        ls="--",
        label="without token 0 and massive channels",
        **style,
    )
    ax.set_ylabel("cos_sim")
    ax = axes[0][1]
    ax.plot(attention["layer"], attention["sink_rate"], color="C2", **style)
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel(f"sink rate (eps {SINK_EPSILON:g})")
    ax = axes[1][0]
    ax.plot(sinks["layer"], sinks["massive_ratio"], color="C3", **style)
    ax.axhline(1000, color="grey", ls=":", linewidth=0.8, label="1 000 medians (Sun et al.)")
    ax.set_yscale("log")
    ax.set_ylabel("max |h| / median |h|")
    ax = axes[1][1]
    ax.plot(sinks["layer"], sinks["first_token_norm"], color="C4", **style)
    ax.axhline(1, color="grey", ls=":", linewidth=0.8)  # the median token
    ax.set_yscale("log")
    ax.set_ylabel("|h_0| / median |h_t|")
    from matplotlib.ticker import NullFormatter

    for ax in axes.flat:
        ax.set_xlabel("layer")
        ax.yaxis.set_minor_formatter(NullFormatter())
        integer_ticks(ax)
    figure_legend(fig, ncols=1)
    sequences, tokens = analysis.attention_shape
    title = (
        f"{meta['model']}, unpatched: {sequences} sequences x {tokens} tokens (attention sample of {meta['source']})"
    )
    fig.suptitle(fill(title, COLUMN))


def format_frontier(analysis: Analysis) -> str:
    """Per swept knob: the largest setting within the quality budget, with what it buys."""
    base = analysis.tables[BASELINE]["cos_sim"].iloc[-1]
    lines = [
        f"frontier (no fine-tuning; budget: {analysis.budget.describe(analysis.task)}); "
        f"last-layer cos_sim unpatched {base:.3f}"
    ]
    for method, knob in dict.fromkeys((p.method, p.knob) for p in analysis.frontier):
        best = best_within_budget(analysis.frontier, method, knob)
        if best is None:
            lines.append(f"  {method} {knob}: no swept value stays within budget")
        else:
            lines.append(
                f"  {method} {knob}: largest within budget {best.setting}: cos_sim {best.cos_sim:.3f}, "
                f"{best.quality.headline()}"
            )
    return "\n".join(lines)


def _title(analysis: Analysis, meta: dict) -> str:
    """A figure's title: the model and the inputs it was measured on."""
    return f"{meta['model']}\n{analysis.sequences} sequences x {analysis.tokens} tokens from {meta['source']}"


def plot_frontier(analysis: Analysis, stem: Path, meta: dict, formats=DEFAULT_FORMATS) -> None:
    """Last-layer cos_sim against quality loss, one curve per swept knob, from the unpatched point;
    each knob value labelled where its label overlaps no other label and no point
    (``plotting.place_labels``: a crowded value is in frontier.csv and the printed table)."""
    with figure(width=COLUMN, height=3.8) as (fig, axes):
        ax = axes[0][0]
        base_quality = analysis.quality[BASELINE]
        origin = (quality_loss(base_quality), analysis.tables[BASELINE]["cos_sim"].iloc[-1])
        labels = []
        for method, knob in dict.fromkeys((p.method, p.knob) for p in analysis.frontier):
            points = sorted(
                (p for p in analysis.frontier if (p.method, p.knob) == (method, knob)), key=lambda p: abs(p.value)
            )
            xs = [origin[0], *(quality_loss(p.quality) for p in points)]
            ys = [origin[1], *(p.cos_sim for p in points)]
            (line,) = ax.plot(xs, ys, marker="o", label=f"{method} {knob}")
            labels += [(f"{p.value:g}", x, y, line.get_color()) for p, x, y in zip(points, xs[1:], ys[1:])]
        ax.plot(*origin, marker="*", markersize=9, color="black", linestyle="none", label="unpatched")
        limit = _budget_loss(analysis)
        ax.axvline(limit, color="grey", linestyle="--", linewidth=1, label="quality budget")
        ax.set_xscale("symlog", linthresh=max(limit, 1e-3))
        low, high = ax.get_xlim()
        ax.set_xticks([tick for tick in ax.get_xticks() if max(low, 0) <= tick <= high])  # no loss is negative
        ax.set_xlabel(f"quality loss ({_loss_name(analysis)})")
        ax.set_ylabel("last-layer cos_sim")
        set_title(ax, _title(analysis, meta))
        figure_legend(fig)
        place_labels(ax, labels)
        save_figure(fig, stem, formats)


def _budget_loss(analysis: Analysis) -> float:
    """The budget on the plot's x axis (``frontier.quality_loss`` of a model just at the budget)."""
    budget = analysis.budget
    return {
        "causal_lm": budget.perplexity - 1,
        "masked_lm": budget.perplexity - 1,
        "classifier": 1 - budget.agreement,
        "encoder": 1 - budget.cosine,
    }[analysis.task]


def _loss_name(analysis: Analysis) -> str:
    return {
        "causal_lm": "perplexity ratio - 1",
        "masked_lm": "masked perplexity ratio - 1",
        "classifier": "1 - top-1 agreement",
        "encoder": "1 - output cosine",
    }[analysis.task]


def rank_sample(analysis: Analysis) -> str:
    """Which sequences the full-spectrum ranks were taken over, e.g. 'effective_rank, stable_rank:
    first 8 of 64 sequences'."""
    table = analysis.tables[BASELINE]
    ranks = ", ".join(m for m in RANK_METRICS if m in table.attrs["metrics"])
    return table.attrs["notes"].get("rank_sequences", f"{ranks}: every sequence")


def _wiring(placement: str) -> str:
    """``pre-LN``, ``post-LN``, or ``parallel attention + MLP, pre-LN``."""
    return "parallel attention + MLP, pre-LN" if placement == "parallel" else f"{placement}-LN"


def report_markdown(analysis: Analysis, meta: dict, provenance: Provenance, formats=DEFAULT_FORMATS) -> str:
    knobs = ", ".join(f"{m}: {setting_text(flat_knobs(kv))}" for m, kv in analysis.knobs.items())
    verdicts = [s.dynamics["verdict"] for s in analysis.spectrum if s.dynamics]
    exclude = analysis.tables[BASELINE].attrs["exclude"]
    excluded = (
        f"positions {', '.join(map(str, exclude))} left out of the measures{meta.get('exclude_note', '')}"
        if exclude
        else "every position counted"
    )
    lines = [
        f"# oversmooth analyze: {meta['model']}",
        "",
        f"- family: {analysis.family} ({_wiring(analysis.norm_placement)})",
        f"- input: {meta['source']}; {analysis.sequences} sequences x up to {analysis.tokens} tokens; {excluded}",
        f"- states: residual stream, layer 0 = embeddings, layer L = last block output, {analysis.last_state}",
        f"- methods (patched, no fine-tuning): {knobs or 'none'}",
        f"- quality ({analysis.task.replace('_', ' ')}): budget {analysis.budget.describe(analysis.task)}",
        f"- attention and sink measures: first {analysis.attention_shape[0]} sequences x "
        f"{analysis.attention_shape[1]} tokens, unpatched (massive_ratio, first_token_norm and repr_entropy "
        "read every real token, the left-out ones included)",
        f"- rank measures: {rank_sample(analysis)}",
        "",
        "```",
        format_table(analysis),
        "```",
        "",
        (
            "Verdicts per block (growth of the constant mode vs the others, W_V W_O with the measured "
            f"per-head attention, tolerance {analysis.spectrum[0].dynamics['tolerance']:g}): "
            + ", ".join(f"{v} x{verdicts.count(v)}" for v in sorted(set(verdicts)))
            + "."
            if verdicts
            else "No verdicts per block: they need the attention sample (--attention-sequences > 0)."
        ),
    ]
    if analysis.sinks is not None:
        lines += [
            "",
            "## Sinks and massive activations",
            "",
            "```",
            format_sinks(analysis),
            "```",
            "",
            embed("sinks", "sinks", formats),
        ]
    if analysis.frontier:
        lines += ["", "```", format_frontier(analysis), "```", "", embed("frontier", "frontier", formats)]
    lines += ["", "Files: " + ", ".join(f"`{name}`" for name in written_files(analysis, formats)) + ".", ""]
    return "\n".join(lines) + "\n" + provenance.to_markdown()


def format_sinks(analysis: Analysis) -> str:
    """Per layer of the attention sample (unpatched), means over its sequences: the sink rate of the
    block that made the state, the massive-activation ratio with where the sample's largest |h|
    sits (token, channel, and the share of sequences whose own largest sits there), the first
    token's norm over the median, the representation entropy, cos_sim without and with the first
    token and the massive channels."""
    header = ["layer", "sink_rate", "max/median", "max |h|", "token", "channel", "share", "h0/median", "entropy"]
    header += ["cos_sim", "outlier-free"]
    lines = []
    for row in analysis.sinks.to_dict("records"):
        layer = int(row["layer"])
        lines.append(
            [
                str(layer),
                _fmt(_attention_row(analysis, layer).get("sink_rate"), 2),
                f"{row['massive_ratio']:.4g}",
                f"{row['massive_max']:.4g}",
                f"{row['massive_token']:.0f}",
                f"{row['massive_channel']:.0f}",
                f"{row['massive_share']:.2f}",
                f"{row['first_token_norm']:.4g}",
                _fmt(row["repr_entropy"]),
                _fmt(row["cos_sim"]),
                _fmt(row["cos_sim_outlier_free"]),
            ]
        )
    return _aligned(header, lines)


def plotted_metrics(analysis: Analysis) -> list[str]:
    sampled = (*(SINK_METRICS if analysis.sinks is not None else ()), *ATTENTION_METRICS)
    return [*METRICS, *(sampled if analysis.attention is not None else ())]


#: every file ``write_report`` may write, in order, a figure by its stem (a name without a suffix:
#: one file per ``--format``); one it does not write for an analysis is removed from the folder (no
#: ``frontier.csv`` of an earlier ``--sweep`` stays)
OUTPUTS = (
    "metrics.csv",
    "quality.csv",
    "sublayers.csv",
    "spectrum.json",
    "frontier.csv",
    "frontier",
    "cka.csv",
    "cka",
    "cka_compare.csv",
    "cka_compare",
    "sublayers",
    *METRICS,
    *SINK_METRICS,
    *ATTENTION_METRICS,
    "sinks",
    "report.md",
)


def file_names(outputs, formats: tuple[str, ...]) -> list[str]:
    """``outputs`` with each figure stem (no suffix) written out in ``formats``."""
    return [name for entry in outputs for name in ([entry] if "." in entry else figure_files(entry, formats))]


#: every file an ``analyze`` may leave in its folder, this writer's and ``analyze.saved_run_analysis``'s (its
#: ``quality.json``), figures in every format: either one replaces what the other wrote before (``--force``)
ANY_ANALYSIS = (*file_names(OUTPUTS, FORMATS), "quality.json")


def written_files(analysis: Analysis, formats: tuple[str, ...] = DEFAULT_FORMATS) -> list[str]:
    """Every file ``write_report`` writes for ``analysis``, in order: ``OUTPUTS`` less what it lacks."""
    lacks = {
        *([] if analysis.frontier else ["frontier.csv", "frontier"]),
        *([] if analysis.cka is not None else ["cka.csv", "cka"]),
        *([] if analysis.cka_compare is not None else ["cka_compare.csv", "cka_compare"]),
        *([] if analysis.attention is not None else ATTENTION_METRICS),
        *([] if analysis.sinks is not None else [*SINK_METRICS, "sinks"]),
    }
    return file_names([entry for entry in OUTPUTS if entry not in lacks], formats)


def plot_sublayers(analysis: Analysis, stem: Path, meta: dict, formats=DEFAULT_FORMATS) -> None:
    """Per block, the change of cos_sim and of t_sim across its attention, MLP and norms (bars)."""
    totals = block_totals(analysis.sublayers)
    blocks = sorted({t.layer for t in totals})
    width = 0.8 / len(SUBLAYER_COLUMNS)
    with figure(1, 2, PAGE, 2.8) as (fig, axes):
        for ax, metric in zip(axes[0], ("cos_sim", "t_sim")):
            for i, kind in enumerate(SUBLAYER_COLUMNS):
                change = {t.layer: getattr(t, f"{metric}_change") for t in totals if t.kind == kind}
                ax.bar([b + (i - 1) * width for b in blocks], [change.get(b, 0.0) for b in blocks], width, label=kind)
            ax.axhline(0, color="black", linewidth=0.8)
            ax.set_xticks(blocks)
            ax.set_xlabel("block")
            ax.set_ylabel(f"change of {metric}")
            ax.grid(False, axis="x")
        figure_legend(fig)
        fig.suptitle(_title(analysis, meta))
        save_figure(fig, stem, formats)


def quality_rows(analysis: Analysis) -> list[dict]:
    """``quality.csv``: one row per method x measure."""
    return [{c: getattr(row, c) for c in QUALITY_COLUMNS} for q in analysis.quality.values() for row in q.rows]


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(
            {k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else v) for k, v in row.items()}
            for row in rows
        )


def write_cka(
    staging: Path, model: str, cka, compared, compare: str | None, inputs: str, formats=DEFAULT_FORMATS
) -> list[str]:
    """``cka.csv`` and its heatmap (``cka``: the model's layer x layer matrix) and ``cka_compare.csv``
    and its heatmap (``compared``: against the model ``compare``) where measured, titled with the
    ``inputs`` they were measured on; the names written."""
    written = []
    if cka is not None:
        write_csv(staging / "cka.csv", cka_rows(cka))
        title = f"{model}: layer x layer\n{inputs}"
        written += ["cka.csv", *plot_cka(cka, staging / "cka", title, "layer", "layer", formats)]
    if compared is not None:
        write_csv(staging / "cka_compare.csv", cka_rows(compared))
        title = f"{model} vs {compare}\n{inputs}"
        drawn = plot_cka(compared, staging / "cka_compare", title, f"layer of {compare}", "layer", formats)
        written += ["cka_compare.csv", *drawn]
    return written


def write_report(
    analysis: Analysis, out: str | Path, meta: dict, provenance: Provenance, formats=DEFAULT_FORMATS
) -> Path:
    """Write every file into ``out``, each figure in ``formats``, replacing those of an earlier
    analysis (``OUTPUTS``); on any failure ``out`` is left as it was. ``meta``: ``model`` and
    ``compare`` (the models as ``Loaded.identity`` names them), ``source`` (the inputs in words),
    ``exclude_note``."""
    with atomic_directory(out, replaces=ANY_ANALYSIS) as staging:
        write_csv(staging / "metrics.csv", csv_rows(analysis))
        write_csv(staging / "quality.csv", quality_rows(analysis))
        write_csv(staging / "sublayers.csv", [asdict(row) for row in analysis.sublayers])
        plot_sublayers(analysis, staging / "sublayers", meta, formats)
        (staging / "spectrum.json").write_text(json_text(spectrum_document(analysis, provenance), indent=1))
        if analysis.frontier:
            write_csv(staging / "frontier.csv", frontier_rows(analysis.frontier))
            plot_frontier(analysis, staging / "frontier", meta, formats)
        inputs = _title(analysis, meta).split("\n")[1]
        write_cka(staging, meta["model"], analysis.cka, analysis.cka_compare, meta.get("compare"), inputs, formats)
        for metric in plotted_metrics(analysis):
            plot_metric(analysis, metric, staging / metric, meta, formats)
        if analysis.sinks is not None:
            plot_sinks(analysis, staging / "sinks", meta, formats)
        (staging / "report.md").write_text(report_markdown(analysis, meta, provenance, formats))
    return Path(out)
