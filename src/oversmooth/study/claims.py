"""The claims of the source papers: a registry ``CLAIMS`` of stable id -> ``ClaimSpec``, each
decided by exactly one function, ``ClaimSpec.decide(Inputs) -> Claim`` (one row of the table).

``decide_claims(cells, probes)`` decides every registered claim. The rules, one per kind of claim:

- trained claims (2a, 2b, 3, 4a, 4b, 5a, 5b, 5c, 6, 7; ``decide_paired``) follow
  ``oversmooth.study.protocol``: the cells trained as the protocol's preset trains them are
  grouped by seed (``CellResult.training()`` and seed equal), the protocol's measure gives one
  (method, baseline) pair per seed, the gates are checked on the baseline (claim 4's pilot gate on
  the pilots' cells), and every claim whose
  gates passed and whose planned seeds have all finished is decided together with the others
  (``stats.decide_family``: paired t-test, Holm across the report's trained claims, computed
  once in ``Inputs.paired``). A claim with unfinished seeds or a failed gate is ``not tested``,
  saying why.
- NeuTRENO without training, NeuTRENO App. G.3 (1a) and G.9 (1b) (``decide_no_training``): the
  one rule ``oversmooth.hf.quality.similarity_verdict``, which ``oversmooth analyze`` uses too.
- 5a-MiniLM (``decide_minilm_depth``), the pretrained half of "similarity need not grow with
  depth" (Dovonon et al. 2025), an existence statement: one model where it falls shows it.
- 2c (``decide_not_run``): no study in this protocol. (4a / 4b are trained claims whose gate is a
  pilot finding post-norm failing, ``oversmooth.study.pilots``; their rows say what the pilots found.)

The probe claims keep their own rules and stay out of the Holm family. Cells are found by the
setting and arm a claim names (a ``StudyConfig`` preset, ``(norm, label)``), never by a study name.
"""

from __future__ import annotations

import shlex
import statistics
from dataclasses import dataclass, field
from typing import Callable, Mapping

from oversmooth.hf.quality import similarity_verdict
from oversmooth.study.config import StudyConfig
from oversmooth.study.measures import Key
from oversmooth.study.pilots import pilot_finding
from oversmooth.study.probes import CurvePair, Probes
from oversmooth.study.protocol import PROTOCOLS, Protocol
from oversmooth.study.results import CellResult
from oversmooth.study.stats import NOT_TESTED, Decision, PairedClaim, decide_family

#: `oversmooth study` flags that keep part of a study's grid (dropped from a claim's command)
_NARROWING = ("--methods", "--seeds")


@dataclass(frozen=True)
class Claim:
    """One row of the claims table: claim ``id`` as decided on this report's evidence."""

    id: str
    statement: str   # as the paper states it
    paper: str       # the paper's number
    ours: str        # what we measured: effect, interval, n
    gate: str        # what had to hold first, and whether it did
    verdict: str     # held | contradicted | inconclusive | not tested (static claims: their rule's words)
    reason: str      # why: the test, Holm's level, the smallest detectable effect, or what failed
    command: str     # how to reproduce it


Groups = dict[tuple, dict[int, dict[Key, CellResult]]]  # training -> seed -> (norm, label) -> cell


