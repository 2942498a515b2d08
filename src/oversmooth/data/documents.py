"""Text documents: reading user files, cutting long texts into passages, splitting by document
(in proportions of the characters).

A *document* is the unit that never straddles two splits: train, validation and test share no
passage, so a model is never scored on text it saw in training.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oversmooth.errors import FieldError, UsageError
from oversmooth.utils.paths import missing_path

SPLITS = ("train", "val", "test")
FRACTIONS = (0.9, 0.05, 0.05)  # of the characters, per split
PARAGRAPH_BREAKS, WORD_BREAKS = r"(?<=\n)", r"(?<=\s)"  # cut after a newline / after any whitespace


@dataclass(frozen=True)
class Document:
    """One named piece of text (a novel, a file, or a passage of one)."""

    name: str
    text: str


def reflow(lines: Sequence[str]) -> str:
    """Join hard-wrapped lines: lines of a paragraph by spaces, paragraphs by one newline.

    >>> reflow(["It is a truth", "universally acknowledged.", "", "", "However little"])
    'It is a truth universally acknowledged.\\nHowever little'
    """
    paragraphs, current = [], []
    for line in lines:
        line = line.strip()
        if line:
            current.append(line)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n".join(paragraphs)


#: files read as tables, not prose: their suffix and the character between their fields
TABLES = {".csv": ",", ".tsv": "\t"}


def read_text_file(path: str | os.PathLike, column: str | None = None) -> str:
    """The text of the UTF-8 file ``path``, every command's one reader of a user's text file. A
    table (``.csv``, ``.tsv``: ``TABLES``) is read only through ``column``, the name of one of its
    header's fields: that field of every row, one row a paragraph (read as prose, its fields would run
    together); FieldError naming ``text_column`` otherwise, and for a ``column`` of a file that is
    no table."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read {path} as UTF-8 text ({error}); convert it to UTF-8") from None
    delimiter = TABLES.get(path.suffix.lower())
    if delimiter is None:
        if column is not None:
            raise FieldError("{text_column} %s: %s is no table (.csv or .tsv); drop {text_column}" % (column, path))
        return text
    import csv
    import io

    rows = csv.DictReader(io.StringIO(text), delimiter=delimiter)
    fields = ", ".join(rows.fieldnames or ()) or "none"
    if column is None:
        raise FieldError(
            "%s looks like %s, a table, not prose; give {text_column} NAME to read one of its columns (%s)"
            % (path, path.suffix[1:].upper(), fields)
        )
    if column not in (rows.fieldnames or ()):
        raise FieldError("{text_column} %s: %s has no such column; give one of %s" % (column, path, fields))
    return "\n\n".join(row[column] or "" for row in rows)


def read_text_files(paths: Sequence[str | os.PathLike], column: str | None = None) -> list[Document]:
    """Read UTF-8 text files (``read_text_file``: ``column`` of a table), one document each,
    reflowed like :func:`reflow`."""
    documents = []
    for path in map(Path, paths):
        if not path.is_file():
            raise missing_path(str(path), "pass an existing text file")
        text = reflow(read_text_file(path, column).splitlines())
        if not text:
            raise UsageError(f"text file {path} is empty; give a file with some prose in it")
        documents.append(Document(path.name, text))
    return documents


def passages(document: Document, min_chars: int, breaks: str = PARAGRAPH_BREAKS) -> list[Document]:
    """Cut a document at ``breaks`` (paragraph breaks; ``WORD_BREAKS``: between words) into
    passages of at least ``min_chars`` characters.

    The last passage takes whatever remains, so the passages concatenate back to the text.

    >>> [p.name for p in passages(Document("a", "x" * 5 + "\\n" + "y" * 5 + "\\n" + "z"), 4)]
    ['a#0', 'a#1', 'a#2']
    >>> [p.text for p in passages(Document("a", "one two three"), 5, WORD_BREAKS)]
    ['one two ', 'three']
    """
    pieces = re.split(breaks, document.text)
    out, current = [], ""
    for piece in pieces:
        current += piece
        if len(current) >= min_chars:
            out.append(current)
            current = ""
    if current:
        out.append(current)
    return [Document(f"{document.name}#{i}", text) for i, text in enumerate(out)]


def split_text(
    sources: Sequence[Document], passage_chars: int, fractions: tuple[float, float, float] = FRACTIONS, seed: int = 0
) -> dict[str, list[Document]]:
    """``sources`` cut into passages, split train / val / test in ``fractions`` of their characters
    (:func:`split_documents`).

    Passages are cut at paragraph breaks, at least ``passage_chars`` each. Where one passage would
    outweigh the smallest split's share (a short text), they are cut between words instead, each
    half that share: every split then gets close to its share in whole passages.
    """
    cut = [p for source in sources for p in passages(source, passage_chars)]
    smallest = min(fractions) * sum(len(d.text) for d in cut)
    if max(len(d.text) for d in cut) > smallest:
        cut = [p for source in sources for p in passages(source, max(1, round(smallest / 2)), WORD_BREAKS)]
    return split_documents(cut, fractions, seed)


def split_documents(
    documents: Sequence[Document], fractions: tuple[float, float, float] = FRACTIONS, seed: int = 0
) -> dict[str, list[Document]]:
    """Assign whole documents to train/val/test at random (fixed ``seed``), in the given fractions
    of the characters: in a random order of the documents, train ends at the document boundary
    nearest to ``fractions[0]`` of the text and val at the one nearest to ``fractions[0] +
    fractions[1]``.

    Every split gets at least one document; the draw does not depend on the training seed.
    """
    if len(documents) < 3:
        raise UsageError(
            f"need at least 3 documents to split into train/val/test, got {len(documents)}; "
            "give more text or a smaller passage size"
        )
    if len({d.name for d in documents}) != len(documents):
        raise UsageError("document names must be unique; rename the duplicate files")
    order = np.random.default_rng(seed).permutation(len(documents))
    ends = np.cumsum([0, *(len(documents[i].text) for i in order)])  # characters before each boundary

    def boundary(share: float, low: int, high: int) -> int:
        return int(np.clip(np.argmin(np.abs(ends - share * ends[-1])), low, high))

    n_train = boundary(fractions[0], 1, len(documents) - 2)
    n_seen = boundary(fractions[0] + fractions[1], n_train + 1, len(documents) - 1)
    bounds = {"train": (0, n_train), "val": (n_train, n_seen), "test": (n_seen, len(documents))}
    return {split: [documents[i] for i in sorted(order[a:b])] for split, (a, b) in bounds.items()}
