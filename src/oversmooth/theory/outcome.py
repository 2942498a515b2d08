"""What a simulated trajectory did, read off the metrics, to set beside the spectral prediction.

Rules (batched over runs; ``tol`` defaults to 1e-6; L = depth, w = ``window`` last layers):

- ``mode``: ``smoothing`` when the tokens reached one point, t_div(X_L) <= tol, or are still
  collapsing, t_div(X_L) <= t_div(X_{L/2}) / 2; otherwise ``sharpening`` (t_div has levelled
  off at a positive value: a non-constant mode carries X).
- ``angle_converges``: the direction of X stopped moving, 1 - |cos(vec X_L, vec X_l)| <= tol for
  every l in the window (up to sign: a negative dominant mu flips X each layer).
- ``rank_collapse``: stable_rank(X_L) <= 1 + tol (X_L is numerically rank one).

The halving clause covers normalised runs (pre-LN), whose residual stream grows so that t_div
decays only polynomially; for the linear model (norm none) with a separated spectrum it is
redundant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from oversmooth.metrics import stable_rank, t_div


@dataclass(frozen=True)
class Outcome:
    """Per run ``[B]`` tensors; ``mode`` is a list of strings."""

    mode: list[str]
    angle_converges: Tensor
    rank_collapse: Tensor
    t_div_final: Tensor
    direction_drift: Tensor  # max over the window of 1 - |cos(vec X_L, vec X_l)|


def direction_drift(states: Sequence[Tensor], window: int) -> Tensor:
    """``max_{l in last window} 1 - |cos(vec X_L, vec X_l)|``, ``[B]``."""
    last = states[-1].flatten(1)
    drifts = []
    for x in states[-window - 1 : -1]:
        cosine = torch.nn.functional.cosine_similarity(last, x.flatten(1), dim=-1, eps=1e-300)
        drifts.append(1 - cosine.abs())
    return torch.stack(drifts).amax(dim=0)


def observe(states: Sequence[Tensor], *, window: int | None = None, tol: float = 1e-6) -> Outcome:
    """Classify each run of ``states`` (per layer ``[B, n, d]``), see the module rules."""
    window = window or max(1, (len(states) - 1) // 4)
    final, halfway = t_div(states[-1]), t_div(states[(len(states) - 1) // 2])
    collapsing = (final <= tol) | (final <= halfway / 2)
    drift = direction_drift(states, window)
    return Outcome(
        mode=["smoothing" if c else "sharpening" for c in collapsing.tolist()],
        angle_converges=drift <= tol,
        rank_collapse=stable_rank(states[-1]) <= 1 + tol,
        t_div_final=final,
        direction_drift=drift,
    )
