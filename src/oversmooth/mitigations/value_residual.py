"""Value residual learning (Zhou et al. 2024, ResFormer): ``V_l <- (1 - mix) V_l + mix V1`` in
every layer after the first, V1 the first layer's values (undetached). Per token: causal stays causal."""

from __future__ import annotations

import torch
from torch import Tensor

from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import ValueResidualKnobs


class ValueResidual(SiteLayer):
    """Mixes layer 1's values into the values the attention averages."""

    def __init__(self, knobs: ValueResidualKnobs, shape: LayerShape):
        super().__init__()
        self.mix = knobs.value_mix

    def values(self, v: Tensor, v_first: Tensor | None) -> Tensor:
        return v if v_first is None else torch.lerp(v, v_first, self.mix)  # (1 - mix) v + mix v1
