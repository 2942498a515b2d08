"""oversmooth.metrics against the naive references, edge cases, identities and properties."""

import math

import numpy as np
import pytest
import reference_metrics as ref
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from oversmooth import metrics
from oversmooth.errors import UsageError
from oversmooth.metrics.tokens import check_finite

STATE_METRICS = ["cos_sim", "t_sim", "centred_residual", "effective_rank", "stable_rank"]


def random_batch(seed, batch=5, n=9, d=6):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n, d, generator=g, dtype=torch.float64)
    x += torch.randn(batch, 1, d, generator=g, dtype=torch.float64)  # a shared component
    mask = torch.rand(batch, n, generator=g) > 0.35
    mask[:, 1] = True
    return x, mask


@pytest.mark.parametrize("name", STATE_METRICS)
@pytest.mark.parametrize("exclude", [(), (0,), (0, -1)])
def test_state_metrics_match_reference(name, exclude):
    x, mask = random_batch(seed=len(name))
    got = getattr(metrics, name)(x, mask, exclude)
    for b in range(x.shape[0]):
        keep = mask[b].clone()
        keep[list(exclude)] = False
        want = getattr(ref, name)(x[b][keep].numpy())
        assert got[b].item() == pytest.approx(want, rel=1e-9, abs=1e-12), (name, b)


def test_t_div_is_centred_energy_share():
    """Identity: |X - 1 xbar^T|_F^2 / |X|_F^2 = t_div."""
    x, _ = random_batch(seed=3)
    centred = x - x.mean(dim=1, keepdim=True)
    want = centred.pow(2).sum((1, 2)) / x.pow(2).sum((1, 2))
    assert torch.allclose(metrics.t_div(x), want, atol=1e-12)


@pytest.mark.parametrize("name", STATE_METRICS + ["t_div"])
def test_padding_never_changes_a_value(name):
    x, mask = random_batch(seed=11)
    garbage = torch.randn(5, 4, 6, dtype=torch.float64) * 1e3
    padded_x = torch.cat([x, garbage], dim=1)
    padded_mask = torch.cat([mask, torch.zeros(5, 4, dtype=torch.bool)], dim=1)
    fn = getattr(metrics, name)
    assert torch.allclose(fn(x, mask), fn(padded_x, padded_mask), rtol=1e-6, atol=1e-6)


def test_identical_tokens_are_fully_collapsed():
    x = torch.randn(3, 1, 8).expand(3, 7, 8)
    assert torch.allclose(metrics.cos_sim(x), torch.ones(3, dtype=torch.float64))
    assert torch.allclose(metrics.t_sim(x), torch.ones(3, dtype=torch.float64))
    assert torch.allclose(metrics.centred_residual(x), torch.zeros(3, dtype=torch.float64), atol=1e-7)
    assert torch.allclose(metrics.effective_rank(x), torch.ones(3, dtype=torch.float64))
    assert torch.allclose(metrics.stable_rank(x), torch.ones(3, dtype=torch.float64))


def test_orthogonal_tokens():
    x = torch.eye(6, dtype=torch.float64)[None] * torch.arange(1, 7, dtype=torch.float64)[:, None]
    assert metrics.cos_sim(x).item() == pytest.approx(0.0, abs=1e-12)
    equal_norms = torch.eye(6, dtype=torch.float64)[None]
    assert metrics.t_sim(equal_norms).item() == pytest.approx(1 / 6)
    assert metrics.stable_rank(equal_norms).item() == pytest.approx(6.0)
    # Centred basis vectors span 5 directions with equal singular values.
    assert metrics.effective_rank(equal_norms).item() == pytest.approx(5.0)


@pytest.mark.parametrize("name", STATE_METRICS + ["t_div"])
def test_scale_and_permutation_invariance(name):
    x, mask = random_batch(seed=5)
    fn = getattr(metrics, name)
    base = fn(x, mask)
    assert torch.allclose(fn(x * 37.5, mask), base, rtol=1e-9)
    perm = torch.randperm(x.shape[1], generator=torch.Generator().manual_seed(0))
    assert torch.allclose(fn(x[:, perm], mask[:, perm]), base, rtol=1e-9)


@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_extreme_scales_do_not_underflow_or_overflow(scale):
    x, mask = random_batch(seed=9)
    for name in ["cos_sim", "t_sim", "effective_rank", "stable_rank"]:
        fn = getattr(metrics, name)
        assert torch.allclose(fn(x * scale, mask), fn(x, mask), rtol=1e-9), name


def test_single_token_and_zero_tokens_are_finite_and_documented():
    one = torch.randn(2, 1, 5)
    assert metrics.cos_sim(one).tolist() == [1.0, 1.0]
    assert metrics.t_sim(one).tolist() == [1.0, 1.0]
    assert metrics.effective_rank(one).tolist() == [1.0, 1.0]
    zeros = torch.zeros(1, 4, 5)
    for name in STATE_METRICS + ["t_div"]:
        assert math.isfinite(getattr(metrics, name)(zeros).item()), name
    assert metrics.t_sim(zeros).item() == 1.0
    # A zero token has cosine 0 with the others: pairs (a, a) = 1, the four pairs with 0 are 0.
    mixed = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]]])
    assert metrics.cos_sim(mixed).item() == pytest.approx(2 / 6)


