"""The claims report's section on the fourth step (docs/registrations/fourth-step.md): claim 4's
post-norm failure screen by its registered rule, its confirmation, and the fresh tests registered
there (2b on fresh pairs, claim 8 on SmolLM2 fairly, claims 4a, 4b and the depth-fix family where
post-norm fails), each decided from the archives under results/ whenever the report is written,
with claim 4's figure by depth and the learning curves of claim 8's arms."""

from __future__ import annotations

from pathlib import Path

from oversmooth.claims.claim4_depth import claim4_depth_lines, recipe_words
from oversmooth.claims.fresh_2b import fresh_2b_record
from oversmooth.claims.postnorm_confirm import CANDIDATE, confirm_section, confirm_seeds, confirmed
from oversmooth.claims.postnorm_family import (
    FIXES,
    failure_count,
    family_records,
    family_section,
    rescue_headline,
    value_range,
)
from oversmooth.claims.postnorm_family import PRESET as FAMILY
from oversmooth.claims.postnorm_family_figure import family_figure_lines
from oversmooth.claims.postnorm_screen import DEEP, STUDY, candidates, screen_rows, screen_sentence, screen_table
from oversmooth.claims.smollm2_fair import RAMP, fair_records, learning_curves
from oversmooth.claims.third_protocol import claims_by_verdict, records_table
from oversmooth.claims.verdicts import INCONCLUSIVE
from oversmooth.study.report import Draw
from oversmooth.study.results import CellResult
from oversmooth.utils.plotting import DEFAULT_FORMATS, PAGE, embed, figure, figure_legend, integer_ticks, save_figure

REGISTRATION = "docs/registrations/fourth-step.md"
#: the fourth step's items its budget left out when it was planned (section 3 of the registration,
#: while the screen ran, before any other cell of the fourth step): what each would have cost
DROPPED = (
    "Not run, for the fourth step's 40 CPU-hours (planned in section 3 of the registration while the screen ran, "
    "before any other cell of the fourth step, in the order of value 1, 2, 3, 5, 4): the 197-token ViT (2 x 2 "
    "patches, depth 12) trained to its plateau, about 4 CPU-hours for one seed at 40 epochs and more for its "
    "claims' pairs, so the regime section's last row stands as it is (it oversmooths but has not trained to the "
    "gate); and 5c's re-test on the spectral arm's sharpening blocks, about 3, so 5c's registered \"held\" keeps "
    "its flag."
)
CURVES = "claim8_smollm2_fair"  # the figure's stem


def fourth_step_records(
    cells: list[CellResult], fair_adapted: dict[int, dict], budget: dict | None = None
) -> list[dict]:
    """The fourth step's fresh tests, each a record as the third protocol's (pending until run;
    2b's not tested where ``budget``, the decision on its remaining pairs, dropped them)."""
    return [fresh_2b_record(cells, budget), *fair_records(fair_adapted), *family_records(cells)]


def claim4_clause(cells: list[CellResult], records: list[dict]) -> str:
    """Where claim 4 stands where post-norm fails, for the report's opening: the screen and its
    confirmation, then the depth fixes' verdicts among ``records`` (4a's and 4b's are fresh tests of
    their claims, counted with the others)."""
    rows = screen_rows(cells)
    verdict = confirmed(confirm_seeds(cells))
    if not candidates(rows):
        return f"not tested: {screen_sentence(rows)}"
    if not verdict:
        state = "pending: its confirmation is running" if verdict is None else "not tested: its confirmation failed"
        return f"{state} ({screen_sentence(rows)})"
    names = {fix.name for fix in FIXES}
    fixes = [r for r in records if r["claim"] in names]
    told = "; ".join(f"{v} ({_fixes_words(v, found, fixes)})" for v, found in claims_by_verdict(fixes).items())
    untested = next((r["sentence"] for r in fixes if r["verdict"] == "not tested"), "")
    told += f": {untested.removeprefix('not tested: ')}" if untested else ""
    if headline := rescue_headline(cells, records):
        told += f"; {headline}"
    elif any(r["verdict"] == "pending" for r in fixes) and (count := failure_count(cells)):
        told += f"; so far post-norm softmax at depth {DEEP} {count}"
    return (
        f"the registered screen found, and its confirmation confirmed, a recipe where it fails at depth {DEEP} "
        f"while pre-norm trains ({CANDIDATE}: {recipe_words(FAMILY.cells()[0].spec())}); 4a, 4b and the depth "
        f"fixes are tested afresh there (`{FAMILY.name}`), the depth fixes {told}"
    )


