"""Tiny synthetic tasks that a small model learns in seconds. For fast tests only, never results."""

from __future__ import annotations

import numpy as np

from oversmooth.data.fashion_mnist import ImageSplit

SPLIT_SIZES = {"train": 256, "val": 64, "test": 64}


def synthetic_images(size: int = 8, classes: int = 4, seed: int = 0) -> dict[str, ImageSplit]:
    """Noisy ``uint8 [N, size, size]`` images; class ``c`` has a bright square in quadrant ``c % 4``."""
    rng = np.random.default_rng(seed)
    half = size // 2
    out = {}
    for split, count in SPLIT_SIZES.items():
        labels = rng.integers(0, classes, count)
        images = rng.integers(0, 96, (count, size, size))
        for image, label in zip(images, labels):
            row, col = divmod(int(label) % 4, 2)
            image[row * half : (row + 1) * half, col * half : (col + 1) * half] += 128 + 8 * (int(label) // 4)
        out[split] = ImageSplit(images.clip(0, 255).astype(np.uint8), labels.astype(np.int64))
    return out


def synthetic_tokens(vocab_size: int = 16, seq_len: int = 16, seed: int = 0) -> dict[str, np.ndarray]:
    """Blocks ``int64 [N, seq_len + 1]`` of a noisy cycle: next = perm[current] with probability 0.9."""
    rng = np.random.default_rng(seed)
    successor = rng.permutation(vocab_size)
    out = {}
    for split, count in SPLIT_SIZES.items():
        tokens = np.empty((count, seq_len + 1), dtype=np.int64)
        tokens[:, 0] = rng.integers(0, vocab_size, count)
        for t in range(1, seq_len + 1):
            noise = rng.random(count) < 0.1
            tokens[:, t] = np.where(noise, rng.integers(0, vocab_size, count), successor[tokens[:, t - 1]])
        out[split] = tokens
    return out
