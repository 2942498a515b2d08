"""Arguments that may be paths: one rule for telling a path from a name, and one message for a path
that is not there.

An argument such as ``MODEL`` or ``--text`` takes a path or a name (a Hugging Face model ``org/name``,
a built-in text ``sample``). It is *path-like* when it can only mean a path: it starts with ``.``,
``~`` or a separator, holds a backslash or more than one ``/``, or its first folder exists here
(``runs/x`` beside a ``runs/`` folder). A path-like argument that does not exist is refused with
``no such file or folder: X`` rather than read as a name.
"""

from __future__ import annotations

import os
from pathlib import Path

from oversmooth.errors import UsageError


def path_like(text: str) -> bool:
    """Whether ``text`` can only name a path (see the module docstring).

    >>> [path_like(t) for t in ("./a", "~/a.txt", "/tmp/x", "a/b/c", "gpt2", "org/name", "a few words")]
    [True, True, True, True, False, False, False]
    """
    if not text or "\n" in text:
        return False
    if text.startswith((".", "~", "/", os.sep)) or "\\" in text or text.count("/") > 1:
        return True
    first, slash, _ = text.partition("/")
    return bool(slash) and _is_dir(first)


def missing_path(text: str, fix: str) -> UsageError:
    """The refusal of path ``text`` that does not exist; ``fix`` says what to pass instead.

    >>> str(missing_path("runs/x", "pass a run folder"))
    'no such file or folder: runs/x; pass a run folder'
    """
    return UsageError(f"no such file or folder: {text}; {fix}")


def exists(text: str) -> bool:
    """Whether ``text`` (``~`` expanded) names an existing file or folder; False for what cannot be
    a file name (a long string) and for an empty one (which would be the current folder)."""
    if not text.strip():
        return False
    try:
        return Path(text).expanduser().exists()
    except (OSError, ValueError):
        return False


def _is_dir(text: str) -> bool:
    try:
        return Path(text).is_dir()
    except (OSError, ValueError):
        return False
