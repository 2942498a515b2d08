"""Every claim of the source papers by its stable id (``CLAIMS``), each decided by one rule into one
``Claim``, a row of the table and of ``claims.json`` (docs/studies.md):

- a tested claim (``decide_question``): its Holm family's decision on its evidence
  (``claims.holm``), with the third protocol's reading beside it (``claims.reading``) and,
  for a trained claim, where it was tested (``claims.regime``);
- the static claims 1a and 1b (``decide_no_training``): a deterministic rule on the probes, no p.

How each claim is stated is its row of ``claims.statements``; how a tested claim is tested and
where its evidence comes from, its ``claims.questions.Question``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping

from oversmooth.analyze import Budget
from oversmooth.claims.claim import RULE, Claim
from oversmooth.claims.commands import PROBES_COMMAND
from oversmooth.claims.gathering import Evidence, Inputs
from oversmooth.claims.holm import Decided, decide_families
from oversmooth.claims.probes import CurvePair, Probes
from oversmooth.claims.questions import QUESTIONS, Question
from oversmooth.claims.reading import SEEN_FIRST, reading
from oversmooth.claims.regime import tested_where
from oversmooth.claims.similarity_claim import similarity_verdict
from oversmooth.claims.statements import MEASURED_EARLY, STATEMENTS, Statement
from oversmooth.claims.verdicts import CONTRADICTED, HELD, INCONCLUSIVE, NOT_TESTED, Decision
from oversmooth.study.report import seed_span
from oversmooth.study.results import CellResult

#: a claim's rule: its row, on the inputs and the Holm families' decisions
Rule = Callable[[Inputs, Decided], Claim]


def decide_question(claim_id: str) -> Rule:
    """The rule of tested claim ``claim_id``: its family's decision on its evidence."""

    def decide(inputs: Inputs, decided: Decided) -> Claim:
        question, stated = QUESTIONS[claim_id], STATEMENTS[claim_id]
        evidence, decision = decided.registered[claim_id]
        tested = decision.verdict != NOT_TESTED
        verdict_read, reading_reason, transferred = reading(question, inputs.cells, decided)
        gate_passed = None if not evidence.judged else evidence.gate_failure is None
        gate = question.gate + (
            ""
            if gate_passed is None
            else f" (passed: {evidence.gate_measured})"
            if gate_passed
            else f" (failed: {evidence.gate_failure})"
        )
        return Claim(
            id=claim_id,
            family=question.family,
            statement=stated.statement,
            paper=stated.paper,
            measure=stated.measure,
            ours=_ours(question, stated, evidence, decision),
            effect=_number(decision.effect) if tested else None,
            ci=(decision.ci_low, decision.ci_high) if tested else None,
            ci_level=_number(decision.ci_level) if tested else None,
            n=decision.test.n,
            p=_number(decision.p) if tested else None,
            p_holm=_number(decision.p_adjusted),
            mde=_number(decision.mde),
            margin=question.margin,
            gate=gate,
            gate_passed=gate_passed,
            verdict=decision.verdict,
            reason=decision.reason
            + _planned(question, decision)
            + _beside_paper(stated, decision)
            + (f"; scope: {stated.scope}" if stated.scope else ""),
            deviations=stated.deviations,
            command=question.command(inputs),
            paper_effect=stated.paper_effect,
            mde_planned=question.mde_planned,
            ci95=(decision.test.ci_low, decision.test.ci_high) if tested and decision.test.n >= 2 else None,
            why_not_tested=None if tested else evidence.why_not_tested or "see its row",
            test="paired t" if question.margin is None else "TOST",
            reading=verdict_read,
            reading_reason=reading_reason,
            paper_transferred=transferred,
            direction=question.direction,
            regime=None if question.softmax is None else tested_where(question.softmax, inputs.cells),
        )

    return decide


def _ours(question: Question, stated: Statement, evidence: Evidence, decision: Decision) -> str:
    """Both arms' means, the difference with its 95 % CI and n ("interim" while pairs are missing),
    the ratio where the measure is a log ratio, and the evidence's note."""
    if not evidence.values:
        return "no finished pair yet"
    _, method, baseline = zip(*evidence.values)
    ours, theirs = (f"{side} " if side else "" for side in stated.sides)
    text = f"{ours}{statistics.fmean(method):.4g} vs {theirs}{statistics.fmean(baseline):.4g}"
    text += f"; difference {decision.test.mean:+.3g}"
    if decision.test.n >= 2:
        text += f", 95 % CI [{decision.test.ci_low:+.3g}, {decision.test.ci_high:+.3g}]"
    text += f", n = {decision.test.n}"
    if question.units == "seeds":
        text += f" (seeds {seed_span([unit for unit, _, _ in evidence.values])})"
    if evidence.missing:
        text = f"interim, not decided: {text}"
    if question.log_ratio and decision.verdict != NOT_TESTED:
        low, high = math.exp(decision.ci_low), math.exp(decision.ci_high)
        text += f"; as a ratio {math.exp(decision.effect):.3f} [{low:.3f}, {high:.3f}] Holm-matched"
        if question.margin is not None:
            text += f", margin [{math.exp(-question.margin):.3f}, {math.exp(question.margin):.3f}]"
    return text + (f"; {evidence.note}" if evidence.note else "")


