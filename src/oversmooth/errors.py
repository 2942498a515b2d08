"""The exception types for bad user input."""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any


class UsageError(ValueError):
    """Bad input from the user (a missing file, an unknown name, a value out of range).

    The message is one line naming the problem and the fix; the CLI prints it and exits 2.
    """


class NonFiniteError(UsageError):
    """Numbers that overflowed (NaN or Inf) where finite ones are needed. ``where`` names them and
    the first bad position; a caller that knows the cause (a knob patched in) can say so instead
    of the message's general advice."""

    def __init__(self, where: str, advice: str):
        self.where = where
        super().__init__(f"{where} hold NaN or Inf; {advice}")


class FieldError(UsageError):
    """A ``UsageError`` that names fields of a run description (``oversmooth.train.spec.RunSpec``).

    ``template`` writes each field as ``{field}`` and each other value as ``{key}`` given in
    ``values``; the message names the fields as they are, ``message(flag)`` as a CLI names them.

    >>> error = FieldError("{epochs} must be at least 1, got {got}", got=0)
    >>> str(error), error.message(lambda field: "--" + field)
    ('epochs must be at least 1, got 0', '--epochs must be at least 1, got 0')
    """

    def __init__(self, template: str, **values: Any):
        self.template, self.values = template, values
        super().__init__(self.message(lambda field: field))

    @classmethod
    def leading(cls, field: str, message: str) -> FieldError:
        """From a message whose first word is ``field`` (e.g. ``check_output_dir(path, "out")``'s)."""
        return cls("{%s}{rest}" % field, rest=message[len(field) :])

    def message(self, name: Callable[[str], str]) -> str:
        """The message with each field written as ``name(field)``."""
        fields = {f for _, f, _, _ in string.Formatter().parse(self.template) if f and f not in self.values}
        return self.template.format(**{f: name(f) for f in fields}, **self.values)


def did_you_mean(given: str, choices) -> str:
    """`` (did you mean 'x'?)`` for the choice closest to a mistyped ``given``, or ``""``.

    >>> did_you_mean("neutrino", ["neutreno", "featscale"])
    " (did you mean 'neutreno'?)"
    """
    import difflib

    close = difflib.get_close_matches(given, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
