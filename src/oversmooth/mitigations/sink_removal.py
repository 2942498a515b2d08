"""Sink removal (Barbero et al., COLM 2025, "Why do LLMs attend to the first token?", arXiv
2504.02732): the attention every query pays to one key, the sink, taken away and each row
renormalised, in a pretrained model without fine-tuning (their ablation of the first token).

Per head and query i, with ``p`` the sink key and ``s`` the strength: ``A_ip <- (1 - s) A_ip``,
then the row renormalised, ``A_ij <- A_ij / (1 - s A_ip)`` for every key j. At ``s = 1`` the
sink gets 0 and the other keys share the row in their old proportions: the softmax over every key
but the sink. At ``s = 0`` nothing is installed. A row whose whole weight sits on the sink (the
sink itself as query in a causal model, which sees nothing else) keeps it: there is nothing to
renormalise onto.

The sink is counted from each sequence's first real token (``position`` 0: the first token, the
BOS of a causal LM, [CLS] of BERT or a ViT); a left-padded sequence's sink is later in the key
axis. The patch runs the model's own eager attention, which returns A (``oversmooth.hf.patch``,
site ``scores``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.mitigations.base import Patcher, PatchTarget
from oversmooth.mitigations.registry import SinkRemovalKnobs


def remove_sink(weights: Tensor, sink: Tensor, strength: float) -> Tensor:
    """``weights [batch, heads, queries, keys]`` (rows summing to 1) with the weight on key
    ``sink[b]`` of each batch row times ``1 - strength``, each row renormalised; in float32.

    >>> w = torch.tensor([[[[0.5, 0.25, 0.25], [1.0, 0.0, 0.0]]]])
    >>> remove_sink(w, torch.tensor([0]), 1.0).tolist()  # the second row is all sink: kept
    [[[[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]]]
    """
    work = weights.float()
    index = sink.to(weights.device).view(-1, 1, 1, 1).expand(*work.shape[:-1], 1)
    on_sink = work.gather(-1, index)
    rest = 1 - strength * on_sink
    removed = work.scatter(-1, index, (1 - strength) * on_sink) / rest
    return torch.where(rest > 0, removed, work).to(weights.dtype)


def sink_columns(valid: Tensor | None, batch: int, keys: int, position: int) -> Tensor:
    """``[batch]``: the key of each sequence's sink, ``position`` keys after its first real one
    (``valid [batch, keys]`` bool, None: all real); UsageError when a sequence is shorter."""
    if valid is None:
        valid = torch.ones(batch, keys, dtype=torch.bool)
    check_position(position, valid)
    return valid.int().argmax(dim=1).cpu() + position


def check_position(position: int, valid: Tensor) -> None:
    """UsageError unless every sequence of ``valid [batch, tokens]`` (its real tokens) has more
    than ``position`` real tokens."""
    real = valid.sum(dim=1).cpu()
    short = (real <= position).nonzero()
    if len(short):
        row = int(short[0])
        raise UsageError(
            f"sink position {position} is outside sequence {row}, which has {int(real[row])} real "
            f"token(s); give a position below {int(real.min())}"
        )


def patch_edit(knobs: SinkRemovalKnobs, target: PatchTarget):
    """The attention weights of every call, the sink's removed; None (nothing to install) at strength 0."""
    if knobs.strength == 0:
        return None

    def edit(weights: Tensor, valid: Tensor | None) -> Tensor:
        sink = sink_columns(valid, weights.shape[0], weights.shape[-1], knobs.position)
        return remove_sink(weights, sink, knobs.strength)

    return edit


PATCHER = Patcher("scores", patch_edit, lambda knobs, valid: check_position(knobs.position, valid))
