"""Our ViT and causal LM: shapes, presets, every method builds and runs, bad input."""

import pytest
import torch

from oversmooth.errors import UsageError
from oversmooth.layers import METHOD_FORMULAS, MitigationConfig
from oversmooth.mitigations.registry import METHODS as REGISTRY
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig

ALL = [
    "softmax",
    *(m for m in METHOD_FORMULAS if not REGISTRY[m].untrainable),
    "neutreno+featscale",
    "symmetric+neutreno+deescalate+attnscale",
    "softpick+gated_attention+registers",
]


@pytest.mark.parametrize("method", ALL)
def test_every_method_runs_in_the_models_it_trains_in(method):
    norm = "post" if method == "deepnorm" else "pre"  # DeepNorm is post-LN only
    vit = ViT(ViTConfig.preset("vit-cpu", depth=2, norm=norm, mitigation=method))
    assert vit(torch.randn(3, 1, 28, 28)).shape == (3, 10)
    if "registers" in method:  # a ViT's (the causal LM refuses them: tests/test_mitigations_registry.py)
        return
    lm = CausalLM(CausalLMConfig.preset("lm-cpu", depth=2, norm=norm, mitigation=method))
    assert lm(torch.randint(0, 256, (2, 9))).shape == (2, 9, 256)


def test_deit_tiny_preset_has_the_paper_shape():
    cfg = ViTConfig.preset("deit-tiny")
    model = ViT(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    # DeiT-tiny has 5.7M parameters (Touvron et al. 2021).
    assert (cfg.depth, cfg.width, cfg.heads, cfg.mlp_hidden, cfg.tokens) == (12, 192, 3, 768, 197)
    assert 5.6e6 < n_params < 5.8e6


def test_lm_embeddings_are_tied():
    lm = CausalLM(CausalLMConfig.preset("lm-cpu", depth=1))
    tokens = torch.arange(5)[None]
    torch.nn.functional.cross_entropy(lm(tokens)[0], torch.arange(1, 6)).backward()
    grad = lm.token_embed.weight.grad
    assert grad[100:].abs().sum() > 0  # rows never fed in still learn: they are the output layer
    logits, cache = lm.run_with_cache(tokens, names=["blocks.0.hook_resid_post"])
    final = lm.final_norm(cache["blocks.0.hook_resid_post"])
    assert torch.allclose(logits, final @ lm.token_embed.weight.T, atol=1e-5)


def test_no_decay_parameters_are_exactly_the_vectors():
    mitigation = MitigationConfig.parse("featscale+attnscale+deescalate+spectral", tau_learnable=True)
    cfg = ViTConfig.preset("vit-cpu", depth=2, mitigation=mitigation)
    names = {n for n, p in ViT(cfg).named_parameters() if p.ndim < 2}
    for expected in (
        "cls_token",
        "blocks.1.attn.featscale.s_dc",
        "blocks.1.attn.attnscale.omega",
        "blocks.1.deescalate.tau",
        "blocks.1.attn.value_output.psi",
        "blocks.1.ln_attn.weight",
        "head.bias",
    ):
        assert expected in names
    assert not any(n.endswith(("query.weight", "fc_in.weight", "pos_embed")) for n in names)


@pytest.mark.parametrize(
    "bad",
    [
        dict(heads=5),  # does not divide width 64
        dict(norm="sandwich"),
        dict(ln_sign="maybe"),
        dict(mitigation="neutreno+magic"),
        dict(patch_size=5),  # does not divide 28
        dict(dropout=1.5),
        dict(depth=0),
        dict(colour="red"),
    ],
)
def test_bad_vit_config_is_a_usage_error(bad):
    with pytest.raises(UsageError):
        ViTConfig.preset("vit-cpu", **bad)


def test_bad_inputs_are_usage_errors():
    with pytest.raises(UsageError, match="deit-tiny"):
        ViTConfig.preset("deit-huge")
    vit = ViT(ViTConfig.preset("vit-cpu", depth=1))
    with pytest.raises(UsageError, match="image_size"):
        vit(torch.randn(1, 3, 32, 32))
    lm = CausalLM(CausalLMConfig.preset("lm-cpu", depth=1, context=8))
    with pytest.raises(UsageError, match="context"):
        lm(torch.zeros(1, 9, dtype=torch.long))
