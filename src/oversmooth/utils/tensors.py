"""The Python API's guard on its tensor arguments: a list, an array or an empty size is refused
with one line naming the argument, before it fails deep inside a computation."""

from __future__ import annotations

from torch import Tensor

from oversmooth.errors import UsageError


def check_tensor(x: object, what: str, shape: str = "[batch, tokens, features]") -> Tensor:
    """``x`` if it is a torch tensor with the dimensions ``shape`` names (at least those beside a
    ``...``), each of size at least 1;
    else one UsageError naming ``what`` and the fix (the Python API's guard for lists, arrays and
    empty sizes, which would otherwise fail deep inside a metric).

    >>> check_tensor([[1.0]], "states")
    Traceback (most recent call last):
    ...
    oversmooth.errors.UsageError: states are a list; pass a torch tensor [batch, tokens, features] (torch.as_tensor)
    """
    if not isinstance(x, Tensor):
        raise UsageError(f"{what} are a {type(x).__name__}; pass a torch tensor {shape} (torch.as_tensor)")
    dims = shape.count(",") + 1
    if (x.dim() < dims - 1 if "..." in shape else x.dim() != dims) or 0 in x.shape:
        raise UsageError(f"{what} have shape {tuple(x.shape)}; pass {shape} with every size at least 1")
    return x
