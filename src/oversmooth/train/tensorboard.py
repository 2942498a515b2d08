"""Optional TensorBoard logging of the per-epoch records (``oversmooth train --tensorboard``).

Tags: ``train/loss``, ``train/lr``, ``val/<score>``, and ``layers/<metric>/layer<l>`` (0 =
embeddings output, i = after block i) for the per-layer cos_sim and t_sim of the probe batch; the
step is the epoch. ``metrics.jsonl`` stays
the record of truth; TensorBoard is a view of it.
"""

from __future__ import annotations

from pathlib import Path

from oversmooth.errors import FieldError

FOLDER = "tensorboard"
LAYER_METRICS = ("cos_sim", "t_sim")


def summary_writer_class():
    """torch's ``SummaryWriter``, or a clear FieldError when the tensorboard package is missing."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise FieldError("{tensorboard} needs the tensorboard package: pip install tensorboard") from None
    return SummaryWriter


def open_writer(out_dir: Path):
    """A ``SummaryWriter`` logging to ``out_dir/tensorboard``."""
    return summary_writer_class()(str(out_dir / FOLDER))


def log_epoch(writer, record: dict) -> None:
    """Write one ``metrics.jsonl`` record's scalars at step = its epoch."""
    epoch = record["epoch"]
    writer.add_scalar("train/loss", record["train_loss"], epoch)
    writer.add_scalar("train/lr", record["lr"], epoch)
    for name, value in record["val"].items():
        writer.add_scalar(f"val/{name}", value, epoch)
    for row in record.get("layers", []):
        for metric in LAYER_METRICS:
            if row.get(metric) is not None:
                writer.add_scalar(f"layers/{metric}/layer{row['layer']:02d}", row[metric], epoch)
    writer.flush()
