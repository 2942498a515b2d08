"""The sink claims S1-S4 decided together (docs/registrations/sinks.md): the Holm family *sinks* (S1,
S3a, S3b, S4a, S4b; m = 5, an unfinished claim entering with p = 1), S2 by its location rule and
S4c described, as the claims report's section "Sinks and massive activations"."""

from __future__ import annotations

import statistics
from pathlib import Path

from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.claims.protocol import OVERSMOOTHS
from oversmooth.claims.sinks_decision import s1_claim, s1_row, s2_row
from oversmooth.claims.sinks_trained import (
    CLAIMS,
    PILOT,
    SOFTMAX,
    UNIFORM_SHARE,
    TrainedEvidence,
    seed_rule,
    sink_groups,
    trained_evidence,
)
from oversmooth.claims.third_protocol import test_fields
from oversmooth.claims.verdicts import Decision, PairedClaim, decide_family, existence, magnitude_reason
from oversmooth.study.results import CellResult
from oversmooth.study.stats import paired_test
from oversmooth.utils.markdown import markdown_table

REGISTRATION = "docs/registrations/sinks.md"
DECISION_STUDY = "sinks-lm"  # added with its seeds only if the pilot shows a claim testable
STUDIES = (PILOT.name, DECISION_STUDY)
LM_SCOPE = "the Jane Austen LM (austen-p3: pre-norm, 8 x 64, 4 heads, 64-token context)"


def _paired(evidence: TrainedEvidence) -> PairedClaim:
    """A trained claim's entry in the family (p = 1 while pending or not tested)."""
    why = evidence.pending or evidence.failed
    return PairedClaim(evidence.method, evidence.baseline, evidence.claim.direction, why)


def _trained_row(evidence: TrainedEvidence, decision: Decision | None, val_nll: dict[str, list[float]]) -> dict:
    """One of S3a-S4c as a row: its verdict (pending, not tested, the family's, or described);
    ``val_nll``: each of its arms' final validation NLL on its seeds (S4c prints them)."""
    claim = evidence.claim
    row = {"claim": claim.id, "statement": claim.statement, "scope": f"{LM_SCOPE}, {claim.method} vs {claim.baseline}"}
    if evidence.pending:
        return row | {"verdict": "pending", "sentence": evidence.pending}
    if claim.id == "S3a" and evidence.failed and not evidence.failed.startswith("gate"):
        return row | {"verdict": "not shown here", "sentence": evidence.failed}
    if evidence.failed:
        return row | {"verdict": "not tested", "sentence": f"not tested: {evidence.failed}"}
    seeds = list(evidence.seeds)
    if decision is None:  # S4c: described, two-sided, each arm's validation NLL beside it
        test = paired_test(evidence.method, evidence.baseline, "lower")
        nll = ", ".join(f"{arm} {statistics.fmean(values):.3f}" for arm, values in val_nll.items())
        sentence = (
            f"described (no claimed direction): mean difference {test.mean:+.4f}, 95 % CI [{test.ci_low:+.4f}, "
            f"{test.ci_high:+.4f}] over seeds {seeds[0]}-{seeds[-1]}; mean validation NLL {nll}"
        )
        return row | {"verdict": "described", "sentence": sentence}
    verdict, reason = decision.verdict, decision.reason
    if claim.id == "S3a":
        verdict = existence(verdict)
    elif evidence.effect is not None:
        verdict, reason = magnitude_reason(decision, evidence.effect)
    beside = "" if evidence.effect is None else f"; the paper's effect carried: {evidence.effect:+.4g}"
    if claim.id == "S3b":  # softpick's own sink rate beside (the softpick paper reports 0)
        own = paired_test(evidence.method, [0.0] * len(seeds), "higher")
        beside += f"; softpick's sink rate {own.mean:.3f}, 95 % CI [{own.ci_low:.3f}, {own.ci_high:.3f}]"
    gate = f"; gate L (a), (c): {evidence.gate}" if evidence.gate else ""
    return row | {"verdict": verdict, "sentence": reason + beside + gate, "test": test_fields(decision, seeds)}


def sinks_records(results: str | Path, cells: list[CellResult]) -> list[dict]:
    """S1-S4's rows, decided from ``results`` (S1, S2's measurements) and ``cells`` (S3, S4's)."""
    preset = CLAIMS_PRESETS.get(DECISION_STUDY)
    trained = trained_evidence(cells, preset)
    family = [e for e in trained if e.claim.direction is not None]
    s1 = s1_claim(results)
    decisions = decide_family([s1, *map(_paired, family)])
    s1_decision = decisions[0] if s1.failed_gate is None else None
    by_id = {e.claim.id: d for e, d in zip(family, decisions[1:])}
    return [
        s1_row(results, s1_decision),
        s2_row(results),
        *(_trained_row(e, by_id.get(e.claim.id), _val_nll(cells, e)) for e in trained),
    ]


