"""Attention against a naive per-head reference built from docs/methods.md's formulas (softpick and
gated attention: their papers' and official code's), fused vs manual."""

import math

import pytest
import torch

from oversmooth.bench.cost import activation_bytes
from oversmooth.layers import METHOD_FORMULAS, Attention, MitigationConfig
from oversmooth.mitigations.deescalation import Deescalation
from oversmooth.mitigations.registry import METHODS as REGISTRY
from oversmooth.mitigations.softpick import softpick

WIDTH, HEADS, TOKENS = 12, 3, 6
D_HEAD = WIDTH // HEADS


def reference(attn: Attention, x, v_first, cfg: MitigationConfig, causal: bool, tau=None):
    """One sequence at a time, one head at a time, every matrix explicit (float64); ``tau``: then
    de-escalate the output."""
    w_q, b_q = attn.query.weight.T, attn.query.bias
    w_k, b_k = (w_q, b_q) if "symmetric" in cfg else (attn.key.weight.T, attn.key.bias)
    if "spectral" in cfg:
        u, lam = attn.value_output.basis, attn.value_output.eigenvalues
        w_v, b_v = u, attn.value_output.value_bias
        w_o, b_o = torch.diag(lam) @ u.T, attn.value_output.output_bias
    else:
        w_v, b_v = attn.value.weight.T, attn.value.bias
        w_o, b_o = attn.output.weight.T, attn.output.bias
    n = x.shape[1]
    allowed = torch.tril(torch.ones(n, n, dtype=torch.float64)) if causal else torch.ones(n, n, dtype=torch.float64)
    uniform = allowed / allowed.sum(1, keepdim=True)  # uniform attention over allowed keys
    out = []
    for b in range(x.shape[0]):
        heads = []
        for h in range(HEADS):
            cols = slice(h * D_HEAD, (h + 1) * D_HEAD)
            q = x[b] @ w_q[:, cols] + b_q[cols]
            k = x[b] @ w_k[:, cols] + b_k[cols]
            v = x[b] @ w_v[:, cols] + b_v[cols]
            if v_first is not None and "value_residual" in cfg:
                v = (1 - cfg.value_mix) * v + cfg.value_mix * v_first[b, h]
            scores = q @ k.T / math.sqrt(D_HEAD)
            scores = scores.masked_fill(allowed == 0, float("-inf"))
            a = plain_softpick(scores) if "softpick" in cfg else torch.softmax(scores, dim=-1)
            if "attnscale" in cfg:
                a = a + attn.attnscale.omega[h] * (a - uniform)
            o = a @ v
            if v_first is not None and "neutreno" in cfg:
                o = o + cfg.lam * (v_first[b, h] - v)
            if "gated_attention" in cfg:  # Qiu et al.'s G1: attn_output * sigmoid(gate_score), before o_proj
                o = o * torch.sigmoid(x[b] @ attn.gate.proj.weight.T[:, cols] + attn.gate.proj.bias[cols])
            heads.append(o)
        z = torch.cat(heads, dim=1) @ w_o + b_o
        if "featscale" in cfg:
            dc = uniform @ z  # Pi_1 Z (prefix means when causal)
            z = z + attn.featscale.s_dc * dc + attn.featscale.s_hc * (z - dc)
        if tau is not None:
            z = z - tau * (uniform @ z)
        out.append(z)
    return torch.stack(out)


def plain_softpick(scores, eps=1e-8):
    """Softpick as Zuhri et al. write it, unstabilised: ReLU(e^s - 1) / (sum over the finite s of
    |e^s - 1| + eps e^max s), the official code's eps added to the sum it scales by e^-max s (the
    row maximum held constant, as the official kernel's gradient holds it)."""
    lifted = torch.exp(scores) - 1
    total = torch.where(scores.isfinite(), lifted.abs(), 0.0).sum(dim=-1, keepdim=True)
    return torch.relu(lifted) / (total + eps * torch.exp(scores.amax(dim=-1, keepdim=True).detach()))


def test_softpick_is_the_formula_and_leaves_rows_that_see_nothing_positive_empty():
    g = torch.Generator().manual_seed(0)
    scores = 3 * torch.randn(5, 9, generator=g, dtype=torch.float64)
    scores[:, 6:] = -math.inf  # masked keys
    torch.testing.assert_close(softpick(scores), plain_softpick(scores), rtol=1e-12, atol=1e-15)
    assert torch.all(softpick(scores)[scores <= 0] == 0)
    assert torch.all(softpick(scores).sum(-1) <= 1 + 1e-12)
    assert torch.equal(softpick(-torch.rand(2, 4, dtype=torch.float64)), torch.zeros(2, 4, dtype=torch.float64))
    big = torch.tensor([[800.0, 799.0, -3.0]])  # e^800 overflows: the stable form does not
    assert torch.isfinite(softpick(big)).all() and softpick(big)[0, 0] > softpick(big)[0, 1] > 0


