"""The files of an adaptation: ``adapt.csv`` (one row per arm x checkpoint), the figures ``adapt``
(quality and last-layer cos_sim vs steps, every arm) and ``tradeoff`` (quality against similarity,
step 0 and the end: ``oversmooth.adapt.tradeoff``), each a PNG or each ``--format``, and
``report.md`` (the verdict in words, the methods and their knobs, the tradeoff table)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from oversmooth.adapt import tradeoff
from oversmooth.adapt.result import AdaptResult
from oversmooth.adapt.verdict import judge, quality_measure, small_sample
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.markdown import markdown_table
from oversmooth.utils.plotting import (
    DEFAULT_FORMATS,
    PAGE,
    figure,
    figure_files,
    figure_formats,
    figure_legend,
    fill,
    integer_ticks,
    save_figure,
    set_title,
)


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
    plot(result, frame, out / "adapt", _formats(result))
    tradeoff.plot(result, out / "tradeoff", _formats(result))
    with atomic_write(out / "report.md") as handle:
        handle.write(markdown(result))


def _formats(result: AdaptResult) -> tuple[str, ...]:
    """The figure formats the adaptation asked for (``AdaptConfig.format``; PNG for one written before it)."""
    return figure_formats(result.config.get("format", ",".join(DEFAULT_FORMATS)))


def figures(result: AdaptResult) -> list[str]:
    """The names of the adaptation's figure files."""
    return [*figure_files("adapt", _formats(result)), *figure_files("tradeoff", _formats(result))]


def plot(result: AdaptResult, frame: pd.DataFrame, stem: Path, formats: tuple[str, ...]) -> None:
    """Each arm's held-out quality and last-layer cos_sim against steps, titled with the model, the
    method and what each panel was measured on."""
    measure = quality_measure(result.control.start)
    held_out, probe = _measured_on(result)
    color_of = tradeoff.colors(result)  # as in the tradeoff figure
    with figure(1, 2, PAGE, 2.9) as (fig, axes):
        for name, rows in frame.groupby("arm", sort=False):
            style = {"linestyle": "--" if name == "control" else "-", "color": color_of[name]}
            axes[0][0].plot(rows["step"], rows[f"val_{measure}"], marker="o", label=name, **style)
            axes[0][1].plot(rows["step"], rows["cos_sim_last"], marker="o", label=name, **style)
        axes[0][0].set(xlabel="step", ylabel=f"val {measure}")
        axes[0][1].set(xlabel="step", ylabel="last-layer cos_sim")
        set_title(axes[0][0], f"quality on {held_out}")
        set_title(axes[0][1], f"token similarity on {probe}")
        if "perplexity" in measure:
            axes[0][0].set_yscale("log")
        integer_ticks(*axes[0])
        figure_legend(fig)
        source, cfg = result.source, result.config
        model = (
            source["model"] if source["kind"] == "pretrained" else f"{Path(source['path']).name} ({source['model']})"
        )
        fig.suptitle(fill(f"{model}: {cfg['method']} patched in, {result.objective} adaptation", PAGE))
        save_figure(fig, stem, formats)


def _measured_on(result: AdaptResult) -> tuple[str, str]:
    """What the quality and the similarity were measured on, in words: the validation split, and the
    first examples of it that ``run.train_config``'s probe reads."""
    val = result.data["val"]
    unit = f"sequences x {val['tokens'] // val['examples']} tokens" if "tokens" in val else "images"
    probe = min(32, result.config["eval_sequences"], val["examples"])
    return f"{val['examples']} validation {unit}", f"the first {probe} validation {unit}"


def markdown(result: AdaptResult) -> str:
    cfg = result.config
    methods = ", ".join(dict.fromkeys(arm.method for arm in result.patched)) or cfg["method"]
    lines = [
        f"# Adaptation: {methods} on {result.model}",
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
        *_methods(result),
        *_ramp(result),
        "## Verdict (validation split, last step)",
        "",
    ]
    warning = small_sample(result)
    lines += [f"**Warning**: {warning}.", ""] if warning else []
    lines += [f"- {judge(result, arm).words()}" for arm in result.patched]
    lines += [
        "",
        "## Similarity against quality: step 0 and the end, beside the control",
        "",
        tradeoff.verdict_words(result),
        "",
        "Step 0 is each arm patched, before adaptation, beside the control at step 0; the end, beside the "
        "control's end. Removed: the control's last-layer cos_sim minus the arm's; quality lost: against the "
        "control (ratio - 1 for a perplexity, else the difference; positive: worse). The tradeoff figure draws it: "
        "one arrow per arm from step 0 to the end, the control as a square, the budget as a line, and cos_sim "
        "per layer.",
        "",
        *tradeoff.table(result),
    ]
    lines += [
        "",
        "## Arms",
        "",
        markdown_table(
            ["arm", "status", "steps", "wall s", "val start", "val end", "test", "cos_sim last: start -> end"],
            [
                [arm.name, arm.status, arm.steps, f"{arm.wall_seconds:.0f}", _scores(arm.start), _scores(arm.val)]
                + [_scores(arm.test), f"{_f(arm.start_cos_sim_last)} -> {_f(arm.cos_sim_last)}"]
                for arm in result.arms.values()
            ],
        ),
        "",
        *_cost(result),
        "Quality beside similarity: low similarity from a broken model is no success. "
        f"`adapt.csv` has every checkpoint; {', '.join(figure_files('adapt', _formats(result)))} plots them; "
        "`arms/<arm>/model` is the adapted model"
        + (
            " (the control's, which took no step, refers to the model as it came: its `same_as.json`)."
            if result.objective == "distill"
            else "."
        ),
        "",
    ]
    return "\n".join(lines) + ("\n" + result.provenance.to_markdown() if result.provenance else "")


