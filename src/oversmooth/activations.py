"""The one activation cache of the toolkit, and its one layer numbering.

Both capture paths return an ``ActivationCache``: ``HookedTransformer.run_with_cache`` (our ViT
and causal LM, ``oversmooth.models``) and ``oversmooth.hf.capture.capture`` (pretrained Hugging
Face models). It is a read-only ``{hook name: tensor}`` mapping, as TransformerLens's is.

**Hook names** are TransformerLens's: block ``l`` is 0-based, in call order (a shared block, as in
ALBERT, counts once per use): ``blocks.{l}.hook_resid_pre``, ``hook_attn_out``,
``hook_resid_mid``, ``hook_resid_post``, ``blocks.{l}.attn.hook_v`` / ``hook_z`` /
``hook_pattern``. ``hook_name(l, "resid_post")`` spells them.

**Layer numbering of per-layer measures** (the *stream*): a list of per-layer numbers has
``depth + 1`` entries, **index 0 = the embeddings output** (``blocks.0.hook_resid_pre``) and
**index i = the residual stream after block i** (``blocks.{i-1}.hook_resid_post``, before any
final norm). ``ActivationCache.stream()`` and ``stream_names(depth)`` produce it; every metric
table, ``analysis.json`` ``stream`` list, probe curve and ``analyze`` CSV follows it. A number
about *one block* (a sublayer change, a dynamics verdict, an attention measure) carries
``layer = i`` for block ``i``: the stream state that block makes.

>>> import torch
>>> cache = ActivationCache({hook_name(0, "resid_pre"): torch.zeros(1, 2, 3),
...                          hook_name(0, "resid_post"): torch.ones(1, 2, 3)}, depth=1)
>>> stream_names(1)
['blocks.0.hook_resid_pre', 'blocks.0.hook_resid_post']
>>> [state.sum().item() for state in cache.stream()]   # index 0: embeddings, 1: after block 1
[0.0, 6.0]
>>> len(cache.layer_stack("resid_post"))               # one per block, blocks.0 first
1
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from torch import Tensor

from oversmooth.errors import UsageError

ATTENTION_HOOKS = ("v", "z", "pattern")  # hook points under ``blocks.{l}.attn``


def short_hook(hook: str) -> str:
    """``"attn.hook_v"`` / ``"hook_v"`` / ``"v"`` -> ``"v"``: the name without its prefixes."""
    return hook.removeprefix("attn.").removeprefix("hook_")


def hook_name(layer: int, hook: str) -> str:
    """``hook_name(3, "resid_post")`` -> ``blocks.3.hook_resid_post``; attention hooks (``v``, ``z``,
    ``pattern``) -> ``blocks.3.attn.hook_v``. ``hook`` may carry its ``hook_`` / ``attn.`` prefix."""
    short = short_hook(hook)
    return f"blocks.{layer}.attn.hook_{short}" if short in ATTENTION_HOOKS else f"blocks.{layer}.hook_{short}"


def stream_names(depth: int) -> list[str]:
    """The hook names of the ``depth + 1`` stream states: embeddings output, then after each block."""
    return [hook_name(0, "resid_pre"), *(hook_name(block, "resid_post") for block in range(depth))]


@dataclass(frozen=True, eq=False)
class ActivationCache(Mapping[str, Tensor]):
    """Captured tensors by hook name (``[B, n, d]`` stream states, ``[B, H, n, d_head]`` values,
    ``[B, H, n, n]`` patterns) of a model with ``depth`` blocks; ``mask [B, n]`` the valid tokens
    (None: every token valid)."""

    tensors: dict[str, Tensor]
    depth: int
    mask: Tensor | None = None

    def __getitem__(self, name: str) -> Tensor:
        try:
            return self.tensors[name]
        except KeyError:
            raise UsageError(
                f"hook {name!r} was not captured; captured: {', '.join(sorted(self.tensors)[:8]) or 'nothing'}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    def layer_stack(self, hook: str) -> list[Tensor]:
        """``hook`` of every block, block 0 first (``"resid_post"``, ``"hook_resid_post"`` or
        ``"attn.hook_v"``); a usage error unless every block has it."""
        names = [hook_name(block, hook) for block in range(self.depth)]
        missing = [name for name in names if name not in self.tensors]
        if missing:
            raise UsageError(
                f"hook {short_hook(hook)!r} was not captured at {', '.join(missing[:3])}; ask for it at every block"
            )
        return [self.tensors[name] for name in names]

    def stream(self) -> list[Tensor]:
        """The ``depth + 1`` stream states in the module's numbering (TransformerLens's
        ``accumulated_resid``): 0 = embeddings output, i = after block i, before any final norm."""
        return [self[name] for name in stream_names(self.depth)]

    def __repr__(self) -> str:
        return f"ActivationCache(depth {self.depth}, {len(self)} tensors: {', '.join(list(self)[:4])}...)"
