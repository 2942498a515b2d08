"""Claim 4's figure: validation accuracy (the fourth step's deciding split) and last-layer cos_sim
of the validation probe against depth, one line per arm (norm and method), the mean over seeds
with its 95 % t interval, no line through a depth without data; one row of panels per recipe, the
cells trained with it at any depth whatever study ran them:

- depth-w32's (the second and third protocols: ``depth-w32`` and its pilot at depths 8 and 48,
  ``depth-w32-d96-pilot`` and ``depth-fixes`` at 96, ``depth-fixes`` at 8, ``depth-w32-d192-pilot``
  at 192);
- the post-norm failure recipe (the fourth step: ``postnorm-family`` at 8 and 96), with
  ``postnorm-confirm``'s seeds drawn apart at 96, each a hollow marker, never pooled into a line.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from oversmooth.claims.gathering import has_finished
from oversmooth.claims.measures import last_val
from oversmooth.claims.postnorm_confirm import CANDIDATE
from oversmooth.claims.postnorm_confirm import PRESET as CONFIRMATION
from oversmooth.claims.presets import CLAIMS_PRESETS, DEPTH_FIXES
from oversmooth.study.config import StudyConfig
from oversmooth.study.report import (
    COSINE,
    DODGE,
    PERCENT,
    Draw,
    by_depth_panels,
    depth_span,
    dodged,
    last_cos_sim,
    seed_span,
)
from oversmooth.study.results import CellResult
from oversmooth.train.run_spec import RunSpec, training_key
from oversmooth.utils.plotting import DEFAULT_FORMATS, PAGE, embed, figure_rows, fill, save_figure

STEM = "claim4_depth"
#: every arm drawn, in the order (and so the colour) it has in every row
ARMS = (("pre", "softmax"), ("post", "softmax"), ("post", "deescalate"), *((f.norms[0], f.label) for f in DEPTH_FIXES))
#: each arm's colour, here and in the depth fixes' figure of differences beside it
ARM_COLOURS = {f"{norm}-norm {label}": f"C{index}" for index, (norm, label) in enumerate(ARMS)}
#: the two panels of a row: what they read from a finished cell, their axis and the range it can take
MEASURES = (
    (last_val, "validation accuracy (%)", PERCENT),
    (last_cos_sim, "last-layer cos_sim (validation probe)", COSINE),
)
#: the room either side of the depths, a share of the row's span of depths
MARGIN = 0.06


@dataclass(frozen=True)
class Row:
    """One recipe's row: ``name``, the preset whose training (less depth) selects its cells, and a
    study whose cells are drawn apart ('' for none)."""

    name: str
    preset: StudyConfig
    apart: str = ""

    def cells(self, cells: list[CellResult]) -> tuple[list[CellResult], list[CellResult]]:
        """The finished cells of ``ARMS`` trained with this recipe (one that diverged before its first
        evaluation read at chance, as the decision counts it, ``measures.last_val``): those
        pooled into lines, and those of ``apart``."""
        key = training_key(self.preset.cells()[0].spec(), ("depth",))
        found = [
            c
            for c in cells
            if (c.norm, c.label) in ARMS
            and has_finished(c)
            and c.spec is not None
            and training_key(c.spec, ("depth",)) == key
        ]
        return [c for c in found if c.study != self.apart], [c for c in found if c.study == self.apart]

    def title(self, pooled: list[CellResult], apart: list[CellResult]) -> str:
        recipe = recipe_words(self.preset.cells()[0].spec())
        studies = ", ".join(sorted({c.study for c in pooled})) or f"{self.preset.name}: no cell yet"
        hollow = (
            f"; hollow: {self.apart} seeds {seed_span(sorted({c.seed for c in apart}))}, not pooled" if apart else ""
        )
        return f"claim 4 at {self.name} ({recipe}): {studies}{hollow}"


def recipe_words(spec: RunSpec) -> str:
    """A ViT's training recipe in words: "width 64, lr 0.004, warm-up 5 %, clipping 1, 16 epochs of
    10000 images"."""
    return (
        f"width {spec.width}, lr {spec.lr:g}, warm-up {100 * spec.warmup:g} %, clipping {spec.grad_clip:g}, "
        f"{spec.epochs} epochs of {spec.limit_train} images"
    )


