"""Which oversmoothing mitigations a Transformer uses, and their knobs (DESIGN §5).

Every method is a switch in ``MitigationConfig.methods``; the empty tuple is the plain softmax
Transformer. Methods compose freely (e.g. NeuTRENO + FeatScale, as in the NeuTRENO paper).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from oversmooth.errors import UsageError
from oversmooth.layers.config_fields import from_fields
from oversmooth.mitigations import PLACEMENTS, check_lambda

#: name -> one-line description (formula, source). The registry of every method.
METHODS: dict[str, str] = {
    "symmetric": "keys = queries (W_K tied to W_Q): symmetric attention scores (Sym-DeiT, NeuTRENO paper)",
    "neutreno": "O_h = A_h V_h + lam (V1_h - V_h) in layers after the first (Nguyen et al. 2023)",
    "deescalate": "Y = (I - tau Pi_1) X on the attention output or the stream (Yu & Zhang 2023)",
    "attnscale": "A' = A + omega_h (A - uniform), omega per head, init 0 (Wang et al. 2022)",
    "featscale": "Z' = Z + s_dc * DC + s_hc * HC per channel, init 0 (Wang et al. 2022)",
    "spectral": "W_V W_O = U diag(lambda) U^T, U orthogonal, lambda in a chosen range (Dovonon et al. 2025)",
    "value_residual": "V_l <- (1 - mix) V_l + mix V1 in layers after the first (value residual learning)",
}

#: knob -> the method that reads it; a knob given for a method not in use is refused, not ignored.
KNOB_OWNERS: dict[str, str] = {
    "lam": "neutreno", "tau": "deescalate", "tau_learnable": "deescalate", "deescalate_at": "deescalate",
    "spectral": "spectral", "value_mix": "value_residual",
}

#: ``spectral`` modes -> the range the eigenvalues of W_V W_O are kept in.
SPECTRAL_MODES: dict[str, str] = {
    "sharpen": "(-1, 0): lambda = -sigmoid(psi)",
    "smooth": "(0, 1): lambda = sigmoid(psi)",
    "free": "unconstrained: lambda = psi",
}

BASELINE_NAMES = ("", "softmax", "baseline", "none")


def split_methods(spec: str) -> tuple[str, ...]:
    """``"neutreno+featscale"`` -> ``("neutreno", "featscale")``; ``"softmax"`` -> ``()``."""
    spec = spec.strip().lower()
    if spec in BASELINE_NAMES:
        return ()
    return tuple(part.strip() for part in spec.replace(",", "+").split("+"))


@dataclass(frozen=True)
class MitigationConfig:
    """Methods by name and their knobs; defaults follow DESIGN §5.

    >>> cfg = MitigationConfig.parse("neutreno+featscale", lam=0.4)
    >>> cfg.methods, cfg.lam, cfg.name
    (('neutreno', 'featscale'), 0.4, 'neutreno+featscale')
    >>> "featscale" in cfg, MitigationConfig().name
    (True, 'softmax')
    """

    methods: tuple[str, ...] = ()
    lam: float = 0.6                   # neutreno: fidelity weight (0.6 DeiT, 0.4 LM)
    tau: float = 1.0                   # deescalate: share of the mean token removed, in [0, 1]
    tau_learnable: bool = False        # deescalate: learn tau (clamped to [0, 1])
    deescalate_at: str = "attn_out"    # deescalate: "attn_out" (before the residual add) | "stream"
    spectral: str = "free"             # spectral: eigenvalue range "sharpen" | "smooth" | "free"
    value_mix: float = 0.5             # value_residual: share of V1 mixed into V, in [0, 1]

    def __post_init__(self) -> None:
        methods = split_methods(self.methods) if isinstance(self.methods, str) else tuple(self.methods)
        object.__setattr__(self, "methods", methods)
        for name in methods:
            if name not in METHODS:
                raise UsageError(f"unknown mitigation {name!r}; choose from {', '.join(METHODS)} "
                                 "(or none for the softmax baseline)")
        if len(set(methods)) != len(methods):
            raise UsageError(f"mitigation listed twice in {'+'.join(methods)}; give each once")
        check_lambda(self.lam)
        if not (math.isfinite(self.tau) and 0.0 <= self.tau <= 1.0):
            raise UsageError(f"de-escalation tau must lie in [0, 1], got {self.tau}")
        if self.deescalate_at not in PLACEMENTS:
            raise UsageError(f"deescalate_at {self.deescalate_at!r} unknown; choose from "
                             f"{', '.join(PLACEMENTS)}")
        if self.spectral not in SPECTRAL_MODES:
            raise UsageError(f"spectral mode {self.spectral!r} unknown; choose from "
                             f"{', '.join(SPECTRAL_MODES)}")
        if not (math.isfinite(self.value_mix) and 0.0 <= self.value_mix <= 1.0):
            raise UsageError(f"value_mix must lie in [0, 1], got {self.value_mix}")

    def __contains__(self, method: str) -> bool:
        return method in self.methods

    @property
    def name(self) -> str:
        """``"+"``-joined methods, or ``"softmax"`` for the baseline."""
        return "+".join(self.methods) or "softmax"

    @classmethod
    def parse(cls, spec: str, **knobs: Any) -> "MitigationConfig":
        """Build from a CLI string such as ``"neutreno+featscale"`` (``"softmax"`` = none) and the
        knobs that were given; a knob of a method not in ``spec`` is refused.

        >>> MitigationConfig.parse("softmax", tau=0.5)
        Traceback (most recent call last):
        ...
        oversmooth.errors.UsageError: tau is a knob of deescalate, which softmax does not use; drop it or add deescalate
        """
        methods = split_methods(spec)
        for knob in knobs:
            owner = KNOB_OWNERS.get(knob)
            if owner is not None and owner not in methods:
                raise UsageError(f"{knob} is a knob of {owner}, which {'+'.join(methods) or 'softmax'} does not "
                                 f"use; drop it or add {owner}")
        return cls.from_dict({"methods": methods, **knobs})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "MitigationConfig":
        """Inverse of ``to_dict``; unknown keys raise ``UsageError``."""
        return from_fields(cls, data)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "methods": list(self.methods)}
