"""NeuTRENO (Nguyen, Nguyen & Baraniuk, NeurIPS 2023): a fidelity term toward layer 1's values.

Per head, in every layer after the first: ``O = softmax(QK^T/sqrt(d_h)) V + lam (V1 - V)``,
added before the heads are merged and before the output projection. ``V1`` is the first
layer's value tensor, passed on undetached. No parameters, so pretrained weights load as they
are. Being per token, it keeps causal models causal.
"""

from __future__ import annotations

import math

from torch import Tensor

from oversmooth.errors import UsageError


def check_lambda(lam: float) -> float:
    if not 0 <= lam < math.inf:
        raise UsageError(f"NeuTRENO lambda must be a finite number >= 0, got {lam} (paper: 0.6 for DeiT, 0.4 for LM)")
    return float(lam)


def neutreno_correction(v: Tensor, v_first: Tensor, lam: float) -> Tensor:
    """``lam * (v_first - v)``, to add to the attention output.

    ``v``, ``v_first``: ``[batch, heads, tokens, d_head]`` (or heads merged, same layout for both).

    >>> import torch
    >>> neutreno_correction(torch.zeros(1, 1, 2, 1), torch.ones(1, 1, 2, 1), 0.5).flatten().tolist()
    [0.5, 0.5]
    """
    return lam * (v_first - v)
