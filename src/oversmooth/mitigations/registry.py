"""Every mitigation, by name: the one place that lists them.

Each entry is a method module's ``METHOD`` record (``oversmooth.mitigations.base.Method``): its knobs with defaults, ranges and
help, where it acts, its layer in our Transformer and its patch for pretrained models. The CLI
flags, ``MitigationConfig``, ``oversmooth.patch``, study grids, ``analyze --sweep`` and the
docs table are all read from here. Order matters: within a site, methods act in this order.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from oversmooth.errors import UsageError
from oversmooth.mitigations.attnscale import METHOD as ATTNSCALE
from oversmooth.mitigations.contranorm import METHOD as CONTRANORM
from oversmooth.mitigations.deescalation import METHOD as DEESCALATE
from oversmooth.mitigations.featscale import METHOD as FEATSCALE
from oversmooth.mitigations.neutreno import METHOD as NEUTRENO
from oversmooth.mitigations.spectral import METHOD as SPECTRAL
from oversmooth.mitigations.symmetric import METHOD as SYMMETRIC
from oversmooth.mitigations.value_residual import METHOD as VALUE_RESIDUAL
from oversmooth.mitigations.base import Knobs, Method, Scope

METHODS: dict[str, Method] = {m.name: m for m in (
    SYMMETRIC, SPECTRAL, VALUE_RESIDUAL, ATTNSCALE, NEUTRENO, FEATSCALE, DEESCALATE, CONTRANORM,
)}


def method(name: str) -> Method:
    """The registry entry ``name``; UsageError naming the choices."""
    if name not in METHODS:
        raise UsageError(f"unknown mitigation {name!r}; choose from {', '.join(METHODS)} (or none for the softmax baseline)")
    return METHODS[name]


def patchable() -> tuple[str, ...]:
    """The methods that can be patched into a pretrained model."""
    return tuple(name for name, m in METHODS.items() if m.patcher is not None)


def knob_owners(scope: Scope | None = None) -> dict[str, tuple[str, str]]:
    """Global knob name (CLI flag, flat config key) -> (method, field), over every method."""
    owners: dict[str, tuple[str, str]] = {}
    for m in METHODS.values():
        for f in m.fields(scope):
            flag = m.flag(f.name)
            if flag in owners:
                raise RuntimeError(f"knob {flag} declared by {owners[flag][0]} and {m.name}")
            owners[flag] = (m.name, f.name)
    return owners


def make_knobs(name: str, values: dict[str, Any], *, causal: bool = False, scope: Scope | None = None) -> Knobs:
    """Method ``name``'s knobs from field-named ``values`` over its defaults (``causal``: a causal
    model's); UsageError on a knob the method lacks or a value out of range."""
    m = method(name)
    allowed = {f.name for f in m.fields(scope)}
    extra = sorted(set(values) - allowed)
    if extra:
        takes = ", ".join(sorted(allowed)) or "no knobs"
        raise UsageError(f"{name} takes {takes}, not {', '.join(extra)}")
    return m.knobs(**{**m.knobs.defaults(causal), **values})


def knob_dict(knobs: Knobs) -> dict[str, Any]:
    """Field name -> value."""
    return {f.name: getattr(knobs, f.name) for f in dataclasses.fields(knobs)}
