"""The answer of claims 4a, 4b and the depth-fix family where post-norm fails, in one figure
(``postnorm_family.png``): one row per decided test, its difference in validation accuracy with
the Holm-matched interval that decided it (left), beside the same arms' difference in last-layer
cos_sim from post-norm softmax at depth 96, paired by seed, with its 95 % t interval (right:
described, deciding nothing). A fix that lowers cos_sim where accuracy did not come back has
rescued nothing: the two panels share their rows so that they are read together."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from oversmooth.claims.gathering import group_cells
from oversmooth.claims.measures import Key, last_val
from oversmooth.claims.postnorm_confirm import CANDIDATE
from oversmooth.claims.postnorm_family import CLAIM_4A, DEEP, FAMILIES, POST, PRE, PRESET
from oversmooth.study.report import COSINE, PERCENT, Draw, difference_range, last_cos_sim, seed_span, within_range
from oversmooth.study.results import CellResult
from oversmooth.study.stats import paired_test
from oversmooth.utils.plotting import DEFAULT_FORMATS, PAGE, embed, figure, figure_legend, fill, save_figure

STEM = "postnorm_family"
#: each verdict's colour
COLOURS = {"held": "tab:green", "contradicted": "tab:red", "inconclusive": "tab:grey"}
FULL_RESCUE = f"pre-norm softmax at depth {DEEP} (a full rescue)"


def family_figure_lines(
    records: list[dict], cells: list[CellResult], formats: tuple[str, ...] = DEFAULT_FORMATS
) -> tuple[list[str], dict[str, Draw]]:
    """The report's lines showing the figure and its draw (stem -> draw), once a test of the
    families is decided among ``records``; nothing before."""
    decided = _decided(records)
    if not decided:
        return [], {}
    lines = [
        f"Where post-norm fails, each decided test of the two families: its difference in validation accuracy with "
        "the Holm-matched interval that decided it (left), and the same arms' last-layer cos_sim minus post-norm "
        f"softmax's at depth {DEEP}, paired by seed (the seeds with a probe), with its 95 % t interval (right, "
        f"described; 4a compares deficits, not one arm, and has neither); the dots under each interval are the "
        f"seeds' differences. Dashed: pre-norm softmax at depth {DEEP}, where a full rescue would end:",
        "",
        embed("the post-norm failure families", STEM, formats),
        "",
    ]
    return lines, {STEM: lambda stem, f: plot_family(family_rows(decided, cells), stem, f)}


def _decided(records: list[dict]) -> list[dict]:
    """The families' records with a decided paired test, in the registered order."""
    names = [claim.name for family in FAMILIES for claim in family]
    found = {r["claim"]: r for r in records if r["claim"] in names and "test" in r}
    return [found[name] for name in names if name in found]


@dataclass(frozen=True)
class FigureRow:
    """One decided test's row: its ``label`` ("DeepNorm: held"), ``verdict``, validation-accuracy
    difference ``(mean, low, high)`` in pp with the Holm-matched interval that decided it; for a
    test of one arm against post-norm softmax at depth 96, pre-norm softmax's lead there
    (``rescue``, pp: where a full rescue ends) and the arm's last-layer cos_sim difference
    ``(mean, low, high)``, paired by seed, with its 95 % t interval; None for 4a (deficits); and the
    differences on each seed (``accuracy_by_seed``, ``cos_sim_by_seed``), drawn as dots."""

    label: str
    verdict: str
    accuracy: tuple[float, float, float]
    rescue: float | None
    cos_sim: tuple[float, float, float] | None
    accuracy_by_seed: tuple[float, ...] = ()
    cos_sim_by_seed: tuple[float, ...] = ()


