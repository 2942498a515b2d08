"""Value residual learning (Zhou et al. 2024, ResFormer): ``V_l <- (1 - mix) V_l + mix V1`` in
every layer after the first, V1 the first layer's values (undetached). Per token: causal stays causal."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from oversmooth.mitigations.base import Method, Knobs, LayerShape, SiteLayer, knob


@dataclass(frozen=True)
class ValueResidualKnobs(Knobs):
    method = "value_residual"
    value_mix: float = knob(0.5, "value-residual share of V1 mixed into V, in [0, 1]", low=0.0, high=1.0,
                            flag="value_mix", scope=("train",), label="value_mix")


class ValueResidual(SiteLayer):
    """Mixes layer 1's values into the values the attention averages."""

    def __init__(self, knobs: ValueResidualKnobs, shape: LayerShape):
        super().__init__()
        self.mix = knobs.value_mix

    def values(self, v: Tensor, v_first: Tensor | None) -> Tensor:
        return v if v_first is None else torch.lerp(v, v_first, self.mix)   # (1 - mix) v + mix v1


METHOD = Method("value_residual", "Zhou et al. 2024, value residual learning (ResFormer)",
                "V_l <- (1 - mix) V_l + mix V1 in layers after the first",
                ValueResidualKnobs, "values", ValueResidual, "value_residual",
                unpatchable="not implemented for pretrained models", zero={"value_mix": 0.0})
