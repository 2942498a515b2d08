"""The arms of one adaptation: the control, then per method its patched arms, each named by method
and knobs (``config.arm_name``). Which methods: those ``method`` names, each checked by the source
(a method it cannot take is refused, with the reason), or with ``all-patchable`` the registry's
patchable methods the source takes (the others left out, with the reason). Which knobs: those
given, or with ``knobs="frontier"`` each method's from analyze's frontier
(``oversmooth.adapt.frontier_knobs``: a method with no value within budget gets no arm). An arm that
would be the control again (a patch at its off setting that trains nothing: ``repeats_control`` of the
source) is left out, with why; a method named in ``method`` whose every arm would be is refused.
Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from oversmooth.adapt.config import CONTROL, FRONTIER, AdaptConfig, arm_name
from oversmooth.errors import FieldError, UsageError
from oversmooth.mitigations.registry import patchable
from oversmooth.train.run_spec import flag


@dataclass(frozen=True)
class Arm:
    """One arm: ``method`` None is the control (its method unchanged); ``given``: the knobs as
    asked (they name the arm); ``knobs``: as the source applies them (``source.resolve``)."""

    name: str
    method: str | None
    given: dict | None
    knobs: dict | None


def methods_of(config: AdaptConfig, source) -> tuple[tuple[str, ...], dict[str, str]]:
    """The methods to adapt, and the patchable ones ``all-patchable`` leaves out with why. A method
    named that the source cannot take is refused (its ``UsageError``)."""
    named = config.method_names()
    for name in named or ():
        source.check_method(name)
    if named is not None:
        return named, {}
    taken, left_out = [], {}
    for name in patchable():
        try:
            source.check_method(name)
            taken.append(name)
        except FieldError as error:
            left_out[name] = error.message(flag)
        except UsageError as error:
            left_out[name] = str(error)
    given = [name for name in config.knobs if name in left_out] if isinstance(config.knobs, dict) else []
    if given:  # knobs given for it: it was asked for by name
        raise UsageError(f"knobs are given for {given[0]}, which cannot take part: {left_out[given[0]]}")
    return tuple(taken), left_out


def plan_arms(
    config: AdaptConfig, source, methods: tuple[str, ...], left_out: dict[str, str], frontier: dict | None
) -> tuple[list[Arm], dict[str, str]]:
    """The arms (the control first) and, per method asked for, how its arms got their knobs or why
    it has none (``left_out``: ``methods_of``'s; ``frontier``: ``adapt.frontier_knobs.frontier``'s
    choices, with ``knobs="frontier"``)."""
    arms, notes = [Arm(CONTROL, None, None, None)], {}
    for name in methods:
        if config.knobs == FRONTIER:
            choices = frontier["methods"][name]
            settings = [c["knobs"] for c in choices if c["knobs"] is not None]
            notes[name] = "; ".join(c["why"] for c in choices)
        else:
            settings = list(config.knobs_of(name))
            notes[name] = "knobs as given" if any(settings) else "its default knobs"
        kept = len(arms)
        for given in settings:
            arm = Arm(arm_name(name, given), name, given, source.resolve(name, given))
            repeats = source.repeats_control(name, arm.knobs)
            if repeats:
                notes[name] += f"; {arm.name} left out: {repeats}"
            else:
                arms.append(arm)
        if settings and len(arms) == kept and config.knobs != FRONTIER and config.method_names() is not None:
            raise UsageError(f"--method {name} would train no arm: {repeats}")
    return arms, notes | {name: f"left out: {why}" for name, why in left_out.items()}
