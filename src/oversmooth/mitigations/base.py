"""What every method module implements: a ``SiteLayer`` for our Transformer blocks and, where it
can be patched into a pretrained model, a ``Patcher``. Its knobs and its ``Method`` record are
declared in ``oversmooth.mitigations.registry`` (torch-free). Nothing here knows Hugging Face: the
HF side (``oversmooth.hf.patch``) installs a ``Patcher``'s edit at its site.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
from torch import Tensor, nn

from oversmooth.errors import UsageError


def per_unit(value: Any, size: int, name: str) -> Tensor:
    """A knob given as one number or ``size`` numbers (one per head / channel) -> float ``[size]``."""
    tensor = torch.as_tensor(value, dtype=torch.float32)
    if tensor.dim() == 0:
        return tensor.expand(size).clone()
    if tensor.shape != (size,):
        raise UsageError(f"{name} must be one number or {size} numbers, got shape {tuple(tensor.shape)}")
    return tensor


@dataclass(frozen=True)
class LayerShape:
    """What a method's layer needs to know of the attention it sits in."""

    width: int
    heads: int
    causal: bool
    depth: int = 1  # blocks in the stack (DeepNorm's alpha and beta, LayerScale's eps depend on it)


class SiteLayer(nn.Module):
    """A method inside our Transformer block (site ``tokens``: on the model). Override the sites
    where it acts; the defaults do nothing. Tensors: ``v, v_first, out [batch, heads, tokens,
    d_head]``, ``z, x [batch, tokens, width]``. ``v_first`` (layer 1's values) is None in layer 1."""

    #: keys = queries (no key projection).
    ties_keys: ClassVar[bool] = False
    #: ``normalise`` replaces the softmax of the attention scores (the attention then builds A itself).
    normalises: ClassVar[bool] = False
    #: ``gate`` acts on the per-head context.
    gates: ClassVar[bool] = False
    #: its parameters that the model draws as its own tensors (N(0, 0.02), like the CLS token).
    drawn: ClassVar[tuple[str, ...]] = ()
    #: the block keeps its LayerNorms (ReZero drops them).
    keeps_norms: ClassVar[bool] = True
    #: acts on the attention sub-layer output (``output``) / the stream after the add (``stream``).
    on_output: bool = False
    on_stream: bool = False

    def value_output(self) -> nn.Module | None:
        """A module replacing the value and output projections (``weights() -> (W_V, W_O)``,
        ``value_bias``, ``output_bias``), or None."""
        return None

    def extend(self, x: Tensor) -> Tensor:
        """Site ``tokens``: the sequence the blocks read, from the embeddings' ``x`` (registers
        append theirs after it)."""
        return x

    def values(self, v: Tensor, v_first: Tensor | None) -> Tensor:
        """The values ``A`` averages."""
        return v

    def normalise(self, scores: Tensor) -> Tensor:
        """The attention weights ``[batch, heads, queries, keys]`` from the scores ``Q K^T /
        sqrt(d_h)`` (a masked key's score is -inf), in place of softmax."""
        return scores.softmax(dim=-1)

    def on_context(self, v_first: Tensor | None) -> bool:
        """Whether ``context`` acts in this call."""
        return False

    def context(self, out: Tensor, v: Tensor, v_first: Tensor | None) -> Tensor:
        """Per head, after ``A V`` (``v``: the values A averaged)."""
        return out

    def gate(self, out: Tensor, x: Tensor) -> Tensor:
        """Per head, the context ``out`` as the output projection reads it, gated by the attention's
        input ``x [batch, tokens, width]``."""
        return out

    def context_fold(self, v: Tensor, dtype) -> tuple[Tensor, Tensor] | None:
        """Without a causal mask, ``context`` as ``out * scale + offset`` folded into W_O:
        ``(scale [width], offset [batch, 1, width])`` with heads merged, or None (not foldable)."""
        return None

    def output(self, z: Tensor) -> Tensor:
        """The attention sub-layer output, after W_O."""
        return z

    def output_fold(self, dtype) -> tuple[Tensor | None, Tensor] | None:
        """``output`` as ``alpha * z + beta * mean_t(z)`` (``alpha`` None = 1), folded into W_O, or
        None when it cannot fold (causal)."""
        return None

    def stream(self, x: Tensor) -> Tensor:
        """The residual stream after the attention residual add (post-norm: before that norm)."""
        return x

    def residual(self, x: Tensor, f: Tensor, branch: int) -> Tensor:
        """The stream after branch ``branch`` (0: attention, 1: MLP) adds its output ``f`` to ``x``
        (post-norm: before the norm that follows). One method per block at most owns it."""
        return x + f

    def reweight(self, linears: dict[str, nn.Linear]) -> None:
        """Once, after the model drew its weights: rescale or reparametrise the block's linear
        layers, by role (``query``, ``key``, ``value``, ``output``, ``mlp_in``, ``mlp_out``; a role
        a method replaced, e.g. ``key`` under ``symmetric``, is absent)."""


