"""Symmetric attention (Sym-DeiT in NeuTRENO, Nguyen, Nguyen & Baraniuk, NeurIPS 2023): keys =
queries, W_K tied to W_Q (bias included), so the scores ``Q Q^T / sqrt(d_h)`` are symmetric."""

from __future__ import annotations

from dataclasses import dataclass

from oversmooth.mitigations.base import Method, Knobs, LayerShape, SiteLayer


@dataclass(frozen=True)
class SymmetricKnobs(Knobs):
    method = "symmetric"


class Symmetric(SiteLayer):
    """No key projection: the attention uses its queries as keys."""

    ties_keys = True


def layer(knobs: SymmetricKnobs, shape: LayerShape) -> Symmetric:
    return Symmetric()


METHOD = Method("symmetric", "Sym-DeiT in NeuTRENO (Nguyen, Nguyen & Baraniuk, NeurIPS 2023)",
                "keys = queries (W_K tied to W_Q): symmetric attention scores",
                SymmetricKnobs, "structure", layer, "symmetric",
                unpatchable="it changes the weights a pretrained model was trained with")
