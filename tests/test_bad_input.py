"""Bad input, class by class: each refusal is one line naming the option or file and the fix,
exit 2, and nothing written. The references are the libraries' own limits (torch, numpy) and
files damaged on purpose, not the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from oversmooth.errors import UsageError
from oversmooth.seeds import SEED_LIMIT, check_seed


@pytest.mark.parametrize("seed", [0, 1, 2**63, SEED_LIMIT - 1, -1, SEED_LIMIT, -(2**63), 2**70])
def test_a_seed_is_taken_exactly_when_every_generator_takes_it(seed):
    def generators_take(value) -> bool:
        try:
            torch.Generator().manual_seed(value)
            np.random.default_rng(value)
        except (ValueError, RuntimeError, OverflowError):
            return False
        return True

    try:
        check_seed(seed)
        taken = True
    except UsageError as error:
        assert str(error).startswith("seed must be a whole number in [0, 2**64)")
        taken = False
    assert taken == generators_take(seed)
