"""patch / unpatch on tiny random models of every family, checked against naive references."""

import pytest
import torch

from hf_tiny import FAMILIES, tiny_inputs, tiny_model
from oversmooth.errors import UsageError
from oversmooth.hf.capture import capture, merge_heads
from oversmooth.hf.families import layout
from oversmooth.hf.patch import DEFAULT_KNOBS, METHODS, ZERO_KNOBS, patch, unpatch

ATOL = 1e-5


def run(model, inputs):
    with torch.no_grad():
        return model(**inputs).last_hidden_state


def naive_mean(x, mask, causal):
    """Mean over valid tokens (prefix-limited when causal), one token at a time. x: [B, ..., n, d]."""
    out = torch.zeros_like(x)
    for b in range(x.shape[0]):
        for t in range(x.shape[-2]):
            keep = [s for s in range(x.shape[-2]) if mask[b, s] and (s <= t or not causal)]
            out[b, ..., t, :] = x[b, ..., keep, :].mean(dim=-2)
    return out


@pytest.mark.parametrize("kind", FAMILIES)
def test_zero_setting_equals_unpatched_and_unpatch_restores(kind):
    model, inputs = tiny_model(kind), tiny_inputs(kind)
    baseline = run(model, inputs)
    for method in METHODS:
        patch(model, method, **ZERO_KNOBS[method])
        assert torch.equal(run(model, inputs), baseline), method
        unpatch(model)
        patch(model, method)
        assert not torch.allclose(run(model, inputs), baseline), f"{method} at defaults changes nothing"
        unpatch(model)
        assert torch.equal(run(model, inputs), baseline), f"{method}: unpatch did not restore"


@pytest.mark.parametrize("kind", FAMILIES)
def test_context_methods_match_naive_reference(kind):
    """NeuTRENO and AttnScale on z = A V (per head), from the patched model's own A and V."""
    model, inputs = tiny_model(kind), tiny_inputs(kind)
    causal = layout(model).family.causal
    patch(model, "neutreno", lam=0.3)
    _, cache = capture(model, inputs, pattern=True)
    unpatch(model)
    v1 = cache["blocks.0.attn.hook_v"]
    for layer, (a, v, z) in enumerate(zip(cache.stack("pattern"), cache.stack("v"), cache.stack("z"))):
        expected = a @ v + (0.3 * (v1 - v) if layer > 0 else 0)
        torch.testing.assert_close(z, expected, atol=ATOL, rtol=0)

    omega = torch.tensor([0.5, -0.25, 1.0, 0.0])
    patch(model, "attnscale", omega=omega.tolist())
    _, cache = capture(model, inputs, pattern=True)
    unpatch(model)
    for a, v, z in zip(cache.stack("pattern"), cache.stack("v"), cache.stack("z")):
        av = a @ v
        expected = av + omega[:, None, None] * (av - naive_mean(v, cache.mask, causal))
        torch.testing.assert_close(z, expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("kind", FAMILIES)
def test_output_methods_match_naive_reference(kind):
    """De-escalation and FeatScale on attn_out = merge(z) W_O + b."""
    model, inputs = tiny_model(kind), tiny_inputs(kind)
    lay = layout(model)
    causal = lay.family.causal
    s_dc, s_hc = torch.linspace(-1, 1, lay.hidden), torch.linspace(0.5, -0.5, lay.hidden)
    for method, knobs in (("deescalate", {"tau": 0.7}), ("featscale", {"s_dc": s_dc, "s_hc": s_hc})):
        patch(model, method, **knobs)
        _, cache = capture(model, inputs)
        unpatch(model)
        for layer in range(cache.layers):
            bias = lay.module(layer, "out_proj").bias
            plain = merge_heads(cache.stack("z")[layer]) @ lay.out_weight(layer) + (0 if bias is None else bias)
            dc = naive_mean(plain, cache.mask, causal)
            if method == "deescalate":
                expected = plain - 0.7 * dc
            else:
                expected = plain + s_dc * dc + s_hc * (plain - dc)
            torch.testing.assert_close(cache.stack("attn_out")[layer], expected, atol=ATOL, rtol=0)


def test_causal_patches_do_not_leak_future_tokens():
    model, inputs = tiny_model("gpt2"), tiny_inputs("gpt2")
    changed = {k: v.clone() for k, v in inputs.items()}
    changed["input_ids"][:, 4:] = (changed["input_ids"][:, 4:] + 7) % 50
    for method in METHODS:
        patch(model, method)
        a, b = run(model, inputs), run(model, changed)
        unpatch(model)
        torch.testing.assert_close(a[:, :4], b[:, :4], atol=ATOL, rtol=0)


def test_patch_with_a_head_model_and_bad_requests():
    from transformers import BertConfig, BertForMaskedLM
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                       intermediate_size=48, vocab_size=50)).eval()
    inputs = tiny_inputs("bert")
    with torch.no_grad():
        base = model(**inputs).logits
        patch(model, "neutreno", lam=0.6)
        assert not torch.allclose(model(**inputs).logits, base)
    with pytest.raises(UsageError, match="already patched"):
        patch(model, "featscale")
    unpatch(model)
    with pytest.raises(UsageError, match="unknown method"):
        patch(model, "contranorm")
    with pytest.raises(UsageError, match="takes lam"):
        patch(model, "neutreno", tau=1.0)
    with pytest.raises(UsageError, match="lambda"):
        patch(model, "neutreno", lam=-1.0)
    with pytest.raises(UsageError, match="omega must be one number or 4"):
        patch(model, "attnscale", omega=[1.0, 2.0])
    with torch.no_grad():  # the failed patches left no hook behind: the model is the original
        assert torch.equal(model(**inputs).logits, base)
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    assert set(DEFAULT_KNOBS) == set(METHODS)
