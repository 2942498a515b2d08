"""Matplotlib on the Agg backend (no screen needed) and atomic PNG writes, for every report."""

from __future__ import annotations

from pathlib import Path

from oversmooth.utils.atomic import atomic_write


def figure(rows: int, cols: int, width: float, height: float):
    """``(pyplot, fig, axes)`` with ``axes`` always a 2-D array ``[rows][cols]``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt, *plt.subplots(rows, cols, figsize=(width, height), squeeze=False)


def save_png(plt, fig, path: str | Path, rect: tuple[float, float, float, float] | None = None, dpi: int = 90) -> None:
    """Lay out (within ``rect`` of the figure, when given: room left for a figure legend), write
    ``path`` atomically at ``dpi``, and free the figure. No version in the file's metadata: the same
    figure is the same bytes wherever the pinned stack draws it."""
    fig.tight_layout(**({"rect": rect} if rect else {}))
    with atomic_write(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=dpi, metadata={"Software": None})
    plt.close(fig)
