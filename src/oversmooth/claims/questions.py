"""The tested claims (docs/claims.md): per claim id a ``Question``, how it is tested (the claimed
sign of its effect, a margin for an equivalence claim, its gate, what its pairs are paired by) and
where its evidence comes from (``claims.gathering``). The trained claims' questions are their
protocols (``claims.protocol``); 8, 2c, 3 and 5a's are written here. How each claim is stated is its
row of ``claims.statements``; how a family of questions is decided, ``claims.holm``."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from oversmooth.claims import adaptations
from oversmooth.claims.commands import BENCH_COMMAND, PROBES_COMMAND
from oversmooth.claims.gathering import (
    Evidence,
    Inputs,
    adaptation_evidence,
    adaptation_starts,
    cost_evidence,
    existence_evidence,
    gather,
)
from oversmooth.claims.protocol import PROTOCOLS, VIT_GATE, Protocol, family_of

COST_MARGIN = math.log(1.10)  # claim 3: "about what softmax costs", within 1.10x either way


@dataclass(frozen=True)
class Question:
    """A tested claim: how it is tested, and where its evidence comes from."""

    id: str
    direction: str  # the claimed sign of method - baseline: "higher" | "lower"
    gate: str  # what had to hold first, in words
    evidence: Callable[[Inputs], Evidence]
    command: Callable[[Inputs], str]  # how to reproduce the evidence
    margin: float | None = None  # an equivalence claim (TOST): |difference| < margin
    log_ratio: bool = False  # the measure is the log of a ratio: "ours" gives the ratio too
    units: str = "seeds"  # what the pairs are paired by
    mde_planned: float | None = None  # the smallest detectable effect docs/studies.md registered (pilot's SD)
    existence: bool = False  # an existence claim: held or not shown here (fourth-step.md)
    reread: Callable[[Inputs], Evidence] | None = None  # evidence by a measure chosen after the data
    reread_reference: str = ""  # what that measure compares against, in words
    softmax: Protocol | None = None  # whose softmax arm says where it was tested (``regime``; None: no trained model)

    @property
    def family(self) -> str:
        return family_of(self.id)


def _from_protocol(protocol: Protocol) -> Question:
    """A trained claim's question: ``gather`` on its protocol, reproduced by its study's command."""
    return Question(
        id=protocol.id,
        direction=protocol.direction,
        gate="; ".join(gate.describe() for gate in protocol.gates) or "none",
        evidence=lambda inputs: gather(protocol, inputs.cells),
        command=lambda inputs: inputs.command(protocol.preset.name),
        margin=protocol.margin,
        mde_planned=protocol.mde_planned,
        existence=protocol.existence,
        reread=None
        if protocol.reread is None
        else lambda inputs: gather(replace(protocol, measure=protocol.reread), inputs.cells),
        reread_reference=protocol.reread_reference,
        softmax=protocol,
    )


QUESTIONS: dict[str, Question] = {protocol.id: _from_protocol(protocol) for protocol in PROTOCOLS}
QUESTIONS["8"] = Question(
    id="8",
    direction="higher",
    gate=VIT_GATE.describe(),
    evidence=adaptation_evidence(adaptations.neutreno_vs_control),
    command=lambda inputs: adaptations.COMMAND,
    mde_planned=0.45,
    softmax=adaptation_starts(adaptations.neutreno_vs_control),
)
QUESTIONS["2c"] = Question(
    id="2c",
    direction="higher",
    gate=VIT_GATE.describe(),
    evidence=adaptation_evidence(adaptations.middle_vs_extremes, adaptations.extremes_note),
    command=lambda inputs: adaptations.COMMAND,
    mde_planned=0.66,
    softmax=adaptation_starts(adaptations.middle_vs_extremes),
)
QUESTIONS["3"] = Question(
    id="3",
    direction="higher",
    gate="none",
    evidence=cost_evidence,
    command=lambda inputs: BENCH_COMMAND,
    margin=COST_MARGIN,
    log_ratio=True,
    units="rounds",
)
QUESTIONS["5a"] = Question(
    id="5a",
    direction="lower",
    gate="none",
    evidence=existence_evidence,
    command=lambda inputs: PROBES_COMMAND,
    units="sequences",
    existence=True,
)
