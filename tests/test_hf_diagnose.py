"""Spectral diagnosis of tiny models: weights read from the modules match an independent numpy build."""

import numpy as np
import pytest
import torch

from hf_tiny import tiny_model
from oversmooth.hf.diagnose import predict, spectra
from oversmooth.hf.families import layout


def numpy_h_eff(model, kind, layer):
    """diag(gamma) W_V W_O from raw parameters, heads expanded by an explicit loop (row-vector maths)."""
    block = layout(model).blocks[layer]
    if kind == "gpt2":
        d = model.config.n_embd
        w_v = block.attn.c_attn.weight.detach().numpy()[:, 2 * d:]
        w_o = block.attn.c_proj.weight.detach().numpy()
        gamma = block.ln_1.weight.detach().numpy()
    elif kind == "llama":
        cfg = model.config
        dh = cfg.hidden_size // cfg.num_attention_heads
        kv = block.self_attn.v_proj.weight.detach().numpy().T  # [d, kv_heads * dh]
        groups = cfg.num_attention_heads // cfg.num_key_value_heads
        w_v = np.concatenate([kv[:, (h // groups) * dh:(h // groups + 1) * dh]
                              for h in range(cfg.num_attention_heads)], axis=1)
        w_o = block.self_attn.o_proj.weight.detach().numpy().T
        gamma = block.input_layernorm.weight.detach().numpy()
    else:  # bert: post-LN, nothing folded
        w_v = block.attention.self.value.weight.detach().numpy().T
        w_o = block.attention.output.dense.weight.detach().numpy().T
        gamma = np.ones(w_v.shape[0], dtype=np.float32)
    return np.diag(gamma).astype(np.float64) @ w_v.astype(np.float64) @ w_o.astype(np.float64)


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
        assert spectrum.summary["verdict"] in ("smoothing", "sharpening", "mixed")


def test_negative_ln_weights_are_counted_and_prediction_added():
    model = tiny_model("gpt2")
    with torch.no_grad():
        model.h[0].ln_1.weight.copy_(torch.linspace(-1, 1, 32))
    diagnosis = spectra(layout(model))
    assert diagnosis[0].norm["negative_share"] == pytest.approx(16 / 32)
    pattern = torch.softmax(torch.randn(1, 4, 5, 5), -1).tril()
    pattern = pattern / pattern.sum(-1, keepdim=True)
    predict(diagnosis, [pattern, pattern], torch.ones(1, 5, dtype=torch.bool))
    assert diagnosis[1].prediction["mode"] in ("smoothing", "sharpening", "mixed")
    assert diagnosis[1].prediction["sequences"] == 1
