"""Claims S3 and S4 on the trained Jane Austen LM (docs/registrations/sinks.md), from each cell's
``analysis.json`` ``sinks`` record (``claims.cell_sinks``): softmax, softpick (Zuhri et al. 2025,
arXiv 2504.20966) and gated attention (Qiu et al. 2025, arXiv 2505.06708, G1), paired by seed.

- S3a: trained softmax's sink rate (Gu et al., ICLR 2025: the share of heads with mean first-token
  attention >= 0.3) above the same seed's softmax at initialisation;
- S3b: softpick's sink rate below softmax's;
- S4a: gated attention's first-token attention share below softmax's (paper: 46.7 % -> 4.8 %, carried
  as -0.90 x softmax's share);
- S4b: gated attention's log largest massive-activation ratio below softmax's (paper: 1 053 -> 94,
  carried as log(94 / 1 053));
- S4c: last-layer cos_sim, gated - softmax, described (two-sided, outside the family).

``seed_rule`` reads the pilot (``sinks-pilot``) as registered: the seeds ``sinks-lm`` needs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.claims.protocol import LM_GATE
from oversmooth.study.config import StudyConfig
from oversmooth.study.results import CellResult
from oversmooth.study.stats import Direction, seed_plan

PILOT = CLAIMS_PRESETS["sinks-pilot"]
SOFTMAX, SOFTPICK, GATED = "softmax", "softpick", "gated_attention"
INIT = "softmax at initialisation"
#: Qiu et al.'s first-token share 46.7 % -> 4.8 %: the relative reduction carried
GATED_SHARE_REDUCTION = 1 - 4.8 / 46.7
#: Qiu et al.'s maximum activation 1 053 -> 94, carried as a log ratio
GATED_LOG_MASSIVE = math.log(94 / 1053)
#: below these, softmax has no sink or massive activation to remove (docs/registrations/sinks.md)
NO_SINK_RATE = 0.05
UNIFORM_SHARE = sum(1 / t for t in range(2, 65)) / 63  # uniform causal attention over 64 tokens
NO_MASSIVE_RATIO = 100.0
#: the seed rule: Holm's strictest level over the family's 5 claims, the most seeds sinks-lm may take
RULE_ALPHA, FIRST_SEED, MOST_SEEDS, LEAST_SEEDS = 0.01, 43, 10, 4
#: the softmax arm's gate: gate L's parts (a) and (c), as claim 2b's fresh test
GATE = replace(LM_GATE, judge_long=False)


@dataclass(frozen=True)
class TrainedClaim:
    """One of S3a-S4c: ``measure`` of the ``method`` arm against the ``baseline`` arm (``INIT``: the
    softmax cell's own model before training), paired by seed, in the claimed ``direction``."""

    id: str
    statement: str
    method: str
    baseline: str
    measure: Callable[[dict], float]
    direction: Direction | None  # None: a description, no claimed direction

    def values(self, groups: dict[int, dict[str, dict]]) -> tuple[list[int], list[float], list[float]]:
        """The seeds with both arms measured, and the two arms' values on them."""
        seeds = [s for s, arms in sorted(groups.items()) if self.method in arms and _base(self.baseline) in arms]
        method = [self.measure(groups[s][self.method]["trained"]) for s in seeds]
        baseline = [self.measure(_record(groups[s], self.baseline)) for s in seeds]
        return seeds, method, baseline


def _base(arm: str) -> str:
    return SOFTMAX if arm == INIT else arm


def _record(arms: dict[str, dict], arm: str) -> dict:
    return arms[SOFTMAX]["init"] if arm == INIT else arms[arm]["trained"]


CLAIMS = (
    TrainedClaim("S3a", "a sink emerges in the trained LM", SOFTMAX, INIT, lambda r: r["sink_rate_model"], "higher"),
    TrainedClaim("S3b", "no sink under softpick", SOFTPICK, SOFTMAX, lambda r: r["sink_rate_model"], "lower"),
    TrainedClaim(
        "S4a",
        "gated attention lowers the first-token share",
        GATED,
        SOFTMAX,
        lambda r: r["first_token_share_model"],
        "lower",
    ),
    TrainedClaim(
        "S4b",
        "gated attention lowers the largest activation",
        GATED,
        SOFTMAX,
        lambda r: math.log(r["massive_ratio_max"]),
        "lower",
    ),
    TrainedClaim("S4c", "gated attention's last-layer cos_sim", GATED, SOFTMAX, lambda r: r["cos_sim_last"], None),
)


def sink_groups(cells: Sequence[CellResult], study: str) -> dict[int, dict[str, dict]]:
    """``seed -> arm -> sinks record`` of ``study``'s completed, measured cells."""
    groups: dict[int, dict[str, dict]] = {}
    for cell in cells:
        if cell.study == study and cell.status == "completed" and cell.analysis and "sinks" in cell.analysis:
            groups.setdefault(cell.seed, {})[cell.label] = cell.analysis["sinks"]
    return groups


def effect_to_detect(claim: TrainedClaim, softmax: Sequence[dict]) -> float:
    """The effect the seed rule plans for (half of it is detected): S4a, S4b the paper's effect
    carried; S3a, S3b (no number carried) the mean trained softmax sink rate, with the claim's sign."""
    if claim.id == "S4a":
        return -GATED_SHARE_REDUCTION * statistics.fmean(r["first_token_share_model"] for r in softmax)
    if claim.id == "S4b":
        return GATED_LOG_MASSIVE
    rate = statistics.fmean(r["sink_rate_model"] for r in softmax)
    return rate if claim.direction == "higher" else -rate


@dataclass(frozen=True)
class SeedRule:
    """The registered seed rule read from the pilot: per claim, the plan (the effect planned for,
    the SD of the pilot's differences, its 80 % limit, pairs needed for half the effect at alpha
    0.01); ``seeds`` for ``sinks-lm``: the most any claim needs, or ``MOST_SEEDS`` when some claim
    needs more (named in ``underpowered``: its row will print an underpowered design)."""

    plans: dict[str, tuple[float, float, float, int | None]]  # id -> (effect, sd, limit, needed)
    seeds: tuple[int, ...]
    underpowered: tuple[str, ...]


def seed_rule(cells: Sequence[CellResult]) -> SeedRule:
    """docs/registrations/sinks.md's seed rule on the pilot's cells; ValueError until every pilot
    cell is measured."""
    groups = sink_groups(cells, PILOT.name)
    arms = {v.label for v in PILOT.variants}
    if sorted(groups) != list(PILOT.seeds) or any(set(g) != arms for g in groups.values()):
        measured = {seed: sorted(arms_) for seed, arms_ in groups.items()}
        raise ValueError(f"{PILOT.name} is not finished: measured (seed: arms) {measured}")
    softmax = [g[SOFTMAX]["trained"] for _, g in sorted(groups.items())]
    plans = {}
    for claim in CLAIMS[:4]:
        _, method, baseline = claim.values(groups)
        effect = effect_to_detect(claim, softmax)
        plan = seed_plan([m - b for m, b in zip(method, baseline)], effect / 2, RULE_ALPHA, MOST_SEEDS)
        plans[claim.id] = (effect, plan.sd, plan.limit, None if plan.needed is None else max(plan.needed, LEAST_SEEDS))
    underpowered = tuple(i for i, plan in plans.items() if plan[3] is None)
    n = MOST_SEEDS if underpowered else max(plan[3] for plan in plans.values())
    return SeedRule(plans, tuple(range(FIRST_SEED, FIRST_SEED + n)), underpowered)


def untestable(claim: TrainedClaim, softmax: Sequence[dict]) -> str | None:
    """Why ``claim`` cannot be tested at this scale, by the registered measurement on the trained
    softmax ``softmax`` records (one per decision seed); None when it can."""
    mean = lambda field: statistics.fmean(r[field] for r in softmax)  # noqa: E731
    if claim.id in ("S3a", "S3b") and (rate := mean("sink_rate_model")) < NO_SINK_RATE:
        return f"no sink forms in this LM (softmax sink rate {rate:.3f} < {NO_SINK_RATE})"
    if claim.id == "S4a" and (share := mean("first_token_share_model")) < 2 * UNIFORM_SHARE:
        return f"no sink to lower (softmax first-token share {share:.3f} < 2 x uniform = {2 * UNIFORM_SHARE:.3f})"
    if claim.id == "S4b" and (ratio := mean("massive_ratio_max")) < NO_MASSIVE_RATIO:
        return f"no massive activation (softmax largest ratio {ratio:.1f} < {NO_MASSIVE_RATIO:g})"
    return None


@dataclass(frozen=True)
class TrainedEvidence:
    """What the decision cells of ``sinks-lm`` show for one claim: the seeds and paired values, or
    why there are none yet (``pending``), why the claim is not tested (``failed``: the gate or the
    scale), the gate's measurements, and the paper's effect carried (None: a direction only)."""

    claim: TrainedClaim
    seeds: tuple[int, ...] = ()
    method: tuple[float, ...] = ()
    baseline: tuple[float, ...] = ()
    pending: str | None = None
    failed: str | None = None
    gate: str = ""
    effect: float | None = None


#: docs/registrations/sinks.md, Deviations (29 November 2026): sinks-lm is added only if the pilot
#: shows a claim testable; what the pilot shows untestable reads so from the pilot
FROM_PILOT = (
    f"the pilot {PILOT.name}, seeds {PILOT.seeds[0]}-{PILOT.seeds[-1]}; sinks-lm not run (a registered deviation)"
)


def trained_evidence(cells: Sequence[CellResult], preset: StudyConfig | None) -> list[TrainedEvidence]:
    """S3a-S4c from the decision study ``preset``'s cells. None (``sinks-lm`` not added): from the
    pilot's, by the registered deviation: a claim the pilot's softmax shows untestable at this scale
    (or whose gate fails) reads so, S4c is described on the pilot (deciding nothing), the others wait
    for ``sinks-lm``."""
    study = preset or PILOT
    groups = sink_groups(cells, study.name)
    arms = {v.label for v in study.variants}
    done = [s for s in study.seeds if set(groups.get(s, {})) >= arms]
    if len(done) < len(study.seeds):
        why = f"{study.name}: {len(done)} of {len(study.seeds)} seeds have every arm measured"
        return [TrainedEvidence(c, pending=why) for c in CLAIMS]
    decided = {s: groups[s] for s in study.seeds}
    softmax = [arms_[SOFTMAX]["trained"] for arms_ in decided.values()]
    by_seed: dict[int, dict] = {}
    for cell in cells:
        if cell.study == study.name and cell.seed in decided:
            by_seed.setdefault(cell.seed, {})[(cell.norm, cell.label, cell.depth)] = cell
    judged = GATE.judge(list(by_seed.values()), list(cells))
    evidence = []
    for claim in CLAIMS:
        seeds, method, baseline = claim.values(decided)
        carried = {"S4a": effect_to_detect(claim, softmax), "S4b": GATED_LOG_MASSIVE}.get(claim.id)
        failed = judged.failure and f"gate L {judged.failure}" or untestable(claim, softmax)
        found = TrainedEvidence(
            claim, tuple(seeds), tuple(method), tuple(baseline), None, failed, judged.measured, carried
        )
        if preset is None and failed:
            found = replace(found, failed=f"{failed}; {FROM_PILOT}")
        elif preset is None and claim.direction is not None:
            found = replace(found, pending="the pilot shows it testable: sinks-lm takes seeds by the seed rule")
        evidence.append(found)
    return evidence
