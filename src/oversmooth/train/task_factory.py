"""Build a training task from its name: ``fmnist``, ``austen``, ``text:FILE[,FILE...]``, ``synthetic``."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from oversmooth import data
from oversmooth.data.text_source import parse_text
from oversmooth.errors import FieldError, UsageError
from oversmooth.train.tasks import ImageClassification, LanguageModelling, SupervisedTask
from oversmooth.utils.paths import exists

TASKS = {
    "fmnist": "Fashion-MNIST image classification (ViT)",
    "austen": "Jane Austen's six novels, next-token prediction (LM)",
    "text:FILE[,FILE...]": "your UTF-8 text file(s), or text:FOLDER its .txt/.md files, next-token prediction (LM)",
    "synthetic": "a tiny synthetic task for tests (ViT or LM); never for results",
}
MODEL_KINDS = ("vit", "lm")


@dataclass(frozen=True)
class DataOptions:
    """How to load and cut the data. Split seeds are fixed so every run sees the same splits."""

    data_dir: str | None = None  # IDX folder (fmnist) or unpacked janeaustenr package (austen)
    val_size: int = 5000  # fmnist: validation images carved from train
    augment: bool = False  # fmnist: random 2-pixel shifts and horizontal flips
    label_smoothing: float = 0.1  # image tasks
    seq_len: int = 64  # text: tokens per training sequence
    vocab_size: int = 4096  # text: BPE vocabulary, trained on the training split
    passage_chars: int = 8000  # text: passages of at least this many characters (smaller in a short text)
    limit_train: int | None = None  # keep only the first N training examples (quick runs)
    text_column: str | None = None  # text: the column of a CSV or TSV file (``data.read_text_file``)

    def described(self) -> dict:
        """As a run's description records them: no ``data_dir`` (a machine's folder), and
        ``text_column`` only when given (runs described before it existed resume as they were)."""
        fields = {**vars(self), "data_dir": None}
        return fields if self.text_column is not None else {k: v for k, v in fields.items() if k != "text_column"}


def task_model_kind(spec: str, model: str) -> None:
    """Check that ``spec`` names a task and that ``model`` (``vit``/``lm``) can learn it."""
    if model not in MODEL_KINDS:
        raise UsageError(f"unknown model {model!r}; choose from {', '.join(MODEL_KINDS)}")
    name = spec.split(":", 1)[0]
    needs = {"fmnist": "vit", "austen": "lm", "text": "lm", "synthetic": model}.get(name)
    if needs is None:
        hint = f" (a text file or folder: text:{spec})" if exists(spec) else ""
        raise UsageError(f"unknown task {spec!r}; choose from {', '.join(TASKS)}{hint}")
    if name == "text" and not spec[5:].strip():
        raise FieldError("{task} text: needs a file, e.g. text:notes.txt")
    if needs != model:
        raise FieldError(
            "task {name} trains a {needs} model, not {got}; make {model} {needs}", name=name, needs=needs, got=model
        )


def make_task(
    spec: str, model: str, options: DataOptions = DataOptions(), cache_dir: str | os.PathLike | None = None
) -> tuple[SupervisedTask, object | None]:
    """The task named ``spec`` for a ``model`` (``vit`` or ``lm``), and its tokenizer (text) or None."""
    task_model_kind(spec, model)
    name = spec.split(":", 1)[0]
    if name == "fmnist":
        return _image_task(data.load_fashion_mnist(options.data_dir, options.val_size), 10, options), None
    if name == "synthetic" and model == "vit":
        return _image_task(data.synthetic_images(), 4, options), None
    if name == "synthetic":
        blocks = {k: torch.from_numpy(v) for k, v in data.synthetic_tokens(seq_len=options.seq_len).items()}
        return LanguageModelling(_limit(blocks, options), vocab_size=16), None
    sources = parse_text(spec).documents(options.data_dir, options.text_column)  # austen or text:...
    splits = data.split_text(sources, options.passage_chars)
    tokenizer = data.cached_tokenizer([d.text for d in splits["train"]], options.vocab_size, cache_dir)
    blocks = {
        split: torch.from_numpy(data.blocks(data.token_stream(docs, tokenizer), options.seq_len))
        for split, docs in splits.items()
    }
    return LanguageModelling(_limit(blocks, options), tokenizer.get_vocab_size()), tokenizer


def check_data(spec: str, data_dir: str | None = None, text_column: str | None = None) -> None:
    """Read the raw data of task ``spec`` once, so a missing or broken data set fails (UsageError)
    before any long work starts."""
    name = spec.split(":", 1)[0]
    if name == "fmnist":
        data.load_fashion_mnist(data_dir)
    elif name in ("austen", "text"):
        parse_text(spec).documents(data_dir, text_column)


def _image_task(splits: dict[str, data.ImageSplit], classes: int, options: DataOptions) -> ImageClassification:
    tensors = {k: (torch.from_numpy(s.images), torch.from_numpy(s.labels)) for k, s in splits.items()}
    return ImageClassification(_limit(tensors, options), classes, options.label_smoothing, options.augment)


def _limit(splits: dict, options: DataOptions) -> dict:
    if options.limit_train is None:
        return splits
    if options.limit_train < 1:
        raise FieldError("{limit_train} must be a positive number of examples, got {got}", got=options.limit_train)
    train = splits["train"]
    limited = (
        tuple(t[: options.limit_train] for t in train) if isinstance(train, tuple) else train[: options.limit_train]
    )
    return {**splits, "train": limited}
