"""Forward hooks with one place to remove them, and the batch's token mask as the model sees it."""

from __future__ import annotations

import inspect
from typing import Callable

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from oversmooth.errors import UsageError


def first_input(args: tuple, kwargs: dict, name: str = "hidden_states") -> Tensor:
    """The hidden-state argument of a module call, positional or keyword."""
    return args[0] if args else kwargs[name]


def first_output(output) -> Tensor:
    """A block's or attention module's main output (some return tuples)."""
    return output[0] if isinstance(output, tuple) else output


class HookSet:
    """Registered hooks that are removed together (``remove()``), leaving the model as it was."""

    def __init__(self) -> None:
        self._handles: list[RemovableHandle] = []

    def after(self, module: nn.Module, fn: Callable) -> None:
        """``fn(module, args, output)`` after ``module`` runs; a non-None return replaces the output."""
        self._handles.append(module.register_forward_hook(fn))

    def before(self, module: nn.Module, fn: Callable, with_kwargs: bool = False) -> None:
        """``fn(module, args[, kwargs])`` before ``module`` runs; a non-None return replaces the inputs."""
        self._handles.append(module.register_forward_pre_hook(fn, with_kwargs=with_kwargs))

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


class BatchMask:
    """Reads the ``attention_mask`` of every call of the base model: ``mask`` is ``[B, n]`` bool or None.

    Only 2-D padding masks are understood; ``None`` means every token is valid (images, or text
    called without a mask).
    """

    def __init__(self, base: nn.Module, hooks: HookSet, on_call: Callable[[], None] | None = None):
        self.mask: Tensor | None = None
        self._signature = inspect.signature(base.forward)
        self._on_call = on_call
        hooks.before(base, self._read, with_kwargs=True)

    def _read(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        mask = self._signature.bind_partial(*args, **kwargs).arguments.get("attention_mask")
        if mask is not None and mask.dim() != 2:
            raise UsageError(f"only [batch, tokens] padding masks are supported, got shape "
                             f"{tuple(mask.shape)}; pass the tokenizer's attention_mask")
        self.mask = None if mask is None else mask.to(torch.bool)
        if self._on_call is not None:
            self._on_call()