def test_no_counted_token_is_nan():
    mask = torch.zeros(1, 3, dtype=torch.bool)
    assert math.isnan(metrics.cos_sim(torch.randn(1, 3, 2), mask).item())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_inputs(dtype):
    x, mask = random_batch(seed=8)
    low = x.to(dtype)
    for name in STATE_METRICS:
        fn = getattr(metrics, name)
        got, want = fn(low, mask), fn(low.to(torch.float64), mask)
        assert got.dtype == torch.float64 and torch.allclose(got, want), name


def test_cos_sim_is_linear_in_tokens_not_quadratic():
    """Long sequences run without an n x n matrix: 20k tokens fit easily."""
    x = torch.randn(1, 20_000, 16)
    assert abs(metrics.cos_sim(x).item()) < 0.01


def test_bad_mask_shape_is_a_usage_error():
    with pytest.raises(UsageError, match="mask"):
        metrics.cos_sim(torch.randn(2, 4, 3), torch.ones(2, 5, dtype=torch.bool))


#: entries whose squares are normal float64 numbers (|v| >= 1e-150, or 0): the measures' stated domain
finite = st.floats(-100, 100, allow_nan=False, width=64).map(lambda v: v if abs(v) >= 1e-150 else 0.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.integers(1, 5), st.data())
def test_properties(n, d, data):
    values = data.draw(st.lists(finite, min_size=n * d, max_size=n * d))
    x = torch.tensor(values, dtype=torch.float64).reshape(1, n, d)
    cos, ts = metrics.cos_sim(x).item(), metrics.t_sim(x).item()
    er, sr = metrics.effective_rank(x).item(), metrics.stable_rank(x).item()
    assert -1 - 1e-9 <= cos <= 1 + 1e-9
    assert 0 <= ts <= 1
    assert 1 - 1e-9 <= er <= max(1, min(n - 1, d)) + 1e-6
    assert 1 - 1e-9 <= sr <= min(n, d) + 1e-6
    assert metrics.centred_residual(x).item() >= 0
    assert ts == pytest.approx(ref.t_sim(x[0].numpy()), abs=1e-9)


def random_attention(seed, batch=3, heads=2, n=6, causal=False):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, heads, n, n, generator=g, dtype=torch.float64) * 2
    mask = torch.rand(batch, n, generator=g) > 0.3
    mask[:, 0] = True
    logits = logits.masked_fill(~mask[:, None, None, :], -torch.inf)
    if causal:
        logits = logits.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -torch.inf)
    return torch.softmax(logits, -1), mask


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("name", ["attention_entropy", "attention_lambda2"])
def test_attention_measures_match_reference(name, causal):
    attn, mask = random_attention(seed=2, causal=causal)
    got = getattr(metrics, name)(attn, mask, per_head=True)
    for b in range(attn.shape[0]):
        keep = mask[b].numpy()
        for h in range(attn.shape[1]):
            block = attn[b, h].numpy()[np.ix_(keep, keep)]
            want = getattr(ref, name)(block)
            assert got[b, h].item() == pytest.approx(want, rel=1e-7, abs=1e-9)
    assert torch.allclose(getattr(metrics, name)(attn, mask), got.mean(1))


def test_attention_similarity_matches_reference():
    a, mask = random_attention(seed=4)
    b, _ = random_attention(seed=5)
    got = metrics.attention_similarity(a, b, mask, per_head=True)
    keep = mask[1].numpy()
    want = ref.attention_similarity(a[1, 0].numpy()[np.ix_(keep, keep)], b[1, 0].numpy()[np.ix_(keep, keep)])
    assert got[1, 0].item() == pytest.approx(want, rel=1e-9)


def test_uniform_attention_has_zero_gap_and_max_entropy():
    uniform = torch.full((1, 1, 5, 5), 0.2)
    assert metrics.attention_lambda2(uniform).item() == pytest.approx(0.0, abs=1e-7)
    assert metrics.attention_entropy(uniform).item() == pytest.approx(math.log(5), rel=1e-6)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_check_finite_names_the_first_bad_token(bad):
    x = torch.zeros(3, 4, 2)
    x[1, 2, 0] = x[2, 0, 1] = bad
    with pytest.raises(UsageError, match="first at sequence 1, token 2"):
        check_finite(x, "layer 3 states")


def test_check_finite_accepts_finite_states_whose_sum_overflows():
    x = torch.full((2, 3, 4), 3e38)  # every entry finite in float32, their sum is not
    assert not torch.isfinite(x.sum())
    check_finite(x, "layer 0 states")
