"""A loaded Hugging Face model seen through its family: the modules we hook, discovered from the model.

``oversmooth.hf.discover.layout(model)`` finds the blocks, the attention module, the value and output
projections, the norms and the residual wiring of any transformers 5.x model that declares its
blocks and attention modules (``_can_record_outputs``) and uses the standard attention interface;
its result is a ``Layout``. What cannot be read off the model lives in one table, ``KNOWN_FAMILIES``:
a display name per tested family, the layout of a fused QKV projection where it is not
``[q | k | v]``, and families refused with the reason.

Roles (``Family`` fields, module paths relative to one block; ``final_norm`` relative to the base
model):

- ``attention``: the module whose output tuple holds the attention weights at ``pattern_index``
  (materialised only with ``attn_implementation="eager"``).
- ``value``: the value projection, or the fused QKV projection (``value_layout``); its output
  holds V.
- ``out_proj``: the attention output projection; its input is the merged-head context ``A V``
  ``[batch, tokens, heads * d_head]``.
- ``attn_out``: the module whose output is the attention branch as it is added to the stream:
  ``out_proj`` itself, or a module after it (Gemma2/3's post-attention norm, DINOv2's layer
  scale). ``resid_pre + attn_out = resid_mid``.
- ``pre_norm``: the norm in front of attention (pre-LN and parallel blocks; folded into the spectra).
- ``mid_norm``: the norm that reads ``resid_mid``: post-LN blocks normalise the stream with it,
  pre-LN blocks normalise the MLP input. Parallel blocks have none.
- ``out_norm``: post-LN only, the norm whose output is the block output.
- ``residual``: ``pre`` (``x + attn``, then ``+ mlp``), ``post`` (a norm after each add) or
  ``parallel`` (``x + attn(x) + mlp(x)``, GPT-NeoX, Phi: both branches read the block input).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from torch import Tensor, nn

from oversmooth.errors import UsageError
from oversmooth.hf.hooks import HookSet

Residual = Literal["pre", "post", "parallel"]
ValueLayout = Literal["separate", "fused", "per_head"]
LastState = Literal["no final norm", "before final norm", "after final norm"]


@dataclass(frozen=True)
class FamilyNote:
    """The one table's row: what the model cannot tell us about its family."""

    name: str
    per_head_qkv: bool = False  # fused QKV output laid out per head as [q_h k_h v_h] (GPT-NeoX)
    refused: str | None = None  # why the family cannot be supported


# model_type -> note. Families not listed are still discovered (named after their config class);
# these are the ones tested on tiny random checkpoints (tests/test_hf_families.py).
KNOWN_FAMILIES: dict[str, FamilyNote] = {
    "llama": FamilyNote("Llama"),
    "mistral": FamilyNote("Mistral"),
    "qwen2": FamilyNote("Qwen2"),
    "qwen3": FamilyNote("Qwen3"),
    "gemma": FamilyNote("Gemma"),
    "gemma2": FamilyNote("Gemma2"),
    "gemma3_text": FamilyNote("Gemma3 (text)"),
    "phi": FamilyNote("Phi"),
    "phi3": FamilyNote("Phi-3"),
    "gpt_neox": FamilyNote("GPT-NeoX", per_head_qkv=True),
    "opt": FamilyNote("OPT"),
    "gpt2": FamilyNote("GPT-2"),
    "bert": FamilyNote("BERT"),
    "roberta": FamilyNote("RoBERTa"),
    "xlm-roberta": FamilyNote("XLM-R"),
    "distilbert": FamilyNote("DistilBERT"),
    "electra": FamilyNote("ELECTRA"),
    "albert": FamilyNote("ALBERT"),
    "vit": FamilyNote("ViT"),
    "deit": FamilyNote("DeiT"),
    "dinov2": FamilyNote("DINOv2"),
    "t5": FamilyNote("T5 encoder"),
    "bart": FamilyNote("BART encoder"),
    "swin": FamilyNote(
        "Swin",
        refused=(
            "Swin attends within local windows and merges patches between stages (the token count and "
            "width change), so there is no one token sequence whose similarity layers could share"
        ),
    ),
}
SUPPORTED = ", ".join(note.name for note in KNOWN_FAMILIES.values() if note.refused is None)


def note_for(model_type: str, config_class: str) -> FamilyNote:
    """The table's note for ``model_type`` (a discovered family is named after its config class);
    UsageError for a refused family."""
    note = KNOWN_FAMILIES.get(model_type) or FamilyNote(config_class.removesuffix("Config"))
    if note.refused:
        raise UsageError(f"{note.name} is not supported: {note.refused}")
    return note


