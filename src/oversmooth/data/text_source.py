"""Where text comes from: one syntax for every command and function that reads text
(``analyze --text``, ``adapt --text``, ``train --task text:...``, ``oversmooth.analyze(text=...)``).

A text source is one of (``TEXT_FORMS``):

- ``sample``: the built-in sample, the opening chapters of Austen's *Pride and Prejudice* (public
  domain, ``austen_sample.txt`` beside this module);
- ``austen``: Jane Austen's six novels (``make`` installs them; ``--data-dir`` or ``OVERSMOOTH_DATA``);
- ``FILE``, ``a.txt,b.txt`` (in the order given) or ``FOLDER`` (its ``.txt`` and ``.md`` files in
  name order), each also written ``text:FILE``, ``text:a.txt,b.txt``, ``text:FOLDER``;
- anything else: the text itself, e.g. a quoted string.

A value that can only be a path (``oversmooth.utils.paths.path_like``, or one line ending in
``.txt`` / ``.md``) and is not there is refused (``no such file or folder: X``), never read as the
text itself; so is ``text:X`` where X names no file. A file named ``sample`` or ``austen`` is
``./sample``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from oversmooth.data.austen import load_austen
from oversmooth.data.documents import Document, read_text_files
from oversmooth.errors import FieldError, UsageError
from oversmooth.utils.paths import exists, missing_path, path_like
from oversmooth.utils.provenance import shown_path

TEXT_FORMS = "sample | austen | FILE[,FILE...] | FOLDER | text:FILE... | a quoted string"
#: the help of every flag that takes a text source
TEXT_HELP = f"{TEXT_FORMS} (docs/analyze.md#text-sources)"
PREFIX = "text:"
SAMPLE = "austen_sample.txt"
TEXT_SUFFIXES = (".txt", ".md")
_FIX = "pass an existing file or folder of .txt/.md files (or sample, austen, a quoted string)"


@dataclass(frozen=True)
class TextSource:
    """A parsed text source: ``kind`` and, for ``files``, the files; for ``string``, the text."""

    kind: Literal["sample", "austen", "files", "string"]
    files: tuple[Path, ...] = ()
    string: str = ""

    def describe(self) -> str:
        """Where the text came from, for reports: ``built-in sample (austen_sample.txt)``, a file, ..."""
        if self.kind == "files":
            if len(self.files) == 1:
                return str(self.files[0])
            return f"{len(self.files)} files ({', '.join(f.name for f in self.files)})"
        return {
            "sample": f"built-in sample ({SAMPLE})",
            "austen": "Jane Austen's six novels",
            "string": "text given on the command line",
        }[self.kind]

    def shown(self, out: str | os.PathLike) -> str:
        """The source as a report in folder ``out`` names it: ``text:`` its files relative to
        ``out``, ``sample``, ``austen``, or a string's words for it (its digest identifies it)."""
        if self.kind == "files":
            return PREFIX + ",".join(shown_path(file, out) for file in self.files)
        return "text given on the command line" if self.kind == "string" else self.kind

    def documents(self, data_dir: str | os.PathLike | None = None, column: str | None = None) -> list[Document]:
        """The source as documents: one per file (reflowed; ``column``: that column of a CSV or TSV
        file, which is refused without it), per novel, or the sample / string as one. FieldError
        naming ``text_column`` when it is given for a source that is no file."""
        if column is not None and self.kind != "files":
            raise FieldError("{text_column} %s reads a column of a CSV or TSV file: give that file as {text}" % column)
        if self.kind == "austen":
            return load_austen(data_dir)
        if self.kind == "files":
            return read_text_files(self.files, column)
        return [Document(self.kind, sample_text() if self.kind == "sample" else self.string)]


def sample_text() -> str:
    """The built-in sample: the opening chapters of *Pride and Prejudice*."""
    return resources.files("oversmooth.data").joinpath(SAMPLE).read_text(encoding="utf-8")


def parse_text(value: str) -> TextSource:
    """The source ``value`` names (see the module docstring). FieldError naming ``text`` when it is
    empty; UsageError when it names a path that is not there or a folder without text files.

    >>> parse_text("sample").kind, parse_text("Hello, world").string
    ('sample', 'Hello, world')
    """
    if not value.strip():
        raise FieldError(
            "{text} is empty; pass a file, a folder or a quoted string, or leave it out for the built-in sample"
        )
    prefixed = value.startswith(PREFIX)
    body = value[len(PREFIX) :] if prefixed else value
    if not prefixed and body.strip() in ("sample", "austen"):
        return TextSource(body.strip())  # type: ignore[arg-type]
    parts = [body] if _exists(body) or "," not in body else [p.strip() for p in body.split(",")]
    if all(p and _exists(p) for p in parts):
        return TextSource("files", tuple(f for p in parts for f in _files(p)))
    for part in parts:
        if (prefixed or _names_a_file(part)) and not _exists(part):
            raise missing_path(part or value, _FIX)
    return TextSource("string", string=value)


def _names_a_file(part: str) -> bool:
    """A path-like value without spaces (words after a comma are text), or one line ending in a
    text file's suffix."""
    if "\n" in part:
        return False
    return (path_like(part) and not any(c.isspace() for c in part)) or Path(part).suffix.lower() in TEXT_SUFFIXES


def _exists(part: str) -> bool:
    return "\n" not in part and exists(part)


def _files(part: str) -> list[Path]:
    """An existing file, or a folder's text files in name order (UsageError when it has none)."""
    path = Path(part).expanduser()
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.iterdir() if p.suffix.lower() in TEXT_SUFFIXES and p.is_file())
    if not files:
        raise UsageError(f"{path} holds no .txt or .md file; pass a folder of text files, a file or a string")
    return files
