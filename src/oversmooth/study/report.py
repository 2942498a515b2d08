"""``report.md`` + figures (PNG, or each ``--format``) for the cells of one or more studies
(``oversmooth report``): per study its score table, the paired differences of each method from its
baseline by seed, the training curves and per-layer similarity at the end of training (every seed a
thin line, their mean bold), and scores vs depth. The claims report (``oversmooth.claims.report``)
adds the same study sections under its claims.

Scores in the study tables are means over seeds with their standard deviation. A completed cell
contributes its test score; a diverged or unfinished one its last validation score, marked
(``†`` diverged, ``*`` unfinished), so a report can be written at any time. The paired differences
and the arms by depth read finished seeds only (``paired_score``), a diverged seed marked ``†`` as
it counts with its last validation score.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from oversmooth.study.results import CellResult, paired_score
from oversmooth.study.stats import paired_test
from oversmooth.utils.atomic import atomic_directory
from oversmooth.utils.markdown import markdown_table
from oversmooth.utils.outputs import signature
from oversmooth.utils.plotting import (
    DEFAULT_FORMATS,
    PAGE,
    embed,
    figure,
    figure_files,
    figure_legend,
    fill,
    integer_ticks,
    legend_below,
    save_figure,
    set_title,
)
from oversmooth.utils.provenance import Provenance, digest

TITLE = "oversmooth study report"
MARK = {"diverged": "†", "partial": "*"}
#: every file a study report may write (three figures per study, in each format); one a report does
#: not write is removed from its folder, e.g. the figures of a study no longer in it
OUTPUTS = (
    "report.md",
    "cells.csv",
    *(name for kind in ("scores", "layers", "curves") for name in figure_files("*_" + kind)),
)
#: what a study report replaces in its folder: its own files, and those `oversmooth report` wrote
#: besides before the source papers' claims moved to `oversmooth claims`, so that no verdict of an
#: earlier report stays beside one that decides none
REPLACES = (
    *OUTPUTS,
    "claims.json",
    *(name for stem in ("claims", "claim4_depth", "claims_8_2c_lambda", "probes") for name in figure_files(stem)),
)
#: a figure of a report: it draws itself at a stem (a path without suffix) in the formats given
Draw = Callable[[Path, tuple[str, ...]], None]
#: the values a measure can take, (low, high), None where unbounded
Range = tuple[float | None, float | None]
#: the ranges of an accuracy in per cent, a mean cosine similarity and a negative log-likelihood
PERCENT: Range = (0.0, 100.0)
COSINE: Range = (-1.0, 1.0)
NLL: Range = (0.0, None)
#: how far apart the arms stand at one depth in a figure by depth, a share of its span of depths
DODGE = 0.012
#: the arms a figure tells apart by colour (matplotlib's cycle, ``C0``-``C9``)
COLOURS = 10
#: the note under a table whose ``†`` marks a diverged seed (``paired_score``)
DIVERGED = (
    "† a seed diverged: it counts with its last validation score (chance where it diverged in its first "
    "epoch), not a test score."
)


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def by_study(cells: list[CellResult]) -> dict[str, list[CellResult]]:
    """Study name -> its cells, studies in the order their cells come."""
    studies: dict[str, list[CellResult]] = defaultdict(list)
    for cell in cells:
        studies[cell.study].append(cell)
    return dict(studies)


def _labels(cells: list[CellResult]) -> list[str]:
    """Method labels in the order the cells name them (the study's order)."""
    return list(dict.fromkeys(c.label for c in cells))


def _styles(cells: list[CellResult]) -> dict[str, dict]:
    """One line style per method label across a figure, whichever panels hold it: a colour of the
    cycle, then, past its ``COLOURS``, the same colours dashed, dotted, dash-dotted.

    >>> from types import SimpleNamespace as Cell
    >>> styles = _styles([Cell(label=f"m{i}") for i in range(12)])
    >>> styles["m0"], styles["m10"], styles["m11"]
    ({'color': 'C0', 'ls': '-'}, {'color': 'C0', 'ls': '--'}, {'color': 'C1', 'ls': '--'})
    """
    return {
        label: {"color": f"C{index % COLOURS}", "ls": ("-", "--", ":", "-.")[index // COLOURS % 4]}
        for index, label in enumerate(_labels(cells))
    }


def _legend_room(styles: dict) -> float:
    """Inches more a figure needs for a legend of one line per method past the first four, so that
    its panels keep their height.

    >>> _legend_room(dict.fromkeys("abc")), _legend_room(dict.fromkeys("abcdefghij"))
    (0.0, 1.5)
    """
    return 0.25 * max(len(styles) - 4, 0)


def _legends(axes) -> None:
    """A legend under every panel that has labelled lines (panels may hold different methods)."""
    for ax in axes:
        legend_below(ax, ncols=1)


def _panels(cells: list[CellResult]) -> list[tuple[str, str]]:
    return sorted({(c.task, c.norm) for c in cells}, key=lambda tn: (tn[0], tn[1] != "pre"))


def score_table(cells: list[CellResult]) -> str:
    """Markdown: one row per task x norm x method, one column per depth: mean ± std (seeds)."""
    depths = sorted({c.depth for c in cells})
    name = cells[0].score_name
    rows = []
    for task, norm in _panels(cells):
        for label in _labels(cells):
            if not any((c.task, c.norm, c.label) == (task, norm, label) for c in cells):
                continue  # a method the study trains under other norms only
            row = [task, norm, label]
            for depth in depths:
                group = [
                    c
                    for c in cells
                    if (c.task, c.norm, c.label, c.depth) == (task, norm, label, depth) and c.score is not None
                ]
                if not group:
                    row.append("–")
                    continue
                mean, std = _mean_std([c.score for c in group])
                marks = "".join(sorted({MARK[c.status] for c in group if c.status in MARK}))
                scale = 100 if name == "accuracy" else 1
                row.append(f"{mean * scale:.1f} ± {std * scale:.1f}{marks} ({len(group)})")
            rows.append(row)
    return markdown_table(["task", "norm", "method", *(f"depth {d}" for d in depths)], rows)


def _seeds_and_mean(ax, runs: list[list[float]], x: list, style: dict, label: str) -> None:
    """Each run a thin line, their mean (over the runs that reach each point) bold, in ``style``."""
    for run in runs:
        ax.plot(x[: len(run)], run, lw=0.7, alpha=0.45, **style)
    longest = max(len(run) for run in runs)
    mean = [statistics.fmean(run[i] for run in runs if len(run) > i) for i in range(longest)]
    ax.plot(x[:longest], mean, lw=2.2, label=f"{label} ({len(runs)} seed{'s' if len(runs) > 1 else ''})", **style)


def _panel_width(panels: list) -> float:
    """A figure's width for ``panels`` side by side: a column for one, the page for more."""
    return PAGE if len(panels) > 1 else 3.6


def _probe(cells: list[CellResult]) -> str:
    """What the validation probe of ``cells`` is, in words ("32 validation images"), '' unknown."""
    spec = next((c.spec for c in cells if c.spec is not None), None)
    if spec is None:
        return ""
    inputs = "images" if spec.model == "vit" else f"sequences x {spec.seq_len} tokens"
    return f"{spec.probe_size} validation {inputs}"


def plot_layers(
    cells: list[CellResult], stem: Path, formats=DEFAULT_FORMATS, metrics: tuple[str, ...] = ("cos_sim", "t_sim")
) -> None:
    """Per-layer metrics of the probe batch at the end of training, deepest depth: one thin line
    per seed, the mean over seeds bold."""
    panels, styles = _panels(cells), _styles(cells)
    height = 1.2 + 2.2 * len(metrics) + _legend_room(styles)
    with figure(len(metrics), len(panels), _panel_width(panels), height) as (fig, axes):
        for col, (task, norm) in enumerate(panels):
            chosen = [c for c in cells if (c.task, c.norm) == (task, norm) and c.final_layers]
            if not chosen:
                continue
            depth = max(c.depth for c in chosen)
            probe = _probe(chosen)
            for row, metric in enumerate(metrics):
                ax = axes[row][col]
                for label in _labels(chosen):
                    runs = [
                        [layer[metric] for layer in c.final_layers]
                        for c in chosen
                        if c.depth == depth and c.label == label
                    ]
                    if runs:  # x in the stream numbering; records of blocks alone (no embeddings) start at 1
                        longest = max(len(run) for run in runs)
                        _seeds_and_mean(ax, runs, list(range(depth + 1 - longest, depth + 1)), styles[label], label)
                ax.set_xlabel("layer (0 = embeddings, i = after block i)")
                integer_ticks(ax)
                ax.set_ylabel(metric)
                title = f"{task}, {norm}-norm, depth {depth}, end of training" + (f"\nprobe: {probe}" if probe else "")
                set_title(ax, title)
        _legends(axes[-1])
        save_figure(fig, stem, formats)


def plot_curves(cells: list[CellResult], stem: Path, formats=DEFAULT_FORMATS) -> None:
    """Validation score per epoch at the deepest depth, one panel per task x norm: one thin line
    per seed, the mean over seeds bold."""
    panels, styles = _panels(cells), _styles(cells)
    with figure(1, len(panels), _panel_width(panels), 3.4 + _legend_room(styles)) as (fig, axes):
        for ax, (task, norm) in zip(axes[0], panels):
            chosen = [c for c in cells if (c.task, c.norm) == (task, norm) and c.epochs]
            if not chosen:
                continue
            depth = max(c.depth for c in chosen)
            for label in _labels(chosen):
                runs = [c for c in chosen if c.depth == depth and c.label == label]
                if runs:
                    longest = max(len(c.epochs) for c in runs)
                    scale = 100.0 if chosen[0].score_name == "accuracy" else 1.0  # percent, as the tables
                    _seeds_and_mean(
                        ax,
                        [[scale * e["val"][c.score_name] for e in c.epochs] for c in runs],
                        list(range(1, longest + 1)),
                        styles[label],
                        label,
                    )
            ax.set_xlabel("epoch")
            integer_ticks(ax)
            ax.set_ylabel(f"val {chosen[0].score_name}" + (" (%)" if chosen[0].score_name == "accuracy" else ""))
            ax.set_title(f"{task}, {norm}-norm, depth {depth}")
        _legends(axes[0])
        save_figure(fig, stem, formats)


def escalation(layers: list[dict]) -> float | None:
    """Yu & Zhang's token-similarity escalation of one model: ``t_sim`` after the last block minus
    ``t_sim`` of the embeddings (layer 0), on the validation probe; None without both."""
    first = next((row["t_sim"] for row in layers if row["layer"] == 0), None)
    return None if first is None or len(layers) < 2 else layers[-1]["t_sim"] - first


def seconds_per_step(cell: CellResult) -> float | None:
    """Training seconds per optimiser step (batch size over the run's measured examples per
    second; a study's wall clocks on a shared machine: ``bench_overhead.py`` gives ratios)."""
    speed = cell.examples_per_second
    return None if not speed or cell.spec is None else cell.spec.batch_size / speed


def last_cos_sim(cell: CellResult) -> float | None:
    """The last layer's cos_sim on the validation probe after the last recorded epoch (None before one)."""
    return cell.final_layers[-1]["cos_sim"] if cell.final_layers else None


#: what the depth table and plot read per cell: name -> (reader, format)
ARM_MEASURES: dict[str, tuple[Callable[[CellResult], float | None], str]] = {
    "last-layer cos_sim": (last_cos_sim, ".3f"),
    "t_sim escalation": (lambda c: escalation(c.final_layers), "+.3f"),
    "s / step": (seconds_per_step, ".3g"),
}
#: the arm's last-layer cos_sim at random init (its study's null.json), a column where a cell has it
NULL_MEASURE = {"cos_sim at random init": (lambda c: c.null["mean"] if c.null else None, ".3f")}


def _arms(cells: list[CellResult]) -> dict[tuple, list[CellResult]]:
    """(task, norm, label, depth) -> its cells, in the study's order of methods."""
    arms: dict[tuple, list[CellResult]] = defaultdict(list)
    order = {label: i for i, label in enumerate(_labels(cells))}
    for c in sorted(cells, key=lambda c: (c.task, c.norm != "pre", order[c.label], c.depth, c.seed)):
        arms[(c.task, c.norm, c.label, c.depth)].append(c)
    return dict(arms)


def _diverged(cells: list[CellResult]) -> str:
    """``†`` where one of ``cells`` diverged (its ``paired_score`` is no test score), else ''."""
    return MARK["diverged"] if any(c.status == "diverged" for c in cells) else ""


def _with_note(table: str, marked: bool) -> str:
    """The table, and ``DIVERGED`` under it where a row is ``marked`` (``_diverged``)."""
    return "\n".join([table, *(["", DIVERGED] if marked else [])])


def _one_sample(values: list[float]):
    """The mean of ``values`` with its 95 % one-sample t interval (the values paired with zeros)."""
    return paired_test(values, [0.0] * len(values), "higher")


def _with_interval(values: list[float], spec: str) -> str:
    """``mean [lo, hi]``: the 95 % one-sample t interval (one value: the value alone)."""
    test = _one_sample(values)
    if len(values) < 2 or not _finite(test.ci_low):
        return format(test.mean, spec)
    return f"{test.mean:{spec}} [{test.ci_low:{spec}}, {test.ci_high:{spec}}]"


def arm_table(cells: list[CellResult]) -> str:
    """Markdown: one row per task x norm x method x depth, with the finished seeds' score (95 % t
    interval; ``†``: a seed diverged), last-layer cos_sim and t_sim escalation of the validation
    probe, seconds per step, and the arm's cos_sim at random init where a study has its null."""
    lm = cells[0].model == "lm"
    measures = ARM_MEASURES | (NULL_MEASURE if any(c.null for c in cells) else {})
    rows = []
    for (task, norm, label, depth), group in _arms(cells).items():
        scores = [s for c in group if (s := paired_score(c)) is not None]
        score = _with_interval(scores, ".2f") + _diverged(group) if scores else "–"
        row = [task, norm, label, depth, len(scores), score]
        for read, spec in measures.values():
            values = [v for c in group if (v := read(c)) is not None]
            row.append(format(statistics.fmean(values), spec) if values else "–")
        rows.append(row)
    header = ["task", "norm", "method", "depth", "n", f"test {'NLL (nats)' if lm else 'accuracy (%)'}", *measures]
    return _with_note(markdown_table(header, rows), bool(_diverged(cells)))


def _baseline_of(labels: list[str]) -> str:
    """The arm the others are compared with: softmax where it is among ``labels``, else the first."""
    return "softmax" if "softmax" in labels else labels[0]


def differences_table(cells: list[CellResult], against: tuple[str, str] | None = None) -> str:
    """Markdown: per task x norm x depth, each method minus its baseline (``_baseline_of``), paired
    by seed over the seeds where both finished (``paired_score``): n, the seeds, the mean difference
    with its 95 % t interval (one seed: the difference alone; ``†``: a seed diverged) and each
    seed's. ``against`` (norm, label): one baseline arm for every norm of a task and depth instead.
    '' when no setting has two arms."""
    arms = _arms(cells)
    by_setting: dict[tuple, list[tuple[str, str]]] = defaultdict(list)
    for task, norm, label, depth in arms:
        by_setting[(task, None if against else norm, depth)].append((norm, label))
    rows, marked = [], False
    for (task, norm, depth), members in sorted(by_setting.items(), key=lambda s: (s[0][0], s[0][1] != "pre", s[0][2])):
        base = against or (norm, _baseline_of([label for _, label in members]))
        if base not in members:
            continue
        scores = {
            arm: {c.seed: s for c in arms[(task, *arm, depth)] if (s := paired_score(c)) is not None} for arm in members
        }
        for arm in members:
            if arm == base:
                continue
            seeds = sorted(scores[arm].keys() & scores[base].keys())
            differences = [scores[arm][seed] - scores[base][seed] for seed in seeds]
            mark = _diverged([c for a in (arm, base) for c in arms[(task, *a, depth)] if c.seed in seeds])
            marked |= bool(mark)
            found = _with_interval(differences, "+.3f") + mark if differences else "–"
            each = ", ".join(format(d, "+.3f") for d in differences) or "–"
            name = f"{arm[1]} - {base[1]}" if not against else f"{arm[0]}-norm {arm[1]} - {base[0]}-norm {base[1]}"
            rows.append([task, arm[0], depth, name, len(seeds), seed_span(seeds) or "–", found, each])
    if not rows:
        return ""
    unit = "test NLL (nats per token)" if cells[0].model == "lm" else "test accuracy (pp)"
    baseline = (
        f"{against[0]}-norm {against[1]} of its task and depth"
        if against
        else "the softmax baseline of its task, norm and depth (the first method where there is none)"
    )
    intro = (
        f"Each method minus {baseline}, paired by seed: the mean difference in {unit} over the seeds where both "
        "finished, with its 95 % t interval (one seed: the difference alone), and each seed's difference in the "
        "order of the seeds:"
    )
    header = ["task", "norm", "depth", "method - baseline", "n", "seeds", "mean difference [95 % CI]", "by seed"]
    return intro + "\n\n" + _with_note(markdown_table(header, rows), marked)


def _finite(x: float) -> bool:
    return x == x and abs(x) != float("inf")


def mean_with_interval(ax, samples: dict[float, list[float]], **style) -> None:
    """At each x of ``samples`` (x -> values), the mean with its 95 % one-sample t interval (the
    values paired with zeros; one value: no interval), drawn as one error-bar line."""
    xs = sorted(samples)
    tests = [_one_sample(samples[x]) for x in xs]
    below = [t.mean - t.ci_low if _finite(t.ci_low) else 0.0 for t in tests]
    above = [t.ci_high - t.mean if _finite(t.ci_high) else 0.0 for t in tests]
    ax.errorbar(xs, [t.mean for t in tests], yerr=[below, above], **{"marker": "o", **style})


def _runs(present: dict[int, list[float]], depths: list[int]) -> list[dict[int, list[float]]]:
    """``present`` (depth -> values) split where a depth of ``depths`` has none, so that no line
    is drawn through a depth without data."""
    runs: list[dict[int, list[float]]] = [{}]
    for depth in depths:
        if depth in present:
            runs[-1][depth] = present[depth]
        elif runs[-1]:
            runs.append({})
    return [run for run in runs if run]


def by_depth_panels(
    axes,
    depths: list[int],
    by_arm_panels: list[dict[str, dict[int, list[float]]]],
    dodge: float = 0.0,
    ranges: tuple[Range, ...] = (),
    colours: Mapping[str, str] = MappingProxyType({}),
) -> None:
    """Per panel, per arm: the mean over seeds with its 95 % t interval at each depth with values
    (seeds in brackets) and, where there are two or more, each seed's value a small dot on it, a
    line only between neighbouring depths that both have some; one legend under the panels (of
    their figure, or subfigure). An arm's place in its panel's mapping is its colour (``C0``,
    ``C1``...) and, with ``dodge``, its shift from its depths (``dodged``), whether it has values
    or not; ``colours`` (arm -> colour) overrides the colour, so that figures side by side show an
    arm alike. A panel's y axis ends at its measure's range (``ranges``, one per panel, where
    given: ``within_range``)."""
    for ax, by_arm in zip(axes, by_arm_panels):
        for index, (arm, by_depth) in enumerate(by_arm.items()):
            by_depth = {d: v for d, v in by_depth.items() if v}
            seeds = "/".join(str(len(by_depth[d])) for d in sorted(by_depth))
            shift, colour = dodged(index, len(by_arm), dodge), colours.get(arm, f"C{index % COLOURS}")
            for run_index, run in enumerate(_runs(by_depth, depths)):
                label = f"{arm} ({seeds})" if run_index == 0 else None
                moved = {depth + shift: values for depth, values in run.items()}
                mean_with_interval(ax, moved, ms=3, color=colour, label=label)
                for x, values in moved.items():
                    if len(values) > 1:
                        ax.plot([x] * len(values), values, ".", ms=2.5, alpha=0.5, color=colour)
        ax.set_xticks(depths, [str(d) for d in depths])
        ax.set_xlabel("depth (blocks)")
    for ax, bounds in zip(axes, ranges):
        within_range(ax, bounds)
    figure_legend(axes[-1].figure)


def depth_span(depths: list[int]) -> int:
    """The span of the sorted ``depths`` on a figure's x axis (one depth: its own size)."""
    return max(depths[-1] - depths[0], depths[0])


def within_range(ax, bounds: Range, axis: str = "y") -> None:
    """End ``ax``'s ``axis`` ("x" or "y") at the measure's ``bounds`` (low, high; None: unbounded),
    2 % of the range beyond them: a t interval of few seeds that runs past what the measure can take
    runs off the panel instead of squeezing its points together."""
    get, set_ = (ax.get_xlim, ax.set_xlim) if axis == "x" else (ax.get_ylim, ax.set_ylim)
    start, end = get()
    low, high = bounds
    room = 0.02 * (high - low if low is not None and high is not None else end - start)
    set_(start if low is None else max(start, low - room), end if high is None else min(end, high + room))


def difference_range(bounds: Range) -> Range:
    """The range of a difference of two values of a measure with ``bounds``.

    >>> difference_range((0.0, 100.0)), difference_range((0.0, None))
    ((-100.0, 100.0), (None, None))
    """
    low, high = bounds
    return (None, None) if low is None or high is None else (low - high, high - low)


def dodged(index: int, arms: int, dodge: float) -> float:
    """How far ``by_depth_panels`` shifts the ``index``-th of ``arms`` arms from its depths: ``dodge``
    apart, centred on the depth.

    >>> [dodged(i, 3, 2.0) for i in range(3)]
    [-2.0, 0.0, 2.0]
    """
    return (index - (arms - 1) / 2) * dodge


def _depth_measures(cells: list[CellResult]) -> tuple[tuple[Callable[[CellResult], float | None], str, Range], ...]:
    """The two measures plotted against depth, with the range each can take: the test score and the
    probe's last-layer cos_sim."""
    lm = cells[0].model == "lm"
    score = (paired_score, "test NLL (nats per token)", NLL) if lm else (paired_score, "test accuracy (%)", PERCENT)
    return score, (last_cos_sim, "last-layer cos_sim (validation probe)", COSINE)


def plot_depth(cells: list[CellResult], stem: Path, title: str, formats=DEFAULT_FORMATS) -> None:
    """The finished seeds' test score and last-layer cos_sim (validation probe) vs depth, one line
    per arm (norm and method), the mean over seeds with its 95 % t interval; seeds in brackets; no
    line through a depth where the arm has no finished value."""
    several_tasks = len({c.task for c in cells}) > 1
    panels = []
    for read, _, _ in _depth_measures(cells):
        by_arm: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        for (task, norm, label, depth), group in _arms(cells).items():
            arm = f"{task} " * several_tasks + f"{norm}-norm {label}"
            by_arm[arm][depth] += [v for c in group if c.status == "completed" and (v := read(c)) is not None]
        panels.append(by_arm)
    with figure(1, 2, PAGE, 3.4) as (fig, axes):
        measures = _depth_measures(cells)
        depths = sorted({c.depth for c in cells})
        by_depth_panels(axes[0], depths, panels, DODGE * depth_span(depths), tuple(m[2] for m in measures))
        for ax, (_, ylabel, _) in zip(axes[0], measures):
            ax.set_ylabel(ylabel)
        fig.suptitle(fill(title, PAGE))
        save_figure(fig, stem, formats)


def plot_differences(
    cells: list[CellResult],
    stem: Path,
    title: str,
    against: tuple[str, str],
    formats=DEFAULT_FORMATS,
    colours: Mapping[str, str] = MappingProxyType({}),
) -> None:
    """Each arm minus the ``against`` arm (norm, label) of its depth, paired by seed: the mean
    difference of the test score and of the last-layer cos_sim with its 95 % t interval, by depth;
    ``colours``: arm ("post-norm deepnorm") -> colour, as ``by_depth_panels``."""
    arms = _arms(cells)
    panels = []
    for read, _, _ in _depth_measures(cells):
        by_arm: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        for (task, norm, label, depth), group in arms.items():
            base = {c.seed: v for c in arms.get((task, *against, depth), []) if (v := read(c)) is not None}
            if (norm, label) == against or not base:
                continue
            by_arm[f"{norm}-norm {label}"][depth] += [
                v - base[c.seed]
                for c in group
                if c.seed in base and c.status == "completed" and (v := read(c)) is not None
            ]
        panels.append(by_arm)
    with figure(1, 2, PAGE, 3.4) as (fig, axes):
        measures = _depth_measures(cells)
        ranges = tuple(difference_range(m[2]) for m in measures)
        depths = sorted({c.depth for c in cells})
        for ax, (_, ylabel, _) in zip(axes[0], measures):
            ax.axhline(0.0, color="grey", lw=0.8)  # first: the axis the ranges cut keeps 0 in view
            ax.set_ylabel(f"{ylabel}\nminus {against[0]}-norm {against[1]}")
        by_depth_panels(axes[0], depths, panels, DODGE * depth_span(depths), ranges, colours)
        fig.suptitle(fill(title, PAGE))
        save_figure(fig, stem, formats)


def _status_line(cells: list[CellResult]) -> str:
    counts = defaultdict(int)
    for c in cells:
        counts[c.status] += 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


def cell_hours(cells: list[CellResult]) -> float:
    """The hours the finished ``cells`` trained: the sum of their ``wall_seconds`` (each cell's own clock)."""
    return sum((c.results or {}).get("wall_seconds", 0.0) for c in cells) / 3600


def study_section(
    name: str,
    cells: list[CellResult],
    files: dict[str, Draw],
    command: str | None,
    differences: bool = False,
    formats: tuple[str, ...] = DEFAULT_FORMATS,
) -> list[str]:
    """The report's section on study ``name``: its cells, the ``command`` that ran it (None: not
    recorded, no line), its score table (with ``differences``, each method's paired differences
    from its baseline), its arms by depth where it has several, and its figures, added to ``files``
    by stem (the section shows them in the first of ``formats`` a browser shows)."""
    lines = [
        f"## Study `{name}`",
        "",
        f"Cells: {_status_line(cells)}; {cell_hours(cells):.2f} hours of training (their wall_seconds).",
    ]
    if command:
        lines += ["", f"Command: `{command}`"]
    lines += [
        "",
        f"Test {cells[0].score_name} ("
        + ("%" if cells[0].score_name == "accuracy" else "lower is better")
        + "), mean ± std over seeds (cells); † diverged, * unfinished (last validation score):",
        "",
        score_table(cells),
        "",
    ]
    if differences and (table := differences_table(cells)):
        lines += [table, ""]
    if len({c.depth for c in cells}) > 1:
        lines += [
            "Each arm at each depth: the finished seeds' test score with its 95 % t interval, and the mean "
            "over its seeds of the validation probe's last-layer cos_sim, its t_sim escalation (after the last "
            "block minus the embeddings': Yu & Zhang's measure) and the seconds per training step:",
            "",
            arm_table(cells),
            "",
        ]
        arms = len({(c.task, c.norm, c.label) for c in cells})
        if arms <= COLOURS:
            files[f"{name}_scores"] = lambda p, f: plot_depth(cells, p, f"{name}: by depth", f)
            lines += [embed(f"{cells[0].score_name} and last-layer cos_sim vs depth", f"{name}_scores", formats), ""]
        else:
            lines += [
                f"No figure by depth: its {arms} arms are more than the {COLOURS} colours a figure tells apart.",
                "",
            ]
    if any(c.final_layers for c in cells):
        files[f"{name}_layers"] = lambda p, f: plot_layers(cells, p, f)
        lines += [
            "Per-layer token similarity of the probe batch at the end of training, deepest depth (thin: "
            "each seed; bold: their mean):",
            "",
            embed("per-layer cos_sim and t_sim", f"{name}_layers", formats),
            "",
        ]
    if any(len(c.epochs) > 1 for c in cells):
        files[f"{name}_curves"] = lambda p, f: plot_curves(cells, p, f)
        lines += [
            "Validation score per epoch (thin: each seed; bold: their mean):",
            "",
            embed("validation curves", f"{name}_curves", formats),
            "",
        ]
    return lines


def cell_rows(cells: list[CellResult]) -> list[dict]:
    rows = []
    for c in cells:
        last = c.final_layers[-1] if c.final_layers else {}
        rows.append(
            {
                "study": c.study,
                "cell": c.name,
                "task": c.task,
                "norm": c.norm,
                "depth": c.depth,
                "method": c.label,
                "seed": c.seed,
                "status": c.status,
                "epochs": len(c.epochs),
                "score_name": c.score_name,
                "score_split": c.score_split,
                "score": c.score,
                "last_cos_sim": last.get("cos_sim"),
                "last_t_sim": last.get("t_sim"),
                "examples_per_second": c.examples_per_second,
                "wall_seconds": (c.results or {}).get("wall_seconds"),
            }
        )
    return rows


@dataclass(frozen=True)
class Rendered:
    """A report before it is written: ``report.md``'s text, each figure's stem and drawing, one row
    per cell (``cells.csv``), any other file by name with its text, the names it replaces in its
    folder (glob patterns: a study report's ``REPLACES``) and the formats of its figures."""

    markdown: str
    figures: dict[str, Draw]
    cells: list[dict]
    texts: dict[str, str] = field(default_factory=dict)
    outputs: tuple[str, ...] = REPLACES
    formats: tuple[str, ...] = DEFAULT_FORMATS

    def figure_files(self) -> list[str]:
        """The file names of the figures, each in every format."""
        return [name for stem in self.figures for name in figure_files(stem, self.formats)]

    def write(self, out: str | Path) -> None:
        """Write ``report.md``, the figures, ``cells.csv`` and the other files into ``out``, all or
        nothing, replacing those of an earlier report (``outputs``)."""
        with atomic_directory(out, replaces=self.outputs) as staging:
            for stem, draw in self.figures.items():
                draw(staging / stem, self.formats)
            if self.cells:
                with open(staging / "cells.csv", "w", newline="") as handle:
                    writer = csv.DictWriter(handle, fieldnames=list(self.cells[0]))
                    writer.writeheader()
                    writer.writerows(self.cells)
            for filename, text in self.texts.items():
                (staging / filename).write_text(text)
            (staging / "report.md").write_text(self.markdown)


def seed_span(ids: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def cells_read(cells: list[CellResult]) -> dict[str, str]:
    """What a report on ``cells`` read, for its provenance: the studies, and the sha256 of every
    cell's records and results (``utils.provenance.digest``)."""
    studies = ", ".join(by_study(cells))
    records = (json.dumps([c.study, c.name, c.status, c.results, c.epochs], sort_keys=True) for c in cells)
    return {"cells": f"{len(cells)} of {studies or 'no study'}", "cells sha256": digest(records)}


def render_report(
    cells: list[CellResult],
    commands: dict[str, str] | None = None,
    title: str = TITLE,
    command: str | None = None,
    formats: tuple[str, ...] = DEFAULT_FORMATS,
    provenance: Provenance | None = None,
) -> Rendered:
    """The report on the cells of the studies ``cells`` come from, one section each, to write with
    ``Rendered.write``, its figures in ``formats``. ``commands``: study name -> the command that ran
    it; ``command``: the one that wrote this report; ``provenance``: its section at the end. The
    source papers' claims are not decided here: ``oversmooth claims``."""
    studies = by_study(cells)
    names = ", ".join(f"`{name}`" for name in studies)
    lines = [
        f"# {title}",
        "",
        f"{len(cells)} cells of {len(studies)} {'study' if len(studies) == 1 else 'studies'} ({names}) as they "
        "stand" + ("; " + signature(command) if command else "") + ". The source papers' claims are decided by "
        "`oversmooth claims` (docs/studies.md), not here.",
        "",
    ]
    files: dict[str, Draw] = {}
    for name, group in studies.items():
        lines += study_section(name, group, files, (commands or {}).get(name), differences=True, formats=formats)
    if provenance is not None:
        lines += ["", provenance.to_markdown()]
    return Rendered("\n".join(lines), files, cell_rows(cells), formats=formats)
