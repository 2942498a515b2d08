"""The depth fixes (LayerScale, ReZero, MV-split, DeepNorm, sigmaReparam) against a block stack
written out from the papers' equations (float64, loops where the paper sums), their published
constants pinned, their identity settings bit for bit, and their refusals."""

from __future__ import annotations

import math

import pytest
import torch

from oversmooth.cli import main
from oversmooth.layers import MitigationConfig
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig

# ---- a naive Transformer block, from the equations -------------------------------------------


def layer_norm(x, module):
    if module is None:
        return x
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + module.eps) * module.weight + module.bias


def sigma_reparam_weight(linear):
    """sigmaReparam (Zhai et al. 2023): W_hat = gamma / sigma W, sigma = v^T W u after one step
    v = W u / |W u|, u' = W^T v / |W^T v| from the stored u."""
    p = linear.parametrizations.weight
    w, u, gamma = p.original, p[0].u, p[0].gamma
    v = w @ u
    v = v / torch.sqrt((v * v).sum())
    u_new = w.T @ v
    u_new = u_new / torch.sqrt((u_new * u_new).sum())
    sigma = sum(v[i] * w[i, j] * u_new[j] for i in range(w.shape[0]) for j in range(w.shape[1]))
    return w * gamma / sigma


def weight(linear):
    return sigma_reparam_weight(linear) if hasattr(linear, "parametrizations") else linear.weight


def attention(x, attn, heads, causal):
    b, n, d = x.shape
    dh = d // heads
    q = x @ weight(attn.query).T + attn.query.bias
    k = x @ weight(attn.key).T + attn.key.bias
    v = x @ weight(attn.value).T + attn.value.bias
    out = torch.zeros_like(x)
    for h in range(heads):
        cols = slice(h * dh, (h + 1) * dh)
        scores = q[:, :, cols] @ k[:, :, cols].transpose(1, 2) / math.sqrt(dh)
        if causal:
            scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        out[:, :, cols] = scores.softmax(-1) @ v[:, :, cols]
    return out @ weight(attn.output).T + attn.output.bias


def mlp(x, module):
    hidden = x @ weight(module.fc_in).T + module.fc_in.bias
    hidden = 0.5 * hidden * (1 + torch.erf(hidden / math.sqrt(2)))
    return hidden @ weight(module.fc_out).T + module.fc_out.bias


def token_means(x, causal):
    """Row t: the mean of tokens s <= t (causal) or of all tokens, by a loop."""
    n = x.shape[1]
    rows = [x[:, : (t + 1 if causal else n)].mean(1) for t in range(n)]
    return torch.stack(rows, 1)


def residual_rule(method, block, depth, causal):
    """The paper's update ``(x, f, branch) -> new stream`` (before a post-norm's LN)."""
    if method == "layerscale":  # CaiT: x + diag(gamma) f
        return lambda x, f, b: x + block.layerscale.gamma[b] * f
    if method == "rezero":  # ReZero: x + alpha f
        return lambda x, f, b: x + block.rezero.alpha * f
    if method == "mv_split":  # Lu 2026: x + beta (f - mean f) + alpha (mean f - mean x)
        m = block.mv_split

        def update(x, f, b):
            mean_f, mean_x = token_means(f, causal), token_means(x, causal)
            return x + m.beta[b] * (f - mean_f) + m.alpha[b] * (mean_f - mean_x)

        return update
    if method == "deepnorm":  # DeepNet: LN(alpha x + f), alpha = (2N)^(1/4)
        return lambda x, f, b: (2 * depth) ** 0.25 * x + f
    return lambda x, f, b: x + f


def naive_blocks(model, x, method, norm, causal):
    depth, heads = len(model.blocks), model.cfg.heads
    for block in model.blocks:
        add = residual_rule(method, block, depth, causal)
        ln_attn = None if method == "rezero" else block.ln_attn
        ln_mlp = None if method == "rezero" else block.ln_mlp
        if norm == "pre":
            x = add(x, attention(layer_norm(x, ln_attn), block.attn, heads, causal), 0)
            x = add(x, mlp(layer_norm(x, ln_mlp), block.mlp), 1)
        else:
            x = layer_norm(add(x, attention(x, block.attn, heads, causal), 0), ln_attn)
            x = layer_norm(add(x, mlp(x, block.mlp), 1), ln_mlp)
    return x


