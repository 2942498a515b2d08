"""Activations captured at hook points during one forward pass."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from torch import Tensor

from oversmooth.errors import UsageError


class ActivationCache(Mapping[str, Tensor]):
    """Read-only ``{hook name: tensor}``; ``layer_stack(hook)`` lists ``blocks.{l}.{hook}`` by layer.

    >>> import torch
    >>> cache = ActivationCache({"blocks.1.hook_v": torch.ones(1), "blocks.0.hook_v": torch.zeros(1)})
    >>> [t.item() for t in cache.layer_stack("hook_v")]
    [0.0, 1.0]
    """

    def __init__(self, activations: dict[str, Tensor]):
        self._activations = dict(activations)

    def __getitem__(self, name: str) -> Tensor:
        try:
            return self._activations[name]
        except KeyError:
            raise UsageError(f"hook {name!r} was not captured; captured: "
                             f"{', '.join(sorted(self._activations)[:8])}...") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._activations)

    def __len__(self) -> int:
        return len(self._activations)

    def layer_stack(self, hook: str) -> list[Tensor]:
        """``[cache["blocks.0.<hook>"], cache["blocks.1.<hook>"], ...]`` for every captured layer."""
        layers = {}
        for name, value in self._activations.items():
            parts = name.split(".", 2)
            if len(parts) == 3 and parts[0] == "blocks" and parts[2] == hook and parts[1].isdigit():
                layers[int(parts[1])] = value
        if not layers:
            raise UsageError(f"no layer captured hook {hook!r}; run_with_cache(..., names=...) must "
                             "include blocks.{l}." + hook)
        return [layers[layer] for layer in sorted(layers)]

    def __repr__(self) -> str:
        return f"ActivationCache({len(self)} tensors: {', '.join(list(self)[:4])}...)"
