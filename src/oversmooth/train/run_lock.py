"""One run per folder: an exclusive lock on ``FOLDER/.lock`` for as long as a run writes there.

The lock file holds the holder's pid, so a second run is refused with one line naming it. A
process started by a lock holder (``oversmooth study`` starting ``oversmooth train`` in a cell)
inherits the holder's descriptor; ``LOCK_FD`` in the environment names it, and a run that
finds its folder's lock already in its hands goes on without locking again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from oversmooth.errors import UsageError

LOCK_FILE = ".lock"
LOCK_FD = "OVERSMOOTH_LOCK_FD"  # environment: a descriptor of an inherited, held lock


def _inherited(path: Path) -> bool:
    """Whether this process already holds ``path``'s lock through an inherited descriptor."""
    try:
        held = os.fstat(int(os.environ[LOCK_FD]))
        mine = os.stat(path)
    except (KeyError, ValueError, OSError):
        return False
    return (held.st_dev, held.st_ino) == (mine.st_dev, mine.st_ino)


def _holder(path: Path) -> str:
    try:
        pid = path.read_text().strip()
    except OSError:
        pid = ""
    return f"process {pid}" if pid.isdigit() else "another process"


def acquire(folder: str | os.PathLike) -> int:
    """Create ``folder`` if needed and lock it; returns the lock's descriptor (keep it open).

    Raises UsageError naming the holder's pid when another run holds it.
    """
    path = Path(folder) / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageError(
            f"{folder} is in use by {_holder(path)}; wait for that run to end or choose another --out"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


@contextlib.contextmanager
def run_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Hold ``folder``'s lock inside the block (or go on if an inherited descriptor holds it).

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with run_lock(folder):
    ...     with run_lock(folder):
    ...         pass
    Traceback (most recent call last):
    ...
    oversmooth.errors.UsageError: ... is in use by process ...; wait for that run to end or choose another --out
    """
    path = Path(folder) / LOCK_FILE
    if path.exists() and _inherited(path):
        yield
        return
    made = _missing(path)  # what taking the lock creates: the lock file, and maybe its folders
    fd = acquire(folder)
    try:
        yield
    except UsageError:  # a refused run leaves the file system as it found it: no lock file behind
        for created in made:
            with contextlib.suppress(OSError):  # a folder something else has written into stays
                created.rmdir() if created.is_dir() else created.unlink()
        raise
    finally:
        os.close(fd)


def _missing(path: Path) -> list[Path]:
    """``path`` and its ancestors that do not exist yet, deepest first."""
    missing = []
    while not os.path.lexists(path) and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing
