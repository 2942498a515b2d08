"""Model inputs for an analysis: text chunked to the model's length, or a batch of images.

Text: any text source (``oversmooth.data.text_source``: a file, files, a folder, a string,
``austen``, or the built-in ``sample``, the default). Long text is cut into consecutive chunks
of at most ``max_length`` tokens (special tokens included), padded, with an attention mask.
Images: every readable image file of a folder (sorted by name), or the first Fashion-MNIST test
images; resized to the model's size, normalised with its mean / std.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from oversmooth.analyze.settings import DEFAULT_SEQUENCES, DEFAULT_TEXT_TOKENS, check_sequences
from oversmooth.data.text_source import parse_text
from oversmooth.errors import FieldError, UsageError
from oversmooth.utils.paths import exists, missing_path

if TYPE_CHECKING:
    from oversmooth.hf import Loaded

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")


def read_text(source: str | None, column: str | None = None) -> tuple[str, str]:
    """``(text, description)`` from a text source (``oversmooth.data.text_source``: ``sample``,
    ``austen``, files, a folder, a string; None: the built-in sample), its documents joined by a
    blank line; ``column``: the column of a CSV or TSV file to read (``TextSource.documents``)."""
    parsed = parse_text("sample" if source is None else source)
    text = "\n\n".join(d.text for d in parsed.documents(column=column))
    if not text.strip():
        raise UsageError(f"the text from {parsed.describe()} is empty; pass some text")
    return text, parsed.describe()


def model_max_length(tokenizer, config) -> int:
    """The longest sequence the model takes: the tokenizer's limit, else the config's positions."""
    limits = [
        v
        for v in (getattr(tokenizer, "model_max_length", None), getattr(config, "max_position_embeddings", None))
        if v and v < 1_000_000
    ]
    if config.model_type == "roberta" and getattr(config, "max_position_embeddings", None):
        limits.append(config.max_position_embeddings - 2)  # RoBERTa offsets positions by pad + 1
    return min(limits) if limits else 512


def text_batch(tokenizer, text: str, max_length: int, max_sequences: int) -> dict[str, Tensor]:
    """``input_ids`` and ``attention_mask`` ``[B, n]``: consecutive chunks of ``text``, right-padded."""
    special = tokenizer.num_special_tokens_to_add()
    if max_length <= special:
        raise UsageError(
            f"--max-length {max_length} leaves no room for text beside the model's {special} special "
            f"tokens; use at least {special + 1}"
        )
    encoded = tokenizer(text, truncation=True, max_length=max_length, return_overflowing_tokens=True, padding=False)
    chunks = [ids for ids in encoded["input_ids"] if ids][:max_sequences]
    if not chunks:
        raise FieldError(
            "the model's tokenizer gives no token ids for this text (it reads none of its characters); give "
            "{text} in a language and script the tokenizer knows"
        )
    if max(len(ids) for ids in chunks) < 2:
        raise UsageError("the text gives fewer than 2 tokens; pass more text")
    batch = tokenizer.pad({"input_ids": chunks}, padding=True, return_tensors="pt")
    return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}


def check_token_ids(ids: Tensor, model, name: str) -> None:
    """UsageError naming model ``name`` when ``ids`` hold a token id beyond its input embeddings
    (a tokenizer larger than the model's vocabulary: not its own), instead of an IndexError deep
    in its forward."""
    try:
        size = model.get_input_embeddings().num_embeddings
    except (AttributeError, NotImplementedError):  # a model without one embedding table: nothing to check
        return
    top = int(ids.max()) if ids.numel() else -1
    if top >= size:
        raise UsageError(
            f"{name}: its tokenizer gives token id {top}, beyond the model's vocabulary of {size} (ids 0 to "
            f"{size - 1}): the tokenizer is not the model's own; save the model's tokenizer beside it"
        )


def image_files(folder: str | Path) -> list[Path]:
    if not exists(str(folder)):
        raise missing_path(str(folder), "pass a folder of image files")
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder; pass a folder of image files")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise UsageError(f"{folder} has no image files ({', '.join(IMAGE_SUFFIXES)}); pass a folder of images")
    return files


def _open_image(path: Path):
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image.load()
            return image.copy()
    except (OSError, UnidentifiedImageError) as error:
        raise UsageError(f"cannot read image {path} ({error}); remove it or fix it") from None


def fashion_mnist_images(count: int) -> list:
    """The first ``count`` Fashion-MNIST test images as PIL greyscale images."""
    from PIL import Image

    from oversmooth.data.fashion_mnist import DEFAULT_DIR
    from oversmooth.data.idx import read_idx

    path = DEFAULT_DIR / "t10k-images-idx3-ubyte.gz"
    if not path.is_file():
        raise UsageError(
            f"built-in images need Fashion-MNIST at {DEFAULT_DIR} "
            "(apt-get install dataset-fashion-mnist); or pass --images DIR"
        )
    return [Image.fromarray(array) for array in read_idx(path)[:count]]


def image_batch(images: list, size: int, mean, std, channels: int = 3) -> dict[str, Tensor]:
    """``pixel_values [B, C, size, size]`` from PIL images: resize (bilinear), scale, normalise."""
    from PIL import Image

    mode = "RGB" if channels == 3 else "L"
    arrays = [
        np.asarray(im.convert(mode).resize((size, size), Image.BILINEAR), dtype=np.float32) / 255.0 for im in images
    ]
    pixels = torch.from_numpy(np.stack(arrays))
    pixels = pixels.permute(0, 3, 1, 2) if channels == 3 else pixels[:, None]
    mean_t = torch.tensor(mean[:channels], dtype=torch.float32)[:, None, None]
    std_t = torch.tensor(std[:channels], dtype=torch.float32)[:, None, None]
    return {"pixel_values": (pixels - mean_t) / std_t}


def read_images(folder: str | None, count: int) -> tuple[list, str]:
    """``(PIL images, description)`` from a folder or the built-in Fashion-MNIST test images."""
    if folder is None:
        return fashion_mnist_images(count), "built-in Fashion-MNIST test images"
    return [_open_image(p) for p in image_files(folder)[:count]], str(folder)


def text_tokens(max_length: int | None) -> int | None:
    """Tokens per text chunk for a ``max_length`` as given: None -> the default 128, 0 -> None (the
    model's maximum), else itself."""
    return DEFAULT_TEXT_TOKENS if max_length is None else max_length or None


def analysis_inputs(
    loaded: Loaded,
    text: str | None = None,
    images: str | None = None,
    max_sequences: int = DEFAULT_SEQUENCES,
    max_length: int | None = None,
    text_column: str | None = None,
) -> tuple[dict[str, Tensor], str]:
    """The batch an analysis of ``loaded`` measures, on its device, and where it came from. A text
    model takes ``text`` (a file or a string; None: the built-in sample) in up to ``max_sequences``
    chunks of ``max_length`` tokens (None: 128; 0: the model's maximum; capped at the maximum):
    ``input_ids`` and ``attention_mask [B, n]``. A vision model takes up to ``max_sequences`` images
    of ``images`` (a folder; None: Fashion-MNIST test images): ``pixel_values [B, C, H, W]`` in the
    model's dtype. FieldError when ``text`` or ``max_length`` is given to a vision model or
    ``images`` to a text model, or ``max_sequences`` below 1; ``text_column``: the column of a CSV
    or TSV ``text`` to read. UsageError naming the model when its tokenizer gives token ids its
    vocabulary lacks (``check_token_ids``)."""
    check_sequences(max_sequences)
    kind = f"({loaded.family.name})"
    if loaded.family.modality == "text":
        if images:
            raise FieldError("{model} is a text model {kind}; use {text}, not {images}", model=loaded.name, kind=kind)
        body, source = read_text(text, text_column)
        limit = model_max_length(loaded.tokenizer, loaded.model.config)
        inputs = text_batch(loaded.tokenizer, body, min(text_tokens(max_length) or limit, limit), max_sequences)
        check_token_ids(inputs["input_ids"], loaded.model, loaded.name)
    else:
        if text or max_length is not None or text_column is not None:
            field = "{text}" if text else "{max_length}" if max_length is not None else "{text_column}"
            raise FieldError(
                f"{{model}} is a vision model {{kind}}; {field} applies to text models only: drop it"
                + (" and give {images}" if text else ""),
                model=loaded.name,
                kind=kind,
            )
        pictures, source = read_images(images, max_sequences)
        pixels = image_batch(pictures, loaded.image_size, loaded.image_mean, loaded.image_std, loaded.channels)
        inputs = {"pixel_values": pixels["pixel_values"].to(next(loaded.model.parameters()).dtype)}
    return {name: tensor.to(loaded.device) for name, tensor in inputs.items()}, source


#: below these, the analysis's spreads and means say little
FEW_SEQUENCES, FEW_TOKENS = 2, 16


def small_sample_warning(inputs: dict[str, Tensor]) -> str | None:
    """A one-line warning when the batch is too small for the statistics the analysis prints (one
    sequence: no spread over sequences and no anisotropy; a few tokens: means over a handful of
    pairs), or None."""
    if "input_ids" not in inputs:
        return (
            None if len(inputs["pixel_values"]) >= FEW_SEQUENCES else "one image: no spread over images, no anisotropy"
        )
    mask = inputs.get("attention_mask")
    counts = (
        [int(m.sum()) for m in mask] if mask is not None else [inputs["input_ids"].shape[1]] * len(inputs["input_ids"])
    )
    if len(counts) >= FEW_SEQUENCES and min(counts) >= FEW_TOKENS:
        return None
    return (
        f"a small sample: {len(counts)} sequence(s) of {min(counts)} to {max(counts)} tokens; the std columns and "
        f"anisotropy need {FEW_SEQUENCES} sequences or more, and means over fewer than {FEW_TOKENS} tokens say little: "
        "give more text"
    )