def _val_nll(cells: list[CellResult], evidence: TrainedEvidence) -> dict[str, list[float]]:
    """The final validation NLL of ``evidence``'s two trained arms on its seeds, by arm."""
    arms = [evidence.claim.baseline, evidence.claim.method]
    found: dict[str, list[float]] = {arm: [] for arm in arms}
    for cell in cells:
        if cell.study in STUDIES and cell.seed in evidence.seeds and cell.label in found and cell.epochs:
            found[cell.label].append(cell.epochs[-1]["val"]["loss"])
    return found


def _seed_rule_line(cells: list[CellResult], records: list[dict]) -> str:
    """Where the pilot's seed rule stands, for the section (``records``: the claims' rows)."""
    try:
        rule = seed_rule(cells)
    except ValueError as why:
        return f"The pilot (`{PILOT.name}`): {why}. {pilot_so_far(cells)}"
    plans = "; ".join(
        f"{claim}: effect {effect:+.3g}, SD {sd:.3g} (80 % limit {limit:.3g}), {needed or 'more than 10'} pairs"
        for claim, (effect, sd, limit, needed) in rule.plans.items()
    )
    short = f" ({', '.join(rule.underpowered)} underpowered at 10)" if rule.underpowered else ""
    planned = f"`{DECISION_STUDY}` would take seeds {rule.seeds[0]}-{rule.seeds[-1]}{short}"
    ran = ""
    trained = {claim.id for claim in CLAIMS}
    if DECISION_STUDY not in CLAIMS_PRESETS and all(
        r["verdict"] != "pending" for r in records if r["claim"] in trained
    ):
        ran = "; it is not run: the pilot shows every trained claim untestable (Deviations, 29 November)"
    return f"The pilot's seed rule (half the effect, alpha 0.01): {plans}; {planned}{ran}."


def pilot_so_far(cells: list[CellResult]) -> str:
    """The pilot's measured cells, described (deciding nothing): per arm, the mean sink rate,
    first-token share and largest massive-activation ratio of the trained models."""
    groups = sink_groups(cells, PILOT.name)
    arms: dict[str, list[dict]] = {}
    for seed_arms in groups.values():
        for arm, record in seed_arms.items():
            arms.setdefault(arm, []).append(record["trained"])
    if not arms:
        return ""
    mean = lambda records, field: statistics.fmean(r[field] for r in records)  # noqa: E731
    found = "; ".join(
        f"{arm} ({len(records)} seed{'s' * (len(records) > 1)}): sink rate {mean(records, 'sink_rate_model'):.3f}, "
        f"first-token share {mean(records, 'first_token_share_model'):.3f} (uniform {UNIFORM_SHARE:.3f}), largest "
        f"ratio {mean(records, 'massive_ratio_max'):.1f}"
        for arm, records in sorted(arms.items())
    )
    return f"Measured so far (deciding nothing): {found}."


def _regime(cells: list[CellResult]) -> list[str]:
    """The LM's regime: its trained softmax's last-layer cos_sim beside the same seeds at initialisation."""
    softmax = [arms[SOFTMAX] for study in STUDIES for arms in sink_groups(cells, study).values() if SOFTMAX in arms]
    if not softmax:
        return []
    trained, init = (statistics.fmean(r[when]["cos_sim_last"] for r in softmax) for when in ("trained", "init"))
    return [
        f"The Austen LM's regime: trained softmax's last-layer cos_sim {trained:.3f} against {init:.3f} for the "
        f"same {len(softmax)} seeds at initialisation (first token left out): it "
        + ("oversmooths" if trained >= OVERSMOOTHS else "does not oversmooth")
        + f" (the bar: {OVERSMOOTHS:g}).",
        "",
    ]


def sinks_section(records: list[dict], cells: list[CellResult]) -> list[str]:
    """The claims report's section on S1-S4."""
    rows = [[r["claim"], r.get("scope", ""), r["verdict"], r["sentence"]] for r in records]
    return [
        "## Sinks and massive activations (S1-S4)",
        "",
        f"Registered in {REGISTRATION} before any measurement or cell that decides them. One Holm family (S1, S3a, "
        "S3b, S4a, S4b; m = 5); S2 by its location rule; S4c described. S1 and S2 are decided on text no earlier "
        "measurement of SmolLM2 read, their rules written after an exploratory look at the model on other text.",
        "",
        _seed_rule_line(cells, records),
        "",
        *_regime(cells),
        markdown_table(["claim", "scope", "verdict", "why"], rows),
        "",
    ]
