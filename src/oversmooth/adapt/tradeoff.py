"""Similarity against quality for every patched arm, at step 0 and at the end, beside the control:
the table of ``report.md``, the figure ``tradeoff.png`` and the rule that names the best arm.

Each patched arm at step 0 (patched, before adaptation) is set beside the control at step 0 (for
a pretrained model, the model as it came), and at its last step beside the control's last step:
- last-layer cos_sim, and the similarity removed: the control's minus the arm's;
- the quality (``verdict.quality_measure``: output cosine, KL, perplexity or accuracy, as adapt
  measures it on the validation split), and the quality lost against the control, positive for a
  loss as in ``analyze.frontier.quality_loss``: ratio - 1 for perplexities, the difference otherwise;
- the similarity removed per unit of quality lost (none when no quality was lost).

The best arm, by a stated rule: among the completed arms within the verdict's budget at the end
(``verdict.judge``), the one with the largest similarity drop against the control at the end; a
drop under ``verdict.SIMILARITY_MARGIN`` counts as none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oversmooth.adapt.result import AdaptResult, ArmResult
from oversmooth.adapt.verdict import MEASURES, NO_GAP, SIMILARITY_MARGIN, judge, limit, quality_measure
from oversmooth.utils.plotting import (
    DEFAULT_FORMATS,
    PAGE,
    figure,
    figure_legend,
    integer_ticks,
    save_figure,
    set_title,
)


@dataclass(frozen=True)
class Point:
    """One arm at one step beside the control at that step."""

    cos_sim: float | None  # last layer
    quality: float
    removed: float | None  # the control's cos_sim minus the arm's
    lost: float  # quality lost against the control (> 0: worse)

    @property
    def per_unit(self) -> float | None:
        """Similarity removed per unit of quality lost; None when no quality was lost (less than
        ``verdict.NO_GAP``: float32 rounding)."""
        return None if self.removed is None or self.lost <= NO_GAP else self.removed / self.lost


@dataclass(frozen=True)
class Tradeoff:
    arm: str
    measure: str
    start: Point  # patched, before adaptation, beside the control's start
    end: Point  # after the last step, beside the control's end
    within_budget: bool  # at the end (``verdict.judge``)
    completed: bool


def lost(measure: str, value: float, reference: float) -> float:
    """Quality lost by ``value`` against ``reference``: ratio - 1 for a perplexity, else the
    difference, positive when ``value`` is worse."""
    higher, kind, _ = MEASURES[measure]
    if kind == "ratio":
        return value / reference - 1
    return reference - value if higher else value - reference


def _point(measure: str, scores: dict, cos_sim: float | None, control: dict, control_cos: float | None) -> Point:
    removed = None if cos_sim is None or control_cos is None else control_cos - cos_sim
    return Point(cos_sim, scores[measure], removed, lost(measure, scores[measure], control[measure]))


def tradeoffs(result: AdaptResult) -> list[Tradeoff]:
    """Every patched arm's ``Tradeoff``."""
    control = result.control
    rows = []
    for arm in result.patched:
        end = arm.val or arm.start
        measure = quality_measure(end)
        rows.append(
            Tradeoff(
                arm.name,
                measure,
                _point(measure, arm.start, arm.start_cos_sim_last, control.start, control.start_cos_sim_last),
                _point(measure, end, arm.cos_sim_last, control.val or control.start, control.cos_sim_last),
                judge(result, arm).within_budget,
                arm.status == "completed",
            )
        )
    return rows


def best(rows: list[Tradeoff]) -> Tradeoff | None:
    """The completed arm within budget at the end whose similarity drop is largest, or None."""
    fits = [r for r in rows if r.completed and r.within_budget and r.end.removed is not None]
    return max(fits, key=lambda r: r.end.removed, default=None)


def verdict_words(result: AdaptResult) -> str:
    """The best arm by the module's rule, in a sentence, or why there is none."""
    rows = tradeoffs(result)
    rule = (
        "(rule: of the arms within the quality budget after adaptation, the largest drop of last-layer cos_sim "
        f"below the control's; under {SIMILARITY_MARGIN:g} counts as none)"
    )
    top = best(rows)
    if not rows:
        return "No patched arm ran: every method asked for was left out or had no knob within budget."
    if top is None:
        return f"No arm stays within the quality budget after adaptation {rule}."
    if top.end.removed < SIMILARITY_MARGIN:
        return (
            f"No arm within the quality budget ends less similar than the control: the largest drop, {top.arm}'s, "
            f"is {top.end.removed:.3f} {rule}."
        )
    return (
        f"Largest similarity drop within the quality budget after adaptation: {top.arm}, last-layer cos_sim "
        f"{top.end.cos_sim:.3f} against the control's {result.control.cos_sim_last:.3f} "
        f"({top.end.removed:.3f} lower), {top.measure.replace('_', ' ')} {top.end.quality:.4g} {rule}."
    )


