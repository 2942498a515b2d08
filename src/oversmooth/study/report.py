"""``report.md`` + PNGs for one or more study folders: scores vs depth, per-layer similarity at the
end of training, training curves, the lambda sweep, the untrained probes and the claims table.

Scores are means over seeds with their standard deviation. A completed cell contributes its
test score; a diverged or unfinished one its last validation score, marked in the tables
(``†`` diverged, ``*`` unfinished), so a report can be written at any time.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from matplotlib.ticker import MaxNLocator

from oversmooth.atomic import atomic_directory
from oversmooth.plotting import figure, save_png
from oversmooth.study.claims import Claim, check_cells, check_probes
from oversmooth.study.probes import Probes
from oversmooth.study.results import CellResult

MARK = {"diverged": "†", "partial": "*"}


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def _groups(cells: list[CellResult]) -> dict[str, list[CellResult]]:
    studies: dict[str, list[CellResult]] = defaultdict(list)
    for cell in cells:
        studies[cell.study].append(cell)
    return dict(studies)


def _labels(cells: list[CellResult]) -> list[str]:
    """Method labels in the order the cells name them (the study's order)."""
    return list(dict.fromkeys(c.label for c in cells))


def _panels(cells: list[CellResult]) -> list[tuple[str, str]]:
    return sorted({(c.task, c.norm) for c in cells}, key=lambda tn: (tn[0], tn[1] != "pre"))


def score_table(cells: list[CellResult]) -> str:
    """Markdown: one row per task x norm x method, one column per depth: mean ± std (seeds)."""
    depths = sorted({c.depth for c in cells})
    name = cells[0].score_name
    lines = ["| task | norm | method | " + " | ".join(f"depth {d}" for d in depths) + " |",
             "|---|---|---|" + "---|" * len(depths)]
    for task, norm in _panels(cells):
        for label in _labels(cells):
            row = []
            for depth in depths:
                group = [c for c in cells if (c.task, c.norm, c.label, c.depth) == (task, norm, label, depth)
                         and c.score is not None]
                if not group:
                    row.append("–")
                    continue
                mean, std = _mean_std([c.score for c in group])
                marks = "".join(sorted({MARK[c.status] for c in group if c.status in MARK}))
                scale = 100 if name == "accuracy" else 1
                row.append(f"{mean * scale:.1f} ± {std * scale:.1f}{marks} ({len(group)})")
            lines.append(f"| {task} | {norm} | {label} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def plot_scores(cells: list[CellResult], path: Path) -> None:
    """Score vs depth (log 2), one panel per task x norm, one line per method, std over seeds as bars."""
    panels = _panels(cells)
    plt, fig, axes = figure(1, len(panels), 4.2 * len(panels), 3.4)
    for ax, (task, norm) in zip(axes[0], panels):
        for label in _labels(cells):
            points = defaultdict(list)
            for c in cells:
                if (c.task, c.norm, c.label) == (task, norm, label) and c.score is not None:
                    points[c.depth].append(c.score)
            if points:
                depths = sorted(points)
                stats = [_mean_std(points[d]) for d in depths]
                ax.errorbar(depths, [m for m, _ in stats], yerr=[s for _, s in stats], marker="o", ms=3,
                            capsize=2, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("depth (blocks)")
        ax.set_ylabel(cells[0].score_name)
        ax.set_title(f"{task}, {norm}-norm", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    save_png(plt, fig, path)


def plot_layers(cells: list[CellResult], path: Path, metrics: tuple[str, ...] = ("cos_sim", "t_sim")) -> None:
    """Per-layer metrics at the end of training at the deepest depth, mean over seeds."""
    panels = _panels(cells)
    plt, fig, axes = figure(len(metrics), len(panels), 4.2 * len(panels), 3.0 * len(metrics))
    for col, (task, norm) in enumerate(panels):
        chosen = [c for c in cells if (c.task, c.norm) == (task, norm) and c.final_layers]
        if not chosen:
            continue
        depth = max(c.depth for c in chosen)
        for row, metric in enumerate(metrics):
            ax = axes[row][col]
            for label in _labels(chosen):
                runs = [[layer[metric] for layer in c.final_layers] for c in chosen
                        if c.depth == depth and c.label == label]
                if runs:
                    ax.plot(range(1, depth + 1), [statistics.fmean(v) for v in zip(*runs)], marker=".", label=label)
            ax.set_xlabel("block")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylabel(metric)
            ax.set_title(f"{task}, {norm}-norm, depth {depth}, end of training", fontsize=9)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    save_png(plt, fig, path)


def plot_curves(cells: list[CellResult], path: Path) -> None:
    """Validation score per epoch at the deepest depth, one panel per task x norm (seed 0 first)."""
    panels = _panels(cells)
    plt, fig, axes = figure(1, len(panels), 4.2 * len(panels), 3.2)
    for ax, (task, norm) in zip(axes[0], panels):
        chosen = [c for c in cells if (c.task, c.norm) == (task, norm) and c.epochs]
        if not chosen:
            continue
        depth = max(c.depth for c in chosen)
        for label in _labels(chosen):
            runs = [c for c in chosen if c.depth == depth and c.label == label]
            for index, c in enumerate(sorted(runs, key=lambda c: c.seed)):
                ax.plot([e["epoch"] for e in c.epochs], [e["val"][c.score_name] for e in c.epochs],
                        color=f"C{_labels(chosen).index(label)}", alpha=1.0 if index == 0 else 0.4,
                        label=label if index == 0 else None)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(f"val {chosen[0].score_name}")
        ax.set_title(f"{task}, {norm}-norm, depth {depth}", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    save_png(plt, fig, path)


def lambda_points(cells: list[CellResult]) -> dict[float, list[float]]:
    """``lambda -> scores`` for a sweep of NeuTRENO lambdas (softmax = lambda 0); empty otherwise."""
    swept = {c.label for c in cells if c.method == "neutreno" and c.label.startswith("lam=")}
    points: dict[float, list[float]] = defaultdict(list)
    if swept:
        for c in cells:
            if c.score is not None and (c.label in swept or c.method == "softmax"):
                points[float(c.knobs.get("lam", 0.0)) if c.label in swept else 0.0].append(c.score)
    return dict(sorted(points.items()))


def plot_lambda(points: dict[float, list[float]], score_name: str, path: Path) -> None:
    plt, fig, axes = figure(1, 1, 4.6, 3.3)
    ax = axes[0][0]
    stats = [_mean_std(v) for v in points.values()]
    ax.errorbar(list(points), [m for m, _ in stats], yerr=[s for _, s in stats], marker="o", capsize=3)
    ax.axhline(stats[0][0], color="grey", ls=":", label="softmax (lambda 0)")
    ax.set_xlabel("NeuTRENO lambda")
    ax.set_ylabel(score_name)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    save_png(plt, fig, path)


def plot_probes(probes: Probes, path: Path) -> None:
    plt, fig, axes = figure(1, 2, 9.0, 3.4)
    for ax, (title, pair) in zip(axes[0], (("untrained DeiT-tiny (G.3)", probes.random_init),
                                           ("pretrained MiniLM, patched (G.9)", probes.pretrained))):
        for which, style in (("baseline", "-"), ("neutreno", "--")):
            values = pair.mean(which)
            ax.plot(range(len(values)), values, style, marker="o", ms=3,
                    label="softmax" if which == "baseline" else f"NeuTRENO lam {pair.lam}")
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_ylabel("cos_sim")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_png(plt, fig, path)


def claims_table(claims: list[Claim]) -> str:
    lines = ["| # | claim | paper | ours | verdict |", "|---|---|---|---|---|"]
    lines += [f"| {c.number} | {c.statement} | {c.paper} | {c.ours} | **{c.verdict}** |" for c in claims]
    rules = sorted({c.rule for c in claims if c.rule})
    return "\n".join(lines) + "\n\nRules that decided:\n" + "\n".join(f"- {rule}" for rule in rules)


def _status_line(cells: list[CellResult]) -> str:
    counts = defaultdict(int)
    for c in cells:
        counts[c.status] += 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


def _study_section(name: str, cells: list[CellResult], files: dict[str, Callable[[Path], None]], command: str | None) -> list[str]:
    lines = [f"## Study `{name}`", "", f"Cells: {_status_line(cells)}."]
    if command:
        lines += ["", f"Command: `{command}`"]
    lines += ["", f"Test {cells[0].score_name} (" + ("%" if cells[0].score_name == "accuracy" else "lower is better")
              + "), mean ± std over seeds (cells); † diverged, * unfinished (last validation score):", "",
              score_table(cells), ""]
    if len({c.depth for c in cells}) > 1:
        files[f"{name}_scores.png"] = lambda p: plot_scores(cells, p)
        lines += [f"![{cells[0].score_name} vs depth]({name}_scores.png)", ""]
    points = lambda_points(cells)
    if len(points) > 1:
        files[f"{name}_lambda.png"] = lambda p: plot_lambda(points, cells[0].score_name, p)
        lines += [f"![{cells[0].score_name} vs lambda]({name}_lambda.png)", ""]
    if any(c.final_layers for c in cells):
        files[f"{name}_layers.png"] = lambda p: plot_layers(cells, p)
        lines += ["Per-layer token similarity of the probe batch at the end of training, deepest depth:", "",
                  f"![per-layer cos_sim and t_sim]({name}_layers.png)", ""]
    if any(len(c.epochs) > 1 for c in cells):
        files[f"{name}_curves.png"] = lambda p: plot_curves(cells, p)
        lines += [f"![validation curves]({name}_curves.png)", ""]
    return lines


def cell_rows(cells: list[CellResult]) -> list[dict]:
    rows = []
    for c in cells:
        last = c.final_layers[-1] if c.final_layers else {}
        rows.append({"study": c.study, "cell": c.name, "task": c.task, "norm": c.norm, "depth": c.depth,
                     "method": c.label, "seed": c.seed, "status": c.status, "epochs": len(c.epochs),
                     "score_name": c.score_name, "score_split": c.score_split, "score": c.score,
                     "last_cos_sim": last.get("cos_sim"), "last_t_sim": last.get("t_sim"),
                     "examples_per_second": c.examples_per_second,
                     "wall_seconds": (c.results or {}).get("wall_seconds")})
    return rows


def write_report(cells: list[CellResult], out: str | Path, probes: Probes | None = None,
                 commands: dict[str, str] | None = None, title: str = "oversmooth study report",
                 command: str | None = None) -> list[Claim]:
    """Write ``report.md``, the PNGs, ``cells.csv`` and ``claims.json`` into ``out``; return the claims.

    ``commands``: study name -> the command that ran it (printed under its section); ``command``:
    the one that wrote this report.
    """
    claims = (check_probes(probes) if probes else []) + check_cells(cells)
    claims.sort(key=lambda c: (int("".join(ch for ch in c.number if ch.isdigit())), c.number))
    files: dict[str, Callable[[Path], None]] = {}
    lines = [f"# {title}", "", "Which claims of the source papers (DESIGN §8) held here, at CPU scale"
             + (f"; written by `{command}`" if command else "") + ".", "", claims_table(claims), ""]
    if probes:
        files["probes.png"] = lambda p: plot_probes(probes, p)
        lines += ["## Without training", "", f"- G.3: {probes.random_init.source}",
                  f"- G.9: {probes.pretrained.source}; W_V W_O sign verdicts per block: "
                  + ", ".join(probes.pretrained_verdicts),
                  "- theory: t_sim after 64 layers of X <- X + A X H: "
                  + ", ".join(f"{k} {v:.3f}" for k, v in probes.theory.items()), "",
                  "![cos_sim per layer with and without NeuTRENO, no training](probes.png)", ""]
    for name, group in _groups(cells).items():
        lines += _study_section(name, group, files, (commands or {}).get(name))
    with atomic_directory(out) as staging:
        for filename, draw in files.items():
            draw(staging / filename)
        rows = cell_rows(cells)
        if rows:
            with open(staging / "cells.csv", "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
        (staging / "claims.json").write_text(json.dumps([asdict(c) for c in claims], indent=1))
        (staging / "report.md").write_text("\n".join(lines))
    return claims
