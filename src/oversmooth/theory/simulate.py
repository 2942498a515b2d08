"""Iterate the simplified attention layer X <- X + A X H, batched over independent runs.

One layer, with ``S(X) = LN(X)`` for ``norm="pre"`` and ``S(X) = X`` otherwise::

    update = A S(X) H                    (A fixed, or softmax(S(X) M S(X)^T / sqrt(d)))
    update = deescalate(update, tau)     (Yu & Zhang, on the attention output; tau = 0: off)
    X      = X + update                  (``residual=False``: X = update)
    X      = LN(X)                       (``norm="post"`` only)

LN normalises each token over features, with weight ``gamma`` (default ones) and no bias. With
``norm="none"`` X is rescaled to unit RMS after every layer: the linear dynamics are
homogeneous, so this changes no metric, and it keeps softmax logits O(1) and floats finite.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.mitigations.deescalation import deescalate
from oversmooth.theory.sampling import softmax_attention

SIMULATED_NORMS = ("none", "pre", "post")


@dataclass(frozen=True)
class LayerConfig:
    """How one simplified layer acts (see module docstring)."""

    residual: bool = True
    norm: str = "none"  # one of SIMULATED_NORMS
    tau: float = 0.0  # de-escalation strength in [0, 1]
    gamma: tuple[float, ...] | None = None  # LayerNorm weight [d]; None = ones

    def __post_init__(self):
        if self.norm not in SIMULATED_NORMS:
            raise UsageError(f"unknown norm {self.norm!r}; choose from {', '.join(SIMULATED_NORMS)}")
        if not 0.0 <= self.tau <= 1.0:
            raise UsageError(f"de-escalation tau must lie in [0, 1], got {self.tau}")


@dataclass
class Trajectory:
    """``states[l]: [B, n, d]`` for l = 0..depth; ``attentions[l]: [B, n, n]`` used by layer l+1."""

    states: list[Tensor] = field(default_factory=list)
    attentions: list[Tensor] = field(default_factory=list)


def layer_norm(x: Tensor, gamma: tuple[float, ...] | None) -> Tensor:
    weight = None if gamma is None else x.new_tensor(gamma)
    if weight is not None and weight.numel() != x.shape[-1]:
        raise UsageError(f"gamma has {weight.numel()} entries for dimension {x.shape[-1]}")
    return F.layer_norm(x, x.shape[-1:], weight=weight, eps=1e-12)


def simulate(
    x0: Tensor,
    h: Tensor,
    depth: int,
    config: LayerConfig = LayerConfig(),
    *,
    attention: Tensor | None = None,
    query_key: Tensor | None = None,
) -> Trajectory:
    """Run ``depth`` layers from ``x0: [B, n, d]`` with ``h: [d, d]`` or ``[B, d, d]``.

    Exactly one of ``attention`` (fixed A, ``[n, n]`` or ``[B, n, n]``) and ``query_key``
    (M = W_Q W_K^T for data-dependent softmax attention, ``[d, d]`` or ``[B, d, d]``) is given.

    >>> x0 = torch.randn(1, 3, 2, dtype=torch.float64)
    >>> uniform = torch.full((3, 3), 1 / 3)
    >>> t = simulate(x0, torch.eye(2), 5, LayerConfig(residual=False), attention=uniform)
    >>> len(t.states), round(float((t.states[-1] - t.states[-1].mean(1, keepdim=True)).abs().max()), 9)
    (6, 0.0)
    """
    if (attention is None) == (query_key is None):
        raise UsageError("give either a fixed attention matrix or a query-key matrix, not both")
    if depth < 1:
        raise UsageError(f"depth must be at least 1, got {depth}")
    x = x0.to(torch.float64)
    if config.norm == "none":
        x = _unit_rms(x)
    trajectory = Trajectory(states=[x])
    for _ in range(depth):
        source = layer_norm(x, config.gamma) if config.norm == "pre" else x
        a = attention if attention is not None else softmax_attention(source, query_key)
        a = a.to(torch.float64).expand(x.shape[0], -1, -1)
        update = a @ source @ h.to(torch.float64)
        if config.tau:
            update = deescalate(update, config.tau)
        x = x + update if config.residual else update
        x = layer_norm(x, config.gamma) if config.norm == "post" else x
        x = _unit_rms(x) if config.norm == "none" else x
        trajectory.attentions.append(a)
        trajectory.states.append(x)
    return trajectory


def _unit_rms(x: Tensor) -> Tensor:
    rms = x.pow(2).mean(dim=(-2, -1), keepdim=True).sqrt()
    return x / rms.clamp_min(torch.finfo(x.dtype).tiny)
