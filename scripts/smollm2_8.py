"""Claim 8 on SmolLM2 (the third protocol, docs/studies.md): NeuTRENO (lambda 0.4) against the
control continuation, paired by seed (data order), validation NLL per token after the last step.

Archives each finished seed's small results (adapt.json, report.md; no weights) from
runs/smollm2-8/s<SEED> to results/third-protocol/smollm2-8/s<SEED>, then applies the registered
rules and writes results/third-protocol/smollm2-8.json: from the pilot (seeds 0-1), the seed
rule (the 80 % upper limit of the SD of the paired differences, effect -0.017 nats, alpha 0.05
two-sided, power 0.8, at most 12 seeds, from seed 10 up) within the budget's 6 pairs, else not
tested with why; from the test seeds, the paired t-test's verdict with the third protocol's
magnitude reading. Beside them, described and deciding nothing: the regime (the control's
last-layer cos_sim after adaptation against SmolLM2's at random init, measured once on adapt's
validation probe and archived as null.json).

    python scripts/smollm2_8.py
"""

import json
import math
import shutil
import statistics
from pathlib import Path

from oversmooth.adapt.result import AdaptResult
from oversmooth.claims.protocol import OVERSMOOTHS, rule_side
from oversmooth.claims.verdicts import decide, in_magnitude
from oversmooth.study.stats import min_detectable_effect, seed_plan
from oversmooth.utils.atomic import atomic_write

RUNS, ARCHIVE = Path("runs/smollm2-8"), Path("results/third-protocol/smollm2-8")
PILOT, FIRST_TEST_SEED, MOST = (0, 1), 10, 12
AFFORDABLE = 6  # test pairs the budget holds, the depth-fixes family's fourth seed dropped (docs/studies.md)
EFFECT = -0.017  # nats per token: ln(33.70 / 34.29), WikiText-103 (Nguyen et al. 2023, Table 3)
KEPT = ("adapt.json", "report.md")


def archive() -> None:
    """Copy the small results of every finished seed (its adapt.json written) into results/."""
    for run in sorted(RUNS.glob("s*")):
        if (run / "adapt.json").is_file() and not (ARCHIVE / run.name / "adapt.json").is_file():
            (ARCHIVE / run.name).mkdir(parents=True, exist_ok=True)
            for name in KEPT:
                shutil.copy2(run / name, ARCHIVE / run.name / name)


def archived(seed: int) -> Path:
    """Where seed ``seed``'s adapt.json is archived."""
    return ARCHIVE / f"s{seed}" / "adapt.json"


def adapt_result(seed: int) -> AdaptResult:
    """Seed ``seed``'s archived adaptation."""
    return AdaptResult.from_dict(json.loads(archived(seed).read_text()))


def val_nll(seed: int) -> tuple[float, float] | None:
    """(NeuTRENO, control) validation NLL per token after the last step; None while unfinished."""
    if not archived(seed).is_file():
        return None
    result = adapt_result(seed)
    return result.patched[0].val["loss"], result.control.val["loss"]


def sequence_differences(seed: int) -> list[float]:
    """The seed's per-sequence validation NLL difference, NeuTRENO - control, over the same
    ``eval_sequences`` blocks ``adapt`` validated on (their mean is the recorded difference, up to
    float rounding). Recomputed once from the seed's saved arms under runs/ (the NeuTRENO arm loads
    with its patch), then read from its archive (``sequences.json``, 64 floats)."""
    saved = ARCHIVE / f"s{seed}" / "sequences.json"
    if saved.is_file():
        return json.loads(saved.read_text())
    import torch
    import torch.nn.functional as F

    from oversmooth.adapt.text_blocks import documents, token_blocks
    from oversmooth.hf.load import load

    config = json.loads(archived(seed).read_text())["config"]
    torch.set_num_threads(config["threads"] or 1)
    nll = {}
    for arm in ("control", "neutreno-lam0.4"):
        loaded = load(str(RUNS / f"s{seed}" / "arms" / arm / "model"), 1, config["seq_len"] + 1)
        blocks = token_blocks(
            loaded.tokenizer, documents(config["text"])["val"], config["seq_len"], 1, config["eval_sequences"]
        )
        with torch.no_grad():
            logits = torch.cat([loaded.model(input_ids=b[None, :-1]).logits for b in blocks])
        nll[arm] = F.cross_entropy(logits.transpose(1, 2), blocks[:, 1:], reduction="none").double().mean(1)
    differences = (nll["neutreno-lam0.4"] - nll["control"]).tolist()
    with atomic_write(saved) as handle:
        json.dump(differences, handle)
    return differences


