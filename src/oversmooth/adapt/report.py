"""The files of an adaptation: ``adapt.csv`` (one row per arm x checkpoint), ``adapt.png``
(quality and last-layer cos_sim vs steps, every arm) and ``report.md`` (the verdict in words)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from oversmooth.adapt.result import AdaptResult
from oversmooth.adapt.verdict import judge, quality_measure
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.plotting import figure, save_png


def table(result: AdaptResult) -> pd.DataFrame:
    """One row per arm x evaluation; under ``--ramp`` the ramped knobs each evaluation used
    (``knobs_in_force``, empty for the control)."""
    rows = [{"method": arm.method, "knobs": _knobs(arm.knobs), **r} for arm in result.arms.values() for r in arm.rows]
    frame = pd.DataFrame(rows)
    first = ["arm", "method", "knobs", "step"]
    if "knobs_in_force" in frame:
        frame["knobs_in_force"] = [_knobs(k) if isinstance(k, dict) else "" for k in frame["knobs_in_force"]]
        first.insert(3, "knobs_in_force")
    return frame[first + [c for c in frame.columns if c not in first]]


def _knobs(knobs: dict | None) -> str:
    return "" if not knobs else " ".join(f"{k}={v}" for k, v in sorted(knobs.items()))


def write_outputs(result: AdaptResult, out: Path) -> None:
    frame = table(result)
    with atomic_write(out / "adapt.csv") as handle:
        frame.to_csv(handle, index=False)
    plot(result, frame, out / "adapt.png")
    with atomic_write(out / "report.md") as handle:
        handle.write(markdown(result))


def plot(result: AdaptResult, frame: pd.DataFrame, path: Path) -> None:
    measure = quality_measure(result.control.start)
    plt, fig, axes = figure(1, 2, 10, 3.8)
    for name, rows in frame.groupby("arm", sort=False):
        style = "--" if name == "control" else "-"
        axes[0][0].plot(rows["step"], rows[f"val_{measure}"], style, marker="o", label=name)
        axes[0][1].plot(rows["step"], rows["cos_sim_last"], style, marker="o", label=name)
    axes[0][0].set(xlabel="step", ylabel=f"val {measure}", title="quality on held-out data")
    axes[0][1].set(xlabel="step", ylabel="last-layer cos_sim", title="token similarity, last layer")
    if "perplexity" in measure:
        axes[0][0].set_yscale("log")
    axes[0][0].legend()
    save_png(plt, fig, path)


def markdown(result: AdaptResult) -> str:
    cfg = result.config
    lines = [
        f"# Adaptation: {cfg['method']} on {result.model}",
        "",
        f"Objective `{result.objective}`; {cfg['steps']} steps, batch {cfg['batch_size']}, peak lr "
        f"{cfg['lr']:g} (warm-up {cfg['warmup']:g} of the steps, cosine decay), seed {cfg['seed']}"
        f"{', LoRA rank ' + str(cfg['lora']) if cfg['lora'] else ', whole model'}. Every arm starts from the "
        "same weights with the same data order and schedule; the control arm keeps the method unchanged"
        + (
            " and takes no step (lr 0): it is its own teacher, at its objective's minimum from the start."
            if result.objective == "distill"
            else "."
        ),
        "",
        *_data(result.data),
        *_ramp(result),
        "## Verdict (validation split, last step)",
        "",
    ]
    lines += [f"- {judge(result, arm).words()}" for arm in result.patched]
    lines += [
        "",
        "## Arms",
        "",
        "| arm | status | steps | wall s | val start | val end | test | cos_sim last: start -> end |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for arm in result.arms.values():
        lines.append(
            f"| {arm.name} | {arm.status} | {arm.steps} | {arm.wall_seconds:.0f} | {_scores(arm.start)} | "
            f"{_scores(arm.val)} | {_scores(arm.test)} | {_f(arm.start_cos_sim_last)} -> "
            f"{_f(arm.cos_sim_last)} |"
        )
    lines += [
        "",
        "Quality beside similarity: low similarity from a broken model is no success. "
        "`adapt.csv` has every checkpoint; `adapt.png` plots them; `arms/<arm>/model` is the adapted model.",
        "",
    ]
    return "\n".join(lines) + ("\n" + result.provenance.to_markdown() if result.provenance else "")


def _data(data: dict[str, dict[str, int]]) -> list[str]:
    """``Data, as trained and scored: train 3,456 tokens (27 sequences), ...`` (images: examples)."""
    unit = "tokens" if "tokens" in data["train"] else "examples"
    words = [
        f"{split} {sizes[unit]:,} {unit}" + (f" ({sizes['examples']:,} sequences)" if unit == "tokens" else "")
        for split, sizes in data.items()
    ]
    return [f"Data, as trained and scored: {', '.join(words)}.", ""]


def _ramp(result: AdaptResult) -> list[str]:
    """What ``--ramp`` did, and which knobs each evaluation of each patched arm used."""
    steps = result.config.get("ramp")
    arms = [arm for arm in result.patched if arm.rows and "knobs_in_force" in arm.rows[0]]
    if not steps or not arms:
        return []
    from oversmooth.mitigations.registry import METHODS

    ramped = list(arms[0].rows[0]["knobs_in_force"])
    off = {k: v for k, v in METHODS[result.config["method"]].zero.items() if k in ramped}
    lines = [
        f"**Ramped over the first {steps} steps**: each patched arm's {' and '.join(ramped)} grew linearly from "
        f"the method's off setting ({_setting(off)}) at step 0 to the arm's value at step {steps}, then stayed "
        "there (the method's other knobs: the arm's values throughout). Which knobs each evaluation used: step 0, "
        "the verdict's *patched* (before adaptation), the arm's full value, the damage the adaptation has to "
        f"undo; every later evaluation the knobs in force at its step, the arm's value from step {steps} on "
        "(`knobs_in_force` in `adapt.csv` and `adapt.json`):",
        "",
        "| arm | " + " | ".join(f"step {r['step']}" for r in arms[0].rows) + " |",
        "|---|" + "---|" * len(arms[0].rows),
    ]
    lines += ["| %s | %s |" % (arm.name, " | ".join(_setting(r["knobs_in_force"]) for r in arm.rows)) for arm in arms]
    return [*lines, ""]


def _setting(knobs: dict) -> str:
    """``{"lam": 0.30000000000000004}`` -> ``lam 0.3`` (per-unit lists as ``[0.1 0.2]``)."""

    def text(value) -> str:
        return f"[{' '.join(f'{v:.4g}' for v in value)}]" if isinstance(value, (list, tuple)) else f"{value:.4g}"

    return ", ".join(f"{k} {text(v)}" for k, v in knobs.items())


def _scores(scores: dict | None) -> str:
    return "n/a" if not scores else ", ".join(f"{k} {v:.4g}" for k, v in scores.items())


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
