"""The job of a Hugging Face model, read off its head: what ``load`` loads a checkpoint as, and what
``oversmooth.analyze.quality`` scores a patched model on.

``causal_lm`` (``*ForCausalLM`` / ``*LMHeadModel``), ``masked_lm`` (``*ForMaskedLM``), ``classifier``
(``*For...Classification``), or ``encoder`` (no head we can score).
"""

from __future__ import annotations

from typing import Literal

from torch import nn

Task = Literal["causal_lm", "masked_lm", "classifier", "encoder"]
HEADED_TASKS = ("causal_lm", "masked_lm", "classifier")


def task_of_class(cls: type) -> Task:
    """The job of a ``transformers`` model class, from its head (``BertModel`` -> ``'encoder'``)."""
    from transformers.models.auto import modeling_auto as auto

    name = cls.__name__
    if name == "AutoModelForCausalLM":  # what ``load`` reads a GGUF LM as (its file lists no class)
        return "causal_lm"
    if name in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values():
        return "causal_lm"
    if name in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES.values():
        return "masked_lm"
    if name in (
        *auto.MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES.values(),
        *auto.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES.values(),
    ):
        return "classifier"
    return "encoder"


def task_of(model: nn.Module) -> Task:
    """The job of a loaded ``transformers`` model."""
    return task_of_class(type(model))
