"""Spectral reparameterisation: it starts at the size of a baseline layer's W_V W_O, and after 50
steps at a large learning rate the eigenvalues of W_V W_O are still in the promised range and U is
still orthogonal (checked with numpy)."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig

RANGES = {"sharpen": (-1.0, 0.0), "smooth": (0.0, 1.0)}


# ||W_V W_O||_2 for two d x d matrices with N(0, s^2) entries tends to s^2 d sqrt(27/4): the top of
# the Fuss-Catalan law of a product of two Gaussian matrices (Penson & Zyczkowski 2011).
def textbook_scale(width, std=0.02):
    return std**2 * width * math.sqrt(27 / 4)


def vit_value_output_norms(**mitigation):
    torch.manual_seed(0)
    model = ViT(ViTConfig.preset("vit-cpu", depth=4, width=64, heads=4, mitigation=mitigation))
    with torch.no_grad():
        return [
            np.linalg.norm((w_v @ w_o).double().numpy(), 2)
            for w_v, w_o in (block.attn.value_output_weights() for block in model.blocks)
        ], model


def test_baseline_value_output_maps_start_at_the_textbook_size():
    norms, _ = vit_value_output_norms()
    assert all(0.8 < n / textbook_scale(64) < 1.15 for n in norms), norms  # d = 64: about 0.94 of the limit


@pytest.mark.parametrize("mode,sign", [("sharpen", -1), ("smooth", 1)])
def test_spectral_maps_start_at_the_baseline_size_with_their_sign(mode, sign):
    norms, model = vit_value_output_norms(methods=("spectral",), spectral=mode)
    baseline, _ = vit_value_output_norms()
    for norm, block in zip(norms, model.blocks):
        lam = block.attn.value_output.eigenvalues.detach().double().numpy()
        assert np.allclose(lam, sign * norm)  # H = +-s I, s = ||H||_2
        assert 0.8 < norm / textbook_scale(64) < 1.15
    assert 0.75 < np.mean(norms) / np.mean(baseline) < 1.33  # not the old +-0.5 (7.5x larger here)


def test_free_spectral_map_starts_within_the_baseline_size():
    norms, model = vit_value_output_norms(methods=("spectral",), spectral="free")
    for norm, block in zip(norms, model.blocks):
        lam = block.attn.value_output.eigenvalues.detach().double().numpy()
        assert np.abs(lam).max() == pytest.approx(norm, rel=1e-5) and (lam < 0).any() and (lam > 0).any()
        assert norm < 1.15 * textbook_scale(64)


def train_hard(mode):
    torch.manual_seed(0)
    cfg = CausalLMConfig.preset(
        "lm-cpu",
        depth=2,
        width=32,
        heads=4,
        vocab_size=50,
        context=16,
        mitigation=dict(methods=("spectral",), spectral=mode),
    )
    model = CausalLM(cfg)
    start = [b.attn.value_output.psi.detach().clone() for b in model.blocks]
    opt = torch.optim.Adam(model.parameters(), lr=0.5)
    tokens = torch.randint(0, 50, (8, 16))
    for _ in range(50):
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, start


@pytest.mark.parametrize("mode", ["sharpen", "smooth", "free"])
def test_range_and_orthogonality_survive_training(mode):
    model, start = train_hard(mode)
    for block in model.blocks:
        sv = block.attn.value_output
        w_v, w_o = (w.detach().double().numpy() for w in block.attn.value_output_weights())
        u = sv.basis.detach().double().numpy()
        assert np.abs(u.T @ u - np.eye(len(u))).max() < 1e-4  # float32 rounding of the Cayley solve
        eig = np.linalg.eigvals(w_v @ w_o)
        assert np.abs(eig.imag).max() < 1e-4
        lam = sv.eigenvalues.detach().double().numpy()
        assert np.allclose(np.sort(eig.real), np.sort(lam), rtol=1e-4, atol=1e-4)
        if mode in RANGES:
            low, high = RANGES[mode]
            assert (eig.real > low - 1e-6).all() and (eig.real < high + 1e-6).all()
            assert ((lam > low) & (lam < high)).all()
        # head h: non-zero eigenvalues of W_V^h W_O^h are those of W_O^h W_V^h = its lam block
        d_head = block.attn.d_head
        for h in range(block.attn.heads):
            cols = slice(h * d_head, (h + 1) * d_head)
            small = np.linalg.eigvals(w_o[cols] @ w_v[:, cols])
            assert np.allclose(np.sort(small.real), np.sort(lam[cols]), rtol=1e-4, atol=1e-4)
    assert any((b.attn.value_output.psi.detach() - psi).abs().max() > 1.0 for b, psi in zip(model.blocks, start)), (
        "the large learning rate should have moved psi far"
    )