@dataclass(frozen=True)
class PatchTarget:
    """What a Hugging Face patch tells an edit about the model it edits."""

    heads: int
    hidden: int
    causal: bool
    #: ``means(layer, x [B, ..., n, d])``: token means over the call's valid tokens (causal: prefix
    #: means carried across KV-cache calls), broadcastable to x.
    means: Callable[[int, Tensor], Tensor]
    #: ``history(layer, x [B, n, d]) -> (x_all [B, past + n, d], valid [B, past + n] bool)``: this
    #: call's rows after the earlier calls' (KV-cache decoding), for edits that read whole prefixes.
    history: Callable[[int, Tensor], tuple[Tensor, Tensor]]
    #: ``mask(n) -> [B, n] bool``: which of the call's ``n`` new tokens are real (None: all of them).
    mask: Callable[[int], Tensor | None]
    head_dim: int


@dataclass(frozen=True)
class Patcher:
    """How a method edits a pretrained model: ``build(knobs, target)`` returns the edit for ``site``:

    - ``context``: ``edit(layer, z, v, v_first) -> z`` per head on the output projection's input
      (``v_first`` None in block 0);
    - ``output``: ``edit(layer, out) -> out`` on the attention branch output;
    - ``stream``: ``edit(layer, x) -> delta`` with the new stream ``x + delta`` after the attention
      residual add (``delta`` exactly 0 at the zero setting);
    - ``branches``: ``edit(layer, branch, out) -> out`` on the attention (0) and MLP (1) branch
      outputs, before their residual adds;
    - ``weights``: ``edit(linear) -> undo`` on every linear map of every block, once (a shared block
      once); ``undo(keep)`` takes the edit off, ``keep`` leaving its effect in the plain weight;
    - ``scores``: ``edit(weights, valid) -> weights`` on the attention weights ``[B, H, queries,
      keys]`` of every attention call (``valid [B, keys]`` bool: the real keys, cached and new;
      None: all), the model's own eager attention then computing its output from them;
    - ``gate``: ``edit() -> module``, a fresh module for one attention module whose
      ``gate(z, x) -> z`` acts per head on the output projection's input ``z`` with the
      attention's input ``x [B, n, d]``; it joins the model (trained by ``adapt``, saved with it);
    - ``block_output``: ``edit(layer, x) -> x`` on each block's output ``[B, n, d]``, in call order.

    ``build`` may return None: at these knobs the method changes nothing, and nothing is installed.
    ``check(knobs, valid)``, where given, raises UsageError before any work when the knobs cannot
    act on sequences whose real tokens are ``valid [B, n]`` (bool).
    """

    site: Literal["context", "output", "stream", "branches", "weights", "scores", "gate", "block_output"]
    build: Callable[[Any, PatchTarget], Callable | None]
    check: Callable[[Any, Tensor], None] | None = None
