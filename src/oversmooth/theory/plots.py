"""The figures of the theory runs, in each figure format asked for, written atomically."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from oversmooth.theory.escalation import RateStudy
from oversmooth.utils.plotting import (
    COLUMN,
    DEFAULT_FORMATS,
    PAGE,
    figure,
    figure_legend,
    fill,
    integer_ticks,
    save_figure,
    set_title,
)

PLOTTED = ("cos_sim", "t_sim", "centred_residual", "effective_rank")


def plot_metrics_vs_depth(
    tables: dict[str, pd.DataFrame],
    title: str,
    stem: Path,
    metrics: tuple[str, ...] = PLOTTED,
    formats: tuple[str, ...] = DEFAULT_FORMATS,
) -> None:
    """One panel per metric, one line per labelled ``metric_table`` (mean over sequences), the
    legend under the panels."""
    with figure(1, len(metrics), PAGE, 2.6) as (fig, axes):
        for ax, metric in zip(axes[0], metrics):
            for label, table in tables.items():
                ax.plot(table["layer"], table[metric], label=label)
            ax.set_xlabel("layer")
            ax.set_title(metric)
            integer_ticks(ax)
            if metric == "centred_residual":
                ax.set_yscale("log")
        figure_legend(fig)
        fig.suptitle(fill(title, PAGE))
        save_figure(fig, stem, formats)


def plot_escalation_rates(study: RateStudy, title: str, stem: Path, formats: tuple[str, ...] = DEFAULT_FORMATS) -> None:
    """Measured rate of -ln t_div per layer against |lambda_2(A)|, with the predictions."""
    with figure(width=COLUMN, height=3.3) as (fig, axes):
        ax = axes[0][0]
        for name, rates in study.measured.items():
            line = ax.scatter(study.lambda2, rates, s=10, label=f"{name} (simulated)")
            if name in study.predicted:
                ax.scatter(
                    study.lambda2,
                    study.predicted[name],
                    s=20,
                    marker="x",
                    color=line.get_facecolor()[0],
                    label=f"{name} (predicted)",
                )
        ax.set_xlabel("|lambda_2(A)|")
        ax.set_ylabel("escalation rate: -d ln t_div / d layer")
        ax.set_yscale("log")
        set_title(ax, title)
        figure_legend(fig)
        save_figure(fig, stem, formats)
