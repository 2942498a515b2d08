"""The sink measures (massive_ratio, first_token_norm, repr_entropy, cos_sim_outlier_free, sink_rate)
against the naive references of reference_metrics.py, their edge cases, and their rule on ``exclude``."""

import math

import numpy as np
import pytest
import reference_metrics as ref
import torch

from oversmooth import metrics
from oversmooth.metrics import SINK_METRICS, massive_location, measure

STREAM = ["massive_ratio", "first_token_norm", "repr_entropy"]  # read every real token


def random_batch(seed, batch=6, n=9, d=7):
    """Masked states with a massive first token, a rogue channel and padding; position 0 is real
    except in the last sequence."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n, d, generator=g, dtype=torch.float64)
    x[:, 0, 3] += 500.0 * torch.rand(batch, generator=g, dtype=torch.float64)  # a massive activation
    x[:, :, 5] *= 1 + 300.0 * torch.rand(batch, 1, generator=g, dtype=torch.float64)  # a rogue channel
    mask = torch.rand(batch, n, generator=g) > 0.3
    mask[:, :3] = True
    mask[-1, 0] = False
    return x, mask


def real(x, mask, b):
    return x[b][mask[b]].numpy()


@pytest.mark.parametrize("name", STREAM)
@pytest.mark.parametrize("exclude", [(), (0,), (0, -1)])
def test_stream_sink_measures_match_the_reference_over_every_real_token(name, exclude):
    x, mask = random_batch(seed=len(name))
    got = getattr(metrics, name)(x, mask, exclude)
    for b in range(x.shape[0]):
        if name == "first_token_norm" and not mask[b, 0]:
            assert math.isnan(got[b]), b  # position 0 is padding: no first token
            continue
        want = getattr(ref, name)(real(x, mask, b))
        assert got[b].item() == pytest.approx(want, rel=1e-9, abs=1e-9), (name, b)


@pytest.mark.parametrize("exclude", [(), (0,), (0, -1), (2,)])
def test_cos_sim_outlier_free_matches_the_reference(exclude):
    x, mask = random_batch(seed=7)
    got = metrics.cos_sim_outlier_free(x, mask, exclude)
    dropped = 0
    for b in range(x.shape[0]):
        counted = mask[b].clone()
        counted[[0, *exclude]] = False
        dropped += len(ref.massive_channels(real(x, mask, b)))
        want = ref.cos_sim_outlier_free(real(x, mask, b), x[b][counted].numpy())
        assert got[b].item() == pytest.approx(want, rel=1e-9, abs=1e-12), b
    assert dropped >= x.shape[0]  # the rogue channel (and mostly the massive one) went in every sequence


def test_massive_channels_are_those_above_100_medians():
    x, mask = random_batch(seed=3)
    got = metrics.massive.massive_channels(x, mask)
    for b in range(x.shape[0]):
        assert got[b].nonzero().flatten().tolist() == ref.massive_channels(real(x, mask, b)), b


@pytest.mark.parametrize("exclude", [(), (0,), (1, -1)])
def test_sink_rate_matches_the_reference_and_reuses_sink_mass(exclude):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 6, 8, 8, generator=g, dtype=torch.float64)
    logits[:, :3, :, 0] += 2.0  # half the heads lean on the first token
    attn = torch.softmax(logits, -1)
    mask = torch.ones(4, 8, dtype=torch.bool)
    mask[1, 5:] = False
    got = metrics.sink_rate(attn, mask, exclude)
    for b in range(4):
        counted = mask[b].clone()
        counted[list(exclude)] = False
        queries = counted.nonzero().flatten().tolist()
        assert got[b].item() == pytest.approx(ref.sink_rate(attn[b].numpy(), queries)), b
    mass = metrics.sink_mass(attn, mask, exclude, per_head=True)
    assert torch.equal(got, (mass >= 0.3).double().mean(1))
    assert 0 < got.mean() < 1


def test_sink_rate_edges():
    maps = torch.zeros(2, 2, 3, 3)
    maps[..., 0] = 0.3  # exactly epsilon counts
    maps[..., 1] = 0.7
    assert metrics.sink_rate(maps).tolist() == [1.0, 1.0]
    assert metrics.sink_rate(maps, epsilon=0.31).tolist() == [0.0, 0.0]
    mask = torch.tensor([[True, False, False], [True, True, True]])
    rate = metrics.sink_rate(maps, mask, exclude=(0,))
    assert math.isnan(rate[0]) and rate[1] == 1.0  # the first sequence has no counted query


def test_padding_never_changes_a_value():
    x, mask = random_batch(seed=11)
    padded_x = torch.cat([x, 1e3 * torch.randn(6, 4, 7, dtype=torch.float64)], dim=1)
    padded_mask = torch.cat([mask, torch.zeros(6, 4, dtype=torch.bool)], dim=1)
    for name in SINK_METRICS:
        fn = getattr(metrics, name)
        assert torch.allclose(fn(x, mask), fn(padded_x, padded_mask), rtol=1e-12, equal_nan=True), name
    garbage = x.clone()
    garbage[~mask] = 1e6  # whatever padding holds
    for name in SINK_METRICS:
        fn = getattr(metrics, name)
        assert torch.allclose(fn(x, mask), fn(garbage, mask), rtol=1e-12, equal_nan=True), name


def test_the_first_token_measures_ignore_exclude():
    x, mask = random_batch(seed=5)
    for name in STREAM:
        fn = getattr(metrics, name)
        for exclude in [(0,), (0, 2)]:
            torch.testing.assert_close(fn(x, mask, exclude), fn(x, mask), rtol=0, atol=0, equal_nan=True)
    # cos_sim_outlier_free always drops position 0: excluding it again changes nothing
    assert torch.equal(metrics.cos_sim_outlier_free(x, mask), metrics.cos_sim_outlier_free(x, mask, (0,)))


def test_equal_tokens():
    token = torch.tensor([1.0, -2.0, 3.0, 0.5], dtype=torch.float64)
    x = token.expand(2, 5, 4)
    assert metrics.massive_ratio(x).tolist() == [2.0, 2.0]  # 3 / median(0.5, 1, 2, 3) = 3 / 1.5
    assert metrics.first_token_norm(x).tolist() == [1.0, 1.0]
    assert metrics.repr_entropy(x).tolist() == [0.0, 0.0]  # rank one
    assert metrics.cos_sim_outlier_free(x).tolist() == pytest.approx([1.0, 1.0])


def test_a_zero_token():
    x = torch.tensor([[[0.0, 0.0], [3.0, 4.0], [1.0, 0.0]]], dtype=torch.float64)
    assert metrics.first_token_norm(x).tolist() == [0.0]  # the first token is zero
    assert metrics.massive_ratio(x).item() == pytest.approx(ref.massive_ratio(x[0].numpy()))
    without = x[:, 1:]
    assert metrics.repr_entropy(x).item() == pytest.approx(metrics.repr_entropy(without).item(), abs=1e-12)
    assert metrics.cos_sim_outlier_free(x).item() == pytest.approx(0.6)  # tokens 1 and 2


def test_one_real_token():
    x = torch.tensor([[[3.0, -4.0, 1.0], [9.0, 9.0, 9.0]]], dtype=torch.float64)
    mask = torch.tensor([[True, False]])
    assert metrics.massive_ratio(x, mask).tolist() == [4.0 / 3.0]
    assert metrics.first_token_norm(x, mask).tolist() == [1.0]
    assert metrics.repr_entropy(x, mask).tolist() == [0.0]
    assert math.isnan(metrics.cos_sim_outlier_free(x, mask).item())  # only the first token: none left


def test_zero_states_and_zero_medians():
    zeros = torch.zeros(1, 4, 3, dtype=torch.float64)
    assert metrics.massive_ratio(zeros).tolist() == [1.0]  # 0 / 0: nothing stands out
    assert metrics.first_token_norm(zeros).tolist() == [1.0]
    assert metrics.repr_entropy(zeros).tolist() == [0.0]
    sparse = zeros.clone()
    sparse[0, 0, 0] = 2.0  # median |h| 0, one entry above it
    assert metrics.massive_ratio(sparse).tolist() == [math.inf]
    assert metrics.first_token_norm(sparse).tolist() == [math.inf]
    assert metrics.massive.massive_channels(sparse).tolist() == [[True, False, False]]
    nothing = torch.tensor([[False] * 4])
    for name in SINK_METRICS:
        assert math.isnan(getattr(metrics, name)(sparse, nothing).item()), name


def test_repr_entropy_reads_the_uncentred_spread():
    basis = torch.eye(4, dtype=torch.float64)[None]
    assert metrics.repr_entropy(basis).item() == pytest.approx(math.log(4))
    offset = basis + 10.0  # a shared offset takes most of tr K: low entropy, unlike effective_rank
    assert metrics.repr_entropy(offset).item() < 0.1
    assert metrics.effective_rank(offset).item() == pytest.approx(metrics.effective_rank(basis).item())
    sink = basis.clone()
    sink[0, 0, 0] = 100.0  # one huge-norm token: the compression valley
    assert metrics.repr_entropy(sink).item() < 0.01


def test_float32_and_half_precision_agree_with_float64():
    x, mask = random_batch(seed=2)
    for name in SINK_METRICS:
        fn = getattr(metrics, name)
        want = fn(x, mask)
        assert torch.allclose(fn(x.float(), mask), want, rtol=1e-4, equal_nan=True), name
        assert torch.allclose(fn(x.bfloat16(), mask), fn(x.bfloat16().double(), mask), rtol=1e-9, equal_nan=True)


def test_massive_location_finds_the_largest_activation():
    x, mask = random_batch(seed=4)
    x[2, 4, 6] = 1e4
    mask[2, 4] = True
    x[:, 1, 1] = -2e4  # larger, but padding in every sequence
    mask[:, 1] = False
    got = massive_location(x, mask)
    assert got == {"massive_max": 1e4, "massive_token": 4, "massive_channel": 6, "massive_share": 1 / 6}
    x[:, 4, 6] = 2e4
    mask[:, 4] = True
    assert massive_location(x, mask)["massive_share"] == 1.0
    assert all(math.isnan(v) for v in massive_location(x, torch.zeros_like(mask)).values())


def test_the_suite_takes_the_sink_measures_on_request_only():
    x, mask = random_batch(seed=9)
    states = [x, 2 * x]
    table = measure(states, mask, exclude=(0,), metrics=SINK_METRICS)
    for name in SINK_METRICS:
        want = getattr(metrics, name)(states[1], mask, (0,))
        assert table[name][1] == want[~want.isnan()].mean().item(), name
    assert not set(SINK_METRICS) & set(measure(states, mask).attrs["metrics"])


def test_massive_ratio_is_sun_et_al_s_on_a_massive_entry():
    x = torch.randn(1, 32, 64, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x[0, 0, 7] = 2000.0
    median = float(np.median(np.abs(x.numpy())))
    assert metrics.massive_ratio(x).item() == pytest.approx(2000.0 / median)
    assert metrics.massive_ratio(x).item() > 1000  # "massive": > 100 and > 1000 medians