def build(family, norm, method, depth=3, **knobs):
    mitigation = MitigationConfig(methods=(method,) if method else (), **knobs)
    if family == "vit":
        return ViT(ViTConfig.preset("vit-cpu", depth=depth, norm=norm, mitigation=mitigation))
    return CausalLM(CausalLMConfig.preset("lm-cpu", depth=depth, norm=norm, mitigation=mitigation))


def randomise_learned_scales(model):
    """Every learned gain away from its init, so a swapped branch or sign shows."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if any(part in ("gamma", "alpha", "beta") for part in name.split(".")):
                p.copy_(torch.rand(p.shape, generator=g, dtype=p.dtype) + 0.5)


CASES = [
    (method, norm)
    for method in ("layerscale", "rezero", "mv_split", "deepnorm", "sigma_reparam")
    for norm in ("pre", "post")
    if not (method == "deepnorm" and norm == "pre")
]


@pytest.mark.parametrize("family", ["vit", "lm"])
@pytest.mark.parametrize("method, norm", CASES)
def test_each_fix_equals_the_papers_equations(family, method, norm):
    torch.manual_seed(0)
    model = build(family, norm, method).double().eval()
    randomise_learned_scales(model)
    x = torch.randn(2, 7, model.cfg.width, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        got = model.run_blocks(x)
        want = naive_blocks(model, x, method, norm, causal=family == "lm")
    assert ((got - want).norm() / want.norm()).item() <= 1e-10


def test_the_reference_sees_a_wrong_branch():
    """Control: LayerScale's two gammas swapped is caught by the same comparison."""
    torch.manual_seed(0)
    model = build("vit", "pre", "layerscale").double().eval()
    randomise_learned_scales(model)
    x = torch.randn(2, 7, 64, dtype=torch.float64)
    with torch.no_grad():
        want = naive_blocks(model, x, "layerscale", "pre", causal=False)
        for block in model.blocks:
            a, b = block.layerscale.gamma
            a.data, b.data = b.data.clone(), a.data.clone()
        got = model.run_blocks(x)
    assert ((got - want).norm() / want.norm()).item() > 1e-3


# ---- published constants -------------------------------------------------------------------


@pytest.mark.parametrize(
    "depth, alpha, beta",
    # DeepNet's table, encoder-only (N) and decoder-only (M) alike: (2N)^(1/4), (8N)^(-1/4)
    [(6, 1.8612, 0.37992), (12, 2.2134, 0.31947), (18, 2.4495, 0.28868), (48, 3.1302, 0.22590), (96, 3.7224, 0.18995)],
)
def test_deepnorm_alpha_beta_are_the_papers(depth, alpha, beta):
    from oversmooth.mitigations.deepnorm import deepnorm_constants

    got_alpha, got_beta = deepnorm_constants(depth)
    assert got_alpha == pytest.approx(alpha, abs=1e-4) and got_beta == pytest.approx(beta, abs=1e-5)


def test_deepnorm_scales_value_output_and_mlp_weights_by_beta_only():
    torch.manual_seed(3)
    plain = build("vit", "post", None, depth=6)
    torch.manual_seed(3)
    deep = build("vit", "post", "deepnorm", depth=6)
    beta = 48**-0.25
    for p_block, d_block in zip(plain.blocks, deep.blocks):
        for name in ("value", "output"):
            assert torch.equal(getattr(d_block.attn, name).weight, getattr(p_block.attn, name).weight * beta)
        for name in ("fc_in", "fc_out"):
            assert torch.equal(getattr(d_block.mlp, name).weight, getattr(p_block.mlp, name).weight * beta)
        for name in ("query", "key"):
            assert torch.equal(getattr(d_block.attn, name).weight, getattr(p_block.attn, name).weight)


@pytest.mark.parametrize("depth, eps", [(6, 0.1), (12, 0.1), (18, 0.1), (24, 1e-5), (36, 1e-6), (48, 1e-6)])
def test_layerscale_starts_at_caits_epsilon_for_its_depth(depth, eps):
    # CaiT (Touvron et al. 2021): "0.1 until depth 18, 1e-5 for depth 24 and 1e-6 for deeper networks"
    model = ViT(ViTConfig(depth=depth, width=8, heads=2, image_size=7, patch_size=7, mitigation="layerscale"))
    gammas = torch.cat([g for block in model.blocks for g in block.layerscale.gamma])
    assert torch.equal(gammas, torch.full_like(gammas, eps))
    mitigation = MitigationConfig("layerscale", layerscale_eps=0.25)
    given = ViT(ViTConfig(depth=2, width=8, heads=2, image_size=7, patch_size=7, mitigation=mitigation))
    assert given.blocks[0].layerscale.gamma[1][0].item() == 0.25


