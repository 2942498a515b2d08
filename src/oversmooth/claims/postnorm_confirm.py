"""Claim 4's confirmation of the screen's first candidate (docs/registrations/fourth-step.md, section
5): preset ``postnorm-confirm``, the candidate's recipe on depth-w32's full schedule at depth 96,
seeds 0 and 1. **Confirmed** when post-norm fails (the screen's rule: diverged, below 20 %, or at
least 5 pp below pre-norm) on at least one seed and pre-norm trains on both (gate (a), plateaued
within 0.5 pp, and a final validation accuracy of at least 78.89 %).

>>> post, pre = ScreenArm("completed", 0.0976, 1.0), ScreenArm("completed", 0.85, 0.6)
>>> seeds = [ConfirmSeed(0, ScreenRow("w", 96, post, pre), None), ConfirmSeed(1, ScreenRow("w", 96, pre, pre), None)]
>>> confirmed(seeds), confirmed(seeds[1:])  # post-norm fails on seed 0; on seed 1 it trains as pre-norm does
(True, False)
>>> confirmed([*seeds, ConfirmSeed(2, ScreenRow("w", 96, post, pre), "seed 2 ended at 70.00 %")])
False
"""

from __future__ import annotations

from dataclasses import dataclass

from oversmooth.claims.gates import not_plateaued
from oversmooth.claims.postnorm_screen import DEEP, ScreenArm, ScreenRow, arm_of
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.study.results import CellResult
from oversmooth.utils.markdown import markdown_table

PRESET = CLAIMS_PRESETS["postnorm-confirm"]
CANDIDATE = "w64-lr0.004-wu0.05-clip1"
PRE_TRAINS_AT = 0.7889  # the final validation accuracy pre-norm must reach, as registered
PLATEAU_PP = 0.5  # gate (a)'s tolerance on a ViT


def pre_norm_short(cell: CellResult) -> str | None:
    """Why pre-norm softmax's finished ``cell`` did not train by the registered rule (it diverged,
    ended below ``PRE_TRAINS_AT``, or had not plateaued by gate (a) within ``PLATEAU_PP``); None
    when it trained."""
    if cell.status == "diverged":
        return f"seed {cell.seed} diverged"
    accuracy = cell.epochs[-1]["val"]["accuracy"] if cell.epochs else 0.0
    if accuracy < PRE_TRAINS_AT:
        return f"seed {cell.seed} ended at {100 * accuracy:.2f} % val accuracy, below {100 * PRE_TRAINS_AT:.2f} %"
    short = not_plateaued(cell, PLATEAU_PP)
    return None if short is None else f"not plateaued (a): {short}"


@dataclass(frozen=True)
class ConfirmSeed:
    """One seed: its post/pre row (the screen's rule on post-norm) and why pre-norm did not train
    (``pre_norm_short``; None: it trained, or has not finished)."""

    seed: int
    row: ScreenRow
    pre_short: str | None

    @property
    def pre_trains(self) -> bool | None:
        return None if self.row.pre is None else self.pre_short is None


def confirm_seeds(cells: list[CellResult]) -> list[ConfirmSeed]:
    """The registered seeds of ``postnorm-confirm``, each with whatever of its two cells has finished."""
    found = {(c.seed, c.norm): c for c in cells if c.study == PRESET.name}
    seeds = []
    for seed in PRESET.seeds:
        post, pre = found.get((seed, "post")), found.get((seed, "pre"))
        row = ScreenRow(CANDIDATE, DEEP, post and arm_of(post), pre and arm_of(pre))
        seeds.append(ConfirmSeed(seed, row, None if row.pre is None else pre_norm_short(pre)))
    return seeds


def confirmed(seeds: list[ConfirmSeed]) -> bool | None:
    """The registered rule; None while a cell it needs has not finished."""
    fails = [s.row.post_fails for s in seeds]
    trains = [s.pre_trains for s in seeds]
    if None in trains or (None in fails and not any(fails)):
        return None
    return any(fails) and all(trains)


def _accuracy(arm: ScreenArm | None) -> str:
    if arm is None:
        return "not yet"
    return "diverged" if arm.val_accuracy is None else f"{100 * arm.val_accuracy:.2f} %"


def confirm_section(cells: list[CellResult]) -> list[str]:
    """The confirmation's table and verdict, for the fourth step's section."""
    seeds = confirm_seeds(cells)
    verdict = confirmed(seeds)
    rows = [
        [
            s.seed,
            *(_accuracy(arm) for arm in (s.row.post, s.row.pre)),
            *(("–" if flag is None else ("yes" if flag else "no")) for flag in (s.row.post_fails, s.pre_trains)),
        ]
        for s in seeds
    ]
    outcome = {
        None: "pending (the rule needs the cells still running)",
        True: f"**confirmed**: claim 4 and the depth-fix family run on {CANDIDATE} at depth {DEEP}",
        False: "**not confirmed**: the second candidate (w64-lr0.004-wu0.05-clip0) is tried the same way",
    }[verdict]
    header = ["seed", "post-norm val acc", "pre-norm val acc", "post fails", "pre trains (gate a, ≥ 78.89 %)"]
    return [
        f"Claim 4's confirmation (preset `{PRESET.name}`: {CANDIDATE} on depth-w32's 16-epoch schedule, depth "
        f"{DEEP}, seeds {', '.join(map(str, PRESET.seeds))}; section 5 of the registration): {outcome}.",
        "",
        markdown_table(header, rows),
        "",
    ]
