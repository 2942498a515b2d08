"""Names a package exports but imports on first use, so that importing the package (``--help``,
a study's job process) does not import torch."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``name`` is ``package.<where[name]>.name``,
    imported when first asked for.

    >>> getattr_ = lazy_exports("oversmooth", {"UsageError": "errors"})
    >>> getattr_("UsageError").__name__
    'UsageError'
    """

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{where[name]}"), name)

    return __getattr__
