"""The gates of the second claims protocol (docs/registrations/second-protocol.md): did the baseline
train, on validation only?

A gate judges the baseline arm's cells of the seeds in a test (``groups``: one mapping of arm ->
``CellResult`` per seed) and, where it needs them, the report's other cells. ``judge`` returns a
``Judgement``: why it fails (a sentence naming the seed and the margin), or what it still waits
for (a long run that has not finished), or what it measured when it passed. Every number is a
validation number: the test split decides nothing.

- ``PlateauGate`` (a) every seed plateaued: its validation loss reached its minimum at least 2
  epochs before the end, or its final validation score is within a tolerance of the best of its
  last 5 evaluations; (b) one seed trained for 1.5x the epochs (``long``, a preset of its own)
  gains less than a tolerance; (c) the mean validation score meets a cited floor, or beats a
  reference model run in the same study on the same data (``REFERENCES``). A passed part whose
  margin to its bar is under a quarter of (a)'s tolerance (``NARROW``) says "narrowly".
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from oversmooth.claims.measures import Key, val_score
from oversmooth.study.config import StudyConfig
from oversmooth.study.results import CellResult
from oversmooth.train.run_spec import training_key

#: (a): the minimum at least this many epochs before the end ...
MIN_EPOCHS_BEFORE_END = 2
#: ... or the final score this close to the best of the last this-many evaluations
LAST_EVALUATIONS = 5
#: a passed part of a gate closer to its bar than this share of (a)'s tolerance passed "narrowly"
NARROW = 0.25
#: (c) with no cited floor: the reference model each baseline cell's analysis records
#: (``analysis.json["reference"]``, ``oversmooth.claims.reference``), by model kind: its field, its name
REFERENCES = {
    "lm": ("bigram_val_nll", "the bigram reference"),
    "vit": ("logistic_val_accuracy", "the logistic-regression reference"),
}


def reference_score(cell: CellResult) -> float | None:
    """The validation score of the cell's reference model in ``val_score``'s units, or None while
    its analysis has not measured one."""
    field, _ = REFERENCES[cell.model]
    value = ((cell.analysis or {}).get("reference") or {}).get(field)
    return None if value is None else 100 * value if cell.model == "vit" else value


def _gain(cell: CellResult, before: float, after: float) -> float:
    """How much better ``after`` is than ``before``: pp for accuracy, relative NLL drop for an LM."""
    return after - before if cell.model == "vit" else (before - after) / before


def plateau_shortfall(cell: CellResult) -> float | None:
    """Gate (a)'s number for one cell: None when its validation loss reached its minimum at least
    ``MIN_EPOCHS_BEFORE_END`` epochs before the end, else how far its final validation score lies
    from the best of its last ``LAST_EVALUATIONS`` (``_gain``'s units)."""
    losses = [e["val"]["loss"] for e in cell.epochs]
    if len(losses) - 1 - losses.index(min(losses)) >= MIN_EPOCHS_BEFORE_END:
        return None
    scores = [val_score(cell, i) for i in range(len(cell.epochs))][-LAST_EVALUATIONS:]
    return _gain(cell, scores[-1], _best(cell, scores))


def _best(cell: CellResult, scores: list[float]) -> float:
    """The best of ``val_score``s of ``cell``'s model: the highest accuracy, or the lowest NLL."""
    return max(scores) if cell.model == "vit" else min(scores)


def arm_name(arm: Key) -> str:
    norm, label, depth = arm
    return f"{label} ({norm}-norm, depth {depth})"


def _amount(cell: CellResult, gain: float) -> str:
    return f"{gain:.2f} pp" if cell.model == "vit" else f"{100 * gain:.2f} % of NLL"


def not_plateaued(cell: CellResult, tolerance: float) -> str | None:
    """Gate (a) on one cell: None, or why it had not plateaued."""
    shortfall = plateau_shortfall(cell)
    if shortfall is None or shortfall <= tolerance:
        return None
    evaluations = min(LAST_EVALUATIONS, len(cell.epochs))
    return f"seed {cell.seed} ended {_amount(cell, shortfall)} short of the best of its last {evaluations} evaluations"


@dataclass(frozen=True)
class Judgement:
    """A gate's word on a baseline: why it failed (None: it did not), what it still waits for
    before it can be judged (None: nothing), and, when it passed, what each part measured."""

    failure: str | None = None
    waiting: str | None = None
    measured: str = ""


@dataclass(frozen=True)
class PlateauGate:
    """The gates of docs/registrations/second-protocol.md on the baseline ``arm``: (a) each seed
    plateaued within ``tolerance`` (pp, or a share of the NLL); (b) ``long``'s seed gains less than
    ``long_tolerance`` over the same seed of this setting; (c) the mean validation score reaches
    ``floor`` (accuracy %, at least; LM NLL, at most; ``floor`` None: better than the reference
    model each baseline cell's analysis records, ``REFERENCES``), cited by ``source``.
    ``judge_long`` False: part (b) is not asked (a fresh test registered on a setting's gate parts
    (a) and (c), its long run already judged)."""

    arm: Key
    floor: float | None
    source: str
    long: StudyConfig
    tolerance: float
    long_tolerance: float
    judge_long: bool = True

    @property
    def arms(self) -> frozenset[Key]:
        return frozenset({self.arm})

    def describe(self) -> str:
        lm = self.long.model == "lm"
        if self.floor is None:
            floor = (
                "mean val NLL below the interpolated bigram reference's"
                if lm
                else "mean val accuracy above the logistic-regression reference's"
            )
        else:
            floor = f"mean val accuracy >= {self.floor:g} %"
        floor += f" ({self.source})"
        gain = (
            f"< {100 * self.long_tolerance:g} % lower val NLL" if lm else f"< {self.long_tolerance:g} pp val accuracy"
        )
        long = f"(b) {self.long.name} (1.5x the epochs) gains {gain}; " if self.judge_long else ""
        return f"{arm_name(self.arm)}, on validation: (a) plateaued on every seed; {long}(c) {floor}"

    def equal_budget(self, groups: Sequence[Mapping[Key, CellResult]], arms: frozenset[Key]) -> str:
        """As docs/registrations/second-protocol.md registers: the method ``arms`` report (a) too;
        one that has not plateaued on a seed is compared there at equal budget, and this says so;
        that every other arm plateaued, when they all did ("" with no other arm)."""
        short: dict[Key, list[str]] = {}
        methods = {arm for group in groups for arm in group if arm in arms and arm != self.arm}
        for group in groups:
            for arm, cell in group.items():
                if arm in methods and cell.epochs and (why := not_plateaued(cell, self.tolerance)):
                    short.setdefault(arm, []).append(why)
        if methods and not short:
            return f"{', '.join(map(arm_name, sorted(methods)))} also plateaued by (a) on every seed"
        return "; ".join(
            f"{arm_name(arm)} not plateaued (a), so compared at equal budget: {', '.join(whys)}"
            for arm, whys in sorted(short.items())
        )

    def judge(self, groups: Sequence[Mapping[Key, CellResult]], cells: Sequence[CellResult]) -> Judgement:
        """The gate on the baseline among ``groups`` (one arm -> cell mapping per seed): the first
        of (a), (c), (b) to fail, else what (b) still waits for, else the numbers each part measured."""
        baseline = [group[self.arm] for group in groups if self.arm in group]
        if not baseline or any(c.status != "completed" or len(c.epochs) < 2 for c in baseline):
            return Judgement(f"undertrained: {self.arm[1]} did not complete on every seed")
        for cell in baseline:
            if (why := not_plateaued(cell, self.tolerance)) is not None:
                return Judgement(f"not plateaued (a): {why}")
        floor_failure, floor = self._floor(baseline)
        if floor_failure:
            return Judgement(floor_failure)
        long = self._long(baseline, cells) if self.judge_long else Judgement(measured="not asked")
        if long.failure or long.waiting:
            return long
        shortfalls = [x for c in baseline if (x := plateau_shortfall(c)) is not None]
        early = len(baseline) - len(shortfalls)
        plateau = f"(a) {early} of {len(baseline)} seeds' val loss bottomed out >= 2 epochs before the end"
        if shortfalls:
            others, worst = "every seed" if early == 0 else "the others", _amount(baseline[0], max(shortfalls))
            plateau += (
                f"; {others} passed on ending at most {worst} short of the best of their last {LAST_EVALUATIONS} "
                f"evaluations (tolerance {_amount(baseline[0], self.tolerance)})"
            )
        return Judgement(measured=f"{plateau}; (b) {long.measured}; (c) {floor}")

    def _narrowly(self, margin: float) -> str:
        """ ", narrowly" when a passed part's ``margin`` to its bar is under ``NARROW`` of (a)'s tolerance."""
        return ", narrowly" if margin < NARROW * self.tolerance else ""

    def _floor(self, baseline: Sequence[CellResult]) -> tuple[str | None, str]:
        """Gate (c): ``(failure, measured)``."""
        mean = statistics.fmean(val_score(c) for c in baseline)
        over = f" (mean of {len(baseline)} seeds)"
        lm = baseline[0].model == "lm"
        found = f"val NLL {mean:.4f}{over}" if lm else f"val accuracy {mean:.2f} %{over}"
        if self.floor is not None:
            if mean < self.floor:
                return f"undertrained (c): {found} < {self.floor:g} % ({self.source})", ""
            margin = mean - self.floor
            return None, f"{found} >= {self.floor:g} % (by {margin:.2f} pp{self._narrowly(margin)})"
        references = [score for c in baseline if (score := reference_score(c)) is not None]
        name = REFERENCES[baseline[0].model][1]
        if not references:
            return f"undertrained (c): {name} has not been measured yet (the cells' analysis.json)", ""
        reference = statistics.fmean(references)
        theirs = f"{name}'s {reference:.4f}" if lm else f"{name}'s {reference:.2f} %"
        margin = _gain(baseline[0], reference, mean)
        if margin <= 0:
            return f"undertrained (c): {found} {'>=' if lm else '<='} {theirs}", ""
        by = f"by {_amount(baseline[0], margin)}{self._narrowly(margin)}"
        return None, f"{found} {'<' if lm else '>'} {theirs} ({by})"

    def _long(self, baseline: Sequence[CellResult], cells: Sequence[CellResult]) -> Judgement:
        """Gate (b), once per setting: the long run against the same seed of the baseline's setting
        (among all ``cells``: the seed need not be one the claim tests); it waits while either has
        not finished, and fails if either diverged."""
        long_key = training_key(self.long.cells()[0].spec())
        long = [
            c
            for c in cells
            if c.training() == long_key and (c.norm, c.label, c.depth) == self.arm and c.results is not None
        ]
        if not long:
            return Judgement(waiting=f"gate (b) not judged yet: {self.long.name} (1.5x the epochs) has not finished")
        setting = baseline[0].training()
        same = [
            c
            for c in cells
            if c.training() == setting
            and (c.norm, c.label, c.depth) == self.arm
            and c.seed == long[0].seed
            and c.results is not None
        ]
        if not same:
            return Judgement(waiting=f"gate (b) not judged yet: seed {long[0].seed} of the setting has not finished")
        for cell, what in ((long[0], f"{self.long.name} (1.5x the epochs)"), (same[0], f"seed {same[0].seed}")):
            if cell.status != "completed":
                return Judgement(f"not plateaued (b): {what} {cell.status}")
        gain = _gain(same[0], val_score(same[0]), val_score(long[0]))
        found = f"seed {same[0].seed} trained 1.5x as long gains {_amount(same[0], gain)}"
        if gain >= self.long_tolerance:
            return Judgement(f"not plateaued (b): {found} on validation")
        scores = [val_score(long[0], i) for i in range(len(long[0].epochs))]
        best = _gain(same[0], val_score(same[0]), _best(same[0], scores))
        margin = self.long_tolerance - gain
        return Judgement(
            measured=f"{found} at its end, {_amount(same[0], best)} at its best epoch "
            f"(bar {_amount(same[0], self.long_tolerance)}{self._narrowly(margin)})"
        )
