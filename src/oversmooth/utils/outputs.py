"""Where a command will write, checked before any work: nothing is created by the check.

``check_output_dir`` / ``check_output_file`` refuse a path whose nearest existing ancestor is
not a writable folder, a folder where a file is meant and a file where a folder is meant, with
one line naming the flag and the fix (``UsageError``, exit 2 in the CLI).

An output folder is never merged into: a command's folder must be new or empty, or hold that
command's own resumable state. ``analyze``, ``theory``, ``report`` and ``study`` refuse one that
``holds_files`` unless given ``--force`` (``check_output_dir(..., force=)``); with it their files
replace those of an earlier run, the ones not written again removed
(``atomic.atomic_directory(..., replaces=)``), and other files are kept. ``study`` resumes a folder
that holds a study (``check_output_dir(..., resumes=STUDY_FILE)``), and only such a folder.
``train`` and ``adapt`` resume instead (a folder that holds files is refused unless it holds their
run: ``--resume auto``, the same ``adapt`` command).
"""

from __future__ import annotations

import os
from pathlib import Path

from oversmooth.errors import UsageError


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists."""
    path = path.absolute()
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _check_parent(path: Path, flag: str) -> None:
    """The closest existing ancestor of ``path`` must be a folder we may write into."""
    ancestor = _nearest_existing(path.parent)
    if not ancestor.is_dir():
        raise UsageError(f"{flag} {path}: {ancestor} is a file, not a folder; choose another path")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: no permission to write in {ancestor}; choose a writable folder")


def holds_files(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder with anything in it."""
    path = Path(path)
    return path.is_dir() and any(path.iterdir())


def check_output_dir(
    path: str | os.PathLike, flag: str = "--out", force: bool | None = None, resumes: str | None = None
) -> Path:
    """A folder we can create or write into; returns it as a Path. ``force``: whether a command
    that replaces its files with ``--force`` was given it; False refuses a folder that
    ``holds_files``, naming ``--force``, unless it holds the file ``resumes`` names (the command's
    own resumable state, e.g. a study's ``study.json``). None: the command resumes in its folder
    (its own rule).

    >>> import tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "f"
    >>> _ = file.write_text("x")
    >>> check_output_dir(file)
    Traceback (most recent call last):
    ...
    oversmooth.errors.UsageError: --out ... is a file; give a folder
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} is a file; give a folder")
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"{flag} {path}: no permission to write in it; choose a writable folder")
        if force is False and holds_files(path) and not (resumes and (path / resumes).is_file()):
            raise UsageError(
                f"{flag} {path} already holds files"
                + (f" but no {resumes} (it is not this command's folder)" if resumes else "")
                + "; choose a new or empty folder, or pass --force to write there, replacing this command's "
                "earlier files (others are kept)"
            )
        return path
    _check_parent(path, flag)
    return path


def check_output_file(path: str | os.PathLike, flag: str = "--out") -> Path:
    """A file we can create or replace; returns it as a Path."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a folder; give a file name")
    _check_parent(path, flag)
    if path.exists() and not os.access(path.parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: no permission to replace it; choose a writable folder")
    return path


def signature(command: str) -> str:
    """How a report names the command line that wrote it (``signed_by`` finds it again).

    >>> signature("oversmooth report runs/quick")
    'written by `oversmooth report runs/quick`'
    """
    return f"written by `{command}`"


def signed_by(report: str | os.PathLike, program: str) -> bool:
    """Whether the file ``report`` names a command line of ``program`` (e.g. ``oversmooth report``)
    as the one that wrote it (``signature``): a report that command may replace."""
    try:
        text = Path(report).read_text(errors="replace")
    except OSError:
        return False
    start = signature(program + " ")[:-1]  # "written by `PROGRAM ": how each of its command lines' signatures begins
    return start in text
