"""Massive-activation clipping (Sun et al., COLM 2024, "Massive Activations in Large Language
Models", arXiv 2402.17762): the massive entries of the residual stream set to another value at the
block where they form, in a pretrained model without fine-tuning.

Sun et al. find a few activations 100 to 10 000 times the median, at the first token and a few
delimiters, appearing abruptly in one early layer and staying. Their intervention, at that layer:
set them to zero (the model breaks) or to their mean over many other inputs (it keeps working),
showing they act as fixed biases. Here, per token of each block's output ``h [batch, tokens,
width]``:

- an entry is massive when ``|h| > ratio * median |h|`` over its token's channels (the token's
  own median, so the rule is causal and the same with or without a KV cache);
- each token is edited at the first block where it holds a massive entry (where it forms), on
  those entries only, and left alone after;
- ``h <- h + strength (target - h)`` with ``target`` 0 (``to`` zero) or the mean of that entry
  over the batch's sequences that hold a massive entry at the same position and channel there
  (``to`` mean; one sequence alone keeps its value: the other inputs are the batch's).

Padding never counts. At strength 0 nothing is installed.
"""

from __future__ import annotations

import torch
from torch import Tensor

from oversmooth.mitigations.base import Patcher, PatchTarget
from oversmooth.mitigations.registry import MassiveClipKnobs


def token_medians(x: Tensor) -> Tensor:
    """``[..., 1]``: the median of ``|x|`` over each token's channels (numpy's: the mean
    of the two middle values when the count is even), float32, outside autograd.

    >>> token_medians(torch.tensor([[[1.0, -4.0, 3.0, 2.0]]])).flatten().tolist()
    [2.5]
    """
    size = x.detach().float().abs()
    lower = size.median(dim=-1, keepdim=True).values  # torch's median: the lower middle value
    if x.shape[-1] % 2:
        return lower
    upper = -(-size).median(dim=-1, keepdim=True).values  # the lower middle of -|x|: the upper one of |x|
    return (lower + upper) / 2


def massive_entries(x: Tensor, ratio: float) -> Tensor:
    """``[batch, tokens, width]`` bool: ``|x| > ratio * median |x|`` of the entry's token.

    A token holds a massive entry only if its largest ``|x|`` exceeds ``ratio`` times its median,
    which needs ``ratio`` times its lower middle value below that largest (the median is at least
    the lower middle, in float arithmetic too): a count, cheaper than a median. The medians are
    taken for the tokens that pass it (a few: the sink tokens), exactly.
    """
    size = x.detach().float().abs()
    below = (ratio * size < size.amax(dim=-1, keepdim=True)).sum(dim=-1)  # [batch, tokens]
    candidates = (below > (x.shape[-1] - 1) // 2).nonzero(as_tuple=True)
    massive = torch.zeros_like(size, dtype=torch.bool)
    if candidates[0].numel():
        rows = size[candidates]  # [candidates, width]
        massive[candidates] = rows > ratio * token_medians(rows)
    return massive


def clip_massive(x: Tensor, massive: Tensor, to: str, strength: float) -> Tensor:
    """``x + strength (target - x)`` on the ``massive`` entries; ``target`` 0, or (``mean``) each
    entry's mean over the batch rows where the same position and channel is massive. ``x`` itself
    when no entry is massive."""
    if not massive.any():
        return x
    work = x.float()
    if to == "zero":
        target = torch.zeros_like(work)
    else:
        chosen = massive.float()
        target = (work * chosen).sum(dim=0, keepdim=True) / chosen.sum(dim=0, keepdim=True).clamp_min(1)
    return torch.where(massive, work + strength * (target - work), work).to(x.dtype)


def patch_edit(knobs: MassiveClipKnobs, target: PatchTarget):
    """On every block's output, in call order; None (nothing to install) at strength 0."""
    if knobs.strength == 0:
        return None
    edited: list[Tensor] = []  # this forward pass: [batch, tokens], the tokens edited at an earlier block

    def edit(layer: int, x: Tensor) -> Tensor:
        if layer == 0:
            edited.clear()
        mask = target.mask(x.shape[1])
        real = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device) if mask is None else mask.to(x.device)
        seen = edited.pop() if edited else torch.zeros_like(real)
        massive = massive_entries(x, knobs.ratio) & (real & ~seen)[..., None]
        edited.append(seen | massive.any(dim=-1))
        return clip_massive(x, massive, knobs.to, knobs.strength)

    return edit


PATCHER = Patcher("block_output", patch_edit)
