"""A linear map whose input autograd rebuilds in backward instead of keeping it.

The attention output projection reads the per-head context ``A V`` plus the mitigation terms,
merged over heads: a cheap elementwise function of tensors that autograd keeps anyway (SDPA
keeps its output and V). Keeping the merged result as well would cost one ``[batch, tokens,
width]`` tensor per layer; ``linear_rebuilding_input`` keeps a recipe instead and re-runs the
elementwise part once in backward (the matmul itself is not re-run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor


@dataclass(frozen=True)
class _Recipe:
    """Where the saved tensor sat inside the rebuilt input."""

    shape: torch.Size
    stride: tuple[int, ...]
    offset: int


def linear_rebuilding_input(x: Tensor, rebuild: Callable[[], Tensor], weight: Tensor,
                            bias: Tensor | None = None) -> Tensor:
    """``F.linear(x, weight, bias)`` where ``x = rebuild()``; in backward ``x`` comes from calling
    ``rebuild()`` again (under no_grad) rather than from memory.

    ``rebuild`` must be deterministic and read only tensors that stay unchanged until backward.
    Only this matmul's saved tensors are affected (the input and the weight). Under
    ``torch.compile`` the plain call is used (the compiler makes its own choice).

    >>> x = torch.randn(2, 3, requires_grad=True)
    >>> w = torch.randn(4, 3, requires_grad=True)
    >>> linear_rebuilding_input(2 * x, lambda: 2 * x, w).sum().backward()
    >>> torch.allclose(w.grad, (2 * x).sum(0).expand(4, 3))
    True
    """
    if not torch.is_grad_enabled() or torch.compiler.is_compiling():
        return F.linear(x, weight, bias)
    storage = x.untyped_storage().data_ptr()

    def pack(t: Tensor) -> Tensor | _Recipe:
        if t.untyped_storage().data_ptr() == storage:
            return _Recipe(t.shape, t.stride(), t.storage_offset())
        return t

    def unpack(saved: Tensor | _Recipe) -> Tensor:
        if isinstance(saved, Tensor):
            return saved
        with torch.no_grad():
            return rebuild().as_strided(saved.shape, saved.stride, saved.offset)

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return F.linear(x, weight, bias)
