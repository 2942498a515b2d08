"""Turn split documents into fixed-length blocks of token ids for language modelling."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oversmooth.data.documents import Document
from oversmooth.data.tokenizer import END_OF_TEXT
from oversmooth.errors import UsageError


def token_stream(documents: Sequence[Document], tokenizer) -> np.ndarray:
    """All documents' ids concatenated, each followed by the end-of-text id: ``int64 [T]``."""
    eot = tokenizer.token_to_id(END_OF_TEXT)
    ids: list[int] = []
    for encoding in tokenizer.encode_batch([d.text for d in documents]):
        ids.extend(encoding.ids)
        ids.append(eot)
    return np.asarray(ids, dtype=np.int64)


def blocks(stream: np.ndarray, length: int) -> np.ndarray:
    """Non-overlapping windows ``int64 [N, length + 1]``: inputs ``[:, :-1]``, targets ``[:, 1:]``.

    Window ``i`` starts at ``i * length``, so every token after the first is a target exactly once.

    >>> blocks(np.arange(7), 3).tolist()
    [[0, 1, 2, 3], [3, 4, 5, 6]]
    """
    count = (len(stream) - 1) // length
    if count < 1:
        raise UsageError(f"text of {len(stream)} tokens is too short for sequences of {length}; lower --seq-len")
    starts = np.arange(count)[:, None] * length
    return stream[starts + np.arange(length + 1)[None, :]]
