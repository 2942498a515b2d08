"""Forward hooks with one place to remove them, and the batch's token mask as the model sees it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from oversmooth.errors import UsageError


def first_input(args: tuple, kwargs: dict, name: str = "hidden_states") -> Tensor:
    """The hidden-state argument of a module call, positional or keyword."""
    return args[0] if args else kwargs[name]


def first_output(output) -> Tensor:
    """A block's or attention module's main output (some return tuples)."""
    return output[0] if isinstance(output, (tuple, list)) else output


def with_first_output(output, main: Tensor):
    """``output`` with its main output (``first_output``) replaced by ``main``."""
    return (main, *output[1:]) if isinstance(output, (tuple, list)) else main


class HookSet:
    """Registered hooks that are removed together (``remove()``), leaving the model as it was."""

    def __init__(self) -> None:
        self._handles: list[RemovableHandle] = []
        self._counters: list[list[int]] = []
        self._restarting: set[int] = set()

    def after(self, module: nn.Module, fn: Callable) -> None:
        """``fn(module, args, output)`` after ``module`` runs; a non-None return replaces the output."""
        self._handles.append(module.register_forward_hook(fn))

    def before(self, module: nn.Module, fn: Callable, with_kwargs: bool = False) -> None:
        """``fn(module, args[, kwargs])`` before ``module`` runs; a non-None return replaces the inputs."""
        self._handles.append(module.register_forward_pre_hook(fn, with_kwargs=with_kwargs))

    def each_layer(
        self,
        modules: Sequence[nn.Module],
        fn: Callable,
        restart: nn.Module,
        before: bool = False,
        with_kwargs: bool = False,
    ) -> None:
        """``fn(layer, module, args, ...)`` on every call of ``modules[layer]``, after it runs (or
        ``before``). A module listed for several layers (a shared block, as in ALBERT) gets one
        hook that serves those layers in call order; its count restarts with every call of
        ``restart`` (the base model)."""
        layers_of: dict[int, tuple[nn.Module, list[int]]] = {}
        for layer, module in enumerate(modules):
            layers_of.setdefault(id(module), (module, []))[1].append(layer)
        for module, layers in layers_of.values():
            counter = [0]
            self._counters.append(counter)

            def hook(module, *rest, layers=layers, counter=counter):
                layer = layers[counter[0] % len(layers)]
                counter[0] += 1
                return fn(layer, module, *rest)

            if before:
                self.before(module, hook, with_kwargs=with_kwargs)
            else:
                self.after(module, hook)
        if id(restart) not in self._restarting:
            self._restarting.add(id(restart))
            self.before(restart, lambda module, args: self._restart())

    def _restart(self) -> None:
        for counter in self._counters:
            counter[0] = 0

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._counters.clear()
        self._restarting.clear()


class BatchMask:
    """Reads every call of the model: ``mask``, the ``attention_mask`` as bool ``[B, past + n]``
    (None: every token valid, e.g. images), and the number of tokens in its KV cache.

    ``entries`` are the modules a forward pass may enter by (the model with its head, which
    ``generate`` calls, and the base model; OPT's head calls its decoder, not its base model); each
    call of one of them is read. Only 2-D padding masks are understood. A hook that sees the
    call's ``n`` new tokens asks ``past(n)`` (tokens before them: the mask's extra columns, else the
    cache's length) and ``new_mask(n)`` (their ``[B, n]`` mask, None when every token is valid).
    """

    def __init__(self, entries: Sequence[nn.Module], hooks: HookSet):
        self.mask: Tensor | None = None
        self.cached = 0
        for entry in dict.fromkeys(entries):
            hooks.before(entry, self._reader(inspect.signature(entry.forward)), with_kwargs=True)

    def _reader(self, signature: inspect.Signature):
        return lambda module, args, kwargs: self._read(signature, args, kwargs)

    def _read(self, signature: inspect.Signature, args: tuple, kwargs: dict) -> None:
        arguments = signature.bind_partial(*args, **kwargs).arguments
        arguments = {**arguments.pop("kwargs", {}), **arguments}
        mask = arguments.get("attention_mask")
        if mask is not None and mask.dim() != 2:
            raise UsageError(
                f"only [batch, tokens] padding masks are supported, got shape "
                f"{tuple(mask.shape)}; pass the tokenizer's attention_mask"
            )
        cache = arguments.get("past_key_values")
        self.cached = int(cache.get_seq_length()) if hasattr(cache, "get_seq_length") else 0
        self.mask = None if mask is None else mask.to(torch.bool)

    def past(self, tokens: int) -> int:
        """Tokens before this call's ``tokens`` new ones."""
        return self.cached if self.mask is None else self.mask.shape[1] - tokens

    def new_mask(self, tokens: int) -> Tensor | None:
        """``[B, tokens]``: the mask of this call's new tokens (the mask's last columns)."""
        if self.mask is None:
            return None
        if self.mask.shape[1] < tokens:
            raise UsageError(
                f"attention_mask has {self.mask.shape[1]} columns for {tokens} tokens; "
                "pass a mask over the cached and the new tokens"
            )
        return self.mask[:, self.mask.shape[1] - tokens :]