@dataclass(frozen=True)
class Family:
    """Where one loaded model keeps the modules we hook, and its layout facts (discovered)."""

    name: str
    model_type: str
    residual: Residual
    attention: str
    pattern_index: int
    value: str
    value_layout: ValueLayout
    out_proj: str
    attn_out: str
    pre_norm: str | None
    mid_norm: str | None
    out_norm: str | None
    mlp_out: str  # the module whose output is the MLP branch, before its residual add (its norm, post-LN)
    final_norm: str | None
    causal: bool
    modality: Literal["text", "image"]
    hidden_states_last: LastState

    @property
    def norm_placement(self) -> Literal["pre", "post"]:
        """``post`` when a norm follows each residual add, else ``pre`` (parallel blocks included)."""
        return "post" if self.residual == "post" else "pre"

    @property
    def tested(self) -> bool:
        """Whether the family is in the table of families tested on tiny checkpoints."""
        return self.model_type in KNOWN_FAMILIES


@dataclass(frozen=True)
class Layout:
    """A loaded model seen through its family: blocks in call order (a shared block, as in ALBERT,
    appears once per use), head counts and sizes."""

    family: Family
    base: nn.Module
    blocks: tuple[nn.Module, ...]
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    final_norm: nn.Module | None = field(default=None, repr=False)

    @property
    def depth(self) -> int:
        return len(self.blocks)

    def module(self, layer: int, role: str) -> nn.Module:
        """The module playing ``role`` (a path field of Family, or ``block``) in block ``layer``."""
        block = self.blocks[layer]
        return block if role == "block" else block.get_submodule(getattr(self.family, role))

    def hook(self, hooks: HookSet, role: str, fn: Callable, before: bool = False, with_kwargs: bool = False) -> None:
        """``fn(layer, module, args, ...)`` on every call of ``role``'s module in every block
        (``HookSet.each_layer``: a shared module serves its layers in turn)."""
        modules = [self.module(layer, role) for layer in range(self.depth)]
        hooks.each_layer(modules, fn, restart=self.base, before=before, with_kwargs=with_kwargs)

    def values_from(self, projected: Tensor) -> Tensor:
        """Value-projection output ``[B, n, *]`` -> per-head values ``[B, heads, n, d_head]``.

        A fused projection keeps only its value part; grouped-query kv-heads are repeated to the
        query heads exactly as the layer does (head h reads kv-head h // groups).
        """
        b, n = projected.shape[:2]
        if self.family.value_layout == "per_head":
            v = projected.reshape(b, n, self.heads, 3 * self.head_dim)[..., 2 * self.head_dim :]
        else:
            v = projected[..., self._value_start() :].reshape(b, n, self.kv_heads, self.head_dim)
        return v.transpose(1, 2).repeat_interleave(self.heads // self.kv_heads, dim=1)

    def _value_start(self) -> int:
        return (self.heads + self.kv_heads) * self.head_dim if self.family.value_layout == "fused" else 0

    def _value_columns(self, columns: Tensor) -> Tensor:
        """The value part of a projection's output columns (last axis)."""
        if self.family.value_layout == "per_head":
            shaped = columns.reshape(*columns.shape[:-1], self.heads, 3 * self.head_dim)
            return shaped[..., 2 * self.head_dim :].flatten(-2)
        return columns[..., self._value_start() :]

    def value_weight(self, layer: int) -> Tensor:
        """W_V as ``[d, kv_heads * d_head]`` (x @ W convention)."""
        return self._value_columns(in_out_weight(self.module(layer, "value")))

    def value_bias(self, layer: int) -> Tensor | None:
        """b_V ``[kv_heads * d_head]`` or None."""
        bias = self.module(layer, "value").bias
        return None if bias is None else self._value_columns(bias)

    def out_weight(self, layer: int) -> Tensor:
        """W_O as ``[heads * d_head, d]`` (x @ W convention)."""
        return in_out_weight(self.module(layer, "out_proj"))


def features(module: nn.Module) -> tuple[int, int]:
    """``(in, out)`` features of an ``nn.Linear`` or of GPT-2's ``Conv1D``."""
    return (module.nx, module.nf) if hasattr(module, "nf") else (module.in_features, module.out_features)


def in_out_weight(module: nn.Module) -> Tensor:
    """Weight in ``x @ W`` layout: nn.Linear stores ``[out, in]``, GPT-2's Conv1D ``[in, out]``."""
    return module.weight if hasattr(module, "nf") else module.weight.T
