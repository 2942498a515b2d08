"""Mitigation methods: one module per method (its maths, knobs, layer and patch) and the registry
that lists them (``oversmooth.mitigations.registry``). Each method reduces exactly to the
baseline at its zero setting; the maths is shared by our own layers and the Hugging Face patches.
"""

from oversmooth.mitigations.attnscale import AttnScale, attnscale
from oversmooth.mitigations.deescalation import PLACEMENTS, Deescalation, deescalate
from oversmooth.mitigations.featscale import FeatScale, featscale
from oversmooth.mitigations.neutreno import neutreno
from oversmooth.mitigations.token_mean import PrefixSums, broadcast_mask, prefix_mean, token_mean

__all__ = [
    "AttnScale", "attnscale", "PLACEMENTS", "Deescalation", "deescalate", "FeatScale", "featscale",
    "neutreno", "broadcast_mask", "token_mean", "PrefixSums", "prefix_mean",
]
