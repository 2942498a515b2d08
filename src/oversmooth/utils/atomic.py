"""Atomic file writes: a killed or failed run never leaves a half-written file behind.

Each write goes to a temporary ``.NAME.PID.XXXX.tmp`` beside its target and is renamed over it
only when complete. A process killed mid-write leaves its temporary behind; the next write of
the same target removes it once its process ``PID`` is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _temporary(path: Path) -> tuple[str, str]:
    """``(prefix, suffix)`` of this process's temporaries for ``path``."""
    return f".{path.name}.{os.getpid()}.", ".tmp"


def remove_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Remove the temporaries that killed writers of ``path`` left beside it; returns them.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / ".a.txt.999999999.x1.tmp").write_text("half")
    4
    >>> [p.name for p in remove_stale_temporaries(folder / "a.txt")]
    ['.a.txt.999999999.x1.tmp']
    """
    path = Path(path)
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)\.[^/]*\.tmp$")
    removed = []
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for item in path.parent.iterdir():
            found = pattern.match(item.name)
            if found and not _alive(int(found.group(1))):
                if item.is_dir() and not item.is_symlink():
                    shutil.rmtree(item, ignore_errors=True)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        item.unlink()
                removed.append(item)
    return removed


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success rename it over ``path``.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> with atomic_write(p) as f:
    ...     _ = f.write("done")
    >>> p.read_text()
    'done'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    prefix, suffix = _temporary(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=suffix)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, replaces: Iterable[str] = ()) -> Iterator[Path]:
    """Build a folder's files in a temporary sibling; on success move them into ``path``.

    ``replaces``: glob patterns of every file the writer may write; those in ``path`` that it
    did not write this time are removed as the new ones move in (no file of an earlier write stays
    beside them, e.g. ``frontier.csv`` beside a report without a frontier). Other files in
    ``path`` are kept; on failure ``path`` is untouched.

    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("a.csv", "old.csv", "mine.txt"):
    ...     _ = (out / name).write_text("before")
    >>> with atomic_directory(out, replaces=["*.csv"]) as staging:
    ...     _ = (staging / "a.csv").write_text("after")
    >>> sorted(p.name for p in out.iterdir())
    ['a.csv', 'mine.txt']
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    prefix, suffix = _temporary(path)
    staging = Path(tempfile.mkdtemp(dir=path.parent, prefix=prefix, suffix=suffix))
    try:
        yield staging
        path.mkdir(exist_ok=True)
        written = {item.name for item in staging.iterdir()}
        for old in {old for pattern in replaces for old in path.glob(pattern) if old.name not in written}:
            old.unlink()
        for item in staging.iterdir():
            if item.is_file():
                os.chmod(item, 0o666 & ~_umask())
            os.replace(item, path / item.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
