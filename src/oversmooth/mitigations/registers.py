"""Registers (Darcet et al., ICLR 2024, "Vision Transformers Need Registers", arXiv 2309.16588):
``k`` learned tokens appended to the ViT's sequence after its patch tokens and dropped at the
output, so the model has tokens to keep global information in instead of recycling patch tokens
that carry little of their own (the high-norm "artifact" tokens).

The registers carry no position embedding (they are appended after the positions are added), are
shared by every image, and are drawn like the CLS token (N(0, 0.02); the official DINOv2 code
draws both at std 1e-6). They join every block's attention like any token; the ViT's head reads
CLS, and the measures of the stream leave the registers out (``ViT.counted_tokens``). With k = 0
the ViT is the baseline exactly. Our causal LM refuses them: no token attends to a later one.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import RegistersKnobs


class Registers(SiteLayer):
    """``tokens: [k, width]``, appended after the sequence."""

    drawn = ("tokens",)

    def __init__(self, knobs: RegistersKnobs, shape: LayerShape):
        super().__init__()
        self.tokens = nn.Parameter(torch.zeros(knobs.registers, shape.width))

    def extend(self, x: Tensor) -> Tensor:
        """``[batch, n, width] -> [batch, n + k, width]``."""
        return torch.cat([x, self.tokens.to(x.dtype).expand(x.shape[0], -1, -1)], dim=1)
