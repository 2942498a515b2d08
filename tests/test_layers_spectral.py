"""Spectral reparameterisation: after 50 steps at a large learning rate the eigenvalues of
W_V W_O are still in the promised range and U is still orthogonal (checked with numpy)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from oversmooth.models import CausalLM, CausalLMConfig

RANGES = {"sharpen": (-1.0, 0.0), "smooth": (0.0, 1.0)}


def train_hard(mode):
    torch.manual_seed(0)
    cfg = CausalLMConfig.preset("lm-cpu", depth=2, width=32, heads=4, vocab_size=50, context=16,
                                mitigation=dict(methods=("spectral",), spectral=mode))
    model = CausalLM(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=0.5)
    tokens = torch.randint(0, 50, (8, 16))
    for _ in range(50):
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


@pytest.mark.parametrize("mode", ["sharpen", "smooth", "free"])
def test_range_and_orthogonality_survive_training(mode):
    model = train_hard(mode)
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
    assert any(np.abs(b.attn.value_output.psi.detach().numpy()).max() > 1.0 for b in model.blocks), \
        "the large learning rate should have moved psi far"
