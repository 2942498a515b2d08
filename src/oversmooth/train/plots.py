"""The figures a finished run leaves beside its ``metrics.jsonl``: ``curves`` (train and validation
loss, validation accuracy, per epoch) and ``similarity`` (the probe batch's per-layer cos_sim after
each epoch, the last in full colour), both drawn from the records alone, in each figure format asked
for (``RunSpec.format``)."""

from __future__ import annotations

import json
from pathlib import Path

from oversmooth.utils.plotting import (
    COLUMN,
    DEFAULT_FORMATS,
    PAGE,
    figure,
    fill,
    integer_ticks,
    legend_below,
    save_figure,
    set_title,
)

CURVES, SIMILARITY = "curves", "similarity"


def epoch_records(metrics_file: Path) -> list[dict]:
    """The end-of-epoch records of a run's ``metrics.jsonl`` (those with validation scores)."""
    records = [json.loads(line) for line in metrics_file.read_text().splitlines() if line.strip()]
    return [r for r in records if "val" in r]


def last_cos_sim(records: list[dict]) -> float | None:
    """The probe's last-layer cos_sim after the last epoch (None without layer records)."""
    layers = records[-1].get("layers") if records else None
    return layers[-1]["cos_sim"] if layers else None


def write_run_plots(out: Path, title: str, probe: str, formats: tuple[str, ...] = DEFAULT_FORMATS) -> list[str]:
    """Draw ``CURVES`` and ``SIMILARITY`` from ``out/metrics.jsonl`` into ``out`` in ``formats``,
    titled with the run (``title``) and the ``probe`` its similarity was measured on (in words);
    the names written."""
    records = epoch_records(out / "metrics.jsonl")
    if not records:
        return []
    epochs = [r["epoch"] for r in records]
    with figure(1, 2, PAGE, 2.8) as (fig, axes):
        loss, accuracy = axes[0]
        loss.plot(epochs, [r["train_loss"] for r in records], marker="o", label="train")
        loss.plot(epochs, [r["val"]["loss"] for r in records], marker="o", label="validation")
        loss.set(xlabel="epoch", ylabel="loss")
        accuracy.plot(epochs, [100 * r["val"]["accuracy"] for r in records], marker="o", color="C1")
        accuracy.set(xlabel="epoch", ylabel="validation accuracy (%)")
        integer_ticks(loss, accuracy)
        legend_below(loss)
        fig.suptitle(fill(title, PAGE))
        written = save_figure(fig, out / CURVES, formats)
    with_layers = [r for r in records if r.get("layers")]
    if with_layers:
        with figure(width=COLUMN, height=3.0) as (fig, axes):
            ax = axes[0][0]
            for index, record in enumerate(with_layers):
                last = index == len(with_layers) - 1
                layers = record["layers"]
                ax.plot(
                    [row["layer"] for row in layers],
                    [row["cos_sim"] for row in layers],
                    marker="o" if last else None,
                    color="C0" if last else "grey",
                    alpha=1.0 if last else 0.15 + 0.6 * index / len(with_layers),
                    label=f"after epoch {record['epoch']}" if last or index == 0 else None,
                )
            ax.set(xlabel="layer (0 = embeddings)", ylabel="cos_sim")
            set_title(ax, f"{title}\nprobe: {probe}")
            integer_ticks(ax)
            legend_below(ax)
            written += save_figure(fig, out / SIMILARITY, formats)
    return written
