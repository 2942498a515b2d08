"""Claim 4's pilots (Yu & Zhang 2023): where does post-norm softmax fail at our width?

A remedy for a failure can only be tested where the failure happens, so claims 4a / 4b are tested
at a depth where a pilot found it. Rule, written before the pilots ran: post-norm softmax *fails*
at a depth where it diverges or trails pre-norm softmax by >= ``PILOT_GAP`` pp validation accuracy
at the end of a pilot (one seed). ``FailureFound`` is that rule as a gate of the claims protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from oversmooth.run_spec import training_key
from oversmooth.study.config import StudyConfig
from oversmooth.study.measures import Key
from oversmooth.study.presets import STUDY_PRESETS
from oversmooth.study.results import CellResult

#: the pilots of claim 4, in the order they ran.
PILOTS = (STUDY_PRESETS["postnorm-pilot"], STUDY_PRESETS["postnorm-pilot-2"])
PILOT_GAP = 5.0  # pp


def pilot_recipe(pilot: StudyConfig) -> str:
    """How ``pilot`` trains, in words: ``"lr 0.001, augmented, 2 epochs of 10 000 images, 1 seed"``."""
    train = pilot.train
    images = f"{train['limit_train']:,}".replace(",", " ") if train.get("limit_train") else "all"
    return (f"lr {train['lr']:g}{', augmented' if train.get('augment') else ', no augmentation'}, "
            f"{train['epochs']} epochs of {images} images, {len(pilot.seeds)} seed{'s' * (len(pilot.seeds) > 1)}")


@dataclass(frozen=True)
class PilotFinding:
    """What the pilots found: per pilot that ran, its recipe and accuracies (``found``); the depths
    where post-norm failed (``failing``: ``(depth, pilot name)``, in pilot order); the depths tried."""

    found: tuple[str, ...]
    failing: tuple[tuple[int, str], ...]
    tried: tuple[str, ...]

    def text(self) -> str:
        return ". ".join(self.found) if self.found else "no pilot has run"

    def nothing_to_rescue(self) -> str | None:
        """Why no comparison can be run (no pilot ran, or none found a failure), or None."""
        if not self.found:
            return "no pilot has run: " + "; ".join(f"oversmooth study {pilot.name}" for pilot in PILOTS)
        if self.failing:
            return None
        return (f"nothing to rescue: post-norm softmax did not fail in {' nor in '.join(self.tried)} (it diverged "
                f"nowhere and trailed pre-norm by less than {PILOT_GAP:g} pp), so the failure this claim explains "
                "was not reproduced at width 64; it may need more depth or longer training")


def pilot_finding(cells: Sequence[CellResult]) -> PilotFinding:
    """The pilots' cells among ``cells`` (found by their training and seeds, never a study name: a
    comparison trained like a pilot, on other seeds, is not a pilot), judged by the rule."""
    found, failing, tried = [], [], []
    for pilot in PILOTS:
        trainings = {training_key(cell.spec()) for cell in pilot.cells()}
        runs = {(c.norm, c.depth): c for c in cells
                if c.training() in trainings and c.seed in pilot.seeds and c.label == "softmax" and c.epochs}
        depths = sorted({depth for _, depth in runs if ("pre", depth) in runs and ("post", depth) in runs})
        if not depths:
            continue
        tried.append(f"{pilot.name} (depth {' or '.join(map(str, depths))})")
        rows = []
        for depth in depths:
            pre, post = (runs[(norm, depth)].epochs[-1]["val"]["accuracy"] for norm in ("pre", "post"))
            diverged = runs[("post", depth)].status == "diverged"
            rows.append(f"depth {depth}: pre-norm {100 * pre:.1f} %, post-norm {100 * post:.1f} %"
                        + (" (diverged)" if diverged else ""))
            if diverged or 100 * (pre - post) >= PILOT_GAP:
                failing.append((depth, pilot.name))
        found.append(f"{pilot.name} ({pilot_recipe(pilot)}), validation accuracy: " + "; ".join(rows))
    return PilotFinding(tuple(found), tuple(failing), tuple(tried))


@dataclass(frozen=True)
class FailureFound:
    """Gate of claims 4a / 4b: a pilot found post-norm softmax failing at ``depth``."""

    depth: int

    def describe(self) -> str:
        return (f"a pilot found post-norm softmax failing (diverged or >= {PILOT_GAP:g} pp below pre-norm) "
                f"at depth {self.depth}")

    def failure(self, groups: Sequence[Mapping[Key, CellResult]], cells: Sequence[CellResult]) -> str | None:
        """Why the comparison at ``depth`` stands on nothing (the pilots' cells are among ``cells``), or None."""
        finding = pilot_finding(cells)
        if any(depth == self.depth for depth, _ in finding.failing):
            return None
        return finding.nothing_to_rescue() or (f"no pilot found post-norm failing at depth {self.depth} (it failed at "
                                               f"depth {finding.failing[0][0]} in {finding.failing[0][1]})")
