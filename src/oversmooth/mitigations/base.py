"""What every mitigation declares: typed knobs, the sites where it acts, its layer, its HF edit.

A method module defines a ``Knobs`` dataclass (defaults, ranges and help in ``knob(...)``), a
``SiteLayer`` for our Transformer blocks and, where it can be patched into a pretrained model, a
``Patcher``; ``oversmooth.mitigations.registry`` lists one ``Method`` record per method. Nothing here
knows Hugging Face: the HF side (``oversmooth.hf.patch``) installs a ``Patcher``'s edit at its site.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal

import torch
from torch import Tensor, nn

from oversmooth.errors import UsageError

#: Where a method acts, in the order a block meets them: the layer's own weights (structure), the
#: values before ``A V``, the per-head context ``A V``, the attention sub-layer output before the
#: residual add, or the residual stream after the attention residual add.
Site = Literal["structure", "values", "context", "output", "stream"]
SITES: tuple[Site, ...] = ("structure", "values", "context", "output", "stream")
#: Where our knobs apply: training our own models, patching pretrained ones, or both.
Scope = Literal["train", "patch"]


def knob(default: Any, help: str, *, low: float | None = None, high: float | None = None,
         open_high: bool = False, choices: tuple[str, ...] = (), flag: str | None = None,
         causal: Any = None, scope: tuple[Scope, ...] = ("train", "patch"), per: str | None = None,
         label: str | None = None) -> Any:
    """A knob field: ``default`` and one line of ``help``; ``low``/``high`` the closed range
    (``open_high``: high excluded), ``choices`` the allowed strings, ``flag`` the global name (CLI
    flag ``--flag``, flat config key; default ``<method>_<field>``), ``causal`` another default
    for training a causal LM, ``scope`` where it applies, ``per`` ("head" / "channel"): a patch may give one
    number or one per head / channel; ``label`` its name in error messages."""
    meta = {"help": help, "label": label, "low": low, "high": high, "open_high": open_high, "choices": choices,
            "flag": flag, "causal": causal, "scope": scope, "per": per}
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Knobs:
    """Base of a method's knobs (a frozen dataclass); ``check()`` runs at construction."""

    method: ClassVar[str] = ""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Each field against its declared range / choices; one UsageError line naming the knob."""
        for f in dataclasses.fields(self):
            value, meta = getattr(self, f.name), f.metadata
            name = meta["label"] or f"{self.method} {f.name}"
            if meta["choices"]:
                if value not in meta["choices"]:
                    raise UsageError(f"{name} {value!r} unknown; choose from {', '.join(meta['choices'])}")
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                check_range(name, value, meta["low"], meta["high"], meta["open_high"])

    @classmethod
    def defaults(cls, causal: bool = False) -> dict[str, Any]:
        """Every field's default (``causal``: a causal model's default where one is declared)."""
        return {f.name: f.metadata["causal"] if causal and f.metadata["causal"] is not None else f.default
                for f in dataclasses.fields(cls)}


def check_range(name: str, value: float, low: float | None, high: float | None, open_high: bool = False) -> None:
    """UsageError unless ``value`` is finite and in ``[low, high]`` (``[low, high)`` if ``open_high``)."""
    too_high = high is not None and (value >= high if open_high else value > high)
    if not math.isfinite(value) or (low is not None and value < low) or too_high:
        if high is None:
            allowed = "" if low is None else f" >= {low:g}"
        else:
            allowed = f" in [{'-inf' if low is None else f'{low:g}'}, {high:g}{')' if open_high else ']'}"
        raise UsageError(f"{name} must be a finite number{allowed}, got {value}")


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


class SiteLayer(nn.Module):
    """A method inside our Transformer block. Override the sites where it acts; the defaults do
    nothing. Tensors: ``v, v_first, out [batch, heads, tokens, d_head]``, ``z, x [batch, tokens, width]``.
    ``v_first`` (layer 1's values) is None in layer 1."""

    #: keys = queries (no key projection).
    ties_keys: ClassVar[bool] = False
    #: acts on the attention sub-layer output (``output``) / the stream after the add (``stream``).
    on_output: bool = False
    on_stream: bool = False

    def value_output(self) -> nn.Module | None:
        """A module replacing the value and output projections (``weights() -> (W_V, W_O)``,
        ``value_bias``, ``output_bias``), or None."""
        return None

    def values(self, v: Tensor, v_first: Tensor | None) -> Tensor:
        """The values ``A`` averages."""
        return v

    def on_context(self, v_first: Tensor | None) -> bool:
        """Whether ``context`` acts in this call."""
        return False

    def context(self, out: Tensor, v: Tensor, v_first: Tensor | None) -> Tensor:
        """Per head, after ``A V`` (``v``: the values A averaged)."""
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


@dataclass(frozen=True)
class Patcher:
    """How a method edits a pretrained model: ``build(knobs, target)`` returns the edit for ``site``:

    - ``context``: ``edit(layer, z, v, v_first) -> z`` per head on the output projection's input
      (``v_first`` None in block 0);
    - ``output``: ``edit(layer, out) -> out`` on the attention branch output;
    - ``stream``: ``edit(layer, x) -> delta`` with the new stream ``x + delta`` after the attention
      residual add (``delta`` exactly 0 at the zero setting).
    """

    site: Literal["context", "output", "stream"]
    build: Callable[[Any, PatchTarget], Callable]


@dataclass(frozen=True)
class Method:
    """One mitigation: what it is, its knobs and where it acts, its layer and its patch."""

    name: str
    paper: str                  # authors, venue / year, and the equation where there is one
    formula: str                # one line
    knobs: type[Knobs]
    site: Site
    layer: Callable[[Any, LayerShape], SiteLayer]
    attribute: str              # the layer's attribute name (state-dict prefix)
    in_block: bool = False      # the layer lives on the block, not on its attention
    patcher: Patcher | None = None
    unpatchable: str = ""       # why there is no patch
    zero: dict[str, Any] = dataclasses.field(default_factory=dict)    # knobs at which it is the baseline
    sweep: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)  # analyze --sweep grid
    short: str = ""             # short label in tables

    def flag(self, field: str) -> str:
        """The global name of knob ``field`` (CLI ``--flag``, flat config key)."""
        return self.knob_field(field).metadata["flag"] or f"{self.name}_{field}"

    def knob_field(self, name: str) -> dataclasses.Field:
        return next(f for f in dataclasses.fields(self.knobs) if f.name == name)

    def fields(self, scope: Scope | None = None) -> tuple[dataclasses.Field, ...]:
        """The knob fields, those that apply in ``scope`` when given."""
        return tuple(f for f in dataclasses.fields(self.knobs) if scope is None or scope in f.metadata["scope"])
