"""A byte-level BPE tokenizer trained with the ``tokenizers`` library on the training split only.

Trained tokenizers are cached by a hash of (training text, vocabulary size, recipe version), so
every run on the same split reuses the same file and gets the same token ids.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from oversmooth.errors import UsageError
from oversmooth.utils.atomic import atomic_write

END_OF_TEXT = "<|endoftext|>"
CACHE_ENV = "OVERSMOOTH_CACHE"
_RECIPE = "bytelevel-bpe-v1"


def default_cache_dir() -> Path:
    """``$OVERSMOOTH_CACHE`` if set, else ``~/.cache/oversmooth``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "oversmooth")


def train_tokenizer(texts: Sequence[str], vocab_size: int):
    """Train a byte-level BPE ``tokenizers.Tokenizer`` whose id 0 is :data:`END_OF_TEXT`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if vocab_size < 257 + 1:
        raise UsageError(f"vocabulary size {vocab_size} is below 258 (256 bytes + end-of-text + 1); raise --vocab-size")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


def cached_tokenizer(texts: Sequence[str], vocab_size: int, cache_dir: str | os.PathLike | None = None):
    """Load the tokenizer trained on exactly ``texts`` from the cache, training it on a miss."""
    from tokenizers import Tokenizer

    digest = hashlib.sha256(f"{_RECIPE}\0{vocab_size}\0".encode())
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
    path = Path(cache_dir or default_cache_dir()) / "tokenizers" / f"{digest.hexdigest()[:24]}.json"
    if path.is_file():
        return Tokenizer.from_file(str(path))
    tokenizer = train_tokenizer(texts, vocab_size)
    with atomic_write(path) as handle:
        handle.write(tokenizer.to_str())
    return tokenizer
