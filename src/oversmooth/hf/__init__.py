"""Pretrained Hugging Face models: capture hook points, diagnose, patch mitigations in place.

Supported families (transformers 5.x): BERT (incl. MiniLM), RoBERTa, DistilBERT, GPT-2, ViT,
DeiT, Llama (grouped-query attention).
"""

from oversmooth.hf.capture import HOOKS, NORM_HOOKS, ActivationCache, capture
from oversmooth.hf.families import FAMILIES, SUPPORTED, layout
from oversmooth.hf.patch import DEFAULT_KNOBS, METHODS, patch, unpatch
from oversmooth.hf.sublayers import block_totals, sublayer_changes

__all__ = ["HOOKS", "NORM_HOOKS", "ActivationCache", "capture", "FAMILIES", "SUPPORTED", "layout",
           "DEFAULT_KNOBS", "METHODS", "patch", "unpatch", "sublayer_changes", "block_totals"]