def table(result: AdaptResult) -> list[str]:
    """Markdown: one row per patched arm, step 0 and the end, beside the control."""
    control = result.control
    measure = quality_measure(control.start)
    lines = [
        f"| arm | cos_sim last: step 0 -> end | removed vs control: step 0 -> end | {measure.replace('_', ' ')}: "
        "step 0 -> end | quality lost vs control: step 0 -> end | removed per unit lost: step 0 -> end | "
        "within budget at end |",
        "|---|---|---|---|---|---|---|",
        f"| control | {_f(control.start_cos_sim_last)} -> {_f(control.cos_sim_last)} | | "
        f"{control.start[measure]:.4g} -> {(control.val or control.start)[measure]:.4g} | | | |",
    ]
    for row in tradeoffs(result):
        start, end = row.start, row.end
        lines.append(
            f"| {row.arm} | {_f(start.cos_sim)} -> {_f(end.cos_sim)} | {_f(start.removed)} -> {_f(end.removed)} | "
            f"{start.quality:.4g} -> {end.quality:.4g} | {start.lost:.4g} -> {end.lost:.4g} | "
            f"{_ratio(start)} -> {_ratio(end)} | {'yes' if row.within_budget else 'no'} |"
        )
    return lines


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ratio(point: Point) -> str:
    return "no loss" if point.per_unit is None else f"{point.per_unit:.3g}"


def colors(result: AdaptResult) -> dict[str, str]:
    """Each arm's colour in both of adapt's figures: the control black, the patched arms matplotlib's
    colour cycle in their order (it repeats after 10 arms)."""
    import matplotlib

    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    return {"control": "black"} | {arm.name: cycle[i % len(cycle)] for i, arm in enumerate(result.patched)}


def plot(result: AdaptResult, stem: Path, formats: tuple[str, ...] = DEFAULT_FORMATS) -> None:
    """Left: quality (x) against last-layer cos_sim (y), one arrow per patched arm from step 0
    (patched, before adaptation) to the end, the control as a point (its start as a ring when it
    moved), the budget at the end as a line. Right: cos_sim per layer, each arm at step 0 (dotted)
    and the end (solid), the control dashed. One legend under both."""
    control = result.control
    measure = quality_measure(control.start)
    higher, kind, bound = MEASURES[measure]
    end_of = lambda arm: arm.val or arm.start  # noqa: E731
    color_of = colors(result)
    with figure(1, 2, PAGE, 3.2) as (fig, axes):
        left, right = axes[0]
        for arm in result.patched:
            color = color_of[arm.name]
            start, end = (arm.start[measure], arm.start_cos_sim_last), (end_of(arm)[measure], arm.cos_sim_last)
            if None in (*start, *end):
                continue
            left.annotate("", end, start, arrowprops={"arrowstyle": "->", "color": color, "lw": 1.5})
            left.plot(*start, "o", color=color, markerfacecolor="none")
            left.plot(*end, "o", color=color, label=arm.name)
            _layers(right, arm, color)
        finish = (end_of(control)[measure], control.cos_sim_last)
        left.plot(*finish, "s", color="black", label="control")
        if (control.start[measure], control.start_cos_sim_last) != finish:
            left.plot(control.start[measure], control.start_cos_sim_last, "s", color="black", markerfacecolor="none")
        edge = limit(end_of(control)[measure], kind, bound)
        left.axvline(edge, color="grey", linestyle=":", label=f"budget ({'>=' if higher else '<='} {edge:.4g})")
        _layers(right, control, "black", dashed=True)
        if kind == "ratio":
            left.set_xscale("log")
        left.set(xlabel=f"val {measure.replace('_', ' ')}", ylabel="last-layer cos_sim")
        set_title(left, "ring: step 0 (patched, before adaptation); dot: end")
        right.set(xlabel="layer (0 = embeddings)", ylabel="cos_sim")
        set_title(right, "per layer: step 0 dotted, end solid")
        integer_ticks(right)
        figure_legend(fig)
        save_figure(fig, stem, formats)


def _layers(ax, arm: ArmResult, color: str, dashed: bool = False) -> None:
    """``arm``'s cos_sim per layer at step 0 and at the end (its first and last rows)."""
    for row, style in ((arm.rows[0], ":"), (arm.rows[-1], "--" if dashed else "-")):
        layers = sorted(int(k[8:]) for k in row if k.startswith("cos_sim_") and k[8:].isdigit())
        ax.plot(layers, [row[f"cos_sim_{layer}"] for layer in layers], style, color=color)
