"""Transformer layers in which every oversmoothing mitigation of docs/methods.md is a config switch.

Knows nothing of Hugging Face or training; the maths of each method lives in
``oversmooth.mitigations`` and is shared with the Hugging Face patches.
"""

from oversmooth.layers.attention import Attention
from oversmooth.layers.block import Block
from oversmooth.layers.hook_point import HookPoint
from oversmooth.layers.mitigation_config import METHOD_FORMULAS, MitigationConfig
from oversmooth.layers.mlp import MLP
from oversmooth.layers.norm import LN_SIGNS, signed_layer_norm
from oversmooth.layers.stack_config import NORM_PLACEMENTS, StackConfig
from oversmooth.mitigations.spectral import SPECTRAL_MODES, SpectralValueOutput

__all__ = [
    "Attention",
    "Block",
    "HookPoint",
    "METHOD_FORMULAS",
    "SPECTRAL_MODES",
    "MitigationConfig",
    "MLP",
    "LN_SIGNS",
    "signed_layer_norm",
    "SpectralValueOutput",
    "NORM_PLACEMENTS",
    "StackConfig",
]