def _fixes_words(verdict: str, names: list[str], fixes: list[dict]) -> str:
    """The fixes ``names`` given ``verdict``, by their short names; where they are inconclusive,
    the smallest difference their design detects (``test_fields``' ``mde``), and that it lies beyond
    what accuracy can move where it does.

    >>> fixes = [{"claim": f"{n} (post-norm fails)", "test": {"mde": m, "seeds": [20, 21]}} for n, m in
    ...          (("ReZero", 134.5), ("MV-split", 101.0))]
    >>> _fixes_words("inconclusive", ["ReZero (post-norm fails)", "MV-split (post-norm fails)"], fixes)
    'ReZero, MV-split; their 2 pairs detect a difference of 101-134 pp or more, beyond what accuracy can move'
    """
    text = ", ".join(name.split(" (")[0] for name in names)
    tests = [r["test"] for r in fixes if r["claim"] in names and "mde" in r.get("test", {})]
    if verdict != INCONCLUSIVE or not tests:
        return text
    detectable = [t["mde"] for t in tests]
    beyond = ", beyond what accuracy can move" if min(detectable) > 100 else ""
    pairs = len(tests[0]["seeds"])
    return f"{text}; their {pairs} pairs detect a difference of {value_range(detectable, '.0f')} pp or more{beyond}"


def fourth_step_section(
    cells: list[CellResult], records: list[dict], fair_adapted: dict[int, dict], formats=DEFAULT_FORMATS
) -> tuple[list[str], dict[str, Draw]]:
    """The section's Markdown lines and its figures (stem -> draw), shown in the first of
    ``formats`` a browser shows."""
    rows = screen_rows(cells)
    found = candidates(rows)
    lines = [
        "## The fourth step: where post-norm fails, and fresh tests",
        "",
        f"Registered in {REGISTRATION} before any of their cells ran. Claim 4's post-norm failure screen (preset "
        f"`{STUDY}`, 2 epochs, seed 0): post-norm *fails* when it diverges, ends below 20 % or at least 5 pp below "
        "pre-norm at the same recipe; pre-norm *trains* at 50 % or more; a recipe is a candidate where both hold "
        "at depth 96, in the registered order. Validation accuracy after the last epoch, last-layer cos_sim of the "
        "validation probe:",
        "",
        screen_table(rows),
        "",
        f"Candidates at depth 96, in the registered order: {', '.join(found) if found else 'none'} "
        f"({screen_sentence(rows)}).",
        "",
        DROPPED,
        "",
        *confirm_section(cells),
        *family_section(cells),
        "The fresh tests, decided from results/ as registered (a pending row says what it waits for):",
        "",
        *records_table(records),
        "",
    ]
    family_lines, files = family_figure_lines(records, cells, formats)
    depth_lines, depth_files = claim4_depth_lines(cells, formats)
    lines += family_lines + depth_lines
    files |= depth_files
    if fair_adapted:
        files[CURVES] = lambda stem, f: plot_learning_curves(learning_curves(fair_adapted), len(fair_adapted), stem, f)
        lines += [
            f"Claim 8 on SmolLM2 (fairly): validation NLL and last-layer cos_sim against step, the mean over the "
            f"{len(fair_adapted)} finished seeds (both NeuTRENO arms ramped from lambda 0 over the first {RAMP} steps; "
            "step 0 is each arm before any step, scored at its full lambda):",
            "",
            embed("claim 8 on SmolLM2: learning curves", CURVES, formats),
            "",
        ]
    return lines, files


def plot_learning_curves(
    curves: dict[str, list[tuple[int, float, float]]], seeds: int, stem: Path, formats=DEFAULT_FORMATS
) -> None:
    """Two panels, validation NLL (log scale: a broken arm sits far above) and last-layer cos_sim
    against step, one line per arm; a dotted line where the ramp reaches full lambda."""
    from matplotlib.ticker import LogFormatter

    with figure(1, 2, PAGE, 3.0) as (fig, axes):
        nll, cos = axes[0]
        for arm, points in curves.items():
            steps = [step for step, _, _ in points]
            nll.plot(steps, [v for _, v, _ in points], marker="o", label=arm)
            cos.plot(steps, [c for _, _, c in points], marker="o", label=arm)
        for ax in (nll, cos):
            ax.axvline(RAMP, color="grey", ls=":", lw=1, label=f"full lambda (step {RAMP})")
        nll.set(xlabel="step", ylabel="validation NLL (nats/token)", yscale="log")
        for set_formatter in (nll.yaxis.set_major_formatter, nll.yaxis.set_minor_formatter):
            set_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))  # plain, thinned
        cos.set(xlabel="step", ylabel="last-layer cos_sim")
        integer_ticks(nll, cos)
        figure_legend(fig)
        fig.suptitle(f"SmolLM2-135M adapted on the Austen text, mean of {seeds} seeds")
        save_figure(fig, stem, formats)
