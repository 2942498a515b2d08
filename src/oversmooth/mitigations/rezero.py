"""ReZero (Bachlechner et al., UAI 2021, "ReZero is All You Need: Fast Convergence at Large
Depth"): every block starts as the identity.

``x <- x + alpha f(x)`` with one learned scalar ``alpha`` per block, shared by its attention and
MLP branches (the official ``RZTXEncoderLayer``, majumderb/rezero, ``rztx.py``), initialised at 0,
and no LayerNorm in the block. The paper's "ReZero alpha = 1" row starts at 1 instead. Our
models' final LayerNorm (pre-norm stacks only) is kept: ``--norm post`` gives the paper's
network with no norm at all.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import ReZeroKnobs


class ReZero(SiteLayer):
    """``x + alpha * f`` for both branches, ``alpha`` a learned 0-d parameter."""

    keeps_norms = False

    def __init__(self, knobs: ReZeroKnobs, shape: LayerShape):
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor(float(knobs.alpha)))

    def residual(self, x: Tensor, f: Tensor, branch: int) -> Tensor:
        return x + self.alpha * f
