"""Fashion-MNIST from the standard IDX files, with a validation split carved from train."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oversmooth.data.idx import read_idx
from oversmooth.errors import UsageError

DEFAULT_DIR = Path("/usr/share/datasets/fashion-mnist")  # Debian package dataset-fashion-mnist
CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


@dataclass(frozen=True)
class ImageSplit:
    """Images ``uint8 [N, H, W]`` and integer labels ``int64 [N]``."""

    images: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


def _find(folder: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz"):
        if (folder / name).is_file():
            return folder / name
    raise UsageError(
        f"{folder} has no {stem}[.gz]; pass --data-dir to a folder of the Fashion-MNIST IDX files "
        "(Debian: apt-get install dataset-fashion-mnist)"
    )


def load_fashion_mnist(
    data_dir: str | os.PathLike | None = None, val_size: int = 5000, seed: int = 0
) -> dict[str, ImageSplit]:
    """Return ``{"train", "val", "test"}`` splits; ``val`` is a fixed random draw from train.

    The draw depends on ``seed`` only (not on the training seed), so every run sees the
    same validation images.
    """
    folder = Path(data_dir) if data_dir is not None else DEFAULT_DIR
    if not folder.is_dir():
        raise UsageError(f"Fashion-MNIST folder {folder} does not exist; pass --data-dir to a folder of the IDX files")
    loaded = {}
    for split, (images_stem, labels_stem) in _FILES.items():
        images = read_idx(_find(folder, images_stem))
        labels = read_idx(_find(folder, labels_stem)).astype(np.int64)
        if images.ndim != 3 or len(images) != len(labels):
            raise UsageError(f"{folder}: {split} images {images.shape} do not match labels {labels.shape}")
        loaded[split] = ImageSplit(images, labels)
    train = loaded["train"]
    if not 0 < val_size < len(train):
        raise UsageError(f"validation size {val_size} must be in 1..{len(train) - 1}")
    order = np.random.default_rng(seed).permutation(len(train))
    val_idx, train_idx = np.sort(order[:val_size]), np.sort(order[val_size:])
    return {
        "train": ImageSplit(train.images[train_idx], train.labels[train_idx]),
        "val": ImageSplit(train.images[val_idx], train.labels[val_idx]),
        "test": loaded["test"],
    }
