"""The claims report's ``claims.png``: each tested claim's effect with its Holm-matched interval,
one panel per claim (units differ), then one panel per fresh test of the later protocols that has
something to draw: a paired test's interval, a re-test's interval per model, or a similarity
test's per-layer change."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from oversmooth.claims.claim import Claim
from oversmooth.claims.statements import FRESH_FLAGS, STATEMENTS
from oversmooth.claims.summary import paper_effect
from oversmooth.claims.third_protocol import fresh_tests
from oversmooth.utils.plotting import DEFAULT_FORMATS, PAGE, figure, figure_legend, fill, save_figure, set_title

FRESH = "tab:green"  # a fresh test's colour


def plot_effects(claims: list[Claim], stem: Path, records: Sequence[dict] = (), formats=DEFAULT_FORMATS) -> None:
    """Each tested claim's effect with its Holm-matched interval and n, one panel per claim (units
    differ, each named in full), the primary family's first, up to 4 a row: the claimed side
    shaded (an equivalence claim's: inside its margin), the paper's effect as it states it (star)
    and carried to our measure (docs/registrations/fourth-step.md, dotted) where it states one, and
    the third protocol's reading under the verdict where the two differ, ⚑ beside a verdict resting on
    a disclosed flaw (as in the report's table); then a panel per fresh
    test of ``records`` (the third protocol's and the fourth step's) with something to draw
    (``draws_fresh``); one legend under them all."""
    tested = [c for c in claims if c.effect is not None and c.ci is not None and all(map(math.isfinite, c.ci))]
    tested.sort(key=lambda c: c.family != "primary")  # stable: each family keeps the claims' order
    fresh = [r for r in fresh_tests(records) if draws_fresh(r)]
    panels = len(tested) + len(fresh)
    cols = min(max(panels, 1), 4)
    rows = max(math.ceil(panels / cols), 1)
    with figure(rows, cols, PAGE, 2.7 * rows + 0.4) as (fig, axes):
        for ax in axes.flat[panels:]:
            ax.set_visible(False)
        for ax, record in zip(axes.flat[len(tested) :], fresh):
            _fresh_panel(ax, record)
        for ax, c in zip(axes.flat, tested):
            ax.errorbar([0], [c.effect], yerr=[[c.effect - c.ci[0]], [c.ci[1] - c.effect]], fmt="o", label="ours")
            if c.paper_effect is not None:
                ax.plot([0.5], [c.paper_effect], "*", color="tab:orange", ms=7, label="paper")
            if c.paper_transferred is not None:
                _carried(ax, c.paper_transferred)
            ax.axhline(0.0, color="grey", lw=0.8)
            if c.margin is not None:
                for bound in (-c.margin, c.margin):
                    ax.axhline(bound, color="tab:red", ls="--", lw=0.8, label="equivalence margin")
            claimed = shade_claimed(ax, c.direction, c.margin)
            title = f"{c.id} ({c.family}): {c.verdict}" + (" ⚑" if STATEMENTS[c.id].flag else "")
            if c.reading != c.verdict:
                title += f"\nthird protocol: {c.reading}"
            level = f"{100 * c.ci_level:.4g} % CI, " if c.ci_level else ""
            _one_interval(ax)
            effect_panel(ax, title, f"claimed: {claimed} (shaded)\n{level}n = {c.n}", c.measure)
        figure_legend(fig)
        save_figure(fig, stem, formats)


def draws_fresh(record: dict) -> bool:
    """Whether a fresh test's record has something for a panel: a decided paired test (``test``'s
    ``mean`` and ``ci``), an interval per model (``models``, a re-test of a similarity claim) or a
    per-layer similarity pair (``pair``)."""
    return {"mean", "ci"} <= record.get("test", {}).keys() or "models" in record or "pair" in record


def _fresh_panel(ax, record: dict) -> None:
    """A fresh test's panel (``draws_fresh``), in green, titled with its verdict, the claimed side
    shaded where the record states it (a paired test's ``direction``; a similarity test's: lower)."""
    title = f"fresh test {record['claim']}: {record['verdict']}" + (" ⚑" if record["claim"] in FRESH_FLAGS else "")
    if "models" in record:  # a similarity claim's re-test: the mean change per passage, per model
        models = record["models"]
        for x, found in enumerate(models.values()):
            mean, (low, high) = found["mean_difference"], found["ci95"]
            ax.errorbar([x], [mean], yerr=[[mean - low], [high - mean]], fmt="o", color=FRESH)
        ax.axhline(0.0, color="grey", lw=0.8)
        claimed = shade_claimed(ax, "lower")
        names = [name.split(" (")[0].removeprefix("gt-all-") for name in models]
        ax.set_xticks(range(len(models)), names, fontsize=6, rotation=25, ha="right")
        ax.set_xlim(-0.6, len(models) - 0.4)
        passages = "/".join(str(found["sequences"]) for found in models.values())
        xlabel = f"claimed: {claimed} (shaded)\n95 % CI each (unadjusted), n = {passages} passages"
        return effect_panel(
            ax, title, xlabel, "mean cos_sim change after blocks 2..L per passage, NeuTRENO - unpatched"
        )
    if "pair" in record:  # a similarity claim: the per-layer change, layer 0 the embeddings
        pair = record["pair"]
        rows = [[p - b for p, b in zip(patched, base)] for patched, base in zip(pair["neutreno"], pair["baseline"])]
        change = [sum(column) / len(column) for column in zip(*rows)]
        ax.plot(range(len(change)), change, marker=".", ms=3, color=FRESH)
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_xlim(-0.5, len(change) - 0.5)
        claimed = shade_claimed(ax, "lower", xmin=2 / len(change))  # the claim is about layers 2 on
        xlabel = f"layer (0: embeddings); lam {pair['lam']:g}\nclaimed: {claimed} (shaded) after block 1"
        return effect_panel(ax, title, xlabel, "per-layer token cos_sim, NeuTRENO - unpatched")
    mean, (low, high) = record["test"]["mean"], record["test"]["ci"]
    ax.vlines(0, low, high, color=FRESH)  # the record's interval, as recorded
    ax.plot([0], [mean], "o", color=FRESH)
    if (effect := paper_effect(record)) is not None:
        _carried(ax, effect)
    ax.axhline(0.0, color="grey", lw=0.8)
    xlabel = f"n = {len(record['test']['seeds'])}"
    if "direction" in record:  # the claimed side, where the record states it
        xlabel = f"claimed: {shade_claimed(ax, record['direction'])} (shaded)\n{xlabel}"
    _one_interval(ax)
    effect_panel(ax, title, xlabel, record["model"])


def _one_interval(ax) -> None:
    """No x ticks: one interval a panel."""
    ax.set_xticks([])
    ax.set_xlim(-0.5, 1.5)


def effect_panel(ax, title: str, xlabel: str, measure: str) -> None:
    """An effect panel's words, wrapped to its width: the ``title``, the ``xlabel`` under it and
    the ``measure`` on the y axis."""
    set_title(ax, title)
    width = 0.8 * ax.get_position().width * ax.figure.get_figwidth()  # narrower than the panel: it shrinks
    ax.set_xlabel(fill(xlabel, width, 7), fontsize=7)
    ax.set_ylabel(fill(measure, 2.3, 6), fontsize=6)


def shade_claimed(ax, direction: str | None, margin: float | None = None, xmin: float = 0.0) -> str:
    """Shade the side of 0 a claim states, ``direction`` "higher" or "lower" (inside ``margin`` for
    an equivalence claim), from ``xmin`` (a share of the panel's width) rightwards, widening the
    view so that at least a sixth of it shows; the claimed side in words."""
    low, high = ax.get_ylim()
    if margin is not None:
        ax.axhspan(-margin, margin, xmin=xmin, color="tab:green", alpha=0.08, lw=0)
        ax.set_ylim(low, high)
        return f"inside +-{margin:.3g}"
    room = (high - low) / 6
    if direction == "higher":
        high = max(high, room)
        ax.axhspan(0, high, xmin=xmin, color="tab:green", alpha=0.08, lw=0)
    else:
        low = min(low, -room)
        ax.axhspan(low, 0, xmin=xmin, color="tab:green", alpha=0.08, lw=0)
    ax.set_ylim(low, high)
    return f"{direction} than 0"


def _carried(ax, effect: float) -> None:
    """The paper's effect carried to our measure (docs/registrations/fourth-step.md), one style and label
    in every panel."""
    ax.axhline(effect, color="tab:orange", ls=":", lw=1.2, label="paper, carried to ours")
