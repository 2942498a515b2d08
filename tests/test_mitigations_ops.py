"""Mitigation maths against naive per-token loops written independently."""

import pytest
import torch

from oversmooth.errors import UsageError
from oversmooth.mitigations.attnscale import AttnScale, attnscale
from oversmooth.mitigations.deescalation import Deescalation, deescalate
from oversmooth.mitigations.featscale import FeatScale, featscale
from oversmooth.mitigations.neutreno import neutreno
from oversmooth.mitigations.token_mean import token_mean


def naive_mean(x, mask, causal):
    """Loop over batch and token: the mean of valid tokens (s <= t when causal)."""
    batch, n = x.shape[0], x.shape[-2]
    out = torch.zeros_like(x)
    for b in range(batch):
        for t in range(n):
            keep = [s for s in range(n) if (mask is None or mask[b, s]) and (not causal or s <= t)]
            if keep:
                out[b, ..., t, :] = torch.stack([x[b, ..., s, :] for s in keep]).mean(0)
    return out


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads", [None, 3])
def test_token_mean_matches_loops(causal, heads):
    g = torch.Generator().manual_seed(0)
    shape = (4, 7, 5) if heads is None else (4, heads, 7, 5)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    mask = torch.rand(4, 7, generator=g) > 0.3
    mask[:, 0] = True
    got = token_mean(x, mask, causal).expand_as(x)
    want = naive_mean(x, mask, causal)
    valid = mask if heads is None else mask[:, None].expand(4, heads, 7)
    assert torch.allclose(got[valid], want[valid], atol=1e-12)


def test_zero_settings_are_identity():
    x = torch.randn(2, 3, 6, 4)
    assert torch.equal(neutreno(x, torch.randn_like(x), torch.randn_like(x), 0.0), x)
    assert torch.equal(Deescalation(tau=0.0)(x[:, 0]), x[:, 0])
    assert torch.equal(AttnScale(heads=3)(x, torch.randn_like(x)), x)
    assert torch.equal(FeatScale(dim=4)(x[:, 0]), x[:, 0])


def test_full_deescalation_zeroes_the_mean_token():
    x = torch.randn(2, 9, 4, dtype=torch.float64) + 5.0
    assert deescalate(x, 1.0).mean(dim=1).abs().max() < 1e-12


def test_attnscale_is_uniform_attention_contrast():
    """AV + w(AV - UV) equals (A + w(A - U)) V with A explicit."""
    g = torch.Generator().manual_seed(1)
    a = torch.softmax(torch.randn(2, 3, 5, 5, generator=g, dtype=torch.float64), -1)
    v = torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64)
    w = torch.tensor([0.5, -0.2, 1.0], dtype=torch.float64)
    uniform = torch.full((5, 5), 1 / 5, dtype=torch.float64)
    want = (a + w[:, None, None] * (a - uniform)) @ v
    assert torch.allclose(attnscale(a @ v, v, w), want, atol=1e-12)


def test_featscale_decomposition():
    z = torch.randn(2, 6, 4, dtype=torch.float64)
    dc = z.mean(1, keepdim=True).expand_as(z)
    s_dc, s_hc = torch.rand(4, dtype=torch.float64), torch.rand(4, dtype=torch.float64)
    assert torch.allclose(featscale(z, s_dc, s_hc), (1 + s_dc) * dc + (1 + s_hc) * (z - dc))


def test_bad_knobs_raise_usage_errors():
    with pytest.raises(UsageError, match="tau"):
        Deescalation(tau=1.5)
