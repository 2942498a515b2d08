"""Claim 2b on fresh pairs (docs/registrations/fourth-step.md, section 2): ``austen-p3``'s setting
unchanged, softmax against NeuTRENO (lambda 0.4) on seeds 20-33 (preset ``austen-p3-fresh``),
decided on the final validation NLL per token by a two-sided paired t-test alone (outside the Holm
families: the registered verdict stays the second protocol's), its 95 % interval beside the paper's
-0.017 nats per token (Nguyen et al. 2023, Table 3: WikiText-103 perplexity 34.29 -> 33.70), the
softmax cells gated by gate L's parts (a) and (c). The report tables its record with the other fresh
tests (``claims.third_protocol``'s record fields)."""

from __future__ import annotations

import statistics
from dataclasses import replace

from oversmooth.claims import measures
from oversmooth.claims.gathering import gather
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.claims.protocol import LM_GATE, PROTOCOLS
from oversmooth.claims.third_protocol import test_fields
from oversmooth.claims.verdicts import decide, magnitude_reason
from oversmooth.study.results import CellResult

PRESET = CLAIMS_PRESETS["austen-p3-fresh"]
EFFECT = -0.017  # nats per token: ln(33.70 / 34.29), as registered
COMMAND = "oversmooth study austen-p3-fresh --out runs/studies/austen-p3-fresh --results results --jobs 2"
#: the registered claim 2b on the fresh preset and seeds, its gate L without part (b)
FRESH = replace(
    next(p for p in PROTOCOLS if p.id == "2b"),
    preset=PRESET,
    seeds=PRESET.seeds,
    measure=measures.final_val,
    gates=(replace(LM_GATE, judge_long=False),),
)


def fresh_2b_record(cells: list[CellResult], budget: dict | None = None) -> dict:
    """The fresh test's record: ``claim``, ``model``, ``command``, ``verdict``, ``sentence`` (as the
    third protocol's), with the pairs' numbers once decided; "pending" while seeds are unfinished,
    "not tested" once ``budget`` (``claims.fourth_step_budget``'s decision) dropped them."""
    evidence = gather(FRESH, cells)
    record = {
        "claim": "2b (fresh pairs)",
        "model": f"austen-p3's LM, seeds {PRESET.seeds[0]}-{PRESET.seeds[-1]}: NeuTRENO (lam 0.4) vs softmax, "
        "val NLL (nats/token)",
        "command": COMMAND,
        "effect": EFFECT,
        "unit": "nats/token",
        "direction": "lower",
    }
    if evidence.gate_failure:
        return record | {"verdict": "not tested", "sentence": f"not tested: gate L {evidence.gate_failure}"}
    if evidence.missing and budget is not None and budget["2b"] == "dropped":
        dropped = (
            f"not tested: dropped for budget (docs/registrations/fourth-step.md, sections 6 and 8; decided "
            f"{budget.get('decided', '')}, {budget['spent']:.1f} CPU-hours spent then): the fourth step was "
            f"projected at {budget['total_without_2b']:.1f} hours without these pairs and {budget['total']:.1f} with "
            f"them, against {budget['budget']:g}; their {budget['2b_missing']} missing cells would have cost about "
            f"{budget['2b_cost']:.1f}; {evidence.missing}"
        )
        return record | {"verdict": "not tested", "sentence": dropped}
    if evidence.missing:
        return record | {"verdict": "pending", "sentence": evidence.missing}
    method, baseline = ([v[i] for v in evidence.values] for i in (1, 2))
    decision = decide(method, baseline, "lower")
    test_split = [m - b for _, m, b in gather(replace(FRESH, measure=measures.score), cells).values]
    beside = f"on the test split (deciding nothing) the mean difference is {statistics.fmean(test_split):+.4g}"
    verdict, reason = magnitude_reason(decision, EFFECT)
    return record | {
        "verdict": verdict,
        "sentence": f"{reason}; {beside}; gate L (a), (c): {evidence.gate_measured}",
        "test": test_fields(decision, [seed for seed, *_ in evidence.values]),
    }
