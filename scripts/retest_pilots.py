"""The pilots of the third protocol's re-tests of claims 6 and 5c, read by the rules docs/studies.md
registered before they ran ("The re-test family"): does the overfitting regime overfit, and how
many seeds does each test need (the 80 % upper limit of the SD of the pilot's paired differences,
power 0.8 at alpha 0.05 / 3, at most 12)?

    python scripts/retest_pilots.py      # reads results/retest-6-pilot and results/retest-5c-pilot
"""

import statistics
from pathlib import Path

from oversmooth.claims.measures import sign_flips_vs_sham
from oversmooth.study.results import paired_score, read_studies
from oversmooth.study.stats import sd_upper_limit, seeds_needed

ALPHA, MOST = 0.05 / 3, 12
OVERFITS = 1.10  # the sharpen arm's final validation loss over its minimum


def seed_rule(differences: list[float], effect: float) -> str:
    sd = statistics.stdev(differences)
    limit = sd_upper_limit(sd, len(differences))
    needed = seeds_needed(effect, limit, ALPHA, MOST)
    return (
        f"differences {', '.join(f'{d:+.4g}' for d in differences)}; SD {sd:.4g}, its 80 % upper limit {limit:.4g}; "
        f"seeds for {effect:g} at alpha {ALPHA:.4g}: {needed if needed is not None else f'more than {MOST}'}"
    )


def claim_6() -> None:
    cells = read_studies([Path("results/retest-6-pilot")])[0]
    by_seed: dict[int, dict[str, object]] = {}
    for cell in cells:
        by_seed.setdefault(cell.seed, {})[cell.label] = cell
    for seed, arms in sorted(by_seed.items()):
        losses = [epoch["val"]["loss"] for epoch in arms["sharpen"].epochs]
        print(
            f"6, seed {seed}: sharpen's final val loss {losses[-1]:.4f} = {losses[-1] / min(losses):.3f} x its minimum "
            f"(epoch {losses.index(min(losses)) + 1}); overfits (>= {OVERFITS}): {losses[-1] / min(losses) >= OVERFITS}"
        )
    differences = [paired_score(a["smooth"]) - paired_score(a["sharpen"]) for _, a in sorted(by_seed.items())]
    print("6, smooth - sharpen test accuracy (pp):", seed_rule(differences, 0.5))


def claim_5c() -> None:
    cells = read_studies([Path("results/retest-5c-pilot")])[0]
    shares = {c.seed: sign_flips_vs_sham({("pre", "softmax", 8): c}, (("pre", "softmax", 8),) * 2) for c in cells}
    for seed, (flip, sham) in sorted(shares.items()):
        print(
            f"5c, seed {seed}: the measured change's sign turned in {flip:.3f} of the blocks under the flip, "
            f"{sham:.3f} under the sham"
        )
    print("5c, flip - sham (share of blocks):", seed_rule([f - s for f, s in shares.values()], 0.25))


if __name__ == "__main__":
    claim_6()
    claim_5c()
