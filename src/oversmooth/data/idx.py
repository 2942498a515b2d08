"""Reader for the IDX format of MNIST and Fashion-MNIST (plain or gzip-compressed).

Layout: two zero bytes, one type byte, one byte with the number of dimensions, then each
dimension as a big-endian uint32, then the values, big-endian, row-major.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

from oversmooth.errors import UsageError

_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read one IDX file (``.gz`` or not) into an array of its native shape.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x-idx1-ubyte"
    >>> _ = p.write_bytes(bytes([0, 0, 0x08, 1, 0, 0, 0, 3, 7, 8, 9]))
    >>> read_idx(p).tolist()
    [7, 8, 9]
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            raw = handle.read()
    except (OSError, EOFError) as error:
        raise UsageError(f"cannot read IDX file {path}: {error}; pass a folder of IDX files") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _DTYPES:
        raise UsageError(f"{path} is not an IDX file (bad magic number); pass the standard IDX files")
    ndim = raw[3]
    header = 4 + 4 * ndim
    shape = tuple(int(s) for s in np.frombuffer(raw[4:header], dtype=">u4"))
    dtype = np.dtype(_DTYPES[raw[2]])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise UsageError(
            f"{path} holds {len(raw) - header} data bytes, its header promises {expected}; "
            "the file is truncated or corrupt"
        )
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))
