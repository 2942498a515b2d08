"""The third protocol's reading of a tested claim's data (docs/registrations/fourth-step.md), beside
its registered verdict, never in its place: in magnitude where the paper states an effect (its
effect carried to our measure), as an existence claim where it is one, by a measure chosen after the
data where one was (``Question.reread``), and exploratory where the outcome was seen before its rule
was written; claim 4 is not tested while post-norm trains at every depth its deep pilots tried."""

from __future__ import annotations

import statistics

from oversmooth.claims.holm import Decided
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.claims.protocol import DEEP_PILOTS, FAILS_BELOW
from oversmooth.claims.questions import Question
from oversmooth.claims.statements import MEASURED_EARLY, STATEMENTS, Statement
from oversmooth.claims.verdicts import CONTRADICTED, NOT_TESTED, existence, in_magnitude
from oversmooth.study.results import CellResult

SEEN_FIRST = "exploratory: its outcome was seen before its rule was written"


def reading(question: Question, cells: list[CellResult], decided: Decided) -> tuple[str, str, float | None]:
    """The third protocol's verdict on a tested claim's data (docs/registrations/fourth-step.md;
    ``decided``: its family's decisions, ``cells``: the report's), why it reads them so ("" where
    nothing is added to the registered verdict), and the paper's effect carried to our measure (None
    where the paper states none, or the claim is not tested)."""
    stated = STATEMENTS[question.id]
    evidence, decision = decided.registered[question.id]
    if decision.verdict == NOT_TESTED:
        return NOT_TESTED, "", None
    if question.softmax is not None and question.softmax.needs_failing_depth:
        trains = post_norm_trains_deep(cells)
        if trains:
            return NOT_TESTED, trains, None
    why, transferred = [], None
    if question.id in decided.reread:
        decision = decided.reread[question.id][1]
        found = (
            decision.reason
            if decision.verdict == NOT_TESTED
            else f"mean difference {decision.effect:+.3g}, Holm-matched {100 * decision.ci_level:.4g} % CI "
            f"[{decision.ci_low:+.3g}, {decision.ci_high:+.3g}], Holm p {decision.p_adjusted:.3g}"
        )
        why.append(
            f"read against {question.reread_reference}, a reference chosen after its data (exploratory): "
            f"{found}; fresh seeds decide"
        )
    verdict = decision.verdict
    if question.existence:
        verdict = existence(verdict)
        if verdict != decision.verdict:
            why.append("an existence claim: a setting where it did not show cannot contradict it")
    if stated.paper_numbers is not None and question.margin is None:
        ours = statistics.fmean(b for _, _, b in evidence.values)
        transferred = stated.paper_numbers.transferred(ours)
        verdict = in_magnitude(decision, transferred)
        if decision.verdict != CONTRADICTED:  # contradicted stays: its interval lies beyond 0 the other way
            where = "lies entirely short of it" if verdict != decision.verdict else "reaches it"
            why.append(
                f"the paper's effect carried to our measure is {transferred:+.3g} ({_transfer(stated, ours)}); "
                f"the Holm-matched interval [{decision.ci_low:+.3g}, {decision.ci_high:+.3g}] {where}"
            )
    if MEASURED_EARLY in stated.deviations:
        why.append(SEEN_FIRST)
    return verdict, "; ".join(why), transferred


def post_norm_trains_deep(cells: list[CellResult]) -> str:
    """Why claim 4 is not tested by the third protocol: every post-norm softmax seed of its deep
    pilots (``DEEP_PILOTS``) trained, a final validation accuracy of ``FAILS_BELOW`` or more; ""
    while a pilot is missing or unfinished, or a seed failed."""
    pilots = [c for c in cells if c.study in DEEP_PILOTS and c.norm == "post" and c.label == "softmax"]
    planned = {
        (name, cell.seed)
        for name in DEEP_PILOTS
        for cell in CLAIMS_PRESETS[name].cells()
        if (cell.norm, cell.variant.label) == ("post", "softmax")
    }
    finished = {(c.study, c.seed) for c in pilots if c.status == "completed"} == planned
    if not finished:
        return ""
    final = {(c.depth, c.seed): c.epochs[-1]["val"]["accuracy"] for c in pilots}
    if min(final.values()) < FAILS_BELOW:
        return ""
    depths = sorted({depth for depth, _ in final})
    by_depth = "; ".join(
        f"depth {depth}: " + ", ".join(f"{100 * a:.1f} %" for (d, _), a in sorted(final.items()) if d == depth)
        for depth in depths
    )
    return (
        f"post-norm trains at depths {' and '.join(map(str, depths))} with a recipe that trains "
        f"pre-norm to its plateau (post-norm softmax's final validation accuracy by seed, {by_depth}; failing is "
        f"below {100 * FAILS_BELOW:.0f} %: {', '.join(DEEP_PILOTS)}, docs/studies.md)"
    )


def _transfer(stated: Statement, ours: float) -> str:
    """How docs/registrations/fourth-step.md carries the paper's effect to our measure, in words."""
    numbers = stated.paper_numbers
    if numbers.scale == "perplexity":
        return f"nats per token: ln({numbers.method:g} / {numbers.baseline:g})"
    return (
        f"{100 * numbers.error_removed:.3g} % of the paper's error removed, of our {stated.sides[1]}'s "
        f"{100 - ours:.4g} % error"
    )
