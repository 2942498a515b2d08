"""Where a trained claim was tested (docs/registrations/fourth-step.md): its softmax arm's
last-layer cos_sim beside the same architecture's at random init, and whether that baseline
oversmooths (``OVERSMOOTHS``); the ``regime`` of its row. (The third protocol's search for a regime
that oversmooths is ``claims.regime_pilot``.)"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from oversmooth.claims.gates import arm_name
from oversmooth.claims.gathering import group_cells, has_finished
from oversmooth.claims.protocol import OVERSMOOTHS, Protocol
from oversmooth.study.report import last_cos_sim, seed_span
from oversmooth.study.results import CellResult


@dataclass(frozen=True)
class Regime:
    """Where a trained claim was tested (docs/registrations/fourth-step.md): its softmax arm's
    last-layer cos_sim on the validation probe at the end of training, the mean over the claim's
    seeds that finished it, beside the same architecture's at random init
    (``oversmooth.study.null``; None: not computed)."""

    arm: str  # which softmax arm (``Protocol.softmax_arm``), of which studies' cells
    cos_sim: float | None  # None: no seed of the claim has finished it
    seeds: int
    null_mean: float | None
    null_sd: float | None
    null_inits: int | None
    oversmooths: bool | None  # cos_sim >= OVERSMOOTHS (None: no value)
    text: str  # the row's words for it


def tested_where(protocol: Protocol, cells: list[CellResult]) -> Regime:
    """Where ``protocol``'s claim was tested (docs/registrations/fourth-step.md): the last-layer
    cos_sim of its softmax arm (``Protocol.softmax_arm``) in the last record of each of its seeds
    that finished it, their mean (and their range), beside that arm's random-init null; below ``OVERSMOOTHS`` the
    words say that the claim was tested where the baseline does not oversmooth. A seed that
    diverged counts with its last probe, one that diverged before any is left out; the words name
    both."""
    arm = protocol.softmax_arm
    seeds = group_cells(protocol, cells)
    finished = [cell for seed in protocol.seeds if has_finished(cell := seeds.get(seed, {}).get(arm))]
    found = [cell for cell in finished if last_cos_sim(cell) is not None]
    unmeasured = [cell.seed for cell in finished if last_cos_sim(cell) is None]  # diverged before a probe
    if not found:
        text = "no finished cell with a probe yet"
        if unmeasured:
            text += f" (seed(s) {seed_span(unmeasured)} diverged before one)"
        return Regime(arm_name(arm), None, 0, None, None, None, None, text)
    null = next((cell.null for cell in found if cell.null is not None), None)
    studies = ", ".join(sorted({cell.study for cell in found}))
    values = [last_cos_sim(cell) for cell in found]
    value = statistics.fmean(values)
    diverged = [cell.seed for cell in found if cell.status == "diverged"]
    planned = len(protocol.seeds)
    notes = [f"{len(found)} of {planned} seeds" if len(found) < planned else f"{planned} seeds"]
    low, high = f"{min(values):.3f}", f"{max(values):.3f}"
    if low != high:  # seeds that disagree (a failure on some seeds only) show beside their mean
        notes[0] += f", from {low} to {high}"
    if diverged:
        notes.append(f"seed(s) {seed_span(diverged)} diverged: their last probe")
    if unmeasured:
        notes.append(f"seed(s) {seed_span(unmeasured)} diverged before a probe: left out")
    text = f"{value:.3f} ({'; '.join(notes)}) vs "
    if null is None:
        text += "random init: null not computed"
    else:
        spread = "" if null["sd"] is None else f" ± {null['sd']:.3f}"
        text += f"{null['mean']:.3f}{spread} at random init ({null['inits']} inits)"
    oversmooths = value >= OVERSMOOTHS
    text += (
        f": the baseline oversmooths (>= {OVERSMOOTHS:g})"
        if oversmooths
        else f": tested where the baseline does not oversmooth (< {OVERSMOOTHS:g})"
    )
    return Regime(
        arm=f"{studies} {arm_name(arm)}",
        cos_sim=value,
        seeds=len(found),
        null_mean=None if null is None else null["mean"],
        null_sd=None if null is None else null["sd"],
        null_inits=None if null is None else null["inits"],
        oversmooths=oversmooths,
        text=text,
    )
