"""Claim 4's third family as docs/studies.md registered it for the case the deep pilots found
(post-norm softmax trains at depths 96 and 192): each depth fix in its paper's placement, and
de-escalation, beside post-norm softmax at the same depth, as a *described comparison*: scores
with their 95 % t intervals, paired differences by seed, last-layer cos_sim beside accuracy, and
no verdict."""

from __future__ import annotations

from oversmooth.claims.claim4_depth import ARM_COLOURS, recipe_words
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.study.report import Draw, arm_table, differences_table, plot_differences, seed_span
from oversmooth.study.results import CellResult
from oversmooth.utils.plotting import DEFAULT_FORMATS, embed

STUDY = "depth-fixes"
MIDDLE = ("depth-w32", 48)  # the same recipe at depth 48 (other seeds), for the arms it trained
BASELINE = ("post", "softmax")
PLOT = "depth_fixes"  # the figure's stem


def depth_fixes_cells(cells: list[CellResult]) -> list[CellResult]:
    """The family's cells, and depth-w32's depth-48 cells of the arms the family trains."""
    family = [c for c in cells if c.study == STUDY]
    arms = {(c.norm, c.variant.label) for c in CLAIMS_PRESETS[STUDY].cells()}
    middle = [c for c in cells if (c.study, c.depth) == MIDDLE and (c.norm, c.label) in arms]
    return family + middle if family else []


def depth_fixes_section(
    cells: list[CellResult], trains_deep: str, formats: tuple[str, ...] = DEFAULT_FORMATS
) -> tuple[list[str], dict[str, Draw]]:
    """The claims report's section on the family (``depth_fixes_cells``) and its figure, shown in
    the first of ``formats`` a browser shows; ``trains_deep``: why claim 4 is not tested
    (``reading.post_norm_trains_deep``), '' while the pilots have not said."""
    chosen = depth_fixes_cells(cells)
    if not chosen:
        return [], {}
    seeds = {study: seed_span(sorted({c.seed for c in chosen if c.study == study})) for study in (STUDY, MIDDLE[0])}
    title = f"claim 4's third family, described: {STUDY} seeds {seeds[STUDY]}"
    if seeds[MIDDLE[0]]:
        title += f"; depth {MIDDLE[1]}: {MIDDLE[0]} seeds {seeds[MIDDLE[0]]}"
    why = (
        f"No verdict: {trains_deep}, so no fix had a failure to rescue here (docs/studies.md registered this "
        "comparison for that case before its cells ran)"
        if trains_deep
        else "No verdict: the deep pilots have not found post-norm training at every depth (or have not "
        "finished), and this section only describes the cells"
    )
    lines = [
        "## Claim 4's third family where post-norm trains (depth-w32's recipe: "
        f"{recipe_words(CLAIMS_PRESETS[STUDY].cells()[0].spec())}): the depth fixes beside post-norm softmax "
        "(described, not decided)",
        "",
        f"{why}. Each fix in its paper's placement (DeepNorm, sigmaReparam, MV-split and de-escalation post-norm; "
        f"LayerScale pre-norm; ReZero without norms, listed under post), `{STUDY}` (depth-w32's recipe) at depths "
        f"8 and 96; depth {MIDDLE[1]} from `{MIDDLE[0]}` (the same recipe, seeds {seeds[MIDDLE[0]] or 'none yet'}) "
        "for the arms it trained. A lower cos_sim counts for nothing where accuracy fell: read the two columns "
        "together.",
        "",
        arm_table(chosen),
        "",
        differences_table(chosen, against=BASELINE) or f"(no seed of {BASELINE[0]}-norm {BASELINE[1]} has finished)",
        "",
        f"Each arm's difference from {BASELINE[0]}-norm {BASELINE[1]} at the same depth, paired by seed: test "
        "accuracy and last-layer cos_sim, the mean difference with its 95 % t interval (seeds per arm and depth in "
        "brackets; each seed a dot; no line through a depth without data):",
        "",
        embed("depth fixes by depth", PLOT, formats),
        "",
    ]
    return lines, {PLOT: lambda stem, f: plot_differences(chosen, stem, title, BASELINE, f, ARM_COLOURS)}
