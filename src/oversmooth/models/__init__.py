"""Our own ViT and GPT-style causal LM, every mitigation by config, with hook points."""

from oversmooth.models.causal_lm import CausalLM, CausalLMConfig
from oversmooth.models.hooked import HookedTransformer
from oversmooth.models.serialization import load_model, save_model
from oversmooth.models.vit import ViT, ViTConfig

__all__ = ["CausalLM", "CausalLMConfig", "HookedTransformer", "ViT", "ViTConfig", "load_model", "save_model"]
