"""Capture on tiny random models of every family: hook points agree with independent identities."""

import pytest
import torch
from hf_tiny import TINY_FAMILIES, tiny_inputs, tiny_model

from oversmooth.errors import UsageError
from oversmooth.hf import layout
from oversmooth.hf.capture import capture, merge_heads

ATOL = 1e-5


@pytest.fixture(scope="module", params=TINY_FAMILIES)
def captured(request):
    model, inputs = tiny_model(request.param), tiny_inputs(request.param)
    outputs, cache = capture(model, inputs, pattern=True)
    return model, inputs, outputs, cache


def test_attention_residual_add(captured):
    _, _, _, cache = captured
    for pre, out, mid in zip(
        cache.layer_stack("resid_pre"), cache.layer_stack("attn_out"), cache.layer_stack("resid_mid")
    ):
        torch.testing.assert_close(pre + out, mid, atol=ATOL, rtol=0)


def test_context_is_pattern_times_values(captured):
    _, _, _, cache = captured
    for pattern, v, z in zip(cache.layer_stack("pattern"), cache.layer_stack("v"), cache.layer_stack("z")):
        torch.testing.assert_close(pattern @ v, z, atol=ATOL, rtol=0)


def test_weights_reproduce_values_and_attn_out(captured):
    """V = norm(resid_pre) W_V + b with kv-head h // groups; attn_out = merge(z) W_O + b."""
    model, _, _, cache = captured
    lay = layout(model)
    groups = lay.heads // lay.kv_heads
    for layer in range(cache.depth):
        x = cache.layer_stack("resid_pre")[layer]
        if lay.family.pre_norm is not None:
            x = lay.module(layer, "pre_norm")(x)
        bias = lay.value_bias(layer)
        projected = x @ lay.value_weight(layer) + (0 if bias is None else bias)
        v = cache.layer_stack("v")[layer]
        for head in range(lay.heads):
            kv = head // groups
            expected = projected[..., kv * lay.head_dim : (kv + 1) * lay.head_dim]
            torch.testing.assert_close(v[:, head], expected, atol=ATOL, rtol=0)
        out_bias = lay.module(layer, "out_proj").bias
        expected_out = merge_heads(cache.layer_stack("z")[layer]) @ lay.out_weight(layer)
        expected_out = expected_out + (0 if out_bias is None else out_bias)
        torch.testing.assert_close(expected_out, cache.layer_stack("attn_out")[layer], atol=ATOL, rtol=0)


def test_mask_and_last_state_reported(captured):
    _, inputs, _, cache = captured
    if "attention_mask" in inputs:
        assert cache.mask.tolist() == inputs["attention_mask"].bool().tolist()
    else:
        assert cache.mask.all()
    assert len(cache.stream()) == cache.depth + 1 == layout(captured[0]).depth + 1


def test_pattern_on_sdpa_model_switches_to_eager_and_back():
    model = tiny_model("bert", attn="sdpa")
    _, cache = capture(model, tiny_inputs("bert"), hooks=("v",), pattern=True)
    assert cache["blocks.0.attn.hook_pattern"].shape == (2, 4, 7, 7)
    assert model.config._attn_implementation == "sdpa"


def test_unknown_hook_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown hook"):
        capture(tiny_model("bert"), tiny_inputs("bert"), hooks=("resid_pre", "mlp_out"))


@pytest.mark.parametrize("kind", TINY_FAMILIES)
def test_norm_hooks_are_the_norms_inputs_and_outputs(kind):
    model, inputs = tiny_model(kind), tiny_inputs(kind)
    lay = layout(model)
    post_ln, final = lay.family.out_norm is not None, lay.family.final_norm is not None
    hooks = ("resid_mid", "resid_post", "mid_norm_out", *(("out_norm_in",) * post_ln), *(("final_norm_out",) * final))
    outputs, cache = capture(model, inputs, hooks=hooks)
    for layer, (mid, normed) in enumerate(zip(cache.layer_stack("resid_mid"), cache.layer_stack("mid_norm_out"))):
        torch.testing.assert_close(normed, lay.module(layer, "mid_norm")(mid), atol=0, rtol=0)
    if post_ln:
        for layer, (summed, post) in enumerate(zip(cache.layer_stack("out_norm_in"), cache.layer_stack("resid_post"))):
            torch.testing.assert_close(lay.module(layer, "out_norm")(summed), post, atol=0, rtol=0)
    if final:
        torch.testing.assert_close(cache["hook_final_norm_out"], outputs.last_hidden_state, atol=0, rtol=0)
        last = cache.layer_stack("resid_post")[-1]
        torch.testing.assert_close(cache["hook_final_norm_out"], lay.final_norm(last), atol=0, rtol=0)


def test_norm_hooks_missing_from_a_family_are_usage_errors():
    with pytest.raises(UsageError, match="GPT-2 models have no norm after the MLP residual add"):
        capture(tiny_model("gpt2"), tiny_inputs("gpt2"), hooks=("out_norm_in",))
    with pytest.raises(UsageError, match="BERT models have no final norm"):
        capture(tiny_model("bert"), tiny_inputs("bert"), hooks=("final_norm_out",))
    chunked = tiny_model("bert")
    for block in layout(chunked).blocks:
        block.chunk_size_feed_forward = 2
    with pytest.raises(UsageError, match="chunk_size_feed_forward=0"):
        capture(chunked, tiny_inputs("bert"), hooks=("out_norm_in",))


def test_a_list_where_a_tensor_is_meant_is_one_line_naming_it():
    inputs = tiny_inputs("bert")
    with pytest.raises(UsageError, match=r"inputs\['attention_mask'\] .*list"):
        capture(tiny_model("bert"), {**inputs, "attention_mask": inputs["attention_mask"].tolist()})
    with pytest.raises(UsageError, match="pass one mask value per token"):
        capture(tiny_model("bert"), {**inputs, "attention_mask": inputs["attention_mask"][:, 1:]})
