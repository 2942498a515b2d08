"""The Holm families' decisions (docs/registrations/second-protocol.md): the questions of each
family (``protocol.FAMILIES``) decided together, once, on their evidence
(``verdicts.decide_family``: m is fixed, an unfinished claim enters with p = 1); a question with a
measure chosen after its data (``Question.reread``) decided again by that measure, the rest of its
family as registered."""

from __future__ import annotations

from dataclasses import dataclass

from oversmooth.claims.gathering import Evidence, Inputs
from oversmooth.claims.protocol import FAMILIES
from oversmooth.claims.questions import QUESTIONS
from oversmooth.claims.verdicts import Decision, PairedClaim, decide_family


@dataclass(frozen=True)
class Decided:
    """Each tested claim's evidence and decision (``registered``), and for a question with a
    measure chosen after its data, its evidence and decision by that measure (``reread``)."""

    registered: dict[str, tuple[Evidence, Decision]]
    reread: dict[str, tuple[Evidence, Decision]]


def decide_families(inputs: Inputs) -> Decided:
    """Every family's questions decided on ``inputs``, each family once."""
    registered: dict[str, tuple[Evidence, Decision]] = {}
    reread: dict[str, tuple[Evidence, Decision]] = {}
    for ids in FAMILIES.values():
        found = [QUESTIONS[claim_id].evidence(inputs) for claim_id in ids]
        registered.update(zip(ids, zip(found, _decide(ids, found))))
        for index, claim_id in enumerate(ids):
            again = QUESTIONS[claim_id].reread
            if again is not None:
                found_again = [*found[:index], again(inputs), *found[index + 1 :]]
                reread[claim_id] = found_again[index], _decide(ids, found_again)[index]
    return Decided(registered, reread)


def _decide(ids: tuple[str, ...], found: list[Evidence]) -> list[Decision]:
    """The decisions of one Holm family's questions ``ids`` on their evidence ``found``."""
    claims = [
        PairedClaim(
            tuple(m for _, m, _ in e.values),
            tuple(b for _, _, b in e.values),
            QUESTIONS[claim_id].direction,
            e.not_tested,
            QUESTIONS[claim_id].margin,
        )
        for claim_id, e in zip(ids, found)
    ]
    return decide_family(claims)
