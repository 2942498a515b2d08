"""Claim 8 on SmolLM2 (the third protocol, docs/studies.md): NeuTRENO (lambda 0.4) against the
control continuation, paired by seed (data order), validation NLL per token after the last step.

Archives each finished seed's small results (adapt.json, report.md; no weights) from
runs/smollm2-8/s<SEED> to results/third-protocol/smollm2-8/s<SEED>, then applies the registered
rules and writes results/third-protocol/smollm2-8.json: from the pilot (seeds 0-1), the seed
rule (the 80 % upper limit of the SD of the paired differences, effect -0.017 nats, alpha 0.05
two-sided, power 0.8, at most 12 seeds, from seed 10 up); from the test seeds, the paired
t-test's verdict with the third protocol's magnitude reading.

    python scripts/smollm2_8.py
"""

import json
import shutil
import statistics
from pathlib import Path

from oversmooth.adapt.result import AdaptResult
from oversmooth.atomic import atomic_write
from oversmooth.claims.verdicts import decide, in_magnitude
from oversmooth.study.stats import sd_upper_limit, seeds_needed

RUNS, ARCHIVE = Path("runs/smollm2-8"), Path("results/third-protocol/smollm2-8")
PILOT, FIRST_TEST_SEED, MOST = (0, 1), 10, 12
EFFECT = -0.017  # nats per token: ln(33.70 / 34.29), WikiText-103 (Nguyen et al. 2023, Table 2)
KEPT = ("adapt.json", "report.md")


def archive() -> None:
    """Copy the small results of every finished seed (its adapt.json written) into results/."""
    for run in sorted(RUNS.glob("s*")):
        if (run / "adapt.json").is_file() and not (ARCHIVE / run.name / "adapt.json").is_file():
            (ARCHIVE / run.name).mkdir(parents=True, exist_ok=True)
            for name in KEPT:
                shutil.copy2(run / name, ARCHIVE / run.name / name)


def val_nll(seed: int) -> tuple[float, float] | None:
    """(NeuTRENO, control) validation NLL per token after the last step; None while unfinished."""
    path = ARCHIVE / f"s{seed}" / "adapt.json"
    if not path.is_file():
        return None
    result = AdaptResult.from_dict(json.loads(path.read_text()))
    return result.patched[0].val["loss"], result.control.val["loss"]


def main() -> None:
    archive()
    summary: dict = {
        "claim": "8",
        "model": "SmolLM2-135M-Instruct adapted 200 steps: NeuTRENO (lam 0.4) vs the control, val NLL (nats/token)",
        "command": "python scripts/smollm2_8.py",
        "verdict": "pending",
        "effect": EFFECT,
    }
    pilot = [pair for seed in PILOT if (pair := val_nll(seed)) is not None]
    summary["pilot"] = {"seeds": list(PILOT), "differences": [m - c for m, c in pilot]}
    found = ", ".join(f"{m - c:+.3f}" for m, c in pilot) or "none yet"
    summary["sentence"] = f"{len(pilot)} of the pilot's {len(PILOT)} seeds finished (NeuTRENO - control: {found})"
    if len(pilot) == len(PILOT):
        sd = statistics.stdev(summary["pilot"]["differences"])
        limit = sd_upper_limit(sd, len(pilot))
        needed = seeds_needed(EFFECT, limit, 0.05, MOST)
        summary["pilot"] |= {"sd": sd, "sd_upper_80": limit, "seeds_needed": needed}
        if needed is None:
            summary["verdict"] = "not tested"
            summary["sentence"] = f"the seed rule asks more than {MOST} seeds: the design is to change first"
        if needed is not None:
            seeds = range(FIRST_TEST_SEED, FIRST_TEST_SEED + needed)
            pairs = {seed: pair for seed in seeds if (pair := val_nll(seed)) is not None}
            summary["test"] = {"seeds": list(seeds), "finished": sorted(pairs)}
            summary["sentence"] = f"{len(pairs)} of the {needed} test seeds the pilot's seed rule asks have finished"
            if len(pairs) == needed:
                decision = decide([m for m, _ in pairs.values()], [c for _, c in pairs.values()], "lower")
                summary |= {"verdict": decision.verdict, "sentence": decision.reason}
                summary["test"] |= {
                    "reading": in_magnitude(decision, EFFECT),
                    "mean": decision.test.mean,
                    "ci": [decision.ci_low, decision.ci_high],
                    "p": decision.test.p_two_sided,
                }
    with atomic_write(ARCHIVE.with_suffix(".json")) as handle:
        json.dump(summary, handle, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
