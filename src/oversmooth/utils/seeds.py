"""Seeds: the whole numbers that every random generator used here accepts, ``[0, 2**64)``.

``torch.manual_seed`` takes ``[-2**63, 2**64)`` and numpy's ``default_rng`` takes ``[0, inf)``;
a seed outside their overlap would stop a run midway with a traceback, so every seed setting
(``RunSpec.seed``, ``AdaptConfig.seed``, the theory ``Setup.seed``) is checked here first.
"""

from __future__ import annotations

from typing import Any

from oversmooth.errors import FieldError

SEED_LIMIT = 2**64  # torch.manual_seed's upper end (exclusive)


def check_seed(value: Any, name: str = "seed") -> int:
    """``value`` if it is a whole number in ``[0, 2**64)``; else a ``FieldError`` naming field ``name``.

    >>> check_seed(2**64 - 1)
    18446744073709551615
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    oversmooth.errors.FieldError: seed must be a whole number in [0, 2**64), got -1
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEED_LIMIT:
        raise FieldError("{%s} must be a whole number in [0, 2**64), got {got!r}" % name, got=value)
    return value
