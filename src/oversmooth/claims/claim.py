"""A row of the claims table and of ``claims.json`` (docs/studies.md): ``Claim``, and the kinds of
"not tested" it may give."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from oversmooth.claims.regime import Regime
from oversmooth.utils.json_files import finite

#: the kinds of "not tested" (``Claim.why_not_tested``), in the order the report lists them
NOT_TESTED_WHY = ("a gate failed", "a finished seed gave no value", "runs not finished", "see its row")
RULE = "deterministic rule"  # the static claims' test (no p-value)


@dataclass(frozen=True)
class Claim:
    """One row of the claims table and of ``claims.json`` (its fields: docs/studies.md)."""

    id: str
    family: str | None  # primary | secondary; None for the static claims
    statement: str  # as the paper states it
    paper: str  # the paper's number
    measure: str  # what the numbers are, with their unit
    ours: str  # what we measured, in words: both arms, the effect, its interval, n
    effect: float | None
    ci: tuple[float, float] | None
    ci_level: float | None
    n: int
    p: float | None
    p_holm: float | None
    mde: float | None
    margin: float | None
    gate: str  # what had to hold first
    gate_passed: bool | None
    verdict: str  # held | contradicted | inconclusive | not tested
    reason: str  # why: the test, its Holm-matched interval, the smallest detectable effect, or what failed
    deviations: tuple[str, ...]
    command: str  # how to reproduce it
    paper_effect: float | None = None  # the paper's effect in our measure, where it states one
    mde_planned: float | None = None  # the smallest detectable effect registered before the runs
    ci95: tuple[float, float] | None = None  # the plain, unadjusted 95 % interval of the effect
    why_not_tested: str | None = None  # a not-tested claim's kind of reason, one of NOT_TESTED_WHY
    test: str = "paired t"  # what decided it: "paired t", "TOST" (equivalence) or "deterministic rule"
    reading: str = ""  # the third protocol's verdict on these same data (fourth-step.md)
    reading_reason: str = ""  # why it reads them so, where it says more than the registered verdict
    paper_transferred: float | None = None  # the paper's effect carried to our measure (fourth-step.md)
    direction: str | None = None  # the claimed sign of the effect, "higher" or "lower" (None: static claims)
    regime: Regime | None = None  # where a trained claim was tested (fourth-step.md; None: no trained model)

    def to_json(self) -> dict:
        """The JSON object of ``claims.json``: NaN and infinities become null."""
        return finite(asdict(self))
