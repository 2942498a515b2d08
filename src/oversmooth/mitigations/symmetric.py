"""Symmetric attention (Sym-DeiT in NeuTRENO, Nguyen, Nguyen & Baraniuk, NeurIPS 2023): keys =
queries, W_K tied to W_Q (bias included), so the scores ``Q Q^T / sqrt(d_h)`` are symmetric."""

from __future__ import annotations

from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import SymmetricKnobs


class Symmetric(SiteLayer):
    """No key projection: the attention uses its queries as keys."""

    ties_keys = True


def layer(knobs: SymmetricKnobs, shape: LayerShape) -> Symmetric:
    return Symmetric()