# ---- identity settings, bit for bit --------------------------------------------------------


@pytest.mark.parametrize("family", ["vit", "lm"])
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_layerscale_at_gamma_one_is_the_baseline(family, norm):
    torch.manual_seed(0)
    baseline = build(family, norm, None).eval()
    scaled = build(family, norm, "layerscale", layerscale_eps=1.0).eval()
    missing, unexpected = scaled.load_state_dict(baseline.state_dict(), strict=False)
    assert not unexpected and all(".layerscale.gamma." in name for name in missing)
    x = torch.randn(2, 1, 28, 28) if family == "vit" else torch.randint(0, 256, (2, 9))
    assert torch.equal(scaled(x), baseline(x))


@pytest.mark.parametrize("family", ["vit", "lm"])
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_sigma_reparam_starts_exactly_as_the_weights_it_was_built_with(family, norm):
    torch.manual_seed(0)
    baseline = build(family, norm, None)
    torch.manual_seed(0)
    model = build(family, norm, "sigma_reparam")
    x = torch.randn(2, 1, 28, 28) if family == "vit" else torch.randint(0, 256, (2, 9))
    for mode in ("eval", "train"):  # the first training step's sigma is the init's
        getattr(baseline, mode)()
        getattr(model, mode)()
        assert torch.equal(model(x), baseline(x)), mode


def test_rezero_at_zero_is_the_identity_and_has_no_block_norms():
    model = build("lm", "pre", "rezero")
    assert not any(isinstance(m, torch.nn.LayerNorm) for m in model.blocks.modules())
    x = torch.randn(2, 9, 64)
    assert torch.equal(model.run_blocks(x), x)


# ---- sigmaReparam's power iteration --------------------------------------------------------


def test_sigma_reparam_power_iteration_converges_and_is_no_gradient_path():
    from oversmooth.mitigations.sigma_reparam import SpectralScale

    g = torch.Generator().manual_seed(0)
    w = torch.randn(24, 16, generator=g, dtype=torch.float64)
    scale = SpectralScale(w)
    assert scale.gamma.item() == pytest.approx(torch.linalg.matrix_norm(w, ord=2).item(), rel=1e-12)
    w2 = w + 0.3 * torch.randn(24, 16, generator=g, dtype=torch.float64)  # W moved by training
    for _ in range(200):
        scale.train()(w2)
    assert scale.sigma(w2, keep=False).item() == pytest.approx(torch.linalg.matrix_norm(w2, ord=2).item(), rel=1e-9)
    u_before = scale.u.clone()
    scale.eval()(w)
    assert torch.equal(scale.u, u_before), "eval must not move u"
    leaf = w2.clone().requires_grad_()
    scale.train()(leaf).sum().backward()
    assert not scale.u.requires_grad and leaf.grad is not None and scale.gamma.grad is not None


# ---- refusals --------------------------------------------------------------------------------

TINY = "train --task synthetic --model vit --epochs 1 --depth 2 --width 16 --heads 2 --limit-train 32".split()


@pytest.mark.parametrize(
    "flags, needles",
    [
        (["--method", "deepnorm", "--norm", "pre"], ["does not fit deepnorm", "post-LN", "post"]),
        (["--method", "layerscale+rezero"], ["each replace the residual add"]),
        (["--method", "softmax", "--mv-alpha", "0.1"], ["mv_alpha is a knob of mv_split"]),
        (["--method", "layerscale", "--layerscale-eps", "-1"], ["LayerScale eps must be a finite number >= 0"]),
    ],
)
def test_train_refuses_a_fix_where_it_is_undefined(tmp_path, capsys, flags, needles):
    out = tmp_path / "run"
    capsys.readouterr()
    assert main([*TINY, *flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and all(n in err for n in needles), err
    assert not out.exists()


@pytest.mark.parametrize("method", ["rezero", "deepnorm", "mv_split"])
def test_analyze_refuses_a_fix_that_cannot_be_patched(tmp_path, capsys, method):
    out = tmp_path / "a"
    capsys.readouterr()
    assert main(["analyze", "--methods", method, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{method} cannot be patched" in err, err
    assert not out.exists()
