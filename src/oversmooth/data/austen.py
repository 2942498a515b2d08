"""Jane Austen's six novels from the R package janeaustenr's lazy-load database, read with ``rdata``.

The package's ``data/Rdata.rdx`` is a gzip-compressed serialized R list mapping each object name
to (offset, length) in ``data/Rdata.rdb``; each record there is a 4-byte length followed by a
zlib-compressed serialized R object (here a character vector: the novel's printed lines).
"""

from __future__ import annotations

import gzip
import os
import warnings
import zlib
from pathlib import Path

from oversmooth.data.documents import Document, reflow
from oversmooth.errors import UsageError

NOVELS = ("sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion")
DATA_ENV = "OVERSMOOTH_DATA"  # folder holding janeaustenr/ (default: <repo>/.data)


def default_austen_dir() -> Path:
    """``$OVERSMOOTH_DATA/janeaustenr`` if set, else ``<repo>/.data/janeaustenr`` (made by `make`)."""
    root = os.environ.get(DATA_ENV)
    base = Path(root) if root else Path(__file__).resolve().parents[3] / ".data"
    return base / "janeaustenr"


def _unserialize(raw: bytes):
    import rdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rdata warns that a bare stream "assumed RDS"
        return rdata.conversion.convert(rdata.parser.parse_data(raw))


def load_austen(package_dir: str | os.PathLike | None = None) -> list[Document]:
    """The six novels as reflowed documents, in publication order.

    ``package_dir`` is the unpacked janeaustenr R package (the folder holding ``data/``).
    """
    folder = Path(package_dir) if package_dir is not None else default_austen_dir()
    index, database = folder / "data" / "Rdata.rdx", folder / "data" / "Rdata.rdb"
    if not (index.is_file() and database.is_file()):
        raise UsageError(
            f"Jane Austen data not found in {folder}; run scripts/install_data.sh, set {DATA_ENV}, "
            "or pass --data-dir to the unpacked janeaustenr package"
        )
    variables = _unserialize(gzip.decompress(index.read_bytes()))["variables"]
    blob = database.read_bytes()
    documents = []
    for name in NOVELS:
        if name not in variables:
            raise UsageError(f"{index} has no novel {name!r}; the janeaustenr package looks incomplete")
        offset, length = (int(v) for v in variables[name])
        lines = _unserialize(zlib.decompress(blob[offset + 4 : offset + length]))
        documents.append(Document(name, reflow([str(line) for line in lines])))
    return documents
