"""Every method at its zero setting is the softmax baseline with the same weights (docs/methods.md)."""

import pytest
import torch

from oversmooth.layers import MitigationConfig
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig

# method -> (knobs that zero it, parameters to set non-zero to show it then matters)
ZERO = {
    "neutreno": (dict(lam=0.0), dict(lam=0.6)),
    "deescalate": (dict(tau=0.0), dict(tau=1.0)),
    "deescalate-stream": (dict(tau=0.0, deescalate_at="stream"), dict(tau=1.0, deescalate_at="stream")),
    "value_residual": (dict(value_mix=0.0), dict(value_mix=0.5)),
    "attnscale": ({}, {}),  # omega starts at 0
    "featscale": ({}, {}),  # s_dc, s_hc start at 0
}
SCALES = ("omega", "s_dc", "s_hc")


def build(family, norm, method, knobs):
    mitigation = MitigationConfig(methods=(method.split("-")[0],) if method else (), **knobs)
    if family == "vit":
        cfg = ViTConfig.preset("vit-cpu", depth=3, norm=norm, mitigation=mitigation)
        return ViT(cfg), torch.randn(2, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    cfg = CausalLMConfig.preset("lm-cpu", depth=3, norm=norm, mitigation=mitigation)
    return CausalLM(cfg), torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("family", ["vit", "lm"])
@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("method", list(ZERO))
def test_zero_setting_is_the_baseline(family, norm, method):
    zero_knobs, live_knobs = ZERO[method]
    torch.manual_seed(0)
    baseline, x = build(family, norm, None, {})
    want = baseline.eval()(x)

    zeroed, _ = build(family, norm, method, zero_knobs)
    missing, unexpected = zeroed.load_state_dict(baseline.state_dict(), strict=False)
    assert not unexpected and all(name.endswith(SCALES + ("tau",)) for name in missing)
    assert torch.allclose(zeroed.eval()(x), want, atol=1e-6)

    live, _ = build(family, norm, method, live_knobs)
    live.load_state_dict(baseline.state_dict(), strict=False)
    with torch.no_grad():
        for name, p in live.named_parameters():
            if name.endswith(SCALES):
                p.fill_(3.0)
    assert (live.eval()(x) - want).abs().max() > 1e-4, "the method changes nothing"
