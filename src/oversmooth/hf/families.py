"""Where each supported Hugging Face family keeps the modules we hook (transformers 5.x).

One small record per family: module paths, relative to the base model (``model.base_model``)
for the block list and the final norm, and relative to one block for the rest. Every hook
point is defined through these modules, so no model source is copied:

- ``value``: the value projection; its output is V (GPT-2: the last third of ``c_attn``).
- ``out_proj``: the attention output projection; its input is the merged-head context
  ``A V`` ``[batch, tokens, heads * d_head]``, its output is ``attn_out``.
- ``mid_norm``: the norm whose input is the stream right after the attention residual add
  (``resid_mid``). Post-LN families (BERT, RoBERTa, DistilBERT) normalise that sum; pre-LN
  families normalise it before the MLP.
- ``out_norm``: post-LN only (None for pre-LN): the norm whose input is the stream right after
  the MLP residual add; its output is the block output.
- ``pre_norm``: the norm in front of attention (pre-LN only; folded into the spectra).
- ``attention``: the module returning ``(output, attention_weights)``; weights are only
  materialised with ``attn_implementation="eager"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from torch import Tensor, nn

from oversmooth.errors import UsageError


@dataclass(frozen=True)
class Family:
    """Module paths and layout facts of one model family."""

    name: str
    model_types: tuple[str, ...]
    blocks: str
    attention: str
    value: str
    out_proj: str
    mid_norm: str
    pre_norm: str | None
    out_norm: str | None
    final_norm: str | None
    causal: bool
    modality: Literal["text", "image"]
    fused_qkv: bool = False  # GPT-2: value = last third of the c_attn output
    hidden_states_last: Literal["no final norm", "before final norm", "after final norm"] = "no final norm"

    @property
    def norm_placement(self) -> Literal["pre", "post"]:
        return "post" if self.pre_norm is None else "pre"


_BERT_LIKE = dict(
    blocks="encoder.layer", attention="attention.self", value="attention.self.value",
    out_proj="attention.output.dense", mid_norm="attention.output.LayerNorm", pre_norm=None,
    out_norm="output.LayerNorm", final_norm=None, causal=False, modality="text",
)
_VIT_LIKE = dict(
    blocks="layers", attention="attention", value="attention.v_proj", out_proj="attention.o_proj",
    mid_norm="layernorm_after", pre_norm="layernorm_before", out_norm=None, final_norm="layernorm",
    causal=False, modality="image", hidden_states_last="before final norm",
)

FAMILIES: tuple[Family, ...] = (
    Family(name="BERT", model_types=("bert",), **_BERT_LIKE),
    Family(name="RoBERTa", model_types=("roberta",), **_BERT_LIKE),
    Family(name="DistilBERT", model_types=("distilbert",), blocks="transformer.layer",
           attention="attention", value="attention.v_lin", out_proj="attention.out_lin",
           mid_norm="sa_layer_norm", pre_norm=None, out_norm="output_layer_norm", final_norm=None,
           causal=False, modality="text"),
    Family(name="GPT-2", model_types=("gpt2",), blocks="h", attention="attn", value="attn.c_attn",
           out_proj="attn.c_proj", mid_norm="ln_2", pre_norm="ln_1", out_norm=None, final_norm="ln_f",
           causal=True, modality="text", fused_qkv=True, hidden_states_last="after final norm"),
    Family(name="ViT", model_types=("vit",), **_VIT_LIKE),
    Family(name="DeiT", model_types=("deit",), **_VIT_LIKE),
    Family(name="Llama", model_types=("llama",), blocks="layers", attention="self_attn",
           value="self_attn.v_proj", out_proj="self_attn.o_proj", mid_norm="post_attention_layernorm",
           pre_norm="input_layernorm", out_norm=None, final_norm="norm", causal=True, modality="text",
           hidden_states_last="after final norm"),
)

SUPPORTED = ", ".join(f.name for f in FAMILIES)


def family_for_type(model_type: str) -> Family:
    """The family of a config's ``model_type``; UsageError naming the supported ones otherwise."""
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    raise UsageError(f"model type {model_type!r} is not supported; supported families: {SUPPORTED}")


@dataclass(frozen=True)
class Layout:
    """A loaded model seen through its family: blocks, head counts and sizes."""

    family: Family
    base: nn.Module
    blocks: tuple[nn.Module, ...]
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int

    @property
    def final_norm(self) -> nn.Module | None:
        return None if self.family.final_norm is None else self.base.get_submodule(self.family.final_norm)

    def module(self, layer: int, role: str) -> nn.Module:
        """The module playing ``role`` (a field name of Family) in block ``layer``."""
        return self.blocks[layer].get_submodule(getattr(self.family, role))

    def values_from(self, projected: Tensor) -> Tensor:
        """Value-projection output ``[B, n, *]`` -> per-head values ``[B, heads, n, d_head]``.

        GPT-2's fused projection keeps only its value third; grouped-query (Llama) kv-heads are
        repeated to the query heads exactly as the layer does (head h reads kv-head h // groups).
        """
        if self.family.fused_qkv:
            projected = projected[..., 2 * self.hidden:]
        b, n = projected.shape[:2]
        v = projected.reshape(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        return v.repeat_interleave(self.heads // self.kv_heads, dim=1)

    def value_weight(self, layer: int) -> Tensor:
        """W_V as ``[d, kv_heads * d_head]`` (x @ W convention)."""
        return _in_out(self.module(layer, "value"), self.family.fused_qkv, self.hidden)

    def out_weight(self, layer: int) -> Tensor:
        """W_O as ``[heads * d_head, d]`` (x @ W convention)."""
        return _in_out(self.module(layer, "out_proj"), False, self.hidden)


def _in_out(module: nn.Module, value_third: bool, hidden: int) -> Tensor:
    """Weight in ``x @ W`` layout: nn.Linear stores ``[out, in]``, GPT-2's Conv1D ``[in, out]``."""
    weight = module.weight if hasattr(module, "nf") else module.weight.T
    return weight[:, 2 * hidden:] if value_third else weight


def layout(model: nn.Module) -> Layout:
    """Resolve a loaded ``transformers`` model (base or with a head) to its family layout."""
    config = getattr(model, "config", None)
    if config is None or not hasattr(model, "base_model"):
        raise UsageError(f"{type(model).__name__} is not a Hugging Face transformers model; "
                         f"pass a model loaded with transformers ({SUPPORTED})")
    family = family_for_type(config.model_type)
    base = model.base_model
    blocks = tuple(base.get_submodule(family.blocks))
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return Layout(family=family, base=base, blocks=blocks, heads=heads,
                  kv_heads=getattr(config, "num_key_value_heads", None) or heads,
                  head_dim=head_dim, hidden=config.hidden_size)