def random_init_null(seed: int, inits: int = 3) -> dict:
    """Where the problem exists (docs/registrations/fourth-step.md): last-layer cos_sim on
    ``adapt``'s validation probe (its first ``probe_size`` validation blocks, the first token left
    out) of SmolLM2 at ``inits`` random initialisations (``analyze.null.random_init``, seeds 0 ..),
    beside the pretrained model's on the same probe, which must equal the control's recorded start
    (the check that the probe is adapt's). Computed once with seed ``seed``'s registered config,
    then read from the archive (``null.json``)."""
    saved = ARCHIVE / "null.json"
    if saved.is_file():
        return json.loads(saved.read_text())
    import torch

    from oversmooth.adapt.config import AdaptConfig
    from oversmooth.adapt.hf_module import HFModule
    from oversmooth.adapt.pretrained import PretrainedSource
    from oversmooth.adapt.result import last_cos_sim
    from oversmooth.adapt.run import train_config
    from oversmooth.analyze.null import random_init
    from oversmooth.train.evaluation import layer_metrics, validation_probe

    recorded = json.loads(archived(seed).read_text())
    config = AdaptConfig.from_dict(recorded["config"])
    torch.set_num_threads(config.threads or 1)
    source = PretrainedSource(config)
    task = source.task()
    probe = validation_probe(task, train_config(config, task.size("train") // config.batch_size).probe_size)
    pretrained = source.arm(None)
    with torch.no_grad():
        start = last_cos_sim(layer_metrics(pretrained, probe))
        control_start = AdaptResult.from_dict(recorded).control.start_cos_sim_last
        if abs(start - control_start) > 1e-4:
            raise SystemExit(
                f"the probe is not adapt's: pretrained cos_sim {start:.4f}, control's start {control_start:.4f}"
            )
        values = []
        for init in range(inits):
            with torch.random.fork_rng():
                fresh = random_init(pretrained.base, init)
            wrapped = HFModule(fresh, fresh, logits=pretrained.logits, causal=pretrained.causal)
            values.append(last_cos_sim(layer_metrics(wrapped, probe)))
    null = {
        "pretrained": start,
        "random_init": values,
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values),
        "probe_sequences": int(probe.shape[0]),
    }
    with atomic_write(saved) as handle:
        json.dump(null, handle, indent=1)
    return null


def regime(null: dict, seeds: list[int]) -> dict:
    """The record's ``regime``: the control's last-layer cos_sim after adaptation (mean over those of
    ``seeds`` that recorded one) beside the null, and what docs/registrations/fourth-step.md's rule
    (``OVERSMOOTHS``) and the null each say of it; and ``oversmooths``, the rule's answer."""
    results = [adapt_result(s) for s in seeds]
    measured = [r.control.cos_sim_last for r in results if r.control.cos_sim_last is not None]
    after = statistics.fmean(measured)
    null_side = "above" if after > null["mean"] else "below"
    text = (
        f"{after:.3f} vs {null['mean']:.3f} ± {null['sd']:.3f} (the control after adaptation, mean of {len(measured)} "
        f"seeds, vs {len(null['random_init'])} random inits; pretrained {null['pretrained']:.3f}; "
        f"adapt's validation probe, {null['probe_sequences']} blocks): {rule_side(after)}, "
        f"{null_side} what the architecture gives untrained"
    )
    return {"regime": text, "oversmooths": after >= OVERSMOOTHS}


def start_text(seed: int) -> str:
    """Where the arms started (their validation NLL before any step, the same for every seed: the
    pretrained model, patched or not), and what that makes of the test."""
    result = adapt_result(seed)
    return (
        f"; before any step NeuTRENO (lam 0.4) is at {result.patched[0].start['loss']:.2f} nats against the "
        f"control's {result.control.start['loss']:.2f} (claim 1b's perplexity budget on SmolLM2 admitted lam 0.05 "
        "only), so this tests whether 200 steps recover from that start, not NeuTRENO at a lam within budget"
    )


def evaluation_part(first: list[float], second: list[float]) -> dict[str, float]:
    """How much of two seeds' difference the evaluation set can explain: both were evaluated on the
    same sequences, so what a larger set would average away is the seed x sequence part, the
    standard error of the mean of (first - second) over the sequences."""
    gaps = [a - b for a, b in zip(first, second)]
    return {"between_seeds": statistics.fmean(gaps), "evaluation_se": statistics.stdev(gaps) / math.sqrt(len(gaps))}


def seed_rule(summary: dict) -> int | None:
    """The registered seed rule and its budget (docs/studies.md, "what each outcome of the seed rule
    leads to"): the test seeds to run, or None with the record's verdict and sentence set."""
    differences = summary["pilot"]["differences"]
    plan = seed_plan(differences, EFFECT, 0.05, MOST)
    sd, limit, needed = plan.sd, plan.limit, plan.needed
    summary["pilot"] |= {"sd": sd, "sd_upper_80": limit, "seeds_needed": needed}
    pilot = (
        f"the pilot's differences {', '.join(f'{d:+.3f}' for d in differences)} nats (exploratory, deciding nothing)"
    )
    if needed is not None and needed <= AFFORDABLE:
        return needed
    summary["verdict"] = "not tested"
    if needed is not None:
        summary["sentence"] = f"the seed rule asks {needed} pairs, more than the budget's {AFFORDABLE}; {pilot}"
        return None
    evaluation = evaluation_part(*(sequence_differences(seed) for seed in PILOT))
    summary["pilot"]["evaluation"] = evaluation
    detects = min_detectable_effect(AFFORDABLE, limit, 0.05)
    summary["sentence"] = (
        f"the seed rule asks more than {MOST} pairs (SD of the pilot's differences {sd:.3g}, its 80 % upper limit "
        f"{limit:.3g}; {AFFORDABLE} pairs detect {detects:.3g} nats, not {abs(EFFECT)}); a larger evaluation set "
        f"would remove at most {evaluation['evaluation_se']:.3g} of the seeds' {evaluation['between_seeds']:+.3g} "
        f"difference (its standard error over the 64 sequences), and more steps do not fit the budget; {pilot}"
    )
    return None


def main() -> None:
    archive()
    summary: dict = {
        "claim": "8 (SmolLM2)",
        "model": "SmolLM2-135M-Instruct adapted 200 steps: NeuTRENO (lam 0.4) vs the control, val NLL (nats/token)",
        "command": "python scripts/smollm2_8.py",
        "verdict": "pending",
        "effect": EFFECT,
        "unit": "nats/token",
    }
    pilot = [pair for seed in PILOT if (pair := val_nll(seed)) is not None]
    summary["pilot"] = {"seeds": list(PILOT), "differences": [m - c for m, c in pilot]}
    found = ", ".join(f"{m - c:+.3f}" for m, c in pilot) or "none yet"
    summary["sentence"] = f"{len(pilot)} of the pilot's {len(PILOT)} seeds finished (NeuTRENO - control: {found})"
    needed = seed_rule(summary) if len(pilot) == len(PILOT) else None
    if needed is not None:
        seeds = range(FIRST_TEST_SEED, FIRST_TEST_SEED + needed)
        pairs = {seed: pair for seed in seeds if (pair := val_nll(seed)) is not None}
        summary["test"] = {"seeds": list(seeds), "finished": sorted(pairs)}
        summary["sentence"] = f"{len(pairs)} of the {needed} test seeds the pilot's seed rule asks have finished"
        if len(pairs) == needed:
            decision = decide([m for m, _ in pairs.values()], [c for _, c in pairs.values()], "lower")
            summary |= {"verdict": decision.verdict, "sentence": decision.reason + start_text(min(pairs))}
            summary["test"] |= {
                "reading": in_magnitude(decision, EFFECT),
                "mean": decision.test.mean,
                "ci": [decision.ci_low, decision.ci_high],
                "p": decision.test.p_two_sided,
            }
    finished = sorted(int(path.parent.name[1:]) for path in ARCHIVE.glob("s*/adapt.json"))
    if finished:
        summary |= regime(random_init_null(finished[0]), finished)
    with atomic_write(ARCHIVE.with_suffix(".json")) as handle:
        json.dump(summary, handle, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
