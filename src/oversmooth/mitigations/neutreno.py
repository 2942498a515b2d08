"""NeuTRENO (Nguyen, Nguyen & Baraniuk, NeurIPS 2023): a fidelity term toward layer 1's values.

Per head, in every layer after the first: ``O = softmax(QK^T/sqrt(d_h)) V + lam (V1 - V)``,
added before the heads are merged and before the output projection. ``V1`` is the first
layer's value tensor, passed on undetached. No parameters, so pretrained weights load as they
are. Being per token, it keeps causal models causal.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from oversmooth.errors import UsageError


def check_lambda(lam: float) -> float:
    if not 0 <= lam < math.inf:
        raise UsageError(f"NeuTRENO lambda must be a finite number >= 0, got {lam} (paper: 0.6 for DeiT, 0.4 for LM)")
    return float(lam)


def neutreno(out: Tensor, v: Tensor, v_first: Tensor, lam: float) -> Tensor:
    """``out + lam * (v_first - v)``: the attention output ``out = A V`` with the fidelity term.

    ``out``, ``v``, ``v_first``: ``[batch, heads, tokens, d_head]`` (or heads merged, all alike).
    Two passes (a difference, then an add that scales it), and autograd keeps nothing for them.

    >>> import torch
    >>> neutreno(torch.ones(1, 1, 2, 1), torch.zeros(1, 1, 2, 1), torch.ones(1, 1, 2, 1), 0.5).flatten().tolist()
    [1.5, 1.5]
    """
    return torch.add(out, torch.sub(v_first, v), alpha=lam)
