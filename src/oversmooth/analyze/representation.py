"""Linear CKA between the layers of the analysed model (``analyze --cka``) and between its layers
and another model's on the same inputs (``analyze --compare OTHER``): the layer x layer picture of
representation-similarity papers (Kornblith et al. 2019), with ``oversmooth.metrics.CKA`` (the
unbiased HSIC, every counted token an example: padding and excluded positions never enter)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor, nn

from oversmooth.analyze.watch import stream_of
from oversmooth.errors import UsageError
from oversmooth.hf import Loaded
from oversmooth.metrics import CKA
from oversmooth.utils.plotting import COLUMN, DEFAULT_FORMATS, figure, integer_ticks, save_figure, set_title

#: each counted token of the analysed sequences is one example (8 x 128 tokens by default)
POOLING = "tokens"


def stream(model: nn.Module, inputs: dict[str, Tensor]) -> tuple[list[Tensor], Tensor | None]:
    """The residual stream (layer 0 = embeddings, i = after block i) and its token mask."""
    with torch.no_grad():
        states, mask, _ = stream_of(model, inputs)
    return states, mask


def layer_cka(
    model: nn.Module, inputs: dict[str, Tensor], exclude: tuple[int, ...], other: nn.Module | None = None
) -> Tensor:
    """``[layers, layers]`` CKA of ``model``'s stream with itself, or ``[layers, other's layers]``
    with ``other``'s on the same inputs."""
    states, mask = stream(model, inputs)
    cka = CKA(POOLING)
    cka.update(states, None if other is None else stream(other, inputs)[0], mask=mask, exclude=exclude)
    return cka.result()


def check_comparable(loaded: Loaded, other: Loaded, inputs: dict[str, Tensor], name: str) -> None:
    """UsageError (naming ``--compare``) unless ``other`` takes the analysed model's inputs as they
    are: the same tokens of the analysed text, or images of the same size. CKA pairs examples."""
    if other.family.modality != loaded.family.modality:
        article = {"text": "a text", "image": "an image"}
        raise UsageError(
            f"--compare {name}: {article[other.family.modality]} model beside {article[loaded.family.modality]} "
            "one; compare models that take the same inputs"
        )
    if "pixel_values" in inputs:
        size, other_size = (getattr(m.model.config, "image_size", None) for m in (loaded, other))
        if size != other_size:
            raise UsageError(f"--compare {name}: images of {other_size} pixels, not {size}; compare models of one size")
        return
    ids = inputs["input_ids"][0]
    mask = inputs.get("attention_mask")
    text = loaded.tokenizer.decode(ids if mask is None else ids[mask[0].bool()], skip_special_tokens=True)
    if loaded.tokenizer(text)["input_ids"] != other.tokenizer(text)["input_ids"]:
        raise UsageError(
            f"--compare {name}: its tokenizer cuts the text into other tokens, so the two models would see "
            "different examples; compare models of the same tokenizer"
        )


def cka_rows(matrix: Tensor) -> list[dict]:
    """``layer_a, layer_b, cka`` rows for a CSV."""
    return [
        {"layer_a": a, "layer_b": b, "cka": float(matrix[a, b])}
        for a in range(matrix.shape[0])
        for b in range(matrix.shape[1])
    ]


def plot_cka(matrix: Tensor, stem: Path, title: str, xlabel: str, ylabel: str, formats=DEFAULT_FORMATS) -> list[str]:
    """The heatmap, layer 0 at the bottom left, a column wide; rectangular for models of different
    depths. The names written."""
    rows, cols = matrix.shape
    with figure(width=COLUMN, height=1.4 + 2.2 * min(rows / cols, 1.5)) as (fig, axes):
        ax = axes[0][0]
        image = ax.imshow(matrix.numpy(), origin="lower", vmin=0.0, vmax=1.0, cmap="magma", aspect="auto")
        fig.colorbar(image, ax=ax, label="linear CKA (unbiased)")
        ax.grid(False)
        integer_ticks(ax, axis="x")
        integer_ticks(ax, axis="y")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        set_title(ax, title)
        return save_figure(fig, stem, formats)
