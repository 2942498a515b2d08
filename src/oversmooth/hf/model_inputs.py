"""What a Hugging Face model is given: a dict of tensors (``input_ids``, ``attention_mask``,
``pixel_values``), checked before any forward so that a list where a tensor is meant is one line
naming it, never a traceback from deep inside the model."""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.utils.tensors import check_tensor

#: the shape of each model input the toolkit makes (any other: at least a batch dimension)
INPUT_SHAPES = {
    "input_ids": "[batch, tokens]",
    "attention_mask": "[batch, tokens]",
    "pixel_values": "[batch, channels, height, width]",
}


def check_model_inputs(inputs: Mapping[str, Tensor], what: str = "inputs") -> None:
    """UsageError naming the input (``what``: the argument, e.g. ``inputs['attention_mask']``)
    unless ``inputs`` is a dict of tensors of the shapes a model takes (``INPUT_SHAPES``), the
    mask one value per token."""
    if not isinstance(inputs, Mapping):
        raise UsageError(
            f"{what} are a {type(inputs).__name__}; pass a dict of torch tensors, as a tokenizer "
            "(input_ids, attention_mask) or an image processor (pixel_values) returns"
        )
    for name, value in inputs.items():
        check_tensor(value, f"{what}[{name!r}]", INPUT_SHAPES.get(name, "[batch, ...]"))
    if "attention_mask" in inputs and "input_ids" in inputs:
        ids, mask = inputs["input_ids"].shape, inputs["attention_mask"].shape
        if ids != mask:
            raise UsageError(
                f"{what}['attention_mask'] has shape {tuple(mask)} but {what}['input_ids'] {tuple(ids)}; "
                "pass one mask value per token"
            )
