"""Every method at its zero setting is the softmax baseline with the same weights (docs/methods.md).

The zero settings are the registry's (``Method.zero``), so a method that trains and declares one is
tested here (in the models it trains in).
A zero knob that training takes (``lam``, ``tau``, ...) is passed to ``MitigationConfig``; one that
training learns instead (AttnScale's ``omega``, LayerScale's ``gamma``) is the method's parameter of
that name, set to the zero value in the model. Then each method is shown to matter: at its defaults,
with those learned parameters set to 3.
"""

import pytest
import torch

from oversmooth.layers import MitigationConfig
from oversmooth.mitigations.registry import METHODS
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig

LIVE = 3.0  # a learned knob's value that makes a method act


def cases() -> list[tuple[str, str, dict]]:
    """``(id, method, train knobs beyond its zero)``: each method with a zero setting, and once more
    for each other choice of a knob with choices (de-escalation on the stream)."""
    out = []
    for name, m in METHODS.items():
        if not m.zero or m.untrainable:
            continue
        out.append((name, name, {}))
        for f in m.fields("train"):
            for choice in f.metadata["choices"] or ():
                if f.name not in m.zero and choice != f.default:
                    out.append((f"{name}-{choice}", name, {f.name: choice}))
    return out


CASES = cases()


def learned(name: str) -> dict:
    """The zero knobs that training learns rather than takes: field -> zero value."""
    m = METHODS[name]
    train = {f.name for f in m.fields("train")}
    return {field: value for field, value in m.zero.items() if field not in train}


def flags(name: str, knobs: dict) -> dict:
    """Field-named knobs of ``name`` by their global names (``MitigationConfig``'s)."""
    return {METHODS[name].flag(field): value for field, value in knobs.items()}


def build(family, norm, method, knobs):
    mitigation = MitigationConfig(methods=(method,) if method else (), **knobs)
    if family == "vit":
        cfg = ViTConfig.preset("vit-cpu", depth=3, norm=norm, mitigation=mitigation)
        return ViT(cfg), torch.randn(2, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    cfg = CausalLMConfig.preset("lm-cpu", depth=3, norm=norm, mitigation=mitigation)
    return CausalLM(cfg), torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(0))


def set_learned(model, name: str, values: dict) -> None:
    """Fill the method's parameters named like each field of ``values`` (``gamma.0``, ``omega``) with its value."""
    attribute = METHODS[name].attribute
    for field, value in values.items():
        params = [p for path, p in model.named_parameters() if _owned(path, attribute, field)]
        assert params, f"{name} has no parameter {field} to set"
        with torch.no_grad():
            for p in params:
                p.fill_(value)


def _owned(path: str, attribute: str, field: str) -> bool:
    """``blocks.0.attn.attnscale.omega`` or ``blocks.0.layerscale.gamma.1`` is ``attribute``'s ``field``."""
    parts = path.split(".")
    return any(parts[i : i + 2] == [attribute, field] for i in range(len(parts) - 1))


def test_every_method_with_a_zero_setting_is_covered():
    assert {method for _, method, _ in CASES} == {n for n, m in METHODS.items() if m.zero and not m.untrainable}
    assert "deescalate-stream" in [case for case, _, _ in CASES]


@pytest.mark.parametrize("family", ["vit", "lm"])
@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize(("method", "extra"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_zero_setting_is_the_baseline(family, norm, method, extra):
    if norm not in METHODS[method].norms:
        pytest.skip(f"{method} is not defined with {norm}-norm blocks")
    if family not in METHODS[method].models:
        pytest.skip(f"{method} is not defined in our {family}")
    zero = METHODS[method].zero
    taken = {field: value for field, value in zero.items() if field not in learned(method)}
    torch.manual_seed(0)
    baseline, x = build(family, norm, None, {})
    want = baseline.eval()(x)

    zeroed, _ = build(family, norm, method, flags(method, {**taken, **extra}))
    missing, unexpected = zeroed.load_state_dict(baseline.state_dict(), strict=False)
    attribute = METHODS[method].attribute
    assert not unexpected and all(f".{attribute}." in f".{name}" for name in missing), missing
    set_learned(zeroed, method, learned(method))
    assert torch.allclose(zeroed.eval()(x), want, atol=1e-6)

    live, _ = build(family, norm, method, flags(method, extra))
    live.load_state_dict(baseline.state_dict(), strict=False)
    set_learned(live, method, dict.fromkeys(learned(method), LIVE))
    assert (live.eval()(x) - want).abs().max() > 1e-4, "the method changes nothing"
