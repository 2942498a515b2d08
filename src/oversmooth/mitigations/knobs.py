"""Knobs, the base of every method's knob dataclass: fields that declare default, range and help.

Torch-free, so that ``oversmooth ... --help`` lists every knob flag without importing torch. Each
method's ``Knobs`` subclass and ``Method`` record are in ``mitigations/registry.py``; its maths,
layer and patch in its own module (``mitigations/<method>.py``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from oversmooth.errors import UsageError

#: Where our knobs apply: training our own models, patching pretrained ones, or both.
Scope = Literal["train", "patch"]


def knob(
    default: Any,
    help: str,
    *,
    low: float | None = None,
    high: float | None = None,
    open_high: bool = False,
    choices: tuple[str, ...] = (),
    flag: str | None = None,
    causal: Any = None,
    scope: tuple[Scope, ...] = ("train", "patch"),
    per: str | None = None,
    label: str | None = None,
) -> Any:
    """A knob field: ``default`` and one line of ``help``; ``low``/``high`` the closed range
    (``open_high``: high excluded), ``choices`` the allowed strings, ``flag`` the global name (CLI
    flag ``--flag``, flat config key; default ``<method>_<field>``), ``causal`` another default
    for training a causal LM, ``scope`` where it applies, ``per`` ("head" / "channel"): a patch may give one
    number or one per head / channel; ``label`` its name in error messages."""
    meta = {
        "help": help,
        "label": label,
        "low": low,
        "high": high,
        "open_high": open_high,
        "choices": choices,
        "flag": flag,
        "causal": causal,
        "scope": scope,
        "per": per,
    }
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Knobs:
    """Base of a method's knobs (a frozen dataclass); ``check()`` runs at construction."""

    method: ClassVar[str] = ""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Each field against its declared range / choices; one UsageError line naming the knob."""
        for f in dataclasses.fields(self):
            value, meta = getattr(self, f.name), f.metadata
            name = meta["label"] or f"{self.method} {f.name}"
            if meta["choices"]:
                if value not in meta["choices"]:
                    raise UsageError(f"{name} {value!r} unknown; choose from {', '.join(meta['choices'])}")
            elif _whole(f.default) and not _whole(value):
                raise UsageError(f"{name} must be a whole number, got {value!r}")
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                check_range(name, value, meta["low"], meta["high"], meta["open_high"])

    @classmethod
    def defaults(cls, causal: bool = False) -> dict[str, Any]:
        """Every field's default (``causal``: a causal model's default where one is declared)."""
        return {
            f.name: f.metadata["causal"] if causal and f.metadata["causal"] is not None else f.default
            for f in dataclasses.fields(cls)
        }


def check_range(name: str, value: float, low: float | None, high: float | None, open_high: bool = False) -> None:
    """UsageError unless ``value`` is finite and in ``[low, high]`` (``[low, high)`` if ``open_high``)."""
    too_high = high is not None and (value >= high if open_high else value > high)
    if not math.isfinite(value) or (low is not None and value < low) or too_high:
        if high is None:
            allowed = "" if low is None else f" >= {low:g}"
        else:
            allowed = f" in [{'-inf' if low is None else f'{low:g}'}, {high:g}{')' if open_high else ']'}"
        raise UsageError(f"{name} must be a finite number{allowed}, got {value}")


def _whole(value: Any) -> bool:
    """An int knob's value: an int, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)
