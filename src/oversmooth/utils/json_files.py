"""The JSON files oversmooth writes. Its reports write strict JSON (``json_text``: NaN and
infinities as null, which every JSON reader takes). Reading them (results, cells, studies, run
specs) when they may be damaged: truncated, not JSON, not a table, or missing a field or holding
one of the wrong type. Each is one ``UsageError`` naming the file, what is wrong and the fix the
caller gives (delete the folder and rerun, restore the file...), instead of a traceback from deep
in a reader.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from oversmooth.errors import UsageError

NUMBER = (int, float)


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float in it, at any depth of dicts, lists and tuples
    (tuples become lists), turned into None.

    >>> finite({"p": float("nan"), "ci": (0.5, float("inf")), "n": 3})
    {'p': None, 'ci': [0.5, None], 'n': 3}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def json_text(value: Any, indent: int | None = None) -> str:
    """``value`` as strict JSON: NaN and infinities as null (``finite``)."""
    return json.dumps(finite(value), indent=indent, allow_nan=False)


def read_json(path: str | Path, fix: str) -> Any:
    """The JSON value in ``path``; UsageError naming it and ``fix`` if it cannot be read or parsed."""
    try:
        return json.loads(Path(path).read_text())
    except OSError as error:
        raise UsageError(f"cannot read {path} ({error.strerror}); {fix}") from None
    except ValueError as error:  # truncated or not JSON (UnicodeDecodeError is a ValueError too)
        raise UsageError(f"{path} is damaged (not JSON: {error}); {fix}") from None


def read_jsonl(path: str | Path, fix: str) -> list[dict[str, Any]]:
    """The tables of a JSON-lines file (one per line, blank lines skipped; none if it is missing);
    UsageError naming it, the line and ``fix`` for a line that is not a JSON table."""
    path = Path(path)
    if not path.is_file():
        return []
    try:
        lines = path.read_text().splitlines()
    except (OSError, ValueError) as error:
        raise UsageError(f"cannot read {path} ({getattr(error, 'strerror', None) or error}); {fix}") from None
    records = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                record = json.loads(line)
            except ValueError as error:
                raise UsageError(f"{path} is damaged (line {number} is not JSON: {error}); {fix}") from None
            if not isinstance(record, dict):
                raise UsageError(
                    f"{path} is damaged (line {number} is a {type(record).__name__}, not a table of fields); {fix}"
                )
            records.append(record)
    return records


def read_table(path: str | Path, fields: dict[str, type | tuple[type, ...]], fix: str) -> dict[str, Any]:
    """``read_json(path)``, checked to be a table holding each of ``fields`` with a value of its
    type (``NUMBER``: an int or a float; a bool is never a number)."""
    return check_table(read_json(path, fix), path, fields, fix)


def check_table(data: Any, path: str | Path, fields: dict[str, type | tuple[type, ...]], fix: str) -> dict[str, Any]:
    """``data`` (read from ``path``) if it is a table holding each of ``fields`` with its type;
    else a UsageError naming the file, the field and ``fix``."""
    if not isinstance(data, dict):
        raise UsageError(f"{path} is damaged (a {type(data).__name__}, not a table of fields); {fix}")
    for name, kind in fields.items():
        if name not in data:
            raise UsageError(f"{path} is damaged (no field {name!r}); {fix}")
        value = data[name]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
            raise UsageError(f"{path} is damaged (field {name!r} is {value!r}, not {_names(kind)}); {fix}")
    return data


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _names(kind: type | tuple[type, ...]) -> str:
    words = {
        dict: "a table",
        list: "a list",
        str: "text",
        int: "a whole number",
        float: "a number",
        bool: "true or false",
        type(None): "null",
    }
    return " or ".join(words.get(k, k.__name__) for k in _kinds(kind))