def _number(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _planned(question: Question, decision: Decision) -> str:
    """An inconclusive claim's detectable effect as registered before the runs, beside the measured one."""
    if decision.verdict != INCONCLUSIVE or question.mde_planned is None:
        return ""
    return f"; registered from the pilot's spread: {question.mde_planned:g}"


def _beside_paper(stated: Statement, decision: Decision) -> str:
    """Where the paper's effect lies against our Holm-matched interval; for an inconclusive claim
    whose paper states no effect in our measure, that it does not ("" otherwise)."""
    effect, low, high = stated.paper_effect, decision.ci_low, decision.ci_high
    if effect is None and decision.verdict == INCONCLUSIVE:
        return "; the paper states no effect in this measure to set beside it"
    if effect is None or decision.verdict == NOT_TESTED or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    where = "above" if effect > high else "below" if effect < low else "inside"
    return f"; the paper's effect ({effect:+g}) lies {where} this interval"


def decide_no_training(
    claim_id: str,
    gate: str,
    curves: Callable[[Probes], CurvePair | None],
    beside: Callable[[Probes], CurvePair] | None = None,
) -> Rule:
    """The rule of claims 1a / 1b (NeuTRENO App. G.3 / G.9): ``similarity_verdict`` on ``curves``,
    with ``beside`` (the paper's own knob, say) reported next to it. Its statement names the
    lambda decided and the model measured."""

    def decide(inputs: Inputs, decided: Decided) -> Claim:
        stated = STATEMENTS[claim_id]
        row = {
            "id": claim_id,
            "family": None,
            "paper": stated.paper,
            "measure": stated.measure,
            "effect": None,
            "ci": None,
            "ci_level": None,
            "p": None,
            "p_holm": None,
            "mde": None,
            "margin": None,
            "gate": gate,
            "command": PROBES_COMMAND,
            "test": RULE,
        }
        pair = None if inputs.probes is None else curves(inputs.probes)
        if pair is None:
            return Claim(
                **row,
                statement=stated.statement,
                ours="the probes have not run",
                n=0,
                gate_passed=None,
                verdict=NOT_TESTED,
                reason="not tested: the probes have not run (oversmooth claims without --no-probes runs them)",
                deviations=(),
                why_not_tested="runs not finished",
                reading=NOT_TESTED,
            )
        base, neut = pair.mean("baseline"), pair.mean("neutreno")
        rule, sentence = similarity_verdict(base, neut, pair.quality)
        verdict = rule if rule in (HELD, NOT_TESTED) else CONTRADICTED  # "model broken": a reason, no verdict
        if verdict != rule:  # the rule's own word ("did not hold", "model broken") becomes the reason
            sentence = f"{verdict} (the claimed change does not happen within the quality budget): {sentence}"
        return Claim(
            **row,
            statement=stated.statement.replace("NeuTRENO", f"NeuTRENO (lam {pair.lam:g})", 1) + f" ({pair.source})",
            ours=f"last layer {base[-1]:.3f} -> {neut[-1]:.3f}"
            + (f"; {pair.note}" if pair.note else "")
            + ("" if beside is None else _beside(beside(inputs.probes))),
            n=len(pair.baseline),
            gate_passed=None if pair.quality is None else pair.quality.within_budget,
            verdict=verdict,
            reason=sentence + " (oversmooth.claims.similarity_claim.similarity_verdict; deterministic, no statistics)",
            deviations=stated.deviations,
            why_not_tested="see its row" if verdict == NOT_TESTED else None,
            reading=verdict,
            reading_reason=SEEN_FIRST if MEASURED_EARLY in stated.deviations and verdict != NOT_TESTED else "",
        )

    return decide


def _beside(pair: CurvePair) -> str:
    """The same rule at another knob, in a clause: ``"; at lam 0.6: similarity lower, model broken ..."``."""
    _, sentence = similarity_verdict(pair.mean("baseline"), pair.mean("neutreno"), pair.quality)
    return f"; at lam {pair.lam:g}: {sentence}"


#: Every claim by its stable id, in the report's order (``STATEMENTS``'s).
CLAIMS: dict[str, Rule] = {
    "1a": decide_no_training("1a", "none (untrained: no job to keep)", lambda probes: probes.random_init),
    "1b": decide_no_training(
        "1b",
        "decided at the largest lambda whose output stays within the quality budget (for this sentence encoder: "
        f"output cosine >= {Budget().cosine:g}; the frontier of analyze --sweep)",
        lambda probes: probes.frontier,
        beside=lambda probes: probes.pretrained,
    ),
    **{claim_id: decide_question(claim_id) for claim_id in STATEMENTS if claim_id in QUESTIONS},
}


def decide_claims(
    cells: list[CellResult],
    probes: Probes | None = None,
    commands: Mapping[str, str] | None = None,
    ids: tuple[str, ...] | None = None,
    adapted: list[dict] | None = None,
    benchmark: dict | None = None,
) -> list[Claim]:
    """Every registered claim (or those in ``ids``) decided on this evidence, in registry order
    (a claim whose evidence has not run is "not tested", never left out)."""
    inputs = Inputs(cells, probes, adapted or [], benchmark, commands or {})
    decided = decide_families(inputs)
    return [CLAIMS[claim_id](inputs, decided) for claim_id in (ids or CLAIMS)]
