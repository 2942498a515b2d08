"""A projection whose input autograd rebuilds in backward instead of keeping it.

The attention output projection reads the per-head context ``A V`` plus the mitigation terms,
merged over heads: a cheap elementwise function of tensors that autograd keeps anyway (SDPA
keeps its output and V). Keeping the merged result as well would cost one ``[batch, tokens,
width]`` tensor per layer; ``project_recomputed`` keeps a recipe instead and re-runs the
elementwise part once in backward (the projection itself is not re-run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor


@dataclass(frozen=True)
class _Recipe:
    """Where the saved tensor sat inside the rebuilt input."""

    shape: torch.Size
    stride: tuple[int, ...]
    offset: int


def project_recomputed(project: Callable[[Tensor], Tensor], make_input: Callable[[], Tensor]) -> Tensor:
    """``project(make_input())``; tensors that ``project`` saves from its input are rebuilt by
    calling ``make_input()`` again (under no_grad) in backward.

    ``make_input`` must be deterministic and read only tensors that stay unchanged until backward.
    Under ``torch.compile`` the plain call is used (the compiler makes its own choice).

    >>> import torch
    >>> x = torch.randn(2, 3, requires_grad=True)
    >>> w = torch.randn(4, 3, requires_grad=True)
    >>> project_recomputed(lambda h: h @ w.T, lambda: x * 2).sum().backward()
    >>> torch.allclose(w.grad, (2 * x).sum(0).expand(4, 3))
    True
    """
    x = make_input()
    if not torch.is_grad_enabled() or torch.compiler.is_compiling():
        return project(x)
    storage = x.untyped_storage().data_ptr()

    def pack(t: Tensor) -> Tensor | _Recipe:
        if t.untyped_storage().data_ptr() == storage:
            return _Recipe(t.shape, t.stride(), t.storage_offset())
        return t

    def unpack(saved: Tensor | _Recipe) -> Tensor:
        if isinstance(saved, Tensor):
            return saved
        with torch.no_grad():
            return make_input().as_strided(saved.shape, saved.stride, saved.offset)

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return project(x)
