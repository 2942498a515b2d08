"""The third protocol's regime pilot (docs/registrations/fourth-step.md,
docs/registrations/third-protocol.md), which looks for a trained softmax ViT that oversmooths: per
configuration the pilot trained, its token count, validation accuracy and last-layer cos_sim beside
the same architecture's at random init, and whether it oversmooths (``OVERSMOOTHS``) and trains
(gate W's parts (a) and (c): plateaued, and above the logistic regression it runs on the same
images). Where no configuration does both, 2a, 2c and 8 were not re-tested in a new regime of the
ViT."""

from __future__ import annotations

import statistics

from oversmooth.claims.gates import not_plateaued, reference_score
from oversmooth.claims.protocol import DEPTH_GATE, OVERSMOOTHS
from oversmooth.study.results import CellResult
from oversmooth.utils.markdown import markdown_table

PILOTS = ("regime-pilot", "regime-pilot-p2")
FLOOR_STUDY = "depth-w32"  # gate W's baseline cells: the first 10 000 training images, as the pilot's
IMAGE_SIDE = 28  # Fashion-MNIST


def _yes(condition: bool) -> str:
    return "yes" if condition else "no"


def regime_pilot_section(cells: list[CellResult]) -> list[str]:
    """The claims report's section: one row per finished pilot cell; [] before any finished."""
    pilot = [c for c in cells if c.study in PILOTS and c.status == "completed" and c.spec and c.final_layers]
    if not pilot:
        return []
    floors = [s for c in cells if c.study == FLOOR_STUDY and (s := reference_score(c)) is not None]
    floor = statistics.fmean(floors) if floors else None
    rows, both = [], False
    for c in sorted(pilot, key=lambda c: (c.spec.patch_size, c.depth), reverse=True):
        spec, accuracy = c.spec, 100 * c.epochs[-1]["val"]["accuracy"]
        cos_sim = c.final_layers[-1]["cos_sim"]
        null = f"{c.null['mean']:.3f} ± {c.null['sd']:.3f}" if c.null and c.null["sd"] is not None else "–"
        trains = floor is not None and accuracy > floor and not_plateaued(c, DEPTH_GATE.tolerance) is None
        both |= trains and cos_sim >= OVERSMOOTHS
        configuration = f"width {spec.width}, {spec.patch_size} × {spec.patch_size} patches, depth {c.depth}"
        tokens = (IMAGE_SIDE // spec.patch_size) ** 2 + 1
        oversmooths, trained = _yes(cos_sim >= OVERSMOOTHS), "–" if floor is None else _yes(trains)
        rows.append([configuration, tokens, f"{accuracy:.2f} %", f"{cos_sim:.3f}", null, oversmooths, trained])
    floor_text = "–" if floor is None else f"{floor:.2f} %"
    images = f"{pilot[0].spec.limit_train:,}".replace(",", " ")
    arms = ", ".join(sorted({f"{c.norm}-norm {c.label} seed {c.seed}" for c in pilot}))
    return [
        "## Where a trained softmax ViT oversmooths: the regime pilot",
        "",
        f"Arms: {arms}; {pilot[0].spec.epochs} epochs of the first {images} training images (`{'`, `'.join(PILOTS)}`). "
        f"Oversmooths: last-layer cos_sim of the validation probe at least {OVERSMOOTHS}; trains: gate W's (a) "
        f"and (c), plateaued within {DEPTH_GATE.tolerance} pp and a final validation accuracy above its logistic "
        f"regression on the same images ({floor_text}, `{FLOOR_STUDY}`'s {DEPTH_GATE.arm[1]} cells). "
        + (
            "A configuration does both: 2a and 8 are to be tested there (docs/studies.md)."
            if both
            else "No configuration does both: 2a, 2c and 8 were tested where the baseline does not oversmooth "
            "(their regime column), and were not re-tested in a new regime of the ViT."
        ),
        "",
        markdown_table(
            ["configuration", "tokens", "val accuracy", "last-layer cos_sim", "random init", "oversmooths", "trains"],
            rows,
        ),
        "",
    ]
