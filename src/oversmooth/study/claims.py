"""The claims of the source papers, decided on our cells and probes: one ``Claim`` row each.

Trained claims follow ``oversmooth.study.protocol``: the cells of the protocol's setting are
grouped by seed (``CellResult.training()`` and seed equal), the protocol's measure gives one
(method, baseline) pair per seed, the gates are checked on the baseline, and every claim whose
gates passed and whose planned seeds have all finished is decided together with the others
(``stats.decide_family``: paired t-test, Holm across the report's claims). A claim with
unfinished seeds or a failed gate is ``not tested``, saying why.

Claims that need no training are measured in ``oversmooth.study.probes``: NeuTRENO without
training (``hf.quality.similarity_verdict``, Nguyen et al. App. G.3 / G.9) and the pretrained
half of "similarity need not grow with depth" (Dovonon et al., an existence statement: one model
where it falls shows it); they keep their own rules and stay out of the Holm family.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Mapping

from oversmooth.hf.quality import similarity_verdict
from oversmooth.study.measures import Key
from oversmooth.study.presets import PRESETS
from oversmooth.study.probes import Probes
from oversmooth.study.protocol import PROTOCOLS, Protocol
from oversmooth.study.results import CellResult, training_key
from oversmooth.study.stats import NOT_TESTED, Decision, PairedClaim, decide_family


@dataclass(frozen=True)
class Claim:
    """One row of the claims table."""

    number: str
    statement: str   # as the paper states it
    paper: str       # the paper's number
    ours: str        # what we measured: effect, interval, n
    gate: str        # what had to hold first, and whether it did
    verdict: str     # held | contradicted | inconclusive | not tested (static claims: their rule's words)
    reason: str      # why: the test, Holm's level, the smallest detectable effect, or what failed
    command: str     # how to reproduce it


Groups = dict[tuple, dict[int, dict[Key, CellResult]]]  # training -> seed -> (norm, label) -> cell


def group_cells(cells: list[CellResult]) -> Groups:
    """Cells by training and seed: within one group only the method (and norm) differ."""
    groups: Groups = {}
    for cell in cells:
        groups.setdefault(cell.training(), {}).setdefault(cell.seed, {})[(cell.norm, cell.label)] = cell
    return groups


def _preset_training(study: str) -> tuple:
    return training_key(PRESETS[study].cells()[0].spec())


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


def gather(protocol: Protocol, groups: Groups) -> Evidence:
    """The protocol's pairs on its preset's setting, and the first gate (or completeness) that fails."""
    seeds = groups.get(_preset_training(protocol.study), {})
    values = []
    for seed in protocol.seeds:
        group = seeds.get(seed, {})
        if protocol.method in group and protocol.baseline in group and group[protocol.method].study == protocol.study:
            pair = protocol.measure(group, (protocol.method, protocol.baseline))
            if pair is not None:
                values.append((seed, *pair))
    finished = [seeds[seed] for seed, _, _ in values]  # the gates judge the seeds that are in the test
    failed = next((why for gate in protocol.gates if (why := gate.failure(finished)) is not None), None) \
        if finished else None
    note = protocol.note(finished, protocol.method) if protocol.note else ""
    return Evidence(protocol, tuple(values), failed, note)


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


def check_trained(cells: list[CellResult], commands: Mapping[str, str] | None = None,
                  probes: Probes | None = None) -> list[Claim]:
    """Every protocol of ``PROTOCOLS`` on ``cells``, decided together (one Holm family)."""
    groups = group_cells(cells)
    found = [gather(protocol, groups) for protocol in PROTOCOLS]
    decisions = decide_family([PairedClaim(tuple(m for _, m, _ in e.values), tuple(b for _, _, b in e.values),
                                           e.protocol.direction, e.not_tested) for e in found])
    claims = []
    for evidence, decision in zip(found, decisions):
        protocol = evidence.protocol
        gates = "; ".join(gate.describe() for gate in protocol.gates)
        if gates:
            state = "no finished seed yet" if not evidence.values else \
                "passed" if evidence.gate_failure is None else f"failed: {evidence.gate_failure}"
            gates += f" ({state})"
        ours = _ours(evidence, decision) + (f"; {evidence.note}" if evidence.note else "")
        if protocol.number == "5b" and probes is not None:
            ours += f". MiniLM (pretrained, one model): {probes.pretrained_agreement()}"
        claims.append(Claim(
            protocol.number, protocol.statement, protocol.paper, ours,
            gates or "none", decision.verdict, decision.reason,
            (commands or {}).get(protocol.study, f"oversmooth study {protocol.study} --out runs/studies/"
                                                 f"{protocol.study} --results results")))
    return claims


def check_probes(probes: Probes) -> list[Claim]:
    """Claims 1a, 1b (NeuTRENO without training) and the pretrained half of 5a."""
    claims = []
    command = "oversmooth report ... (the probes run in about a minute)"
    for number, pair, paper, gate in (
            ("1a", probes.random_init, "random-init DeiT-tiny, Fig. 6: NeuTRENO well below softmax from layer 2 on",
             "none (untrained: no job to keep)"),
            ("1b", probes.pretrained, "pretrained BERT-base, Fig. 7: lower in every layer, no fine-tuning",
             "the patched model's output within the quality budget (oversmooth.hf.quality)")):
        base, neut = pair.mean("baseline"), pair.mean("neutreno")
        verdict, sentence = similarity_verdict(base, neut, pair.quality)
        claims.append(Claim(
            number, f"NeuTRENO (lam {pair.lam}) lowers per-layer token cos_sim without training ({pair.source})",
            paper, f"last layer {base[-1]:.3f} -> {neut[-1]:.3f}", gate, verdict, sentence + " (oversmooth.hf.quality.similarity_verdict; no statistics: deterministic)", command))
    cos = probes.pretrained.mean("baseline")
    falls = [layer for layer in range(2, len(cos)) if cos[layer] < cos[layer - 1]]
    raised = sum(block["attention"]["cos_sim_change"] > 0 for block in probes.pretrained_blocks)
    where = "; ".join(f"layer {l}: {cos[l - 1]:.3f} -> {cos[l]:.3f} ({probes.block_text(l)})" for l in falls)
    claims.append(Claim(
        "5a-MiniLM", "token similarity need not grow with depth, even in a pretrained model",
        "Dovonon et al. 2025, Fig. 1", f"MiniLM cos_sim falls at {where or 'no layer'}; the attention sublayer "
        f"raises cos_sim in {raised} of {len(probes.pretrained_blocks)} blocks", "none",
        "held" if falls else "did not hold",
        "existence statement: one pretrained model where cos_sim falls between blocks shows it (no statistics); "
        "the change per sublayer says which part of the block lowers it", command))
    return claims


PILOT = "postnorm-pilot"
PILOT_GAP = 5.0  # pp: post-norm "fails" at a depth where it trails pre-norm by this much, or diverges


def pilot_claims(cells: list[CellResult], command: str | None = None) -> list[Claim]:
    """Claims 4a / 4b (Yu & Zhang) stand on a depth where post-norm softmax fails at our width;
    the pilot looks for it (rule written before it ran: post-norm diverges or trails pre-norm by
    >= 5 pp validation accuracy at the end of the pilot). Without such a depth they are not tested."""
    statements = (("4a", "post-norm Transformers fail as depth grows (token similarity escalates)",
                   "Yu & Zhang 2023: post-norm fails to train deep; 'preliminary', small-scale experiments"),
                  ("4b", "de-escalation lets post-norm Transformers go deeper",
                   "Yu & Zhang 2023: de-escalated post-norm trains where plain post-norm fails"))
    runs = {(c.norm, c.depth): c for c in cells if c.study == PILOT and c.label == "softmax" and c.epochs}
    depths = sorted({depth for norm, depth in runs if (("pre", depth) in runs and ("post", depth) in runs)})
    found, failing = [], []
    for depth in depths:
        pre, post = runs[("pre", depth)], runs[("post", depth)]
        gap = 100 * (pre.epochs[-1]["val"]["accuracy"] - post.epochs[-1]["val"]["accuracy"])
        found.append(f"depth {depth}: pre-norm {100 * pre.epochs[-1]['val']['accuracy']:.1f} %, post-norm "
                     f"{100 * post.epochs[-1]['val']['accuracy']:.1f} %{' (diverged)' if post.status == 'diverged' else ''}")
        if post.status == "diverged" or gap >= PILOT_GAP:
            failing.append(depth)
    if not depths:
        why = f"the pilot has not run: oversmooth study {PILOT}"
    elif failing:
        why = (f"post-norm softmax fails at depth {failing[0]} in the pilot; the comparison at that depth "
               "(post-norm softmax and de-escalation vs pre-norm softmax, 2-3 seeds) is not in this protocol yet")
    else:
        why = (f"nothing to rescue: in the pilot post-norm softmax did not fail at depth {' or '.join(map(str, depths))} "
               f"(it diverged nowhere and trailed pre-norm by less than {PILOT_GAP:g} pp), so the failure this claim "
               "explains was not reproduced at width 64; it may need more depth, longer training or a larger lr")
    ours = "pilot, 1 seed, lr 1e-3, validation accuracy after 2 epochs of 10 000 images: " + "; ".join(found) if found \
        else "pilot not run"
    return [Claim(number, statement, paper, ours, f"post-norm softmax fails (diverges or >= {PILOT_GAP:g} pp "
                  "below pre-norm) at the depth tested", NOT_TESTED, f"not tested: {why}",
                  command or f"oversmooth study {PILOT} --out runs/studies/{PILOT} --results results")
            for number, statement, paper in statements]


def lambda_claim() -> Claim:
    """Claim 2c has no study in this protocol."""
    return Claim("2c", "NeuTRENO's lambda has a sweet spot: too small or too large hurts",
                 "ADE20K mIoU 35.72 (softmax); 34.94 at the smallest lambda, 37.54 best, 26.25 at the largest "
                 "(Nguyen et al. 2023, Table 13)", "not run", "-", NOT_TESTED,
                 "not tested: this protocol has no lambda sweep (about 10 more CPU-hours at this size)", "-")
