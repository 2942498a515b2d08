"""PNG plots of the theory runs (matplotlib, Agg backend), written atomically."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from oversmooth.theory.escalation import RateStudy
from oversmooth.utils.plotting import figure, save_png

PLOTTED = ("cos_sim", "t_sim", "centred_residual", "effective_rank")


def plot_metrics_vs_depth(
    tables: dict[str, pd.DataFrame], title: str, path: Path, metrics: tuple[str, ...] = PLOTTED
) -> None:
    """One panel per metric, one line per labelled ``metric_table`` (mean over sequences)."""
    plt, fig, axes = figure(1, len(metrics), 3.2 * len(metrics), 3.0)
    for ax, metric in zip(axes[0], metrics):
        for label, table in tables.items():
            ax.plot(table["layer"], table[metric], label=label)
        ax.set_xlabel("layer")
        ax.set_title(metric)
        if metric == "centred_residual":
            ax.set_yscale("log")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    save_png(plt, fig, path)


def plot_escalation_rates(study: RateStudy, path: Path) -> None:
    """Measured rate of -ln t_div per layer against |lambda_2(A)|, with the predictions."""
    plt, fig, axes = figure(1, 1, 5.0, 3.6)
    ax = axes[0][0]
    for name, rates in study.measured.items():
        line = ax.scatter(study.lambda2, rates, s=14, label=f"{name} (simulated)")
        if name in study.predicted:
            ax.scatter(
                study.lambda2,
                study.predicted[name],
                s=30,
                marker="x",
                color=line.get_facecolor()[0],
                label=f"{name} (predicted)",
            )
    ax.set_xlabel("|lambda_2(A)|")
    ax.set_ylabel("escalation rate: -d ln t_div / d layer")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    save_png(plt, fig, path)
