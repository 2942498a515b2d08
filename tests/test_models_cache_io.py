"""run_with_cache captures without changing results; save/load round-trips exactly."""

import json

import pytest
import torch

from oversmooth.errors import UsageError
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig, load_model, save_model


def lm(**overrides):
    torch.manual_seed(0)
    return CausalLM(CausalLMConfig.preset("lm-cpu", depth=3, **overrides)).eval()


def test_capture_does_not_change_outputs():
    model, tokens = lm(mitigation="neutreno+attnscale"), torch.randint(0, 256, (2, 10))
    plain = model(tokens)
    without_pattern, cache = model.run_with_cache(tokens, names=["blocks.1.hook_resid_post"])
    assert torch.equal(without_pattern, plain)
    everything, cache = model.run_with_cache(tokens)  # includes patterns: manual path
    assert torch.allclose(everything, plain, atol=1e-5)
    assert all(not a.materialize for a in (b.attn for b in model.blocks)), "path not restored"
    assert torch.equal(model(tokens), plain)


def test_hooks_hold_the_block_algebra():
    """Independent identities: stream continuity, resid_pre + attn_out = resid_mid (pre-norm),
    causal row-stochastic patterns, and the pattern times V is the attention mix."""
    model, tokens = lm(), torch.randint(0, 256, (2, 10))
    _, cache = model.run_with_cache(tokens)
    pre, mid, post = (cache.layer_stack(h) for h in ("hook_resid_pre", "hook_resid_mid", "hook_resid_post"))
    attn_out, mlp_out = cache.layer_stack("hook_attn_out"), cache.layer_stack("hook_mlp_out")
    assert len(pre) == 3
    for layer in range(3):
        assert torch.allclose(pre[layer] + attn_out[layer], mid[layer], atol=1e-6)
        assert torch.allclose(mid[layer] + mlp_out[layer], post[layer], atol=1e-6)
        if layer:
            assert torch.equal(pre[layer], post[layer - 1])
    pattern = cache["blocks.2.attn.hook_pattern"]
    assert pattern.shape == (2, 4, 10, 10)
    assert torch.allclose(pattern.sum(-1), torch.ones(2, 4, 10))
    assert torch.count_nonzero(pattern.triu(1)) == 0
    assert cache["blocks.0.attn.hook_v"].shape == (2, 4, 10, 16)


def test_unknown_hook_is_a_usage_error():
    model = lm()
    with pytest.raises(UsageError, match="hook_names"):
        model.run_with_cache(torch.zeros(1, 4, dtype=torch.long), names=["blocks.0.hook_resid"])
    _, cache = model.run_with_cache(torch.zeros(1, 4, dtype=torch.long), names=["blocks.0.attn.hook_v"])
    with pytest.raises(UsageError):
        cache.layer_stack("hook_resid_post")


@pytest.mark.parametrize("family", ["vit", "lm"])
def test_save_load_round_trip(tmp_path, family):
    if family == "vit":
        torch.manual_seed(0)
        model = ViT(
            ViTConfig.preset("vit-cpu", depth=2, ln_sign="negative", mitigation="spectral+featscale+deescalate")
        ).eval()
        x = torch.randn(2, 1, 28, 28)
    else:
        model = lm(mitigation="neutreno+attnscale+spectral", norm="post")
        x = torch.randint(0, 256, (2, 10))
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_(0.1 * torch.randn_like(p))  # trained-looking, not the init
    save_model(model, tmp_path / "ckpt")
    assert json.loads((tmp_path / "ckpt" / "config.json").read_text())["config"]["depth"] == model.cfg.depth
    loaded = load_model(tmp_path / "ckpt")
    assert type(loaded) is type(model) and loaded.cfg == model.cfg
    assert torch.equal(loaded(x), model(x))


def test_load_from_a_wrong_folder_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="save_model"):
        load_model(tmp_path)


def test_cache_feeds_the_metric_suite():
    """Full de-escalation on the stream removes the mean token: t_sim of resid_mid is 0,
    while the baseline's is not (an identity the metrics must see through our hooks)."""
    from oversmooth.metrics import measure, t_sim

    torch.manual_seed(0)
    images = torch.randn(2, 1, 28, 28)
    for spec, zero in (("deescalate", True), ("softmax", False)):
        mitigation = dict(methods=(spec,) if spec != "softmax" else (), tau=1.0, deescalate_at="stream")
        vit = ViT(ViTConfig.preset("vit-cpu", depth=3, mitigation=mitigation)).eval()
        _, cache = vit.run_with_cache(images)
        mids = cache.layer_stack("hook_resid_mid")
        assert (max(t_sim(x).max().item() for x in mids) < 1e-10) == zero
        table = measure(cache.layer_stack("hook_resid_post"), attentions=cache.layer_stack("attn.hook_pattern"))
        assert table["layer"].tolist() == [0, 1, 2]
