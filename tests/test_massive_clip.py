"""Massive-activation detection (Sun et al.) against numpy's median, entry by entry: tokens with
and without massive entries, odd and even widths, ties."""

import numpy as np
import pytest
import torch

from oversmooth.mitigations.massive_clip import massive_entries, token_medians


def numpy_massive(x: np.ndarray, ratio: float) -> np.ndarray:
    size = np.abs(x)
    return size > ratio * np.median(size, axis=-1, keepdims=True)


@pytest.mark.parametrize("width", [7, 8, 64])
@pytest.mark.parametrize("ratio", [1.0, 2.0, 10.0])
def test_massive_entries_match_numpy(width, ratio):
    generator = torch.Generator().manual_seed(width)
    x = torch.randn(3, 20, width, generator=generator)
    x[0, 0, 1] = 500.0  # a sink-like token
    x[1, 3, :3] = -80.0
    x[2, 5] = 1.0  # all tied: no entry exceeds ratio >= 1 times the median
    x[2, 6, : width // 2 + 1] = 0.0  # a zero median: every nonzero entry is massive
    x[2, 7] = x[2, 7].abs().clamp_min(0.9).clamp_max(1.1)  # flat: never massive at ratio 2
    got = massive_entries(x, ratio)
    want = numpy_massive(x.numpy(), ratio)
    np.testing.assert_array_equal(got.numpy(), want)
    assert got.any() and not got.all()


def test_token_medians_is_numpys_median():
    x = torch.randn(4, 9, 10, generator=torch.Generator().manual_seed(1))
    np.testing.assert_allclose(
        token_medians(x).squeeze(-1).numpy(), np.median(np.abs(x.numpy()), axis=-1), rtol=0, atol=0
    )


def test_a_median_at_max_over_ratio_is_decided_as_numpy_decides_it():
    """The boundary: the median exactly max / ratio in float32 (where max / ratio rounds, ratio times
    it may fall a hair short of max); the count must not skip the token numpy's rule would mark."""
    for ratio in (3.0, 7.0, 10.0, 100.0):
        for top in torch.linspace(1.0, 50.0, 200).tolist():
            x = torch.full((1, 1, 5), top / ratio, dtype=torch.float32)
            x[0, 0, 0] = top
            np.testing.assert_array_equal(massive_entries(x, ratio).numpy(), numpy_massive(x.numpy(), ratio))
