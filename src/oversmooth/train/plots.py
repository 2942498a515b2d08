"""The pictures a finished run leaves beside its ``metrics.jsonl``: ``curves.png`` (train and
validation loss, validation accuracy, per epoch) and ``similarity.png`` (the probe batch's
per-layer cos_sim after each epoch, the last in full colour), both drawn from the records alone."""

from __future__ import annotations

import json
from pathlib import Path

from oversmooth.utils.plotting import figure, save_png

CURVES, SIMILARITY = "curves.png", "similarity.png"


def epoch_records(metrics_file: Path) -> list[dict]:
    """The end-of-epoch records of a run's ``metrics.jsonl`` (those with validation scores)."""
    records = [json.loads(line) for line in metrics_file.read_text().splitlines() if line.strip()]
    return [r for r in records if "val" in r]


def last_cos_sim(records: list[dict]) -> float | None:
    """The probe's last-layer cos_sim after the last epoch (None without layer records)."""
    layers = records[-1].get("layers") if records else None
    return layers[-1]["cos_sim"] if layers else None


def write_run_plots(out: Path, title: str) -> list[str]:
    """Draw ``CURVES`` and ``SIMILARITY`` from ``out/metrics.jsonl`` into ``out``; the names written."""
    records = epoch_records(out / "metrics.jsonl")
    if not records:
        return []
    epochs = [r["epoch"] for r in records]
    plt, fig, axes = figure(1, 2, 9, 3.4)
    loss, accuracy = axes[0]
    loss.plot(epochs, [r["train_loss"] for r in records], marker="o", label="train")
    loss.plot(epochs, [r["val"]["loss"] for r in records], marker="o", label="validation")
    loss.set(xlabel="epoch", ylabel="loss", title=title)
    loss.legend(fontsize=7)
    accuracy.plot(epochs, [100 * r["val"]["accuracy"] for r in records], marker="o", color="C1")
    accuracy.set(xlabel="epoch", ylabel="validation accuracy (%)", title="validation accuracy")
    for ax in axes[0]:
        ax.grid(alpha=0.3)
        ax.title.set_fontsize(8)
    save_png(plt, fig, out / CURVES)
    written = [CURVES]
    with_layers = [r for r in records if r.get("layers")]
    if with_layers:
        plt, fig, axes = figure(1, 1, 5, 3.4)
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
                label=f"epoch {record['epoch']}" if last or index == 0 else None,
            )
        ax.set(xlabel="layer (0 = embeddings)", ylabel="cos_sim (probe batch)", title=title)
        ax.title.set_fontsize(8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        save_png(plt, fig, out / SIMILARITY)
        written.append(SIMILARITY)
    return written
