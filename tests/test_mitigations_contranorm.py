"""ContraNorm (Guo et al., ICLR 2023) against a token-by-token reference, at s = 0, in the LM's
causal form, and patched into tiny random Hugging Face models."""

import math

import pytest
import torch
from hf_tiny import tiny_inputs, tiny_model

from oversmooth.errors import UsageError
from oversmooth.hf import capture
from oversmooth.hf.patch import patch, supported_methods, unpatch
from oversmooth.layers import Block, MitigationConfig, StackConfig
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig


def naive(x, s, tau, valid=None, causal=False):
    """``x_i - s sum_j w_ij x_j``, ``w_ij`` the softmax over allowed j of cos(x_i, x_j) / tau, one
    token at a time with explicit sums. x: [B, n, d] float64."""
    out = x.clone()
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            keys = [j for j in range(x.shape[1]) if (j <= i or not causal) and (valid is None or valid[b, j] or j == i)]
            sims = [float(x[b, i] @ x[b, j]) / (float(x[b, i].norm()) * float(x[b, j].norm())) / tau for j in keys]
            top = max(sims)
            weights = [math.exp(v - top) for v in sims]
            mix = sum(w * x[b, j] for w, j in zip(weights, keys)) / sum(weights)
            out[b, i] = x[b, i] - s * mix
    return out


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_block_matches_naive_reference(norm, causal):
    torch.manual_seed(0)
    cfg = StackConfig(
        depth=1,
        width=12,
        heads=3,
        norm=norm,
        mitigation=MitigationConfig.parse("contranorm", contranorm_s=0.7, contranorm_tau=0.5),
    )
    block = Block(cfg, causal=causal).double().eval()
    seen = {}
    for name in ("hook_resid_pre", "hook_attn_out", "hook_resid_mid"):
        getattr(block, name).register_forward_hook(lambda m, a, out, name=name: seen.__setitem__(name, out))
    with torch.no_grad():
        block(torch.randn(2, 6, 12, dtype=torch.float64))
    expected = naive(seen["hook_resid_pre"] + seen["hook_attn_out"], 0.7, 0.5, causal=causal)
    if norm == "post":  # the block's own LayerNorm after the attention add
        expected = block.ln_attn(expected)
    torch.testing.assert_close(seen["hook_resid_mid"], expected)


def build(kind, mitigation):
    if kind == "vit":
        return ViT(ViTConfig.preset("vit-cpu", depth=3, mitigation=mitigation)), torch.randn(2, 1, 28, 28)
    return CausalLM(CausalLMConfig.preset("lm-cpu", depth=3, mitigation=mitigation)), torch.randint(0, 256, (2, 12))


@pytest.mark.parametrize("kind", ["vit", "lm"])
@pytest.mark.parametrize("learnable", [False, True])
def test_zero_setting_is_the_baseline_bit_for_bit(kind, learnable):
    torch.manual_seed(0)
    baseline, x = build(kind, MitigationConfig())
    zeroed, _ = build(kind, MitigationConfig.parse("contranorm", contranorm_s=0.0, contranorm_learnable=learnable))
    missing, unexpected = zeroed.load_state_dict(baseline.state_dict(), strict=False)
    assert not unexpected and all(name.endswith("contranorm.s") for name in missing) and bool(missing) == learnable
    with torch.no_grad():
        assert torch.equal(zeroed.eval()(x), baseline.eval()(x))
        live, _ = build(kind, MitigationConfig.parse("contranorm", contranorm_s=0.5))
        live.load_state_dict(baseline.state_dict())
        assert not torch.allclose(live.eval()(x), baseline(x), atol=1e-4)


def test_lm_stays_causal():
    torch.manual_seed(0)
    lm, ids = build("lm", MitigationConfig.parse("contranorm", contranorm_s=1.0))
    changed = ids.clone()
    changed[:, 5:] = (changed[:, 5:] + 7) % 256
    with torch.no_grad():
        before, after = lm.eval()(ids), lm(changed)
    torch.testing.assert_close(before[:, :5], after[:, :5], atol=1e-6, rtol=0)
    assert not torch.allclose(before[:, 5:], after[:, 5:])


def test_bad_knobs_are_usage_errors():
    with pytest.raises(UsageError, match="ContraNorm tau must be > 0"):
        MitigationConfig.parse("contranorm", contranorm_tau=0.0)
    with pytest.raises(UsageError, match="contranorm_s is a knob of contranorm"):
        MitigationConfig.parse("neutreno", contranorm_s=0.1)


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama", "opt_post"])
def test_hf_patch_matches_naive_reference(kind):
    """Block 0's stream after the attention add, patched, is the naive ContraNorm of the unpatched
    one (post-LN: the norm reads it); s = 0 is exact."""
    model, inputs = tiny_model(kind).double(), tiny_inputs(kind)
    causal = kind != "bert"
    with torch.no_grad():
        base = model(**inputs).last_hidden_state
        _, plain = capture(model, inputs)
        patch(model, "contranorm", s=0.6, tau=0.7)
        try:
            _, patched = capture(model, inputs)
        finally:
            unpatch(model)
        patch(model, "contranorm", s=0.0)
        try:
            assert torch.equal(model(**inputs).last_hidden_state, base)
        finally:
            unpatch(model)
    mid = plain["blocks.0.hook_resid_pre"] + plain["blocks.0.hook_attn_out"]
    expected = naive(mid, 0.6, 0.7, inputs["attention_mask"].bool(), causal)
    valid = inputs["attention_mask"].bool()
    torch.testing.assert_close(patched["blocks.0.hook_resid_mid"][valid], expected[valid])


def test_parallel_blocks_are_refused():
    model = tiny_model("phi")
    assert "contranorm" not in supported_methods(model)
    with pytest.raises(UsageError, match="in parallel"):
        patch(model, "contranorm")
