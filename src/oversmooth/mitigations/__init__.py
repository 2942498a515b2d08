"""Mitigation maths shared by our own layers and the Hugging Face patches (DESIGN §5).

Each function reduces exactly to the identity / baseline at its zero setting.
"""

from oversmooth.mitigations.attnscale import AttnScale, attnscale
from oversmooth.mitigations.deescalation import PLACEMENTS, Deescalation, deescalate
from oversmooth.mitigations.featscale import FeatScale, featscale
from oversmooth.mitigations.neutreno import check_lambda, neutreno
from oversmooth.mitigations.token_mean import PrefixSums, broadcast_mask, prefix_mean, token_mean

__all__ = [
    "AttnScale", "attnscale", "PLACEMENTS", "Deescalation", "deescalate", "FeatScale", "featscale",
    "check_lambda", "neutreno", "broadcast_mask", "token_mean", "PrefixSums", "prefix_mean",
]
