"""Hyper-parameters shared by every block of a Transformer stack (our ViT and causal LM)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from oversmooth.errors import FieldError
from oversmooth.layers.config_fields import check_positive_ints, from_fields
from oversmooth.layers.mitigation_config import MitigationConfig
from oversmooth.layers.norm import LN_SIGNS
from oversmooth.mitigations.registry import METHODS

NORM_PLACEMENTS = ("pre", "post")


@dataclass
class StackConfig:
    """Depth, width, heads, MLP ratio, norm placement, LN weight sign, dropout and mitigations.
    A bad value is a ``FieldError`` naming its field (``oversmooth train`` names its flag).

    ``mitigation`` also accepts a string (``"neutreno+featscale"``) or a dict, for CLIs and JSON.
    """

    depth: int = 6
    width: int = 64
    heads: int = 4
    mlp_ratio: float = 4.0
    norm: str = "pre"  # "pre": x + f(LN(x)); "post": LN(x + f(x))
    ln_sign: str = "free"  # see oversmooth.layers.norm.LN_SIGNS
    dropout: float = 0.0
    mitigation: MitigationConfig = field(default_factory=MitigationConfig)

    #: named settings for ``preset``; subclasses fill it in.
    SHAPE_PRESETS: ClassVar[dict[str, dict[str, Any]]] = {}

    def __post_init__(self) -> None:
        if isinstance(self.mitigation, str):
            self.mitigation = MitigationConfig.parse(self.mitigation)
        elif isinstance(self.mitigation, dict):
            self.mitigation = MitigationConfig.from_dict(self.mitigation)
        check_positive_ints(self, "depth", "width", "heads")
        if self.width % self.heads:
            raise FieldError(
                "{heads} ({got}) must divide width ({width_value}); pick {heads} from {fits}",
                got=self.heads,
                width_value=self.width,
                fits=[h for h in range(1, min(self.width, 1024) + 1) if self.width % h == 0][:12],
            )
        if not (math.isfinite(self.mlp_ratio) and self.mlp_ratio > 0):
            raise FieldError("{mlp_ratio} must be > 0, got {got}", got=self.mlp_ratio)
        if self.norm not in NORM_PLACEMENTS:
            raise FieldError(
                "{norm} {got!r} unknown; choose from {choices}", got=self.norm, choices=", ".join(NORM_PLACEMENTS)
            )
        for name in self.mitigation.methods:
            m = METHODS[name]
            if self.norm not in m.norms:
                raise FieldError(
                    "{norm} {got!r} does not fit %s: %s; use {norm} %s" % (name, m.norms_why, " or ".join(m.norms)),
                    got=self.norm,
                )
        if self.ln_sign not in LN_SIGNS:
            raise FieldError(
                "{ln_sign} {got!r} unknown; choose from {choices}", got=self.ln_sign, choices=", ".join(LN_SIGNS)
            )
        if not 0.0 <= self.dropout < 1.0:
            raise FieldError("{dropout} must lie in [0, 1), got {got}", got=self.dropout)

    @property
    def mlp_hidden(self) -> int:
        return int(round(self.width * self.mlp_ratio))

    @property
    def block_parameters(self) -> float:
        """About how many weights the blocks hold: ``depth (4 + 2 mlp_ratio) width^2`` (Q, K, V,
        O and the MLP's two matrices; norms and biases left out)."""
        return self.depth * (4 + 2 * self.mlp_ratio) * float(self.width) ** 2

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["mitigation"] = self.mitigation.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        """Inverse of ``to_dict``; unknown keys raise ``UsageError`` naming the valid ones."""
        return from_fields(cls, data)

    @classmethod
    def preset(cls, name: str, **overrides: Any):
        """A named setting from ``SHAPE_PRESETS``, with any field overridden."""
        if name not in cls.SHAPE_PRESETS:
            raise FieldError(
                "{preset} {got!r} is no %s preset; choose from {choices}" % cls.__name__,
                got=name,
                choices=", ".join(cls.SHAPE_PRESETS),
            )
        return cls.from_dict({**cls.SHAPE_PRESETS[name], **overrides})
