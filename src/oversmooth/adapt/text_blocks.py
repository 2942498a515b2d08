"""Held-out-safe token blocks for a pretrained text model: the text is cut into passages, the
passages split into train / val / test in proportions of the characters
(``oversmooth.data.split_text``, whole passages, fixed seed), and each split's passages tokenized
with the model's own tokenizer into fixed-length blocks. No padding: every token of a block is
valid.
"""

from __future__ import annotations

import numpy as np
import torch

from oversmooth import data
from oversmooth.data.text_source import parse_text
from oversmooth.errors import UsageError

PASSAGE_CHARS = 8000


def documents(text: str, data_dir: str | None = None, column: str | None = None) -> dict[str, list[data.Document]]:
    """A text source (``oversmooth.data.text_source``; ``column``: of a CSV or TSV file) -> train /
    val / test passages."""
    return data.split_text(parse_text(text).documents(data_dir, column), PASSAGE_CHARS)


def token_blocks(
    tokenizer, docs: list[data.Document], length: int, extra: int = 0, limit: int | None = None
) -> torch.Tensor:
    """``int64 [N, length + extra]``: the documents' tokens, each document followed by the
    tokenizer's separator (EOS or SEP), cut into consecutive windows; each window of ``length -
    specials`` tokens wrapped in the model's special tokens (BERT: ``[CLS] ... [SEP]``), then
    ``extra`` more tokens (1 for next-token targets). ``limit``: the first N blocks only."""
    prefix, suffix = special_tokens(tokenizer)
    specials = len(prefix) + len(suffix)
    inner = length - specials
    if inner < 2:
        raise UsageError(
            f"seq_len {length} leaves no room for text beside the model's {specials} special "
            f"tokens; use at least {specials + 2}"
        )
    separator = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    ids: list[int] = []
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # documents longer than the model's limit are cut below
    try:
        encoded_docs = tokenizer([d.text for d in docs], add_special_tokens=False)["input_ids"]
    finally:
        hf_logging.set_verbosity(verbosity)
    for encoded in encoded_docs:
        ids.extend(encoded)
        if separator is not None:
            ids.append(separator)
    stream = np.asarray(ids, dtype=np.int64)
    count = (len(stream) - extra) // inner
    if count < 1:
        raise UsageError(
            f"the text gives {len(stream)} tokens, too few for one sequence of {length}; "
            "lower seq_len or give more text"
        )
    count = min(count, limit) if limit else count
    rows = []
    for i in range(count):
        window = stream[i * inner : (i + 1) * inner + extra].tolist()
        rows.append(prefix + window[:inner] + suffix + window[inner:])
    return torch.tensor(rows, dtype=torch.int64)


def special_tokens(tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text (BERT: ``[CLS]`` / ``[SEP]``; Llama:
    ``<s>`` / none; GPT-2: none / none), read off the encoding of one word."""
    bare = tokenizer("the", add_special_tokens=False)["input_ids"]
    full = tokenizer("the", add_special_tokens=True)["input_ids"]
    at = next(i for i in range(len(full) - len(bare) + 1) if full[i : i + len(bare)] == bare)
    return full[:at], full[at + len(bare) :]