def randomise(module, seed):
    """Give every parameter (incl. omega, s_dc, s_hc initialised at 0) a non-zero random value."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "parametrizations" not in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))


SPECS = [
    *[(m,) for m in METHOD_FORMULAS if m != "deescalate" and not REGISTRY[m].untrainable],
    ("neutreno", "featscale"),
    ("symmetric", "value_residual", "neutreno", "attnscale", "spectral"),
    ("deescalate",),
    ("attnscale", "featscale", "deescalate"),
    ("neutreno", "attnscale", "deescalate"),
    ("softpick", "gated_attention", "neutreno", "attnscale", "featscale"),  # the gate stops AttnScale's fold
]


def deescalation(cfg: MitigationConfig, causal: bool) -> Deescalation | None:
    """The block's de-escalation at ``attn_out``, with a learnable tau (so it has a gradient)."""
    return Deescalation(tau=0.7, learnable=True, causal=causal).double() if "deescalate" in cfg else None


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("methods", SPECS, ids="+".join)
def test_attention_matches_naive_reference(methods, causal):
    cfg = MitigationConfig(methods=methods, lam=0.7, value_mix=0.3, spectral="sharpen")
    attn = Attention(WIDTH, HEADS, mitigation=cfg, causal=causal).double()
    randomise(attn, seed=len(methods))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, TOKENS, WIDTH, generator=g, dtype=torch.float64)
    v_first = torch.randn(2, HEADS, TOKENS, D_HEAD, generator=g, dtype=torch.float64)
    deesc = deescalation(cfg, causal)
    want = reference(attn, x, v_first, cfg, causal, None if deesc is None else deesc.tau)
    for materialize in (False, True):
        attn.materialize = materialize
        got, _ = attn(x, v_first, deesc)
        assert torch.allclose(got, want, atol=1e-10), (methods, materialize)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("methods", SPECS, ids="+".join)
def test_gradients_match_naive_reference(methods, causal):
    """The merged context is rebuilt in backward and FeatScale folded into W_O: every gradient
    (input, v_first, each parameter) must still equal autograd through the explicit reference."""
    cfg = MitigationConfig(methods=methods, lam=0.7, value_mix=0.3, spectral="sharpen")
    attn = Attention(WIDTH, HEADS, mitigation=cfg, causal=causal).double()
    randomise(attn, seed=len(methods) + 7)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, TOKENS, WIDTH, generator=g, dtype=torch.float64, requires_grad=True)
    v_first = torch.randn(2, HEADS, TOKENS, D_HEAD, generator=g, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(2, TOKENS, WIDTH, generator=g, dtype=torch.float64)
    deesc = deescalation(cfg, causal)
    leaves = [x, v_first, *attn.parameters(), *([] if deesc is None else [deesc.tau])]
    want = torch.autograd.grad(
        (reference(attn, x, v_first, cfg, causal, None if deesc is None else deesc.tau) * upstream).sum(),
        leaves,
        allow_unused=True,
    )
    got = torch.autograd.grad((attn(x, v_first, deesc)[0] * upstream).sum(), leaves, allow_unused=True)
    for w, h in zip(want, got):
        assert (w is None) == (h is None) or torch.count_nonzero(w if h is None else h) == 0
        if w is not None and h is not None:
            assert torch.allclose(h, w, atol=1e-9), methods


@pytest.mark.parametrize(
    "method", ["neutreno", "attnscale", "featscale", "neutreno+featscale", "attnscale+featscale+deescalate"]
)
def test_mitigations_keep_no_extra_activation(method):
    """Non-causal NeuTRENO, AttnScale, FeatScale and de-escalation keep nothing of full size beyond
    softmax."""
    x = torch.randn(16, 50, 64, requires_grad=True)
    v_first = torch.randn(16, 4, 50, 16, requires_grad=True)
    cfg = MitigationConfig.parse(method)
    base = activation_bytes(lambda: Attention(64, 4)(x, v_first))
    mitigated = activation_bytes(lambda: Attention(64, 4, mitigation=cfg)(x, v_first, deescalation(cfg, False)))
    # Less than half of one [batch, tokens, width] tensor: the folded [width, width] weights are
    # parameter-sized; keeping the merged input or the output again would be a whole such tensor.
    assert mitigated - base < x.numel() * 4 // 2, (base, mitigated)


@pytest.mark.parametrize("methods", [(), ("neutreno", "attnscale", "featscale", "spectral")])
def test_fused_and_manual_agree_in_float32(methods):
    attn = Attention(WIDTH, HEADS, mitigation=MitigationConfig(methods=methods), causal=True)
    randomise(attn, seed=3)
    x, v_first = torch.randn(4, TOKENS, WIDTH), torch.randn(4, HEADS, TOKENS, D_HEAD)
    fused, v = attn(x, v_first)
    attn.materialize = True
    manual, v_manual = attn(x, v_first)
    assert torch.allclose(fused, manual, atol=1e-5) and torch.equal(v, v_manual)


def test_first_layer_ignores_v_first_only_methods():
    """Without v_first (layer 1), NeuTRENO and value residual are the plain attention."""
    base = Attention(WIDTH, HEADS)
    both = Attention(WIDTH, HEADS, mitigation=MitigationConfig(methods=("neutreno", "value_residual")))
    both.load_state_dict(base.state_dict())
    x = torch.randn(2, TOKENS, WIDTH)
    assert torch.equal(base(x)[0], both(x)[0])
