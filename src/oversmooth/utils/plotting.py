"""Every figure of every report in one style, sized for a paper (``COLUMN`` or ``PAGE`` wide, fonts of
7-8 pt at that size), and written one way: ``save_figure`` lays it out and writes it atomically in
each format asked for (PNG at ``DPI``, PDF, SVG), with no date or version inside, so the same figure
is the same bytes wherever the pinned stack draws it. Legends sit beside or under the data, never on
it (``legend_below``, ``figure_legend``); an axis that counts (layers, epochs, steps) ticks whole
numbers (``integer_ticks``). No pyplot: figures are made on the Agg canvas, whatever backend a
notebook runs."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from oversmooth.errors import UsageError
from oversmooth.utils.atomic import atomic_write

#: the formats a figure may be written in; the first is the default
FORMATS = ("png", "pdf", "svg")
DEFAULT_FORMATS = FORMATS[:1]
#: PNG resolution: a figure ``COLUMN`` inches wide is 680 pixels
DPI = 200
#: a paper's column and its full page width, in inches: figures are drawn at the size they are printed
COLUMN, PAGE = 3.4, 7.0
#: the rcParams every figure is drawn under (``figure``)
STYLE = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "figure.titlesize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.frameon": False,
    "axes.linewidth": 0.6,
    "axes.grid": True,
    "axes.formatter.useoffset": False,  # each tick says its value, no "1e-5 + 0.9999" above the axis
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "lines.linewidth": 1.2,
    "lines.markersize": 3.5,
    "errorbar.capsize": 2.5,
    "pdf.fonttype": 42,  # TrueType in the PDF: editable text, as journals ask
    "svg.hashsalt": "oversmooth",  # the same ids in every SVG of one figure
}
#: what each format's file says of itself: nothing that changes from one run to the next
_METADATA = {
    "png": {"Software": None},
    "pdf": {"Creator": None, "Producer": None, "CreationDate": None},
    "svg": {"Creator": None, "Date": None},
}


def figure_formats(text: str) -> tuple[str, ...]:
    """``"png,pdf"`` -> ``("png", "pdf")``; a UsageError naming an unknown or missing format.

    >>> figure_formats("PNG, svg,png")
    ('png', 'svg')
    """
    formats = tuple(dict.fromkeys(word.strip().lower() for word in text.split(",") if word.strip()))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        what = f"unknown figure format {unknown[0]!r}" if unknown else "no figure format"
        raise UsageError(f"{what} in {text!r}; give {', '.join(FORMATS)}, comma-separated (e.g. png,pdf)")
    return formats


def figure_files(stem: str, formats: tuple[str, ...] = FORMATS) -> list[str]:
    """The file names of figure ``stem`` in ``formats``: ``figure_files("cos_sim", ("png", "pdf"))``
    is ``["cos_sim.png", "cos_sim.pdf"]``."""
    return [f"{stem}.{f}" for f in formats]


def embed(alt: str, stem: str, formats: tuple[str, ...]) -> str:
    """Markdown showing figure ``stem``: its PNG or SVG where written, else a link to its PDF."""
    shown = next((f for f in ("png", "svg") if f in formats), None)
    return f"![{alt}]({stem}.{shown})" if shown else f"[{alt}]({stem}.{formats[0]})"


@contextmanager
def figure(rows: int = 1, cols: int = 1, width: float = COLUMN, height: float = 2.6) -> Iterator:
    """``(fig, axes)`` in ``STYLE``, ``width`` x ``height`` inches, constrained layout, ``axes``
    always a 2-D array ``[rows][cols]``. Draw and ``save_figure`` inside the ``with``: the style
    holds there."""
    with _styled(width, height) as fig:
        yield fig, fig.subplots(rows, cols, squeeze=False)


@contextmanager
def figure_rows(rows: int, cols: int, width: float = PAGE, height: float = 5.2) -> Iterator:
    """``figure``'s, in ``rows`` rows of ``cols`` panels, each row a subfigure that takes its own
    title (``suptitle``) and legend (``figure_legend`` on it): ``(fig, [(row, axes), ...])``, ``axes``
    a row's panels left to right."""
    with _styled(width, height) as fig:
        yield (
            fig,
            [(row, row.subplots(1, cols, squeeze=False)[0]) for row in fig.subfigures(rows, 1, squeeze=False)[:, 0]],
        )


