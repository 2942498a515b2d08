"""The third protocol's re-tests of claims 6 and 5c, read by the rules docs/studies.md registered
before they ran ("The re-test family"): their pilots (does the overfitting regime overfit, and how
many seeds does each test need: the 80 % upper limit of the SD of the pilot's paired differences,
power 0.8 at alpha 0.05 / 3, at most 12), 5c's test on its fresh seeds, and the family's Holm
decision over 1b (results/third-protocol/retest-1b.json, from scripts/retest_1b.py), 5c and 6 (a
re-test its pilot ended counts with p = 1).

    python scripts/retest_pilots.py   # reads results/retest-6-pilot, retest-5c-pilot, retest-5c
"""

import json
import statistics
from pathlib import Path

from oversmooth.claims.measures import sign_flips_vs_sham
from oversmooth.claims.verdicts import decide
from oversmooth.study.results import paired_score, read_studies
from oversmooth.study.stats import holm, min_detectable_effect, seed_plan
from oversmooth.utils.atomic import atomic_write

FAMILY = ("1b", "5c", "6")
ALPHA, MOST = 0.05 / len(FAMILY), 12
RECORDS = Path("results/third-protocol")
OVERFITS = 1.10  # the sharpen arm's final validation loss over its minimum


def seed_rule(differences: list[float], effect: float) -> tuple[int | None, str]:
    """The seeds the test needs (None: more than ``MOST``) and the rule's reading in words."""
    plan = seed_plan(differences, effect, ALPHA, MOST)
    enough = (
        f"{plan.needed}"
        if plan.needed is not None
        else f"more than {MOST} ({MOST} detect {min_detectable_effect(MOST, plan.limit, ALPHA):.3g})"
    )
    return plan.needed, (
        f"pilot differences {', '.join(f'{d:+.4g}' for d in differences)}; SD {plan.sd:.4g}, its 80 % upper limit "
        f"{plan.limit:.4g}; seeds to detect {effect:g} at alpha {ALPHA:.4g} with power 0.8: {enough}"
    )


def record(claim: str, model: str, sentence: str, verdict: str = "not tested", **more: object) -> None:
    """A re-test's record for the claims report (``claims.third_protocol``), named by its claim."""
    fields = {"claim": claim, "model": model, "command": "python scripts/retest_pilots.py", "verdict": verdict}
    with atomic_write(RECORDS / f"retest-{claim.split()[0]}.json") as handle:
        json.dump(fields | {"sentence": sentence} | more, handle, indent=1)


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


def flip_shares(study: str) -> dict[int, tuple[float, float]]:
    """Per seed of ``results/<study>``: the share of blocks whose measured sign turned under the flip
    and under the sham (``claims.measures.sign_flips_vs_sham``), printed as read."""
    arm = ("pre", "softmax", 8)
    shares = {c.seed: sign_flips_vs_sham({arm: c}, (arm, arm)) for c in read_studies([Path("results") / study])[0]}
    for seed, (flip, sham) in sorted(shares.items()):
        print(
            f"5c, seed {seed}: the measured change's sign turned in {flip:.3f} of the blocks under the flip, "
            f"{sham:.3f} under the sham"
        )
    return shares


def claim_5c() -> None:
    """5c's pilot and then its test, each read by its registered rule; the record once decided."""
    model = "fmnist-p7's softmax ViT, the value-path flip of gamma against a sham"
    shares = flip_shares("retest-5c-pilot")
    if len(shares) < 2:
        print("5c: the pilot's second seed has not finished")
        return
    needed, words = seed_rule([f - s for f, s in shares.values()], 0.25)
    print("5c, flip - sham (share of blocks):", words)
    if needed is None:
        record(
            "5c (re-test)",
            f"{model} (retest-5c-pilot)",
            f"the seed rule asks more seeds than the registered {MOST}: {words}",
        )
        return
    if not Path("results/retest-5c").is_dir():
        return
    shares = flip_shares("retest-5c")
    if len(shares) < needed:
        print(f"5c: {len(shares)} of the test's {needed} seeds finished")
        return
    flip, sham = zip(*(shares[seed] for seed in sorted(shares)))
    decision = decide(flip, sham, "higher", family_size=len(FAMILY))
    test = decision.test
    unchanged = ""
    if test.sd == 0 and test.mean == 0:
        unchanged = " (no block's sign turned under either: the measure does not separate them here)"
    record(
        "5c (re-test)",
        f"{model}, {len(flip)} fresh seeds of 8 blocks (retest-5c, seeds {min(shares)}-{max(shares)})",
        f"share of blocks whose measured sign turned, flip {statistics.fmean(flip):.3f} "
        f"vs sham {statistics.fmean(sham):.3f}; "
        f"flip - sham {test.mean:+.3f}, p {test.p_two_sided:.3g} (unadjusted){unchanged}",
        decision.verdict,
        p=test.p_two_sided,
    )


def family_p(claim: str) -> float | None:
    """A re-test's p for the family: its record's, 1 where its pilot ended it (not tested), None
    while it has no record."""
    path = RECORDS / f"retest-{claim}.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    return record["p"] if "p" in record else 1.0 if record["verdict"] == "not tested" else None


def family() -> None:
    """The re-test family's Holm decision (m = 3) once its three p-values are in."""
    p = {claim: family_p(claim) for claim in FAMILY}
    if None in p.values():
        print("the re-test family waits for", ", ".join(claim for claim, value in p.items() if value is None))
        return
    adjusted = dict(zip(FAMILY, holm(list(p.values()))))
    verdicts = {claim: json.loads((RECORDS / f"retest-{claim}.json").read_text())["verdict"] for claim in FAMILY}
    decided = ("held", "contradicted")  # Holm can only take these back, to inconclusive
    kept = {c: "inconclusive" if verdicts[c] in decided and adjusted[c] >= 0.05 else verdicts[c] for c in FAMILY}
    with atomic_write(RECORDS / "retest-family.json") as handle:
        json.dump(
            {
                "claim": "re-test family (1b, 5c, 6)",
                "model": "Holm over the three re-tests, m = 3, alpha 0.05 (one its pilot ended counts with p = 1)",
                "command": "python scripts/retest_pilots.py",
                "verdict": "; ".join(f"{claim} {kept[claim]}" for claim in FAMILY),
                "sentence": "Holm-adjusted p: " + ", ".join(f"{claim} {adjusted[claim]:.2g}" for claim in FAMILY),
                "p_holm": adjusted,
            },
            handle,
            indent=1,
        )
    print("re-test family:", kept, adjusted)


if __name__ == "__main__":
    claim_6()
    claim_5c()
    family()
