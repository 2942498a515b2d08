"""Names a package exports but imports on first use, so that importing the package (``--help``,
a study's job process) does not import torch."""

from __future__ import annotations

import importlib
import inspect
import types
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


class CallablePackage(types.ModuleType):
    # A package that is also a function (``oversmooth.analyze``): once a package is imported, its
    # parent's attribute of that name is the package, so calling it must call the function, and
    # ``help`` and ``inspect.signature`` must show the function's docstring and signature. The
    # package names the function in ``__call_target__`` ("module:name"), imported on first use or look.

    def __call__(self, *args, **kwargs):
        return self._target()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self._target())

    @property
    def __doc__(self) -> str:  # type: ignore[override]
        function = self._target()
        own = self.__dict__.get("__doc__") or ""
        return f"{function.__name__}{inspect.signature(function)}\n\n{inspect.getdoc(function)}\n\nThe package: {own}"

    def _target(self) -> Callable:
        module, _, name = self.__dict__["__call_target__"].partition(":")
        return getattr(importlib.import_module(module), name)
