"""Claims 8 and 2c: continue each seed's trained ``fmnist-p7`` softmax cell with NeuTRENO patched in
at several lambdas, beside a control continuation without it (``oversmooth adapt``), and read the
archived results back (docs/studies.md, the second protocol).

The continuation, pre-registered: 1 430 steps (a third of the cell's 10 epochs), the cell's own
batch, data order and loss; AdamW afresh at a peak lr of 5e-4 with 5 % warm-up and a cosine decay;
lambda 0.2, 0.6 and 1.8 (the last two only for the seeds of 2c). Each seed's small result,
``adapt.json`` (per arm: val and test scores, steps, last-layer cos_sim, the records), is copied to
``results/fmnist-p7-adapt/s<seed>/``, so a fresh clone reads what ran.

    python -m oversmooth.claims.adaptations [--seeds 0,1] [--results results] [--jobs 2] [--train-starts]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from oversmooth.claims import measures
from oversmooth.claims.protocol import SEEDS_A, SEEDS_B, SOFTMAX, VIT, VIT_GATE, Protocol
from oversmooth.errors import UsageError
from oversmooth.study.stats import paired_test
from oversmooth.utils.json_files import NUMBER, check_table, read_table

NAME = "fmnist-p7-adapt"
STEPS, LR, WARMUP = 1430, 5e-4, 0.05
LAMBDAS = (0.2, 0.6, 1.8)
COMMAND = "python -m oversmooth.claims.adaptations --results results --train-starts"
RESULT_FILE = "adapt.json"
#: the starting points: fmnist-p7's softmax cells, judged by the gate of their setting (V)
STARTS = Protocol(
    id="8",
    preset=VIT,
    method=SOFTMAX,
    baseline=SOFTMAX,
    measure=measures.score,
    direction="higher",
    gates=(VIT_GATE,),
    seeds=SEEDS_A,
)


def arm_accuracy(record: dict, lam: float | None) -> float | None:
    """Test accuracy (%) of the arm at ``lam`` (None: the control) in one seed's ``adapt.json``."""
    for name, arm in record["arms"].items():
        knobs = arm.get("knobs") or {}
        if (name == "control") if lam is None else knobs.get("lam") == lam:
            return None if not arm.get("test") else 100 * arm["test"]["accuracy"]
    return None


def neutreno_vs_control(record: dict) -> tuple[float, float] | None:
    """Claim 8: test accuracy of the NeuTRENO (lambda 0.6) continuation and of the control."""
    pair = arm_accuracy(record, 0.6), arm_accuracy(record, None)
    return None if None in pair else pair


def middle_vs_extremes(record: dict) -> tuple[float, float] | None:
    """Claim 2c: test accuracy at lambda 0.6, and the better of lambda 0.2 and lambda 1.8."""
    middle, low, high = (arm_accuracy(record, lam) for lam in (0.6, LAMBDAS[0], LAMBDAS[2]))
    return None if None in (middle, low, high) else (middle, max(low, high))


def extremes_note(records: list[dict]) -> str:
    """Claim 2c, described beside its test: lambda 0.6 against each extreme on its own, with the
    unadjusted 95 % CI of the paired difference over the seeds of 2c's that ran both (which
    extreme hurts, if one does; chosen after the test was registered, so not a test)."""
    found = [r for r in records if r["seed"] in SEEDS_B]
    parts = []
    for lam in (LAMBDAS[0], LAMBDAS[2]):
        pairs = [(m, x) for r in found if None not in (m := arm_accuracy(r, 0.6), x := arm_accuracy(r, lam))]
        if len(pairs) >= 2:
            test = paired_test(*zip(*pairs), "higher")
            parts.append(
                f"lam 0.6 - lam {lam:g}: {test.mean:+.3g} pp, unadjusted 95 % CI [{test.ci_low:+.3g}, "
                f"{test.ci_high:+.3g}], n = {test.n}"
            )
    return "described after the fact, not tested: " + "; ".join(parts) if parts else ""


#: the seeds each measure is planned on
SEEDS = {neutreno_vs_control: SEEDS_A, middle_vs_extremes: SEEDS_B}


def read_adaptations(root: str | Path) -> list[dict]:
    """``{"seed": s, **adapt.json}`` for every archived seed under ``root/fmnist-p7-adapt/``."""
    folder = Path(root) / NAME
    records = []
    for path in sorted(folder.glob(f"s*/{RESULT_FILE}")):
        if not path.parent.name[1:].isdigit():
            raise UsageError(f"{path} is in no seed's folder (s<seed>); move it away and rerun: {COMMAND}")
        record = {"seed": int(path.parent.name[1:]), **_checked(path)}
        ran = tuple(record["config"][k] for k in ("seed", "steps", "lr", "warmup", "method", "objective"))
        registered = (record["seed"], STEPS, LR, WARMUP, "neutreno", "task")
        if ran != registered:
            raise UsageError(
                f"{path} is not the registered continuation of seed {record['seed']} (seed, steps, lr, warm-up, "
                f"method, objective {ran}, not {registered}); move it away and rerun: {COMMAND}"
            )
        records.append(record)
    return records


