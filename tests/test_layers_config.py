"""MitigationConfig parsing and validation; LayerNorm sign options."""

import pytest
import torch

from oversmooth.errors import UsageError
from oversmooth.layers import METHOD_FORMULAS, MitigationConfig, StackConfig, signed_layer_norm
from oversmooth.mitigations.registry import METHODS as REGISTRY


def test_parse_and_round_trip():
    cfg = MitigationConfig.parse("NeuTRENO + featscale", lam=0.4)
    assert cfg.methods == ("neutreno", "featscale") and cfg.lam == 0.4
    assert MitigationConfig.from_dict(cfg.to_dict()) == cfg
    assert MitigationConfig.parse("softmax") == MitigationConfig()
    assert StackConfig(mitigation="deescalate").mitigation == MitigationConfig(methods=("deescalate",))
    assert (
        set(METHOD_FORMULAS)
        == set(REGISTRY)
        >= {"symmetric", "neutreno", "deescalate", "attnscale", "featscale", "spectral", "value_residual"}
    )
    old = {
        "methods": ["neutreno"],
        "lam": 0.4,
        "tau": 1.0,
        "tau_learnable": False,
        "deescalate_at": "attn_out",
        "spectral": "free",
        "value_mix": 0.5,
    }  # a saved model's flat dict before the registry
    assert MitigationConfig.from_dict(old) == MitigationConfig.parse("neutreno", lam=0.4)


@pytest.mark.parametrize(
    "spec, knobs, words",
    [
        ("neutreno+magic", {}, "unknown mitigation .magic.; choose from"),  # lists the valid choices
        ("neutreno", dict(lam=-0.1), "lambda"),
        ("deescalate", dict(tau=1.5), "tau"),
        ("deescalate", dict(tau=float("nan")), "tau"),
        ("deescalate", dict(deescalate_at="mlp"), "attn_out, stream"),
        ("spectral", dict(spectral="flat"), "sharpen, smooth, free"),
        ("value_residual", dict(value_mix=2.0), "value_mix"),
        ("neutreno+neutreno", {}, "twice"),
        ("neutreno", dict(alpha=1.0), "valid"),
        ("neutreno", dict(lam=float("inf")), "finite"),
        ("softmax", dict(tau=0.5), "tau is a knob of deescalate, which softmax does not use"),
        ("neutreno+featscale", dict(spectral="sharpen"), "spectral is a knob of spectral"),
    ],
)
def test_bad_settings_raise_usage_errors_naming_the_fix(spec, knobs, words):
    with pytest.raises(UsageError, match=words):
        MitigationConfig.parse(spec, **knobs)


def test_heads_must_divide_width():
    with pytest.raises(UsageError, match="divide"):
        StackConfig(width=64, heads=6)


@pytest.mark.parametrize(
    "sign, start, stays",
    [("free", 1.0, None), ("negative_init", -1.0, None), ("positive", 1.0, 1.0), ("negative", -1.0, -1.0)],
)
def test_layer_norm_sign(sign, start, stays):
    ln = signed_layer_norm(8, sign)
    assert torch.all(ln.weight == start)
    x = torch.randn(4, 8)
    want = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
    assert torch.allclose(ln(x), start * want, atol=1e-5)
    opt = torch.optim.SGD(ln.parameters(), lr=10.0)
    for _ in range(3):  # push the weights hard toward the other sign
        opt.zero_grad()
        (ln(x) * start * want).sum().backward()
        opt.step()
    if stays is not None:
        assert torch.all(torch.sign(ln.weight) == stays)
    else:
        assert torch.any(torch.sign(ln.weight) != start)