@contextmanager
def _styled(width: float, height: float) -> Iterator:
    """An empty figure in ``STYLE``, ``width`` x ``height`` inches, constrained layout, on the Agg canvas."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(width, height), layout="constrained")
        FigureCanvasAgg(fig)
        yield fig


def save_figure(fig, stem: str | Path, formats: tuple[str, ...] = DEFAULT_FORMATS) -> list[str]:
    """Write ``fig`` as ``stem.<format>`` for each of ``formats`` (PNG at ``DPI``), each atomically;
    the names written."""
    stem = Path(stem)
    for fmt in formats:
        with atomic_write(stem.with_name(f"{stem.name}.{fmt}"), "wb") as handle:
            fig.savefig(handle, format=fmt, dpi=DPI, metadata=_METADATA[fmt])
    return figure_files(stem.name, formats)


def integer_ticks(*axes, axis: str = "x") -> None:
    """Whole-number ticks on ``axis`` ("x" or "y") of each of ``axes``: for one that counts layers,
    blocks, epochs or steps (a view around one count: its one tick)."""
    from matplotlib.ticker import MaxNLocator

    for ax in axes:
        getattr(ax, f"{axis}axis").set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def legend_below(ax, ncols: int | None = None):
    """``ax``'s legend under its x label, outside the data, in as many columns as fit under the
    axes (``ncols``: so many); None when nothing is labelled. Call it after the x label is set: the
    legend drops by the tick labels and the label's lines."""
    import matplotlib
    from matplotlib.transforms import ScaledTranslation

    labels = ax.get_legend_handles_labels()[1]
    if not labels:
        return None
    ncols = ncols or _columns(labels, ax.get_position().width * ax.figure.get_figwidth())
    rc = matplotlib.rcParams
    lines = ax.get_xlabel().count("\n") + 1 if ax.get_xlabel() else 0
    tick = 1.25 * _points(rc["xtick.labelsize"]) if ax.xaxis.get_ticklabels() else 0.0
    drop = 4 + rc["xtick.major.size"] + rc["xtick.major.pad"] + tick + rc["axes.labelpad"]
    drop += 1.25 * lines * _points(rc["axes.labelsize"])
    below = ax.transAxes + ScaledTranslation(0, -drop / 72, ax.figure.dpi_scale_trans)
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below, ncols=ncols)


def figure_legend(fig, ncols: int | None = None):
    """One legend for every panel of ``fig`` (a figure, or a subfigure: ``figure_rows``' row; each
    label once), under them all, in as many columns as fit across it (``ncols``: so many); None when
    nothing is labelled."""
    labelled: dict[str, object] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            labelled.setdefault(label, handle)
    if not labelled:
        return None
    ncols = ncols or _columns(list(labelled), fig.bbox.width / fig.dpi)  # inches across, a subfigure's too
    return fig.legend(list(labelled.values()), list(labelled), loc="outside lower center", ncols=ncols)


#: where a point's label may go, tried in this order: (offset in points, horizontal and vertical alignment)
_LABEL_PLACES = (
    ((3, 3), "left", "bottom"),
    ((3, -3), "left", "top"),
    ((-3, 3), "right", "bottom"),
    ((-3, -3), "right", "top"),
    ((0, 5), "center", "bottom"),
    ((0, -5), "center", "top"),
)


def place_labels(ax, labels: list[tuple[str, float, float, str]], size: float = 6) -> list:
    """Label points of ``ax``, ``(text, x, y, colour)`` each, without collisions: a label goes to the
    first place beside its point (``_LABEL_PLACES``) where it stays inside the axes and overlaps no
    label placed before and no point; the least crowded points are labelled first, and one with no
    such place is left out (its value stays in the tables). Call it last, when the rest of the
    figure is drawn. Returns the labels placed."""
    import numpy as np

    fig = ax.figure
    fig.canvas.draw()  # lay the figure out: the label boxes are measured where they will be
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    spots = ax.transData.transform([(x, y) for _, x, y, _ in labels]) if labels else np.zeros((0, 2))
    reach = 3 * fig.dpi / 72  # a marker's radius, in pixels
    taken = [_box(x - reach, y - reach, x + reach, y + reach) for x, y in spots]
    crowd = [int((np.hypot(*(spots - spot).T) < 20 * fig.dpi / 72).sum()) for spot in spots]
    placed = []
    for index in sorted(range(len(labels)), key=lambda i: crowd[i]):
        text, x, y, colour = labels[index]
        for offset, ha, va in _LABEL_PLACES:
            label = ax.annotate(
                text, (x, y), xytext=offset, textcoords="offset points", ha=ha, va=va, fontsize=size, color=colour
            )
            label.set_in_layout(False)
            box = label.get_window_extent(renderer)
            if _contains(inside, box) and not any(box.overlaps(other) for other in taken):
                taken.append(box)
                placed.append(label)
                break
            label.remove()
    return placed


def _box(x0: float, y0: float, x1: float, y1: float):
    from matplotlib.transforms import Bbox

    return Bbox([[x0, y0], [x1, y1]])


def _contains(outer, inner) -> bool:
    return outer.x0 <= inner.x0 and inner.x1 <= outer.x1 and outer.y0 <= inner.y0 and inner.y1 <= outer.y1


def fill(text: str, width: float, size: float | None = None) -> str:
    """``text`` with each line wrapped to fit ``width`` inches at font ``size`` points (default the
    title size of ``STYLE``): for titles that name a model and its inputs."""
    size = size or STYLE["axes.titlesize"]
    chars = max(int(width * 72 / (0.6 * size)), 10)  # DejaVu Sans: about 0.6 em a character
    return "\n".join(textwrap.fill(line, chars, break_on_hyphens=False) for line in text.split("\n"))


def set_title(ax, text: str) -> None:
    """``ax``'s title, each line wrapped to the axes' width (``fill``)."""
    ax.set_title(fill(text, ax.get_position().width * ax.figure.get_figwidth()))


def _columns(labels: list[str], width: float) -> int:
    """How many legend columns of ``labels`` fit across ``width`` inches (at least one, at most
    one a label)."""
    import matplotlib

    size = _points(matplotlib.rcParams["legend.fontsize"])
    column = (max(map(len, labels)) * 0.55 + 3.5) * size / 72  # the text, the handle and the gaps
    return max(1, min(len(labels), int(width / column)))


def _points(size) -> float:
    """A font size in points, from a number or a name such as "small"."""
    from matplotlib.font_manager import FontProperties

    return FontProperties(size=size).get_size_in_points()