def _checked(path: Path) -> dict:
    """One ``adapt.json``, checked for every field the claims and the report read; a damaged one is
    a UsageError naming it."""
    fix = f"delete its folder and rerun: {COMMAND}"
    record = read_table(path, {"config": dict, "arms": dict}, fix)
    config = {"seed": int, "steps": int, "lr": NUMBER, "warmup": NUMBER, "method": str, "objective": str}
    check_table(record["config"], f"{path} (its config)", config, fix)
    none = type(None)
    read = {"status": str, "knobs": (dict, none), "wall_seconds": NUMBER, "start": (dict, none), "val": (dict, none)}
    read |= {"test": (dict, none), "start_cos_sim_last": (*NUMBER, none), "cos_sim_last": (*NUMBER, none)}
    for name, arm in record["arms"].items():
        where = f"{path} (its arm {name})"
        check_table(check_table(arm, where, {}, fix), where, {k: kind for k, kind in read.items() if k in arm}, fix)
        for scores in ("start", "val", "test"):
            if arm.get(scores):
                check_table(arm[scores], where, {"accuracy": NUMBER}, fix)
    return record


def adapt_seed(
    seed: int, studies: Path, out: Path, results: Path | None, threads: int, train_start: bool = False
) -> None:
    """Run (or resume) seed ``seed``'s continuations and archive its ``adapt.json``; with
    ``train_start``, a start that has no trained model here is trained first (weights are not
    archived, so a fresh clone trains the seed's softmax cell again: the same recipe and seed)."""
    from oversmooth.adapt import AdaptConfig, adapt

    start = next(c for c in VIT.cells() if c.seed == seed and c.variant.label == "softmax")
    folder = studies / VIT.name / "cells" / start.name
    if not (folder / "model").is_dir() and train_start:
        from oversmooth.study import run_study

        run_study(
            VIT.narrowed(seeds=(seed,), labels=("softmax",)),
            studies / VIT.name,
            threads=threads,
            command=f"python -m oversmooth.claims.adaptations --seeds {seed} --train-starts",
        )
    if not (folder / "model").is_dir():
        raise UsageError(
            f"{folder} has no trained model: train it first (oversmooth study {VIT.name} --out "
            f"{studies / VIT.name} --methods softmax --seeds {seed}), or pass --train-starts"
        )
    lambdas = LAMBDAS if seed in SEEDS_B else (0.6,)
    config = AdaptConfig(
        model=str(folder),
        out=str(out / f"s{seed}"),
        method="neutreno",
        knobs=tuple({"lam": lam} for lam in lambdas),
        objective="task",
        steps=STEPS,
        lr=LR,
        warmup=WARMUP,
        seed=seed,
        threads=threads,
    )
    adapt(config)
    if results is not None:
        target = results / NAME / f"s{seed}"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / f"s{seed}" / RESULT_FILE, target / RESULT_FILE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m oversmooth.claims.adaptations", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS_A)), help="comma-separated (default: 0-13)")
    parser.add_argument("--studies", default="runs/studies", help="where fmnist-p7's cells trained")
    parser.add_argument("--out", default=f"runs/adapt/{NAME}", help="the adaptation folders")
    parser.add_argument("--results", default=None, help="archive each seed's adapt.json under RESULTS/fmnist-p7-adapt")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per seed (default 1)")
    parser.add_argument("--jobs", type=int, default=1, help="seeds at once, one process each (default 1)")
    parser.add_argument(
        "--train-starts",
        action="store_true",
        help="train a seed's softmax start first where --studies has no trained model of it",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.threads < 1:
        print(f"error: --jobs and --threads take integers >= 1, got {args.jobs} and {args.threads}", file=sys.stderr)
        return 2
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        print(f"error: --seeds takes comma-separated integers, got {args.seeds!r}", file=sys.stderr)
        return 2
    results = Path(args.results) if args.results else None
    done = {r["seed"] for r in read_adaptations(results)} if results else set()
    todo = [seed for seed in seeds if seed not in done]
    todo.sort(key=lambda seed: seed not in SEEDS_B)  # the seeds with more arms first
    run = (Path(args.studies), Path(args.out), results, args.threads, args.train_starts)
    try:
        if args.jobs == 1:
            for seed in todo:
                adapt_seed(seed, *run)
        else:
            with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
                for done_seed in [pool.submit(adapt_seed, seed, *run) for seed in todo]:
                    done_seed.result()
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
