"""Spectral diagnosis of tiny models: weights read from the modules match an independent numpy build."""

import json
from collections import Counter

import numpy as np
import pytest
import torch
from hf_tiny import tiny_inputs, tiny_model

from oversmooth.analyze.diagnose import LayerSpectrum, add_dynamics, spectra
from oversmooth.hf import layout
from oversmooth.hf.capture import capture
from oversmooth.metrics.attention import counted_eigenvalues


def numpy_parts(model, kind, layer):
    """(gamma, W_V, W_O) from raw parameters, float64, heads expanded by an explicit loop (row-vector maths)."""
    block = layout(model).blocks[layer]
    if kind == "gpt2":
        d = model.config.n_embd
        w_v = block.attn.c_attn.weight.detach().numpy()[:, 2 * d :]
        w_o = block.attn.c_proj.weight.detach().numpy()
        gamma = block.ln_1.weight.detach().numpy()
    elif kind == "llama":
        cfg = model.config
        dh = cfg.hidden_size // cfg.num_attention_heads
        kv = block.self_attn.v_proj.weight.detach().numpy().T  # [d, kv_heads * dh]
        groups = cfg.num_attention_heads // cfg.num_key_value_heads
        w_v = np.concatenate(
            [kv[:, (h // groups) * dh : (h // groups + 1) * dh] for h in range(cfg.num_attention_heads)], axis=1
        )
        w_o = block.self_attn.o_proj.weight.detach().numpy().T
        gamma = block.input_layernorm.weight.detach().numpy()
    else:  # bert: post-LN, nothing folded
        w_v = block.attention.self.value.weight.detach().numpy().T
        w_o = block.attention.output.dense.weight.detach().numpy().T
        gamma = np.ones(w_v.shape[0], dtype=np.float32)
    return gamma.astype(np.float64), w_v.astype(np.float64), w_o.astype(np.float64)


def numpy_h_eff(model, kind, layer, block=slice(None)):
    """diag(gamma) W_V W_O, or with ``block`` one head's columns of W_V and rows of W_O."""
    gamma, w_v, w_o = numpy_parts(model, kind, layer)
    return np.diag(gamma) @ w_v[:, block] @ w_o[block, :]


def sorted_complex(values):
    values = np.asarray(values)
    return values[np.lexsort((np.round(values.imag, 6), np.round(values.real, 6)))]


@pytest.mark.parametrize("kind", ["gpt2", "llama", "bert"])
def test_layer_eigenvalues_match_full_matrix(kind):
    model = tiny_model(kind)
    diagnosis = spectra(layout(model))
    for layer, spectrum in enumerate(diagnosis):
        full = np.linalg.eigvals(numpy_h_eff(model, kind, layer))
        full = full[np.abs(full) > 1e-9 * np.abs(full).max()]
        ours = spectrum.eigenvalues.numpy()
        ours = ours[np.abs(ours) > 1e-9 * np.abs(ours).max()]
        np.testing.assert_allclose(sorted_complex(ours), sorted_complex(full), atol=1e-4)
        assert spectrum.layer == layer + 1
        assert spectrum.norm["folded"] == (kind != "bert")
        assert spectrum.head_eigenvalues.shape == (4, 8)
        assert spectrum.summary["sign_verdict"] in ("smoothing", "sharpening", "mixed")
        assert spectrum.dynamics is None and spectrum.to_dict()["dynamics"] is None  # no attention given


def test_negative_ln_weights_are_counted():
    model = tiny_model("gpt2")
    with torch.no_grad():
        model.h[0].ln_1.weight.copy_(torch.linspace(-1, 1, 32))
    diagnosis = spectra(layout(model))
    assert diagnosis[0].norm["negative_share"] == pytest.approx(16 / 32)


def naive_verdict(c, o, tolerance=1e-3):
    return "smoothing" if c > o * (1 + tolerance) else "sharpening" if o > c * (1 + tolerance) else "mixed"


@pytest.mark.parametrize("kind", ["gpt2", "llama", "bert"])
def test_dynamics_match_a_naive_loop_over_sequences_and_heads(kind):
    """Each head's c and o per sequence from numpy on the full d x d H_h and the head's own
    attention over the valid tokens; the layer compares the largest c and o over heads."""
    model = tiny_model(kind)
    _, cache = capture(model, tiny_inputs(kind), hooks=("resid_pre",), pattern=True)
    patterns, mask = cache.layer_stack("pattern"), cache.mask  # sequence 1 is right-padded by 2
    diagnosis = spectra(layout(model))
    add_dynamics(diagnosis, [counted_eigenvalues(pattern, mask) for pattern in patterns])
    heads, d_head = 4, 8
    for layer, (spectrum, pattern) in enumerate(zip(diagnosis, patterns)):
        dynamics = spectrum.dynamics
        layer_c, layer_o = 0.0, [0.0, 0.0]
        for h in range(heads):
            eig = np.linalg.eigvals(numpy_h_eff(model, kind, layer, slice(h * d_head, (h + 1) * d_head)))
            lambda_h = eig[np.argsort(np.abs(eig))[-d_head:]]  # rank d_head: the rest are zero
            c = np.abs(1 + lambda_h).max()
            assert dynamics["heads"][h]["c"] == pytest.approx(c, rel=1e-9)
            layer_c = max(layer_c, c)
            for b in range(2):
                n = int(mask[b].sum())
                a = pattern[b, h, :n, :n].double().numpy()  # right padding: the valid tokens come first
                lambda_a = np.linalg.eigvals(a / a.sum(axis=1, keepdims=True))
                lambda_a = np.delete(lambda_a, np.abs(lambda_a - 1).argmin())
                o = np.abs(1 + lambda_a[:, None] * lambda_h[None, :]).max()
                assert dynamics["heads"][h]["o"][b] == pytest.approx(o, rel=1e-9)
                assert dynamics["heads"][h]["verdicts"][b] == naive_verdict(c, o)
                layer_o[b] = max(layer_o[b], o)
        assert dynamics["c"] == pytest.approx(layer_c, rel=1e-9)
        assert dynamics["o"] == pytest.approx(layer_o, rel=1e-9)
        per_sequence = [naive_verdict(layer_c, o) for o in layer_o]
        assert dynamics["verdict_counts"] == dict(Counter(per_sequence))
        assert dynamics["verdict"] == (per_sequence[0] if per_sequence[0] == per_sequence[1] else "mixed")
        assert dynamics["head_verdict_counts"] == dict(
            Counter(v for head in dynamics["heads"] for v in head["verdicts"])
        )
        assert (dynamics["sequences"], dynamics["tolerance"]) == (2, 1e-3)
        assert json.loads(json.dumps(spectrum.to_dict()))["dynamics"] == dynamics


def test_sequences_vote_and_a_tie_is_mixed():
    """One head with H eigenvalues 0.1 +- 2i (c = sqrt(5.21) ~ 2.28). Uniform attention over 4
    tokens has eigenvalues 1, 0, 0, 0: o = 1 -> smoothing. The 4-cycle (eigenvalues 1, +-i, -1)
    gives o = |1 - i (0.1 + 2i)| = sqrt(9.01) ~ 3.00 -> sharpening. A third sequence of 3 valid
    tokens plus one pad attends uniformly over the valid ones once restricted and renormalised
    (o = 1) -> smoothing."""
    uniform = torch.full((4, 4), 0.25, dtype=torch.float64)
    cycle = torch.roll(torch.eye(4, dtype=torch.float64), 1, dims=1)
    padded = torch.full((4, 4), 0.2, dtype=torch.float64)
    padded[:, 3] = 0.4  # the pad column: restricted away, rows renormalised to 1/3 each
    patterns = torch.stack([uniform, cycle, padded])[:, None]  # [B=3, H=1, 4, 4]
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.bool)

    def verdict(batch):
        spectrum = LayerSpectrum(1, torch.zeros(2), torch.tensor([[0.1 + 2j, 0.1 - 2j]]), {}, [], {})
        add_dynamics([spectrum], [counted_eigenvalues(patterns[batch], mask[batch])])
        return spectrum.dynamics

    two = verdict([0, 1])
    assert two["verdict"] == "mixed" and two["verdict_counts"] == {"smoothing": 1, "sharpening": 1}
    assert two["o"] == pytest.approx([1.0, 9.01**0.5]) and two["c"] == pytest.approx(5.21**0.5)
    three = verdict([0, 1, 2])
    assert three["verdict"] == "smoothing" and three["verdict_counts"] == {"smoothing": 2, "sharpening": 1}
    assert three["o"][2] == pytest.approx(1.0)


def test_norm_gain_is_read_from_what_the_norm_does():
    """LayerNorm (with a bias): its weight; Gemma's RMSNorm: 1 + weight; a norm scaling by
    2 * weight: the measured gain; odd sizes included."""
    from transformers.models.gemma.modeling_gemma import GemmaRMSNorm

    from oversmooth.analyze.diagnose import norm_gain

    torch.manual_seed(0)
    for size in (6, 7):
        layer_norm = torch.nn.LayerNorm(size)
        gemma = GemmaRMSNorm(size)
        with torch.no_grad():
            for norm in (layer_norm, gemma):
                norm.weight.copy_(torch.randn(size))
            layer_norm.bias.copy_(torch.randn(size))
        assert torch.equal(norm_gain(layer_norm, size), layer_norm.weight.double())
        assert torch.equal(norm_gain(gemma, size), 1 + gemma.weight.double())

        class Doubled(torch.nn.LayerNorm):
            def forward(self, x):
                return 2 * super().forward(x)

        doubled = Doubled(size)
        with torch.no_grad():
            doubled.weight.copy_(torch.randn(size))
        torch.testing.assert_close(norm_gain(doubled, size), 2 * doubled.weight.double(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kind, exclude", [("bert", ()), ("gpt2", (0,))])
def test_analysis_lambda2_matches_numpy_whether_or_not_it_shares_the_verdicts_eigenvalues(kind, exclude):
    """|lambda_2| of each head over the counted tokens, from numpy on the captured patterns: with no
    position excluded analyze reuses the dynamics verdict's eigensolves, with one it solves its own."""
    from oversmooth.analyze.analysis import AnalysisSettings, run_analysis

    model, inputs = tiny_model(kind), tiny_inputs(kind)
    settings = AnalysisSettings(methods=(), exclude=exclude, attention_tokens=64)
    table = run_analysis(model, inputs, settings).attention
    _, cache = capture(model, {k: v[:2] for k, v in inputs.items()}, hooks=("resid_pre",), pattern=True)
    for layer, pattern in enumerate(cache.layer_stack("pattern")):
        per_sequence = []
        for b in range(2):
            keep = cache.mask[b].clone()
            keep[list(exclude)] = False
            blocks = pattern[b][:, keep][:, :, keep].double().numpy()
            per_sequence.append(
                np.mean([sorted(np.abs(np.linalg.eigvals(a / a.sum(1, keepdims=True))))[-2] for a in blocks])
            )
        assert table["attn_lambda2"].iloc[layer] == pytest.approx(np.mean(per_sequence), rel=1e-9)