ROWS = (
    Row("depth-w32's recipe", CLAIMS_PRESETS["depth-w32"]),
    Row(f"the post-norm failure recipe {CANDIDATE}", CLAIMS_PRESETS["postnorm-family"], CONFIRMATION.name),
)


def claim4_depth_lines(cells: list[CellResult], formats=DEFAULT_FORMATS) -> tuple[list[str], dict[str, Draw]]:
    """The figure's lines for a report (shown in the first of ``formats`` a browser shows) and its
    drawing; nothing where no row has a cell."""
    rows = [(row, *row.cells(cells)) for row in ROWS]
    rows = [(row, pooled, apart) for row, pooled, apart in rows if pooled or apart]
    if not rows:
        return [], {}
    lines = [
        "Claim 4 by depth under each recipe, every cell trained with it whatever study ran it (one row of panels "
        "a recipe, named in its title): validation accuracy after the last epoch and last-layer cos_sim of the "
        "validation probe, each seed a small dot and the mean over seeds with its 95 % t interval (seeds per arm "
        "and depth in brackets; no line through a depth without data; an interval of few seeds that runs past what "
        "the measure can take runs off the panel); the confirmation's seeds are hollow markers, not pooled:",
        "",
        embed("validation accuracy and last-layer cos_sim by depth, per recipe", STEM, formats),
        "",
    ]
    return lines, {STEM: lambda stem, f: plot_claim4_depth(rows, stem, f)}


def plot_claim4_depth(
    rows: list[tuple[Row, list[CellResult], list[CellResult]]], stem: Path, formats=DEFAULT_FORMATS
) -> None:
    """One row of two panels per ``(row, pooled cells, cells apart)``: ``by_depth_panels`` on the
    pooled cells, the arms dodged apart at each depth, and each cell apart a hollow marker beside its
    arm's."""
    with figure_rows(len(rows), 2, PAGE, 3.4 * len(rows)) as (fig, panels):
        for (row, pooled, apart), (subfigure, axes) in zip(rows, panels):
            depths = sorted({c.depth for c in pooled + apart})
            span = depth_span(depths)
            dodge = DODGE * span
            for ax, (read, ylabel, _) in zip(axes, MEASURES):
                for index, (arm, values) in enumerate(_by_arm(apart, read).items()):
                    label = f"{arm}, {row.apart} (hollow: each seed)"
                    for depth, found in values.items():
                        x = depth + dodged(index, len(ARMS), dodge) + dodge / 2
                        ax.plot([x] * len(found), found, "o", mfc="none", color=ARM_COLOURS[arm], label=label)
                ax.set_ylabel(ylabel)
            by_arm = [_by_arm(pooled, read) for read, _, _ in MEASURES]
            by_depth_panels(axes, depths, by_arm, dodge, tuple(bounds for _, _, bounds in MEASURES), ARM_COLOURS)
            for ax in axes:
                ax.set_xlim(depths[0] - MARGIN * span, depths[-1] + MARGIN * span)
            subfigure.suptitle(fill(row.title(pooled, apart), PAGE))
        save_figure(fig, stem, formats)


def _by_arm(cells: list[CellResult], read) -> dict[str, dict[int, list[float]]]:
    """Every arm of ``ARMS`` in order (its place in the row: ``by_depth_panels``' dodge): depth ->
    ``read`` of its cells."""
    found: dict[str, dict[int, list[float]]] = {f"{norm}-norm {label}": defaultdict(list) for norm, label in ARMS}
    for c in cells:
        if (value := read(c)) is not None:
            found[f"{c.norm}-norm {c.label}"][c.depth].append(value)
    return found
