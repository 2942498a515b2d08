"""The fourth step's 40 CPU-hours (docs/registrations/fourth-step.md, section 6): what its runs
have spent and what the rest would cost, from ``results/``, and the one decision the plan left to
the tally: claim 2b's remaining fresh pairs run only if, after claim 4's family and claim 8 on
SmolLM2, the budget holds them; else they are dropped, and the report says so with their cost.

A cell's hours are its recorded ``wall_seconds`` (each cell trains on one core, two at a time on
this 2-core machine, so its wall clock is its processor time, or more while another process
shares the core; the registration's 6.9 hours for the screen are this sum). An unfinished item's
cost is its missing cells times the mean of its finished ones (claim 8's seeds: 3.5 hours each
before the first finishes, section 6's 10.5 for three).
"""

from __future__ import annotations

import datetime
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from oversmooth.claims.fresh_2b import PRESET as FRESH_2B
from oversmooth.claims.postnorm_family import PRESET as FAMILY
from oversmooth.claims.postnorm_screen import STUDY as SCREEN
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.claims.smollm2_fair import FOLDER, SEEDS, read_fair_adaptations
from oversmooth.errors import UsageError
from oversmooth.study.files import RESULTS_FILE
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.json_files import NUMBER, read_table

BUDGET = 40.0  # CPU-hours, the issue's
FAIR_SEED_HOURS = 3.5  # claim 8 on SmolLM2: one seed's three 600-step arms, section 6's estimate
DECISION_FILE = "budget.json"  # under results/fourth-step/
#: the fourth step's studies, in the order they ran (2b's fresh pairs last: the decision's subject)
STUDIES = (SCREEN, "postnorm-confirm", FAMILY.name, FRESH_2B.name)
FAIR = "claim 8 on SmolLM2 (fair)"
#: the claim-8 seeds that must be archived before the decision (section 8): the queue's first two
DECIDED_AFTER = SEEDS[:2]


@dataclass(frozen=True)
class Item:
    """One run of the fourth step: ``name``, the hours its finished cells took, and the hours
    its missing ones would take (``missing`` of them)."""

    name: str
    spent: float
    missing: int
    to_come: float


def tally(root: str | Path = "results") -> list[Item]:
    """Each study of ``STUDIES``, claim 8's fair adaptations before 2b's pairs, from ``root``."""
    *before, fresh = [_study_item(Path(root), name) for name in STUDIES]
    fair = [_adapt_hours(record) for record in read_fair_adaptations(Path(root) / FOLDER).values()]
    per_seed = statistics.fmean(fair) if fair else FAIR_SEED_HOURS
    missing = len(SEEDS) - len(fair)
    return [*before, Item(FAIR, sum(fair), missing, missing * per_seed), fresh]


def _study_item(root: Path, name: str) -> Item:
    """A study's hours: its archived cells' ``wall_seconds``; its missing cells at the mean of its
    finished ones of the same depth (of all its finished ones where none of that depth has; at 0
    before any has finished). The screen stopped once it found its candidate (section 6): its
    missing cells are not to come."""
    hours = {path.parent.name: _cell_hours(path) for path in (root / name).glob(f"*/{RESULTS_FILE}")}
    spent = sum(hours.values())
    if name == SCREEN:
        return Item(name, spent, 0, 0.0)
    cells = CLAIMS_PRESETS[name].cells()
    missing = [cell for cell in cells if cell.name not in hours]
    to_come = 0.0
    for cell in missing:
        same_depth = [hours[c.name] for c in cells if c.name in hours and c.depth == cell.depth]
        pool = same_depth or list(hours.values())
        to_come += statistics.fmean(pool) if pool else 0.0
    return Item(name, spent, len(missing), to_come)


def _cell_hours(path: Path) -> float:
    fix = "restore it from git, or delete its cell folder to train it again"
    return read_table(path, {"wall_seconds": NUMBER}, fix)["wall_seconds"] / 3600


def _adapt_hours(record: dict) -> float:
    """An archived adaptation's hours (its ``adapt.json``): the sum of its arms' ``wall_seconds``."""
    return sum(arm.get("wall_seconds") or 0.0 for arm in record["arms"].values()) / 3600


def decide_2b(root: str | Path = "results") -> dict:
    """2b's decision (sections 6 and 8), taken once and kept in ``root/fourth-step/budget.json``:
    run its remaining pairs if everything spent plus everything to come, 2b's pairs included, stays
    within ``BUDGET``; else drop them. Once written, it is read back, never taken again. Taken only
    after claim 4's family and claim 8's seeds ``DECIDED_AFTER`` are archived (a UsageError before:
    the tally would still be mostly estimates)."""
    path = Path(root) / FOLDER / DECISION_FILE
    if path.is_file():
        return read_decision(Path(root) / FOLDER)
    items = {item.name: item for item in tally(root)}
    archived = set(read_fair_adaptations(Path(root) / FOLDER))
    if items[FAMILY.name].missing or not set(DECIDED_AFTER) <= archived:
        raise UsageError(
            f"2b's budget decision is taken once claim 4's family and claim 8's seeds {DECIDED_AFTER} are archived "
            f"(docs/registrations/fourth-step.md, section 8): the family lacks {items[FAMILY.name].missing} cells, "
            f"claim 8 has seeds {sorted(archived) or 'none'}; run scripts/fourth_step_queue.sh, which asks in time"
        )
    fresh = items[FRESH_2B.name]
    total = sum(item.spent + item.to_come for item in items.values())
    decision = {
        "decided": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "budget": BUDGET,
        "items": [item.__dict__ for item in items.values()],
        "spent": sum(item.spent for item in items.values()),
        "total": total,
        "total_without_2b": total - fresh.to_come,
        "2b": "run" if total <= BUDGET else "dropped",
        "2b_cost": fresh.to_come,
        "2b_missing": fresh.missing,
    }
    with atomic_write(path) as handle:
        json.dump(decision, handle, indent=1)
    return decision


def read_decision(folder: str | Path) -> dict | None:
    """The decision in ``folder/budget.json`` (``folder``: results/fourth-step), None before it is
    taken; a damaged one is a UsageError naming it."""
    path = Path(folder) / DECISION_FILE
    if not path.is_file():
        return None
    fix = f"restore it from git (git checkout -- {path}): the decision is taken once"
    fields = {"2b": str, "2b_cost": NUMBER, "2b_missing": int, "budget": NUMBER}
    fields |= {"spent": NUMBER, "total": NUMBER, "total_without_2b": NUMBER}
    decision = read_table(path, fields, fix)
    if decision["2b"] not in ("run", "dropped"):
        raise UsageError(f"{path} is damaged (its 2b is {decision['2b']!r}, not 'run' or 'dropped'); {fix}")
    return decision


def tally_table(items: list[Item]) -> str:
    """The tally as aligned text, one line per item and the total against ``BUDGET``."""
    lines = [f"{'item':<28} {'spent h':>8} {'missing':>8} {'to come h':>10}"]
    lines += [f"{i.name:<28} {i.spent:8.2f} {i.missing:8d} {i.to_come:10.2f}" for i in items]
    total = sum(i.spent + i.to_come for i in items)
    lines.append(f"{'all, against ' + f'{BUDGET:g}':<28} {total:8.2f}")
    return "\n".join(lines)
