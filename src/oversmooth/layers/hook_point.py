"""A named identity module: the place where activations can be read (TransformerLens style)."""

from __future__ import annotations

from torch import Tensor, nn


class HookPoint(nn.Module):
    """Returns its input unchanged. Its module name (``blocks.3.hook_resid_post``) is the hook name;
    forward hooks registered on it see the activation without changing the result."""

    def forward(self, x: Tensor) -> Tensor:
        return x
