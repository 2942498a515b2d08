"""``adapt --ramp N``: bring a patch in gradually over the first N optimiser steps.

Each knob of the method's off setting (its registry entry's ``zero``: NeuTRENO ``lam`` 0,
LayerScale ``gamma`` 1, ...) grows linearly from that setting to the arm's value; the method's
other knobs stay at the arm's values. The knobs in force at step ``s`` (``s`` steps done: step
``s + 1`` trains with them, the record at ``s`` is scored with them) are ``off + (value - off) *
s / N`` for ``s < N`` and the arm's value itself (its own numbers, no rounding) from ``s = N`` on.
A knob given per head or per channel ramps element by element.

The start evaluation (``start.json``, "patched, before adaptation") is the exception: it scores
the patch at the arm's value, the damage the adaptation has to undo; the arm is built there and
set to the ramp's start only as training begins (``Ramp``, called by the train loop).
Torch-free; the source sets the knobs on its model (``apply``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oversmooth.errors import FieldError


def off_setting(method: str, ramp: int, fields: set[str] | None = None, why_none: str = "") -> dict[str, Any]:
    """The off setting of ``method``'s knobs (``fields`` only, when given): what ``--ramp`` starts
    from. ``FieldError`` naming ``ramp`` (given as ``ramp``), the method and why when there is none."""
    from oversmooth.mitigations.registry import method as entry

    zero = dict(entry(method).zero)
    off = {k: v for k, v in zero.items() if fields is None or k in fields}
    if off:
        return off
    why = why_none or (
        "it has no off setting: its patch starts as the model itself, at identity"
        if entry(method).patch_is_identity
        else "its registry entry declares no off setting"
    )
    raise FieldError("{ramp} {got}: %s has nothing to ramp: %s; drop {ramp}" % (method, why), got=ramp)


def between(off: Any, value: Any, share: float) -> Any:
    """``off + (value - off) * share``, element by element for a list of per-unit values."""
    if isinstance(value, (list, tuple)):
        return [between(off, v, share) for v in value]
    return off + (value - off) * share


def knobs_at(off: dict[str, Any], target: dict[str, Any], step: int, ramp: int) -> dict[str, Any]:
    """The ramped knobs in force at ``step`` steps done: linear from ``off`` (step 0) to
    ``target`` (step ``ramp`` and after, exactly ``target``)."""
    if step >= ramp:
        return dict(target)
    return {k: between(off[k], target[k], step / ramp) for k in target}


class Ramp:
    """The train loop's ``at_step`` for one patched arm: sets the knobs in force at each step
    through ``apply(knobs)`` (the ramped knobs only), when they change. The first call always
    applies (after a resume the model holds the knobs it was built with)."""

    def __init__(self, off: dict[str, Any], target: dict[str, Any], steps: int, apply: Callable[[dict], None]):
        self.off, self.target, self.steps, self.apply = off, target, steps, apply
        self.current: dict[str, Any] | None = None

    def knobs(self, step: int) -> dict[str, Any]:
        return knobs_at(self.off, self.target, step, self.steps)

    def evaluated(self, step: int) -> dict[str, Any]:
        """The ramped knobs an evaluation at ``step`` used: the target at the start (step 0), else
        those in force."""
        return dict(self.target) if step == 0 else self.knobs(step)

    def __call__(self, step: int) -> None:
        knobs = self.knobs(step)
        if knobs != self.current:
            self.apply(knobs)
            self.current = knobs
