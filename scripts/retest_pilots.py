"""The pilots of the third protocol's re-tests of claims 6 and 5c, read by the rules docs/studies.md
registered before they ran ("The re-test family"): does the overfitting regime overfit, and how
many seeds does each test need (the 80 % upper limit of the SD of the pilot's paired differences,
power 0.8 at alpha 0.05 / 3, at most 12)?

    python scripts/retest_pilots.py      # reads results/retest-6-pilot and results/retest-5c-pilot
"""

import json
import statistics
from pathlib import Path

from oversmooth.atomic import atomic_write
from oversmooth.claims.measures import sign_flips_vs_sham
from oversmooth.study.results import paired_score, read_studies
from oversmooth.study.stats import min_detectable_effect, sd_upper_limit, seeds_needed

ALPHA, MOST = 0.05 / 3, 12
OVERFITS = 1.10  # the sharpen arm's final validation loss over its minimum


def seed_rule(differences: list[float], effect: float) -> tuple[int | None, str]:
    """The seeds the test needs (None: more than ``MOST``) and the rule's reading in words."""
    sd = statistics.stdev(differences)
    limit = sd_upper_limit(sd, len(differences))
    needed = seeds_needed(effect, limit, ALPHA, MOST)
    enough = (
        f"{needed}"
        if needed is not None
        else f"more than {MOST} ({MOST} detect {min_detectable_effect(MOST, limit, ALPHA):.3g})"
    )
    return needed, (
        f"pilot differences {', '.join(f'{d:+.4g}' for d in differences)}; SD {sd:.4g}, its 80 % upper limit "
        f"{limit:.4g}; seeds to detect {effect:g} at alpha {ALPHA:.4g} with power 0.8: {enough}"
    )


def record(claim: str, model: str, sentence: str) -> None:
    """The re-test's record for the claims report (``claims.third_protocol``) when its pilot ends it."""
    fields = {"claim": claim, "model": model, "command": "python scripts/retest_pilots.py", "verdict": "not tested"}
    with atomic_write(Path(f"results/third-protocol/retest-{claim.split()[0]}.json")) as handle:
        json.dump(fields | {"sentence": sentence}, handle, indent=1)


def claim_6() -> None:
    cells = read_studies([Path("results/retest-6-pilot")])[0]
    by_seed: dict[int, dict[str, object]] = {}
    for cell in cells:
        by_seed.setdefault(cell.seed, {})[cell.label] = cell
    for seed, arms in sorted(by_seed.items()):
        ratio = _overfit(arms["sharpen"])
        print(f"6, seed {seed}: sharpen's final val loss is {ratio:.3f} x its minimum; overfits: {ratio >= OVERFITS}")
    ratios = [_overfit(arms["sharpen"]) for _, arms in sorted(by_seed.items())]
    differences = [paired_score(a["smooth"]) - paired_score(a["sharpen"]) for _, a in sorted(by_seed.items())]
    needed, words = seed_rule(differences, 0.5)
    print("6, smooth - sharpen test accuracy (pp):", words)
    model = "fmnist-p7's ViT, spectral smooth vs sharpen, 40 epochs of 5 000 images (retest-6-pilot)"
    if min(ratios) < OVERFITS:
        record(
            "6 (re-test)",
            model,
            f"the regime does not overfit (sharpen's final val loss {min(ratios):.3f} x its minimum)",
        )
    elif needed is None:
        record("6 (re-test)", model, f"the seed rule asks more seeds than the registered {MOST}: {words}")


def _overfit(cell) -> float:
    """A cell's final validation loss over its lowest."""
    losses = [epoch["val"]["loss"] for epoch in cell.epochs]
    return losses[-1] / min(losses)


def claim_5c() -> None:
    cells = read_studies([Path("results/retest-5c-pilot")])[0]
    shares = {c.seed: sign_flips_vs_sham({("pre", "softmax", 8): c}, (("pre", "softmax", 8),) * 2) for c in cells}
    for seed, (flip, sham) in sorted(shares.items()):
        print(
            f"5c, seed {seed}: the measured change's sign turned in {flip:.3f} of the blocks under the flip, "
            f"{sham:.3f} under the sham"
        )
    if len(shares) < 2:
        print("5c: the pilot's second seed has not finished")
        return
    needed, words = seed_rule([f - s for f, s in shares.values()], 0.25)
    print("5c, flip - sham (share of blocks):", words)
    if needed is None:
        model = "fmnist-p7's softmax ViT, the value-path flip of gamma against a sham (retest-5c-pilot)"
        record("5c (re-test)", model, f"the seed rule asks more seeds than the registered {MOST}: {words}")


if __name__ == "__main__":
    claim_6()
    if Path("results/retest-5c-pilot").is_dir():
        claim_5c()