def _cost(result: AdaptResult) -> list[str]:
    """Each arm's seconds per step and peak memory, and their ratios to the control's (the memory's:
    of the peak above the arm's start, what the arm itself added)."""
    arms = list(result.arms.values())
    if not any(arm.seconds_per_step or arm.memory for arm in arms):
        return []  # an adaptation written before they were recorded
    control = result.control
    measure = next((arm.memory["measure"] for arm in arms if arm.memory), "memory")
    added = lambda arm: arm.memory and arm.memory["peak_mib"] - arm.memory["start_mib"]  # noqa: E731
    rows = [
        [
            arm.name,
            _number(arm.seconds_per_step, ".3g"),
            _number(_over(arm.seconds_per_step, control.seconds_per_step), ".3f"),
            *(_number(arm.memory and arm.memory[k], ".0f") for k in ("start_mib", "peak_mib")),
            _number(added(arm), ".0f"),
            _number(_over(added(arm), added(control)), ".3f"),
        ]
        for arm in arms
    ]
    return [
        "## Cost per arm, against the control",
        "",
        "Seconds per optimiser step: the mean wall time of the steps of the session that finished the arm "
        f"(evaluations and checkpoints excluded). Memory: the {measure} when the arm began (before its model "
        "was built: the source and everything loaded once, shared by every arm) and at most while it ran "
        "(start, steps, evaluations), in MiB; the peak above the start is what the arm added, set against the "
        "control's.",
        "",
        markdown_table(
            ["arm", "s per step", "x control", "MiB at start", "peak MiB", "peak above start", "x control"], rows
        ),
        "",
    ]


def _over(value: float | None, reference: float | None) -> float | None:
    return None if value is None or not reference else value / reference


def _number(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _data(data: dict[str, dict[str, int]]) -> list[str]:
    """``Data, as trained and scored: train 3,456 tokens (27 sequences), ...`` (images: examples)."""
    unit = "tokens" if "tokens" in data["train"] else "examples"
    words = [
        f"{split} {sizes[unit]:,} {unit}" + (f" ({sizes['examples']:,} sequences)" if unit == "tokens" else "")
        for split, sizes in data.items()
    ]
    return [f"Data, as trained and scored: {', '.join(words)}.", ""]


def _methods(result: AdaptResult) -> list[str]:
    """With several methods or frontier knobs: how each method's arms got their knobs, or why it has none."""
    if not (result.frontier or len(result.methods) > 1):
        return []
    lines = ["## Methods and their knobs", ""]
    if result.frontier:
        lines += [
            f"Knobs read off the frontier of `{result.frontier['command']}` (no fine-tuning; text: "
            f"{result.frontier['text']}; budget: {result.frontier['budget']}; `frontier.json`): each method's "
            "largest swept value within that budget.",
            "",
        ]
    return [*lines, *(f"- {name}: {why}" for name, why in result.methods.items()), ""]


def _ramp(result: AdaptResult) -> list[str]:
    """What ``--ramp`` did, and which knobs each evaluation of each patched arm used."""
    steps = result.config.get("ramp")
    arms = [arm for arm in result.patched if arm.rows and "knobs_in_force" in arm.rows[0]]
    if not steps or not arms:
        return []
    from oversmooth.mitigations.registry import METHODS

    ramped = {arm.method: list(arm.rows[0]["knobs_in_force"]) for arm in arms}
    off = "; ".join(
        f"{name} {_setting({k: v for k, v in METHODS[name].zero.items() if k in knobs})}"
        for name, knobs in ramped.items()
    )
    lines = [
        f"**Ramped over the first {steps} steps**: each patched arm's "
        f"{' and '.join(dict.fromkeys(k for knobs in ramped.values() for k in knobs))} grew linearly from "
        f"its method's off setting ({off}) at step 0 to the arm's value at step {steps}, then stayed "
        "there (the method's other knobs: the arm's values throughout). Which knobs each evaluation used: step 0, "
        "the verdict's *patched* (before adaptation), the arm's full value, the damage the adaptation has to "
        f"undo; every later evaluation the knobs in force at its step, the arm's value from step {steps} on "
        "(`knobs_in_force` in `adapt.csv` and `adapt.json`):",
        "",
        markdown_table(
            ["arm", *(f"step {r['step']}" for r in arms[0].rows)],
            [[arm.name, *(_setting(r["knobs_in_force"]) for r in arm.rows)] for arm in arms],
        ),
        "",
    ]
    return lines


def _setting(knobs: dict) -> str:
    """``{"lam": 0.30000000000000004}`` -> ``lam 0.3`` (per-unit lists as ``[0.1 0.2]``)."""

    def text(value) -> str:
        return f"[{' '.join(f'{v:.4g}' for v in value)}]" if isinstance(value, (list, tuple)) else f"{value:.4g}"

    return ", ".join(f"{k} {text(v)}" for k, v in knobs.items())


def _scores(scores: dict | None) -> str:
    return "n/a" if not scores else ", ".join(f"{k} {v:.4g}" for k, v in scores.items())


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
