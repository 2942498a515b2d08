"""Claim 8 on SmolLM2, fairly (docs/registrations/fourth-step.md, section 3): per seed (20-22) one
adaptation of SmolLM2-135M-Instruct on the Austen text, 600 steps, with the control and NeuTRENO at
lambda 0.4 and 0.05, both ramped from lambda 0 over the first 200 steps (``adapt --ramp 200``); each
patched arm's final validation NLL per token minus the control's, two-sided paired t-tests, Holm
over the two arms, each Holm-matched interval beside the paper's adaptation effect carried to a
language model (Nguyen et al. 2023, Table 1: DeiT-tiny 72.17 -> 72.63 % after adaptation, 1.65 % of
the error removed, carried as 1.65 % of the control's NLL). ``scripts/smollm2_8_fair.sh`` runs the
seeds and archives each ``adapt.json`` under ``results/fourth-step/smollm2-8-fair/s<seed>/``; the
report tables one record per arm with the other fresh tests and draws their learning curves."""

from __future__ import annotations

import statistics
from pathlib import Path

from oversmooth.claims.protocol import OVERSMOOTHS, rule_side
from oversmooth.claims.third_protocol import test_fields
from oversmooth.claims.verdicts import PairedClaim, PaperEffect, decide_family, magnitude_reason
from oversmooth.errors import UsageError
from oversmooth.utils.json_files import NUMBER, check_table, read_table

FOLDER = "fourth-step"
NAME = "smollm2-8-fair"
SEEDS = (20, 21, 22)
STEPS, RAMP = 600, 200
LAMBDAS = (0.4, 0.05)
#: the model and the validation text of claim 8's first test on SmolLM2 (scripts/smollm2_8_seeds.sh), so
#: that its random-init null and pretrained cos_sim are this test's too
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROBE = {"text": "austen", "seq_len": 128, "eval_sequences": 64}
COMMAND = "scripts/smollm2_8_fair.sh 20 21 22"
#: NeuTRENO's adaptation result (DeiT-tiny on ImageNet), carried as a share of the control's NLL
PAPER = PaperEffect(72.17, 72.63, "accuracy")


def read_fair_adaptations(folder: str | Path) -> dict[int, dict]:
    """Each archived seed's ``adapt.json`` under ``folder/smollm2-8-fair/s<seed>/`` (``folder``:
    ``results/fourth-step``), checked to be the registered adaptation; a damaged or different one
    is a UsageError naming it."""
    found = {}
    for path in sorted((Path(folder) / NAME).glob("s*/adapt.json")):
        fix = f"delete its folder and rerun: {COMMAND}"
        record = read_table(path, {"config": dict, "arms": dict}, fix)
        fields = {"seed": int, "steps": int, "ramp": int, "model": str} | {key: type(v) for key, v in PROBE.items()}
        config = check_table(record["config"], f"{path} (its config)", fields, fix)
        lams = tuple(arm.get("knobs", {}).get("lam") for name, arm in record["arms"].items() if name != "control")
        ran = (config["steps"], config["ramp"], lams, Path(config["model"]).name, *(config[k] for k in PROBE))
        registered = (STEPS, RAMP, LAMBDAS, GGUF, *PROBE.values())
        if path.parent.name != f"s{config['seed']}" or ran != registered or "control" not in record["arms"]:
            raise UsageError(
                f"{path} is not the registered adaptation of its seed (steps, ramp, lambdas, model, "
                f"{', '.join(PROBE)} {ran}, not {registered}, and a control arm, in folder s<seed>); {fix}"
            )
        for name, arm in record["arms"].items():
            check_table(arm, f"{path} (arm {name})", {"val": dict, "start": dict, "rows": list}, fix)
            check_table(arm["val"], f"{path} (arm {name}'s val)", {"loss": NUMBER}, fix)
        probe = {"cos_sim_last": NUMBER, "start_cos_sim_last": NUMBER}  # the regime's; a patched arm's may be None
        check_table(record["arms"]["control"], f"{path} (arm control)", probe, fix)
        found[config["seed"]] = record
    return found


def _arm(record: dict, lam: float) -> dict:
    return next(arm for name, arm in record["arms"].items() if name != "control" and arm["knobs"]["lam"] == lam)