@dataclass
class Inputs:
    """What the claims are decided on: the cells, the probes (None: not run), the command of each
    study preset by name (printed as how to reproduce), and the trained claims' evidence and
    decisions by claim id, decided together as one Holm family."""

    cells: list[CellResult]
    probes: Probes | None = None
    commands: Mapping[str, str] = field(default_factory=dict)
    paired: dict[str, tuple[Evidence, Decision]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        groups = group_cells(self.cells)
        found = [gather(protocol, groups, self.cells) for protocol in PROTOCOLS]
        decisions = decide_family([PairedClaim(tuple(m for _, m, _ in e.values), tuple(b for _, _, b in e.values),
                                               e.protocol.direction, e.not_tested) for e in found])
        self.paired = {e.protocol.id: (e, d) for e, d in zip(found, decisions)}

    def command(self, preset_name: str) -> str:
        """How to reproduce a claim of ``preset_name``: the command that ran it, less the flags that
        keep only some of its methods or seeds (they cannot make the claim's pairs)."""
        recorded = self.commands.get(preset_name)
        if recorded is None:
            return f"oversmooth study {preset_name} --out runs/studies/{preset_name} --results results"
        words = shlex.split(recorded)
        drop = {i for i, word in enumerate(words) if word.split("=")[0] in _NARROWING}
        drop |= {i + 1 for i in drop if words[i] in _NARROWING}  # the flag's value, as a word of its own
        return shlex.join(word for i, word in enumerate(words) if i not in drop)


Decide = Callable[[Inputs], "Claim | None"]


@dataclass(frozen=True)
class ClaimSpec:
    """A registered claim: its stable ``id`` and the one function that decides it (None from
    ``decide``: this report has no evidence of its kind, e.g. the probes were not run)."""

    id: str
    decide: Decide


def group_cells(cells: list[CellResult]) -> Groups:
    """Cells by training and seed: within one group only the method (and norm) differ."""
    groups: Groups = {}
    for cell in cells:
        groups.setdefault(cell.training(), {}).setdefault(cell.seed, {})[(cell.norm, cell.label)] = cell
    return groups


@dataclass(frozen=True)
class Evidence:
    """A protocol's pairs on our cells: ``values[i] = (seed, method, baseline)``; the first gate
    that fails on the finished seeds (None: all pass), and how many planned seeds are missing."""

    protocol: Protocol
    values: tuple[tuple[int, float, float], ...]
    gate_failure: str | None
    note: str = ""  # the protocol's note on these seeds

    @property
    def not_tested(self) -> str | None:
        """Why the claim is not tested yet (unfinished seeds, a failed gate), or None."""
        missing = len(self.protocol.seeds) - len(self.values)
        parts = ([f"{len(self.values)} of {len(self.protocol.seeds)} planned seed pairs finished"] if missing else []) \
            + ([self.gate_failure] if self.gate_failure else [])
        return "; ".join(parts) or None


def gather(protocol: Protocol, groups: Groups, cells: list[CellResult]) -> Evidence:
    """The protocol's pairs on its preset's setting, and the first gate (or completeness) that fails
    (a gate sees the finished seeds' cells, or before any pair the finished cells of the planned
    seeds, and all ``cells`` of the report)."""
    seeds = groups.get(protocol.training, {})
    values, finished = [], []
    for seed in protocol.seeds:
        group = {arm: cell for arm, cell in seeds.get(seed, {}).items() if arm in protocol.arms}
        if protocol.needs <= group.keys():
            pair = protocol.measure(group, (protocol.method, protocol.baseline))
            if pair is not None:
                values.append((seed, *pair))
                finished.append(group)  # the gates judge the seeds that are in the test
    # no pair yet: the gates judge the planned seeds' finished cells (completed or diverged), so a failed baseline shows
    judged = finished or [group for seed in protocol.seeds
                          if (group := {arm: c for arm, c in seeds.get(seed, {}).items() if c.results is not None})]
    failed = next((why for gate in protocol.gates if (why := gate.failure(judged, cells)) is not None), None) \
        if judged else None
    note = protocol.note(finished, protocol.method) if protocol.note else ""
    return Evidence(protocol, tuple(values), failed, note)


def baseline_gate(preset: StudyConfig, cells: list[CellResult]) -> str | None:
    """Why ``preset``'s baseline, among ``cells`` (e.g. ``read_study`` of its archive), fails a gate
    of the claims trained on that preset, as the report judges it (``gather``); None when every gate
    passes. The claims runner (scripts/run_claims.sh) trains the baseline's cells first and stops
    on a failure, so an undertrained recipe costs the baseline's cells, not the study."""
    gated = [protocol for protocol in PROTOCOLS if protocol.preset is preset and protocol.gates]
    if not gated:
        return None
    groups = group_cells(cells)
    failure = next((e.gate_failure for protocol in gated if (e := gather(protocol, groups, cells)).gate_failure), None)
    if failure is None and not any(c.results is not None and c.training() == gated[0].training for c in cells):
        return f"undertrained: no finished cell of {preset.name}"
    return failure


def _ours(evidence: Evidence, decision: Decision) -> str:
    if not evidence.values:
        return "no finished pair yet"
    test = decision.test
    _, method, baseline = zip(*evidence.values)
    text = (f"{evidence.protocol.measure_text}: {statistics.fmean(method):.4g} vs {statistics.fmean(baseline):.4g}; "
            f"difference {test.mean:+.3g}")
    if test.n >= 2:
        text += f", 95 % CI [{test.ci_low:+.3g}, {test.ci_high:+.3g}]"
    return text + f", n = {test.n}"


def decide_paired(claim_id: str, more: Callable[[Inputs], str | None] | None = None) -> Decide:
    """The rule of trained claim ``claim_id``: its protocol's paired t-test within the Holm family;
    ``more`` adds other evidence on the same question, not part of the test (the probes, the pilots)."""
    def decide(inputs: Inputs) -> Claim:
        evidence, decision = inputs.paired[claim_id]
        protocol = evidence.protocol
        gates = "; ".join(gate.describe() for gate in protocol.gates)
        if gates:
            state = f"failed: {evidence.gate_failure}" if evidence.gate_failure else \
                "no finished seed yet" if not evidence.values else "passed"
            gates += f" ({state})"
        ours = _ours(evidence, decision) + (f"; {evidence.note}" if evidence.note else "")
        if more is not None and (text := more(inputs)):
            ours += f". {text}"
        return Claim(protocol.id, protocol.statement, protocol.paper, ours, gates or "none", decision.verdict,
                     decision.reason, inputs.command(protocol.preset.name))
    return decide


PROBES_COMMAND = "oversmooth report ... (the probes run in about a minute)"


def decide_no_training(claim_id: str, paper: str, gate: str, curves: Callable[[Probes], CurvePair]) -> Decide:
    """The rule of claims 1a / 1b (NeuTRENO App. G.3 / G.9): ``similarity_verdict`` on ``curves``."""
    def decide(inputs: Inputs) -> Claim | None:
        if inputs.probes is None:
            return None
        pair = curves(inputs.probes)
        base, neut = pair.mean("baseline"), pair.mean("neutreno")
        verdict, sentence = similarity_verdict(base, neut, pair.quality)
        return Claim(claim_id, f"NeuTRENO (lam {pair.lam}) lowers per-layer token cos_sim without training "
                     f"({pair.source})", paper, f"last layer {base[-1]:.3f} -> {neut[-1]:.3f}", gate, verdict,
                     sentence + " (oversmooth.hf.quality.similarity_verdict; no statistics: deterministic)",
                     PROBES_COMMAND)
    return decide


def decide_minilm_depth(inputs: Inputs) -> Claim | None:
    """5a-MiniLM: held if MiniLM's stream cos_sim falls between two blocks anywhere (layer i: after block i)."""
    if inputs.probes is None:
        return None
    probes = inputs.probes
    cos = probes.pretrained.mean("baseline")
    falls = [layer for layer in range(2, len(cos)) if cos[layer] < cos[layer - 1]]
    raised = sum(block["attention"]["cos_sim_change"] > 0 for block in probes.pretrained_blocks)
    where = "; ".join(f"layer {l}: {cos[l - 1]:.3f} -> {cos[l]:.3f} ({probes.block_text(l)})" for l in falls)
    return Claim(
        "5a-MiniLM", "token similarity need not grow with depth, even in a pretrained model",
        "Dovonon et al. 2025, Fig. 1", f"MiniLM cos_sim falls at {where or 'no layer'}; the attention sublayer "
        f"raises cos_sim in {raised} of {len(probes.pretrained_blocks)} blocks", "none",
        "held" if falls else "did not hold",
        "existence statement: one pretrained model where cos_sim falls between blocks shows it (no statistics); "
        "the change per sublayer says which part of the block lowers it", PROBES_COMMAND)


def decide_not_run(claim_id: str, statement: str, paper: str, why: str) -> Decide:
    """A claim with no study in this protocol: always not tested, saying why."""
    return lambda inputs: Claim(claim_id, statement, paper, "not run", "-", NOT_TESTED, f"not tested: {why}", "-")


_PAIRED = {protocol.id: ClaimSpec(protocol.id, decide_paired(protocol.id)) for protocol in PROTOCOLS}
_PAIRED["5b"] = ClaimSpec("5b", decide_paired(  # the same question asked of the pretrained MiniLM
    "5b", lambda inputs: None if inputs.probes is None else
    f"MiniLM (pretrained, one model): {inputs.probes.pretrained_agreement()}"))
for _claim in ("4a", "4b"):  # the pilots that found (or did not find) the failure
    _PAIRED[_claim] = ClaimSpec(_claim, decide_paired(_claim, lambda inputs: f"Pilots: {pilot_finding(inputs.cells).text()}"))

#: Every claim by its stable id, in the report's order.
CLAIMS: dict[str, ClaimSpec] = {spec.id: spec for spec in (
    ClaimSpec("1a", decide_no_training(
        "1a", "random-init DeiT-tiny, Fig. 6: NeuTRENO well below softmax from layer 2 on",
        "none (untrained: no job to keep)", lambda probes: probes.random_init)),
    ClaimSpec("1b", decide_no_training(
        "1b", "pretrained BERT-base, Fig. 7: lower in every layer, no fine-tuning",
        "the patched model's output within the quality budget (oversmooth.hf.quality)", lambda probes: probes.pretrained)),
    _PAIRED["2a"], _PAIRED["2b"],
    ClaimSpec("2c", decide_not_run(
        "2c", "NeuTRENO's lambda has a sweet spot: too small or too large hurts",
        "ADE20K mIoU 35.72 (softmax); 34.94 at the smallest lambda, 37.54 best, 26.25 at the largest "
        "(Nguyen et al. 2023, Table 13)", "this protocol has no lambda sweep (about 10 more CPU-hours at this size)")),
    _PAIRED["3"],
    _PAIRED["4a"], _PAIRED["4b"],
    _PAIRED["5a"],
    ClaimSpec("5a-MiniLM", decide_minilm_depth),
    _PAIRED["5b"], _PAIRED["5c"], _PAIRED["6"], _PAIRED["7"],
)}


def decide_claims(cells: list[CellResult], probes: Probes | None = None,
                  commands: Mapping[str, str] | None = None, ids: tuple[str, ...] | None = None) -> list[Claim]:
    """Every registered claim (or those in ``ids``) decided on ``cells`` and ``probes``, in
    registry order; claims without evidence of their kind (probes not run) are left out."""
    inputs = Inputs(cells, probes, commands or {})
    decided = (CLAIMS[claim_id].decide(inputs) for claim_id in (ids or CLAIMS))
    return [claim for claim in decided if claim is not None]
