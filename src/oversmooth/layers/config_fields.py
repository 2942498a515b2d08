"""Build a config dataclass from a dict (JSON, CLI), refusing unknown keys."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from oversmooth.errors import UsageError

T = TypeVar("T")


def from_fields(cls: type[T], data: Mapping[str, Any]) -> T:
    """``cls(**data)``, but an unknown key raises ``UsageError`` naming the valid fields."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UsageError(f"unknown {cls.__name__} field(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    return cls(**data)
