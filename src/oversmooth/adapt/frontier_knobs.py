"""``adapt --knobs frontier``: each method's knob read off the similarity / quality frontier that
``oversmooth analyze --sweep`` draws on the same model and text, without fine-tuning: the largest
value of the method's swept knob (its registry entry's ``sweep`` grid, the method's other knobs at
their off setting) whose patched model stays within analyze's quality budget
(``analyze.frontier.best_within_budget``). A method none of whose values stays within it gets no
arm; a method with no swept knob (LayerScale, sigmaReparam: patches that start as the model) runs
at its defaults.

The sweep is analyze's own (``analyze.run_analysis`` on ``analyze.analysis_inputs`` of the same
``text``, one syntax for both commands), so the command recorded beside the choices
(``command``) reports the same knobs. Computed once, before any arm, and kept in the output
folder (``FILE``); another adaptation of the same model and text can read them from there
(``reused``, ``--frontier-from``) instead of sweeping again.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from oversmooth.adapt.config import AdaptConfig
from oversmooth.errors import UsageError
from oversmooth.mitigations import registry
from oversmooth.utils.json_files import read_table

FILE = "frontier.json"


def command(config: AdaptConfig, methods: tuple[str, ...]) -> str:
    """The ``oversmooth analyze`` command whose frontier these choices read."""
    words = ["oversmooth", "analyze", *([config.model] if config.model else []), "--text", config.text]
    words += ["--text-column", config.text_column] if config.text_column else []
    words += ["--methods", ",".join(methods), "--sweep", "--dtype", config.dtype]
    return shlex.join(words + (["--device", config.device] if config.device != "auto" else []))


def reused(path: str | Path, config: AdaptConfig, methods: tuple[str, ...]) -> dict[str, Any]:
    """``frontier``'s choices for ``methods`` read from another adaptation's ``frontier.json`` at
    ``path``; UsageError unless its sweep is the one ``config`` would run (the same analyze command
    but for its methods) and it holds each of ``methods``."""
    fix = "give the frontier.json of an adaptation of the same model, text, dtype and device, or drop --frontier-from"
    found = read_table(path, {"command": str, "text": str, "methods": dict}, fix)
    try:
        words, swept = _apart(found["command"])
    except (ValueError, IndexError):
        raise UsageError(f"{path} is damaged (its command names no --methods); {fix}") from None
    missing = [m for m in methods if not (m in swept and isinstance(found["methods"].get(m), list))]
    if words != _apart(command(config, methods))[0] or missing:
        why = f"it lacks {', '.join(missing)}" if missing else f"it swept another setting ({found['command']})"
        raise UsageError(f"--frontier-from {path}: {why}; {fix}")
    return found | {"methods": {m: found["methods"][m] for m in methods}}


def _apart(line: str) -> tuple[list[str], set[str]]:
    """An analyze command's words without its ``--methods`` value, and the methods it names
    (ValueError or IndexError when it has none)."""
    words = shlex.split(line)
    at = words.index("--methods")
    return words[:at] + words[at + 2 :], set(words[at + 1].split(","))


def frontier(config: AdaptConfig, loaded, methods: tuple[str, ...]) -> dict[str, Any]:
    """The sweep of each of ``methods`` over its grid on ``loaded`` (``hf.load``'s model, unpatched
    afterwards) and each method's choice: ``{"command", "text", "budget", "cos_sim_unpatched",
    "methods": {method: [choice per swept knob]}}``; a choice holds ``knob``, ``value`` (None: no
    value within budget), ``knobs`` (the arm's: None for none, ``{}`` for a method with no swept
    knob), its ``cos_sim`` and ``quality`` there, the swept ``points`` and ``why`` in words."""
    from oversmooth.analyze import BASELINE, AnalysisSettings, analysis_inputs, default_sweeps, run_analysis

    swept = tuple(m for m in methods if registry.method(m).sweep)
    inputs, source = analysis_inputs(loaded, config.text, text_column=config.text_column)
    settings = AnalysisSettings(methods=(), sweeps=default_sweeps(swept), attention_sequences=0)
    analysis = run_analysis(loaded.model, inputs, settings, tokenizer=loaded.tokenizer)
    base = float(analysis.tables[BASELINE]["cos_sim"].iloc[-1])
    return {
        "command": command(config, methods),
        "text": source,
        "budget": analysis.budget.describe(analysis.task),
        "cos_sim_unpatched": base,
        "methods": {m: [_choice(analysis.frontier, m, knob, base) for knob in registry.method(m).sweep] for m in swept}
        | {m: [_unswept(m)] for m in methods if m not in swept},
    }


def _choice(points: list, method: str, knob: str, base: float) -> dict[str, Any]:
    """The largest value of ``method``'s ``knob`` within budget, its numbers and why."""
    from oversmooth.analyze import best_within_budget

    curve = sorted((p for p in points if (p.method, p.knob) == (method, knob)), key=lambda p: abs(p.value))
    best = best_within_budget(curve, method, knob)
    grid = ", ".join(f"{p.value:g}" for p in curve)
    rows = [
        {"value": p.value, "cos_sim": p.cos_sim, "quality": p.quality.headline(), "within": p.quality.within_budget}
        for p in curve
    ]
    if best is None:
        why = (
            f"no {knob} of analyze's grid ({grid}) stays within the budget (the smallest, {curve[0].value:g}: "
            f"{curve[0].quality.headline()}): no arm"
        )
        return _entry(knob, None, None, rows, why)
    beyond = next((p for p in curve if abs(p.value) > abs(best.value)), None)
    why = (
        f"the largest {knob} of analyze's grid ({grid}) within the budget: {knob} {best.value:g}, last-layer cos_sim "
        f"{best.cos_sim:.3f} (unpatched {base:.3f}), {best.quality.headline()}"
        + (f"; {knob} {beyond.value:g} is out ({beyond.quality.headline()})" if beyond else "")
    )
    return _entry(knob, best, {**registry.method(method).zero, knob: best.value}, rows, why)


def _unswept(method: str) -> dict[str, Any]:
    start = " (its patch at its defaults starts as the model)" if registry.method(method).patch_is_identity else ""
    return _entry(None, None, {}, [], f"analyze --sweep sweeps no knob of it{start}: at its defaults")


def _entry(knob: str | None, point, knobs: dict | None, rows: list[dict], why: str) -> dict[str, Any]:
    """One choice as JSON (``point``: the chosen ``FrontierPoint``, or None)."""
    return {
        "knob": knob,
        "value": point and point.value,
        "knobs": knobs,
        "cos_sim": point and point.cos_sim,
        "quality": point and point.quality.headline(),
        "points": rows,
        "why": why,
    }