def fair_records(adapted: dict[int, dict]) -> list[dict]:
    """One record per patched arm (``claims.third_protocol``'s fields, with the numbers once
    decided): "pending" until every registered seed has finished, then decided by Holm over both."""
    done = [seed for seed in SEEDS if seed in adapted]
    base = {
        "command": COMMAND,
        "unit": "nats/token",
        "direction": "lower",
        **(_regime([adapted[s] for s in done]) if done else {}),
    }
    if len(done) < len(SEEDS):
        sentence = f"{len(done)} of the {len(SEEDS)} registered seeds ({SEEDS[0]}-{SEEDS[-1]}) have finished"
        pending = {"verdict": "pending", "sentence": sentence}
        return [base | {"claim": f"8 (SmolLM2, lam {lam:g})", "model": _model(lam)} | pending for lam in LAMBDAS]
    control = [adapted[s]["arms"]["control"]["val"]["loss"] for s in SEEDS]
    effect = -PAPER.error_removed * statistics.fmean(control)
    claims = [
        PairedClaim(tuple(_arm(adapted[s], lam)["val"]["loss"] for s in SEEDS), tuple(control), "lower")
        for lam in LAMBDAS
    ]
    records = []
    for lam, decision in zip(LAMBDAS, decide_family(claims)):
        reads = [_at_full_lam(_arm(adapted[s], lam)["rows"]) for s in SEEDS]  # every seed records the same steps
        at_full = statistics.fmean(loss for _, loss in reads)
        control_start = statistics.fmean(adapted[s]["arms"]["control"]["start"]["loss"] for s in SEEDS)
        scope = (
            f"at lam {lam:g}, ramped from 0 over {RAMP} of {STEPS} steps, from a start of {control_start:.2f} nats "
            f"(lam 0; the control's too), {at_full:.2f} at the first evaluation at full lam (step {reads[0][0]}), "
            f"against the paper's adaptation effect carried: {effect:+.3f} nats ({100 * PAPER.error_removed:.2f} % "
            f"of the control's {statistics.fmean(control):.3f})"
        )
        verdict, reason = magnitude_reason(decision, effect)
        records.append(
            base
            | {
                "claim": f"8 (SmolLM2, lam {lam:g})",
                "model": _model(lam),
                "verdict": verdict,
                "sentence": f"{reason}; {scope}",
                "effect": effect,
                "test": test_fields(decision, list(SEEDS)),
            }
        )
    return records


def _regime(finished: list[dict]) -> dict:
    """Where the test ran (docs/registrations/fourth-step.md), deciding nothing: the control's
    last-layer cos_sim after the last step, mean over the ``finished`` adaptations, beside the
    pretrained model's before any step, on the probe of claim 8's first test on SmolLM2 (the same
    ``GGUF`` and ``PROBE``, checked by ``read_fair_adaptations``), whose record holds SmolLM2's
    random-init null."""
    controls = [record["arms"]["control"] for record in finished]
    after = statistics.fmean(arm["cos_sim_last"] for arm in controls)
    before = statistics.fmean(arm["start_cos_sim_last"] for arm in controls)
    seeds = f"{len(controls)} seed" + "s" * (len(controls) > 1)
    return {
        "regime": f"{after:.3f} (the control after {STEPS} steps, mean of {seeds}; {before:.3f} pretrained, "
        f"before any step; the validation probe of 8 (SmolLM2), whose regime gives SmolLM2 at random init): "
        f"{rule_side(after)}",
        "oversmooths": after >= OVERSMOOTHS,
    }


def _model(lam: float) -> str:
    return (
        f"SmolLM2-135M-Instruct adapted {STEPS} steps: NeuTRENO (lam {lam:g}, ramped over {RAMP}) vs the control, "
        "val NLL (nats/token)"
    )


def _at_full_lam(rows: list[dict]) -> tuple[int, float]:
    """The first registered evaluation (every 75 steps) at or after the ramp's end: its step and validation NLL."""
    row = next(row for row in rows if row["step"] >= RAMP)
    return row["step"], row["val_loss"]


def learning_curves(adapted: dict[int, dict]) -> dict[str, list[tuple[int, float, float]]]:
    """Per arm, ``(step, val NLL, last-layer cos_sim)`` averaged over the finished seeds, at each
    recorded step (every seed records the same steps)."""
    curves: dict[str, list[tuple[int, float, float]]] = {}
    for name in next(iter(adapted.values()))["arms"] if adapted else ():
        rows = [record["arms"][name]["rows"] for record in adapted.values()]
        curves[name] = [
            (
                steps[0]["step"],
                statistics.fmean(r["val_loss"] for r in steps),
                statistics.fmean(r["cos_sim_last"] for r in steps),
            )
            for steps in zip(*rows)
        ]
    return curves
