"""LayerNorm with a chosen sign for its weights (Dovonon et al. 2025, Sec. 5: with pre-LN the effective value-output
matrix is diag(gamma) W_V W_O, so negative gamma flips the sign of its eigenvalues)."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from oversmooth.errors import UsageError

#: ``ln_sign`` choices -> meaning.
LN_SIGNS: dict[str, str] = {
    "free": "weights start at +1 and may take any sign (standard LayerNorm)",
    "negative_init": "weights start at -1 and may take any sign",
    "positive": "weights kept positive: gamma = |w|, start at +1",
    "negative": "weights kept negative: gamma = -|w|, start at -1",
}


class _FixedSign(nn.Module):
    """Parametrization ``w -> sign * |w|``; ``layer_norm.weight`` then always has that sign."""

    def __init__(self, sign: float):
        super().__init__()
        self.sign = sign

    def forward(self, weight: Tensor) -> Tensor:
        return self.sign * weight.abs()

    def right_inverse(self, weight: Tensor) -> Tensor:
        return weight.abs()


def signed_layer_norm(dim: int, sign: str = "free", eps: float = 1e-5) -> nn.LayerNorm:
    """``nn.LayerNorm(dim)`` whose weight starts at / is kept to the sign named by ``sign``.

    ``.weight`` always reads the effective gamma, so spectral diagnostics need no special case.

    >>> ln = signed_layer_norm(4, "negative")
    >>> ln.weight.tolist()
    [-1.0, -1.0, -1.0, -1.0]
    """
    if sign not in LN_SIGNS:
        raise UsageError(f"ln_sign {sign!r} unknown; choose from {', '.join(LN_SIGNS)}")
    norm = nn.LayerNorm(dim, eps=eps)
    if sign == "negative_init":
        with torch.no_grad():
            norm.weight.fill_(-1.0)
    elif sign in ("positive", "negative"):
        parametrize.register_parametrization(norm, "weight", _FixedSign(1.0 if sign == "positive" else -1.0))
    return norm
