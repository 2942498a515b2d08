"""Write an analysis to a folder, all or nothing: metrics.csv, spectrum.json, one PNG per metric,
report.md; and the compact per-layer table printed on the terminal.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from oversmooth.atomic import atomic_directory
from oversmooth.hf.analysis import BASELINE, Analysis
from oversmooth.metrics import ATTENTION_METRICS, METRICS
from oversmooth.metrics.suite import RANK_METRICS
from oversmooth.plotting import figure, save_png

SHORT = {BASELINE: "base", "neutreno": "neutreno", "deescalate": "deesc", "attnscale": "attnsc",
         "featscale": "featsc"}


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _attention_row(analysis: Analysis, layer: int) -> dict:
    if analysis.attention is None:
        return {}
    return next((row for row in analysis.attention.rows if row["layer"] == layer), {})


def _verdict(analysis: Analysis, layer: int) -> tuple[str, str]:
    """(dynamics verdict, '-') of the block that makes state ``layer``; '-' for layer 0 and
    without an attention sample."""
    dynamics = analysis.spectrum[layer - 1].dynamics if layer else None
    return (dynamics["verdict"] if dynamics else "-"), "-"


def format_table(analysis: Analysis) -> str:
    """cos_sim per method side by side, baseline t_sim and |lambda_2|, verdict and predicted mode."""
    methods = list(analysis.tables)
    header = ["layer", *(f"cos:{SHORT.get(m, m)}" for m in methods), "t_sim", "|l2|", "verdict", "predicted"]
    lines = []
    for layer, base in enumerate(analysis.tables[BASELINE].rows):
        verdict, predicted = _verdict(analysis, layer)
        lines.append([str(layer), *(_fmt(analysis.tables[m].rows[layer]["cos_sim"]) for m in methods),
                      _fmt(base["t_sim"]), _fmt(_attention_row(analysis, layer).get("spectral_gap")),
                      verdict, predicted])
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    rows = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in [header, *lines]]
    return "\n".join(rows)


def csv_rows(analysis: Analysis) -> list[dict]:
    """One row per method x layer; attention columns filled for the baseline only."""
    columns = [c for m in METRICS for c in (m, f"{m}_std")]
    attention_columns = [c for m in ATTENTION_METRICS for c in (m, f"{m}_std")]
    rows = []
    for method, table in analysis.tables.items():
        for row in table.rows:
            out = {"method": method, "layer": row["layer"], **{c: row.get(c) for c in columns}}
            attention = _attention_row(analysis, row["layer"]) if method == BASELINE else {}
            out.update({c: attention.get(c) for c in attention_columns})
            rows.append(out)
    return rows


def _clean(value):
    """NaN -> None, recursively, so the JSON is standard."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def spectrum_document(analysis: Analysis) -> dict:
    return _clean({"family": analysis.family, "norm_placement": analysis.norm_placement,
            "attention_sample": {"sequences": analysis.attention_shape[0],
                                 "tokens": analysis.attention_shape[1]},
            "layers": [s.to_dict() for s in analysis.spectrum]})


def plot_metric(analysis: Analysis, metric: str, path: Path) -> None:
    """``metric`` vs layer, one line per method (attention metrics: the baseline only)."""
    plt, fig, axes = figure(1, 1, 5, 3.4)
    ax = axes[0][0]
    if metric in ATTENTION_METRICS:
        rows = analysis.attention.rows
        ax.plot([r["layer"] for r in rows], [r[metric] for r in rows], marker="o", label=BASELINE)
    else:
        for method, table in analysis.tables.items():
            ax.plot([r["layer"] for r in table.rows], table.column(metric), marker="o", label=method)
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save_png(plt, fig, path)


def late_layer_claim(analysis: Analysis) -> str | None:
    """Seed 001 G.9: does NeuTRENO lower the cos_sim of the last layers (mean of the last half)?"""
    if "neutreno" not in analysis.tables:
        return None
    base, neut = analysis.tables[BASELINE].column("cos_sim"), analysis.tables["neutreno"].column("cos_sim")
    late = range(len(base) // 2 + 1, len(base))
    b, n = sum(base[i] for i in late) / len(late), sum(neut[i] for i in late) / len(late)
    held = "held" if n < b else "did not hold"
    return (f"NeuTRENO (lam={analysis.knobs['neutreno']['lam']}) vs baseline, mean cos_sim of layers "
            f"{late.start}-{late.stop - 1}: {b:.3f} -> {n:.3f} ({held}; seed 001 G.9)")


def rank_sample(analysis: Analysis) -> str:
    """Which sequences the full-spectrum ranks were taken over, e.g. 'effective_rank, stable_rank:
    first 8 of 64 sequences'."""
    return analysis.tables[BASELINE].notes.get("rank_sequences",
                                               f"{', '.join(RANK_METRICS)}: every sequence")


def report_markdown(analysis: Analysis, meta: dict) -> str:
    knobs = ", ".join(f"{m}: " + ", ".join(f"{k}={v}" for k, v in kv.items()) for m, kv in analysis.knobs.items())
    verdicts = [s.summary["sign_verdict"] for s in analysis.spectrum]
    lines = [
        f"# oversmooth analyze: {meta['model']}",
        "",
        f"- command: `{meta['command']}`",
        f"- family: {analysis.family} ({analysis.norm_placement}-LN); checkpoint: `{meta['path']}`",
        f"- input: {meta['source']}; {analysis.sequences} sequences x up to {analysis.tokens} tokens",
        f"- states: residual stream, layer 0 = embeddings, layer L = last block output, {analysis.last_state}",
        f"- methods (patched, no fine-tuning): {knobs or 'none'}",
        f"- attention measures: first {analysis.attention_shape[0]} sequences x {analysis.attention_shape[1]} tokens, unpatched",
        f"- rank measures: {rank_sample(analysis)}",
        "",
        "```",
        format_table(analysis),
        "```",
        "",
        "Spectral verdicts (eigenvalues of W_V W_O per block): "
        + ", ".join(f"{v} x{verdicts.count(v)}" for v in sorted(set(verdicts))) + ".",
    ]
    claim = late_layer_claim(analysis)
    if claim:
        lines += ["", claim + "."]
    lines += ["", "Files: `metrics.csv` (method x layer), `spectrum.json` (per block and head), "
              + ", ".join(f"`{m}.png`" for m in plotted_metrics(analysis)) + "."]
    return "\n".join(lines) + "\n"


def plotted_metrics(analysis: Analysis) -> list[str]:
    return [*METRICS, *(ATTENTION_METRICS if analysis.attention is not None else ())]


def write_report(analysis: Analysis, out: str | Path, meta: dict) -> Path:
    """Write every file into ``out``; on any failure ``out`` is left as it was."""
    with atomic_directory(out) as staging:
        rows = csv_rows(analysis)
        with open(staging / "metrics.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows({k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else v)
                              for k, v in row.items()} for row in rows)
        (staging / "spectrum.json").write_text(json.dumps(spectrum_document(analysis), indent=1))
        for metric in plotted_metrics(analysis):
            plot_metric(analysis, metric, staging / f"{metric}.png")
        (staging / "report.md").write_text(report_markdown(analysis, meta))
    return Path(out)