def family_rows(decided: list[dict], cells: list[CellResult]) -> list[FigureRow]:
    """``plot_family``'s rows, one per record of ``decided``, from its test and ``cells``."""
    claims = {claim.name: claim for family in FAMILIES for claim in family}
    groups = group_cells(CLAIM_4A.question, cells)
    rows = []
    for record in decided:
        test, question = record["test"], claims[record["claim"]].question
        rescue = cos_sim = None
        by_seed = tuple(test["differences"])
        cos_by_seed: tuple[float, ...] = ()
        if question.baseline == POST:
            seeds = [groups[seed] for seed in test["seeds"]]
            rescue = statistics.fmean(last_val(g[PRE]) - last_val(g[POST]) for g in seeds)
            arm, post = _cos_sims(seeds, question.method)
            paired = paired_test(arm, post, "lower")
            cos_sim = (paired.mean, paired.ci_low, paired.ci_high)
            cos_by_seed = tuple(a - b for a, b in zip(arm, post))
        label = f"{record['claim'].split(' (')[0]}: {record['verdict']}"
        interval = (test["mean"], *test["ci"])
        rows.append(FigureRow(label, record["verdict"], interval, rescue, cos_sim, by_seed, cos_by_seed))
    return rows


def plot_family(rows: list[FigureRow], stem: Path, formats=DEFAULT_FORMATS) -> None:
    """Two panels sharing the ``rows``, top to bottom (see the module)."""
    with figure(1, 2, PAGE, 0.42 * len(rows) + 1.8) as (fig, axes):
        accuracy, similarity = axes[0]
        for ax in (accuracy, similarity):
            ax.axvline(0.0, color="grey", lw=0.8)  # first: the axis ``within_range`` cuts keeps 0 in view
        places = range(len(rows) - 1, -1, -1)
        for y, row in zip(places, rows):
            style = {"fmt": "o", "capsize": 3, "color": COLOURS.get(row.verdict, "black"), "label": row.verdict}
            _interval(accuracy, y, row.accuracy, style)
            _seeds(accuracy, y, row.accuracy_by_seed, style["color"])
            if row.rescue is not None:
                accuracy.vlines(row.rescue, y - 0.35, y + 0.35, color="tab:blue", ls="--", lw=0.9, label=FULL_RESCUE)
            if row.cos_sim is not None:
                _interval(similarity, y, row.cos_sim, style)
                _seeds(similarity, y, row.cos_sim_by_seed, style["color"])
        deficits = any(row.rescue is None for row in rows)  # 4a: a difference of two differences
        compared = difference_range(difference_range(PERCENT) if deficits else PERCENT)
        for ax, bounds in ((accuracy, compared), (similarity, difference_range(COSINE))):
            within_range(ax, bounds, "x")
            ax.set_yticks(list(places), [row.label for row in rows])
            ax.set_ylim(-0.6, len(rows) - 0.4)
        similarity.tick_params(labelleft=False)  # the rows are the left panel's
        accuracy.set_xlabel(fill("validation accuracy difference (pp), Holm-matched interval", 0.4 * PAGE))
        similarity.set_xlabel(
            fill(f"last-layer cos_sim minus post-norm softmax's at depth {DEEP}, 95 % t interval", 0.4 * PAGE)
        )
        fig.suptitle(
            fill(
                f"Where post-norm fails ({CANDIDATE}, depth {DEEP}, seeds {seed_span(list(PRESET.seeds))}): does "
                "each test rescue accuracy (left), and what did it do to similarity (right)?",
                PAGE,
            )
        )
        figure_legend(fig)
        save_figure(fig, stem, formats)


def _interval(ax, y: float, interval: tuple[float, float, float], style: dict) -> None:
    mean, low, high = interval
    ax.errorbar(mean, y, xerr=[[mean - low], [high - mean]], **style)


def _seeds(ax, y: float, differences: tuple[float, ...], colour: str) -> None:
    """Each seed's difference, a small dot just under its row's interval."""
    ax.plot(differences, [y - 0.18] * len(differences), ".", ms=4, alpha=0.6, color=colour)


def _cos_sims(seeds: list[Mapping[Key, CellResult]], arm: Key) -> tuple[list[float], list[float]]:
    """``arm``'s last-layer cos_sim and post-norm softmax's at depth 96, paired over ``seeds``
    (the seeds where both recorded one)."""
    pairs = [(last_cos_sim(g[arm]), last_cos_sim(g[POST])) for g in seeds]
    kept = [(a, b) for a, b in pairs if a is not None and b is not None]
    return [a for a, _ in kept], [b for _, b in kept]
