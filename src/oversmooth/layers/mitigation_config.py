"""Which oversmoothing mitigations a Transformer uses, and their knobs.

Every method is a switch in ``MitigationConfig.methods`` (the registry,
``oversmooth.mitigations.registry``, lists them); the empty tuple is the plain softmax
Transformer. Methods compose freely (e.g. NeuTRENO + FeatScale, as in the NeuTRENO paper).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oversmooth.errors import UsageError
from oversmooth.mitigations.knobs import Knobs
from oversmooth.mitigations.registry import METHODS as REGISTRY
from oversmooth.mitigations.registry import check_methods, knob_dict, knob_owners, make_knobs, split_methods

#: name -> one-line description (formula, source).
METHOD_FORMULAS: dict[str, str] = {name: f"{m.formula} ({m.paper})" for name, m in REGISTRY.items()}


class MitigationConfig:
    """Methods by name and, for each, its knobs (``Knobs`` of the registry). Knobs are given and
    read by their global names (``lam``, ``tau``, ...; ``oversmooth train --help``); a knob of an
    unused method reads as its default.

    >>> cfg = MitigationConfig.parse("neutreno+featscale", lam=0.4)
    >>> cfg.methods, cfg.lam, cfg.name
    (('neutreno', 'featscale'), 0.4, 'neutreno+featscale')
    >>> "featscale" in cfg, MitigationConfig().name
    (True, 'softmax')
    """

    def __init__(self, methods: tuple[str, ...] | str = (), *, causal: bool = False, **flat: Any):
        """``methods`` and knob values by global name (a knob of a method not in ``methods`` is
        checked, then dropped); ``causal``: start from a causal model's defaults."""
        methods = split_methods(methods) if isinstance(methods, str) else tuple(methods)
        check_methods(methods)
        owners = knob_owners("train")
        unknown = sorted(set(flat) - set(owners))
        if unknown:
            raise UsageError(
                f"unknown MitigationConfig field(s) {', '.join(unknown)}; "
                f"valid: {', '.join(sorted(['methods', *owners]))}"
            )
        given: dict[str, dict[str, Any]] = {}
        for flag, value in flat.items():
            owner, field = owners[flag]
            given.setdefault(owner, {})[field] = value
        knobs = {name: make_knobs(name, values, causal=causal) for name, values in given.items()}
        self.methods = methods
        self.knobs: dict[str, Knobs] = {
            name: knobs.get(name) or make_knobs(name, {}, causal=causal) for name in methods
        }

    def __getattr__(self, flag: str) -> Any:
        """A knob by its global name: the used method's value, else the registry default."""
        owners = knob_owners("train")
        if flag not in owners:
            raise AttributeError(flag)
        owner, field = owners[flag]
        knobs = self.__dict__.get("knobs", {}).get(owner)
        return getattr(knobs, field) if knobs is not None else REGISTRY[owner].knobs.defaults()[field]

    def __contains__(self, method: str) -> bool:
        return method in self.methods

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MitigationConfig) and (self.methods, self.knobs) == (other.methods, other.knobs)

    def __hash__(self) -> int:
        return hash((self.methods, tuple(self.knobs.values())))

    def __repr__(self) -> str:
        return f"MitigationConfig({self.name!r}, {', '.join(repr(k) for k in self.knobs.values())})"

    @property
    def name(self) -> str:
        """``"+"``-joined methods, or ``"softmax"`` for the baseline."""
        return "+".join(self.methods) or "softmax"

    @classmethod
    def parse(cls, spec: str, *, causal: bool = False, **knobs: Any) -> MitigationConfig:
        """Build from a CLI string such as ``"neutreno+featscale"`` (``"softmax"`` = none) and the
        knobs that were given; a knob of a method not in ``spec`` is refused. ``causal``: a causal
        model's defaults (NeuTRENO lambda 0.4).

        >>> MitigationConfig.parse("softmax", tau=0.5)
        Traceback (most recent call last):
        ...
        oversmooth.errors.UsageError: tau is a knob of deescalate, which softmax does not use; drop it or add deescalate
        """
        methods = split_methods(spec)
        owners = knob_owners("train")
        for knob in knobs:
            owner = owners.get(knob, (None,))[0]
            if owner is not None and owner not in methods:
                raise UsageError(
                    f"{knob} is a knob of {owner}, which {'+'.join(methods) or 'softmax'} does not "
                    f"use; drop it or add {owner}"
                )
        return cls(methods, causal=causal, **knobs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MitigationConfig:
        """Inverse of ``to_dict``; also reads the flat dicts that older saved models hold (every
        knob, used or not). Unknown keys raise ``UsageError``."""
        data = dict(data)
        return cls(tuple(data.pop("methods", ())), **data)

    def to_dict(self) -> dict[str, Any]:
        """``{"methods": [...], <global knob name>: value, ...}`` for the used methods' knobs."""
        flat: dict[str, Any] = {"methods": list(self.methods)}
        for name, knobs in self.knobs.items():
            m = REGISTRY[name]
            flat.update(
                {
                    m.flag(field): value
                    for field, value in knob_dict(knobs).items()
                    if "train" in m.knob_field(field).metadata["scope"]
                }
            )
        return flat
