"""``AdaptConfig``: one adaptation (a model, one or more mitigations at one or more knob settings
each, a schedule) described as data. JSON-able and checked by ``check()`` without loading anything (errors name its
fields: ``FieldError``, which a CLI maps to its flags); imports no torch.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oversmooth.data.text_source import TEXT_HELP, parse_text
from oversmooth.errors import FieldError, UsageError
from oversmooth.mitigations import registry
from oversmooth.train.run_spec import check_formats, option
from oversmooth.utils.plotting import DEFAULT_FORMATS, FORMATS
from oversmooth.utils.seeds import check_seed

OBJECTIVES = {
    "auto": "the model's own job: a train run's task, causal LM, masked LM, else distill",
    "task": "an `oversmooth train` run's own task and loss, on its own training split",
    "causal_lm": "next-token cross-entropy on the text (models with a causal-LM head)",
    "masked_lm": "masked-token cross-entropy on the text (models with a masked-LM head)",
    "distill": "match the unpatched model: 1 - cosine of token states (encoders), "
    "KL of next-token distributions (decoders)",
}
DEVICES, DTYPES = ("auto", "cpu", "cuda"), ("float32", "bfloat16")
CONTROL = "control"
ALL_PATCHABLE = "all-patchable"  # ``method``: every method that can patch the model (its source lists them)
FRONTIER = "frontier"  # ``knobs``: each method's from analyze's frontier (``oversmooth.adapt.frontier_knobs``)


#: the flag groups of ``oversmooth adapt --help`` (``MAIN``: the command's own options).
MAIN, KNOBS, SCHEDULE, RUN = "", "knobs", "schedule", "run"


@dataclass(frozen=True)
class AdaptConfig:
    """Every setting of one adaptation. Arms: one ``control`` (method unchanged), and per method
    of ``method`` (one name, several comma-separated, or ``all-patchable``) one patched arm per
    knob setting: ``knobs`` is, for one method, a tuple of settings (``({"lam": 0.2}, {"lam":
    0.6})``: two arms; ``({},)``: the method's defaults), for several a dict method -> such a
    tuple (a method left out: its defaults), or ``"frontier"``: each method's from the quality
    frontier of ``analyze --sweep`` (``oversmooth.adapt.frontier_knobs``). Every arm starts from the
    same weights with the same seed, data order and schedule (``steps``, peak ``lr``, linear
    warm-up over ``warmup`` of the steps, cosine decay).

    ``None`` settings take the source's default: a train run's own batch size, weight decay and
    gradient clip, and a tenth of its peak lr; for a pretrained model batch 8, lr 1e-4 (whole
    model) or 1e-3 (LoRA), weight decay 0.01, clip 1.0.

    Each field's help and group (``option``) make its ``oversmooth adapt`` flag; ``%(default)s``
    in a help is the field's default.
    """

    model: str | None = option(
        None,
        "a Hugging Face folder, a .gguf file, an installed model package, or an `oversmooth train` "
        "run folder (default: the bundled all-MiniLM-L6-v2)",
        group=MAIN,
    )
    out: str = option("runs/adapt", "output folder", group=MAIN)
    method: str = option(
        "neutreno",
        "the mitigation to patch in; several, comma-separated (neutreno,contranorm: each beside the one "
        f"control), or {ALL_PATCHABLE}: every method that can patch this model (default %(default)s)",
        group=MAIN,
    )
    knobs: tuple[dict[str, Any], ...] | dict[str, tuple[dict[str, Any], ...]] | str = option(
        ({},),
        "one patched arm per value: --lam 0.2,0.6,1.0 makes three (several knobs of a method with lists: every "
        f"combination); --knobs {FRONTIER}: each method's largest swept knob within analyze's quality budget",
        group=KNOBS,
    )
    frontier_from: str | None = option(
        None,
        f"with --knobs {FRONTIER}: read the knobs off this frontier.json (another adaptation's, of the same model, "
        "text, dtype and device, holding every method asked for) instead of running the sweep again",
        group=KNOBS,
    )
    objective: str = option("auto", f"{' | '.join(OBJECTIVES)} (default %(default)s)", group=MAIN)
    text: str = option("austen", f"pretrained text models: {TEXT_HELP} (default %(default)s)", group=MAIN)
    text_column: str | None = option(None, "the column of a CSV or TSV --text file to read", group=MAIN)
    steps: int = option(200, "optimiser steps per arm (default %(default)s)", group=SCHEDULE)
    batch_size: int | None = option(None, "default: 8, or the train run's", group=SCHEDULE)
    seq_len: int = option(128, "pretrained text models: tokens per sequence", group=SCHEDULE)
    lr: float | None = option(
        None, "peak lr (default 1e-4 whole model, 1e-3 LoRA, a tenth of a train run's)", group=SCHEDULE
    )
    warmup: float = option(0.1, "warm-up share of the steps (default %(default)s)", group=SCHEDULE)
    ramp: int = option(
        0,
        "bring the patch in over the first N steps: each knob grows linearly from the method's off setting "
        "(NeuTRENO lam 0, LayerScale gamma 1) at step 0 to its value at step N; the start is still scored at "
        "full strength (default %(default)s: full strength from the first step)",
        group=SCHEDULE,
    )
    weight_decay: float | None = option(None, group=SCHEDULE)
    grad_clip: float | None = option(None, group=SCHEDULE)
    seed: int = option(0, group=SCHEDULE)
    record_every: int | None = option(None, "steps between held-out evaluations (default steps/8)", group=SCHEDULE)
    eval_sequences: int = option(
        64, "pretrained models: held-out sequences per split (default %(default)s)", group=SCHEDULE
    )
    lora: int = option(0, "LoRA rank through peft (0: whole model)", group=RUN)
    device: str = option("auto", " | ".join(DEVICES), group=RUN)
    dtype: str = option("float32", " | ".join(DTYPES), group=RUN)
    gradient_checkpointing: bool = option(False, "families that support it", group=RUN)
    threads: int | None = option(None, "CPU threads for torch", group=RUN)
    progress: bool = option(True, "no progress bar", group=RUN)  # help of --no-progress
    format: str = option(
        ",".join(DEFAULT_FORMATS),
        f"the formats of adapt's figures, comma-separated: {', '.join(FORMATS)} (default %(default)s; PNGs at 200 dpi)",
        group=RUN,
    )

    def check(self) -> AdaptConfig:
        """Ranges and choices of the fields (``FieldError`` naming the field and the fix); returns self."""
        for name in ("steps", "seq_len", "eval_sequences"):
            _at_least(name, getattr(self, name), 1)
        for name in ("batch_size", "record_every", "threads"):
            if getattr(self, name) is not None:
                _at_least(name, getattr(self, name), 1)
        _at_least("lora", self.lora, 0)
        _at_least("ramp", self.ramp, 0)
        if self.ramp > self.steps:
            raise FieldError(
                "{ramp} {got} is longer than {steps} {count}; ramp over at most {count} steps",
                got=self.ramp,
                count=self.steps,
            )
        check_seed(self.seed)
        check_formats(self.format)
        for name in ("lr", "grad_clip"):
            value = getattr(self, name)
            if value is not None and not (_number(value) and value > 0):
                raise FieldError("{%s} must be a number > 0, got {got!r}" % name, got=value)
        if self.weight_decay is not None and not (_number(self.weight_decay) and self.weight_decay >= 0):
            raise FieldError("{weight_decay} must be a number >= 0, got {got!r}", got=self.weight_decay)
        if not (_number(self.warmup) and 0 <= self.warmup < 1):
            raise FieldError("{warmup} is a share of the steps in [0, 1), got {got!r}", got=self.warmup)
        for name, choices in (("objective", tuple(OBJECTIVES)), ("device", DEVICES), ("dtype", DTYPES)):
            if getattr(self, name) not in choices:
                raise FieldError(
                    "{%s} must be one of {choices}, got {got!r}" % name,
                    choices=" | ".join(choices),
                    got=getattr(self, name),
                )
        parse_text(self.text)
        names = self.method_names()
        if self.frontier_from is not None and self.knobs != FRONTIER:
            only = f"{{knobs}} {FRONTIER}"
            raise FieldError("{frontier_from} is read by %s only; add %s or drop it" % (only, only))
        if isinstance(self.knobs, str):
            if self.knobs != FRONTIER:
                raise FieldError("{knobs} is a list of knob settings or %s, got {got!r}" % FRONTIER, got=self.knobs)
            return self
        if isinstance(self.knobs, dict):
            for name, settings in self.knobs.items():
                if names is not None and name not in names:
                    raise FieldError(
                        "{knobs} sets %s, which {method} %s does not name; add it there or drop its knobs"
                        % (name, self.method)
                    )
                registry.method(name)  # an unknown method
                _check_settings(settings, name)
        else:
            _check_settings(self.knobs, self.method)
            if names != (self.method,) and any(self.knobs):
                raise UsageError(
                    f"with several methods ({self.method}) knobs are given per method, "
                    "e.g. {'neutreno': [{'lam': 0.6}]}; a list of settings is for one method"
                )
        return self

    def method_names(self) -> tuple[str, ...] | None:
        """The methods ``method`` names, in its order; None for ``all-patchable`` (the source lists
        those that can patch its model). Checked: ``FieldError`` naming ``method`` for none, one
        named twice, ``all-patchable`` beside names; ``UsageError`` for an unknown one."""
        names = tuple(name.strip() for name in self.method.split(",") if name.strip())
        if not names:
            raise FieldError(
                "{method} names no method; name one (neutreno), several (neutreno,contranorm) or %s" % ALL_PATCHABLE
            )
        if names == (ALL_PATCHABLE,):
            return None
        if ALL_PATCHABLE in names:
            raise FieldError("{method} %s stands alone; drop the other names or it" % ALL_PATCHABLE)
        twice = next((name for name in names if names.count(name) > 1), None)
        if twice:
            raise FieldError("{method} names %s twice; name each method once" % twice)
        for name in names:
            registry.method(name)  # UsageError: unknown, with the choices
        return names

    def knobs_of(self, name: str) -> tuple[dict[str, Any], ...]:
        """The knob settings given for method ``name``, one patched arm each (``({},)``: its defaults)."""
        if isinstance(self.knobs, dict):
            return tuple(self.knobs.get(name, ({},)))
        return tuple(self.knobs)

    @property
    def every(self) -> int:
        """Steps between held-out evaluations."""
        return self.record_every or max(1, self.steps // 8)

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON; ``ramp`` and ``text_column`` only when set (an adaptation without
        them is described, and resumes, as before they existed)."""
        data = dataclasses.asdict(self)
        data["knobs"] = _knobs_data(self.knobs)
        for name in ("ramp", "text_column"):
            if not data[name]:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdaptConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise UsageError(f"unknown adapt setting(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
        knobs = data.get("knobs", ({},))
        if isinstance(knobs, dict):
            knobs = {name: tuple(map(dict, settings)) for name, settings in knobs.items()}
        elif not isinstance(knobs, str):
            knobs = tuple(map(dict, knobs))
        return cls(**{**data, "knobs": knobs})

    def save(self, path: Path) -> None:
        from oversmooth.utils.atomic import atomic_write

        with atomic_write(path) as handle:
            json.dump(self.to_dict(), handle, indent=2)


#: fields that may differ when an adaptation is resumed in the same folder: how it runs, not what it learns.
RUN_OPTIONS = ("threads", "progress", "format", "frontier_from")


def setting(config: AdaptConfig) -> dict[str, Any]:
    """What an adaptation learns: every field but ``RUN_OPTIONS`` and ``out``."""
    return {k: v for k, v in config.to_dict().items() if k not in (*RUN_OPTIONS, "out")}


def arm_name(method: str, knobs: dict[str, Any]) -> str:
    """``("neutreno", {"lam": 0.6})`` -> ``"neutreno-lam0.6"``; ``{}`` (the defaults) -> ``"neutreno"``."""
    return method + "".join(f"-{k}{v:g}" if isinstance(v, float) else f"-{k}{v}" for k, v in sorted(knobs.items()))


def _check_settings(settings: Any, name: str) -> None:
    """``settings``: a non-empty list of knob dicts, one per patched arm of method ``name``, each once."""
    if not isinstance(settings, (tuple, list)) or not settings or not all(isinstance(k, dict) for k in settings):
        raise UsageError(
            f"knobs of {name} are a list of knob settings, one per patched arm, e.g. [{{'lam': 0.6}}]; got {settings!r}"
        )
    if len({arm_name(name, k) for k in settings}) != len(settings):
        raise UsageError(f"two patched arms of {name} have the same knobs; give each setting once")


def _knobs_data(knobs: Any) -> Any:
    """``knobs`` as JSON: a list of settings, a dict method -> list, or ``"frontier"``."""
    if isinstance(knobs, dict):
        return {name: [dict(k) for k in settings] for name, settings in knobs.items()}
    return knobs if isinstance(knobs, str) else [dict(k) for k in knobs]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _at_least(name: str, value: Any, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise FieldError("{%s} must be a whole number >= {low}, got {got!r}" % name, low=low, got=value)
