"""Build a config dataclass from a dict (JSON, CLI), refusing unknown keys; check its whole numbers."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from oversmooth.errors import FieldError, UsageError

T = TypeVar("T")


def from_fields(cls: type[T], data: Mapping[str, Any]) -> T:
    """``cls(**data)``, but an unknown key raises ``UsageError`` naming the valid fields."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UsageError(f"unknown {cls.__name__} field(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    return cls(**data)


def check_positive_ints(config: object, *names: str) -> None:
    """A ``FieldError`` naming the first of fields ``names`` that is not a whole number >= 1."""
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise FieldError("{%s} must be a positive integer, got {got!r}" % name, got=value)
