"""Spectral diagnosis against explicit Kronecker products, numpy on full matrices, closed forms."""

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment

from oversmooth.errors import UsageError
from oversmooth.spectra import (effective_matrix, mode_eigenvalues, predict_dynamics,
                                summarize_spectrum, value_output_eigenvalues)


def multiset_distance(a, b):
    """Largest |a_i - b_pi(i)| under the best one-to-one matching (Hungarian)."""
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    assert a.shape == b.shape, (a.shape, b.shape)
    cost = np.abs(a[:, None] - b[None, :])
    rows, cols = linear_sum_assignment(cost)
    return cost[rows, cols].max()


def random_stochastic(n, generator):
    return torch.softmax(torch.randn(n, n, generator=generator, dtype=torch.float64), dim=-1)


@pytest.mark.parametrize("seed", range(5))
def test_kron_eigenvalues_are_one_plus_products(seed):
    g = torch.Generator().manual_seed(seed)
    n, d = 5, 4
    a = random_stochastic(n, g)
    h = torch.randn(d, d, generator=g, dtype=torch.float64)
    # vec(A X H) with column-stacking vec is (H^T kron A) vec(X): check that first.
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    operator = torch.eye(n * d, dtype=torch.float64) + torch.kron(h.T.contiguous(), a)
    assert torch.allclose(operator @ x.T.reshape(-1), (x + a @ x @ h).T.reshape(-1), atol=1e-12)
    want = np.linalg.eigvals(operator.numpy())
    got = mode_eigenvalues(torch.linalg.eigvals(a), torch.linalg.eigvals(h)).numpy()
    assert multiset_distance(got, want) < 1e-10


@pytest.mark.parametrize("heads", [None, 1, 3])
@pytest.mark.parametrize("with_gamma", [False, True])
def test_small_matrix_gives_nonzero_eigenvalues_of_full_product(heads, with_gamma):
    g = torch.Generator().manual_seed(1)
    d, d_v = 10, 6
    w_v = torch.randn(d, d_v, generator=g, dtype=torch.float64)
    w_o = torch.randn(d_v, d, generator=g, dtype=torch.float64)
    gamma = torch.randn(d, generator=g, dtype=torch.float64) if with_gamma else None
    got = value_output_eigenvalues(w_v, w_o, gamma, heads=heads)
    scale = np.ones(d) if gamma is None else gamma.numpy()
    blocks = [slice(0, d_v)] if heads is None else [
        slice(h * d_v // heads, (h + 1) * d_v // heads) for h in range(heads)]
    assert got.shape == ((d_v,) if heads is None else (heads, d_v // heads))
    for row, block in zip(got.reshape(len(blocks), -1), blocks):
        full = np.diag(scale) @ w_v.numpy()[:, block] @ w_o.numpy()[block, :]  # [d, d]
        eig = np.linalg.eigvals(full)
        nonzero = eig[np.argsort(np.abs(eig))[-row.numel():]]  # rank <= block width
        assert np.abs(eig[np.argsort(np.abs(eig))[:-row.numel()]]).max(initial=0) < 1e-10
        assert multiset_distance(row.numpy(), nonzero) < 1e-9


def test_effective_matrix_is_diag_gamma_times_product():
    g = torch.Generator().manual_seed(2)
    w_v, w_o = torch.randn(5, 3, generator=g), torch.randn(3, 5, generator=g)
    gamma = torch.randn(5, generator=g)
    want = np.diag(gamma.numpy()) @ w_v.numpy() @ w_o.numpy()
    assert np.allclose(effective_matrix(w_v, w_o, gamma).numpy(), want, atol=1e-6)


def test_negative_layernorm_weights_flip_the_spectrum_and_the_verdict():
    g = torch.Generator().manual_seed(3)
    d = 6
    basis, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    lam = torch.linspace(0.1, 1.0, d, dtype=torch.float64)
    w_v, w_o = basis, torch.diag(lam) @ basis.T  # W_V W_O = U diag(lam) U^T
    plus = value_output_eigenvalues(w_v, w_o, torch.ones(d, dtype=torch.float64))
    minus = value_output_eigenvalues(w_v, w_o, -torch.ones(d, dtype=torch.float64))
    assert multiset_distance(plus.numpy(), lam.numpy()) < 1e-12
    assert multiset_distance(minus.numpy(), -lam.numpy()) < 1e-12
    flipped = summarize_spectrum(minus, -torch.ones(d))
    assert summarize_spectrum(plus, torch.ones(d)).verdict == "smoothing"
    assert flipped.verdict == "sharpening"
    assert flipped.negative_gamma_share == 1.0 and flipped.positive_real_share == 0.0
    assert abs(flipped.dominant - (-1.0)) < 1e-12


@pytest.mark.parametrize("eigenvalues, verdict", [
    ([0.9, 0.3, 0.1 + 0.2j, 0.1 - 0.2j], "smoothing"),           # all Re > 0
    ([-0.9, -0.3, -0.5 + 0.4j, -0.5 - 0.4j], "sharpening"),      # all Re < 0
    ([-1.0, -0.5, -0.01], "sharpening"),                          # in [-1, 0)
    ([2.0, 0.5, -0.4], "smoothing"),                              # mixed, positive dominates 5x
    ([-2.0, 0.5, -0.4], "sharpening"),                            # mixed, negative dominates 4x
    ([1.0, -0.9, 0.2], "mixed"),                                  # mixed, no clear dominance
    ([1.0, 0.5, 1e-12 * -1], "smoothing"),                        # numerically-zero ignored
])
def test_verdict_rules(eigenvalues, verdict):
    summary = summarize_spectrum(torch.tensor(eigenvalues, dtype=torch.complex128))
    assert summary.verdict == verdict
    assert summary.negative_gamma_share is None


def test_verdict_from_constructed_value_output_matrices():
    g = torch.Generator().manual_seed(4)
    d = 8
    basis = torch.randn(d, d, generator=g, dtype=torch.float64)  # generic, non-orthogonal
    for lam, verdict in [(torch.rand(d, generator=g, dtype=torch.float64) * 0.9 + 0.1, "smoothing"),
                         (-torch.rand(d, generator=g, dtype=torch.float64) * 0.9 - 0.1, "sharpening")]:
        h = basis @ torch.diag(lam) @ torch.linalg.inv(basis)
        eig = value_output_eigenvalues(h, torch.eye(d, dtype=torch.float64))
        assert multiset_distance(eig.numpy(), lam.numpy()) < 1e-9
        assert summarize_spectrum(eig).verdict == verdict


def test_prediction_modes_on_closed_forms():
    a = torch.tensor([[0.6, 0.4], [0.4, 0.6]], dtype=torch.float64)  # eigenvalues 1, 0.2
    smooth = predict_dynamics(a, torch.tensor([0.5, 0.1], dtype=torch.float64))
    assert (smooth.mode, smooth.dominant, smooth.rank_collapse) == ("smoothing", 1.5 + 0j, True)
    assert smooth.angle_converges and not smooth.rotates
    assert abs(smooth.separation - 1.1 / 1.5) < 1e-12
    sharp = predict_dynamics(torch.tensor([1.0, -0.8]), torch.tensor([-0.9, -0.5]))
    assert sharp.mode == "sharpening" and abs(sharp.dominant - 1.72) < 1e-6
    assert abs(sharp.dominant_lambda_a - (-0.8)) < 1e-6
    rotating = predict_dynamics(torch.tensor([1.0, 0.1]), torch.tensor([0.5 + 0.5j, 0.5 - 0.5j]))
    assert rotating.mode == "smoothing" and rotating.rotates and not rotating.angle_converges
    assert rotating.limit_rank == 1 and rotating.dominant == 1.5 + 0.5j
    # a = -0.5 + 0.5i, h = -1 + i: a conj(h) = 1, so mu = 2 twice (pairs (a, conj h), (conj a, h)),
    # real and equal -> the angle converges, but the limit 2 Re(c v_a u^T) has rank 2.
    both_complex = predict_dynamics(torch.tensor([1.0, -0.5 + 0.5j, -0.5 - 0.5j]),
                                     torch.tensor([-1 + 1j, -1 - 1j]))
    assert both_complex.mode == "sharpening" and both_complex.dominant == 2 + 0j
    assert both_complex.angle_converges and both_complex.limit_rank == 2
    assert not both_complex.rank_collapse


def test_prediction_rejects_non_stochastic_attention():
    with pytest.raises(UsageError, match="rows do not sum to 1"):
        predict_dynamics(torch.ones(3, 3), torch.tensor([0.5]))
    with pytest.raises(UsageError, match="no attention eigenvalue equals 1"):
        predict_dynamics(torch.tensor([0.5, 0.2]), torch.tensor([0.5]))
    with pytest.raises(UsageError, match="do not chain"):
        value_output_eigenvalues(torch.ones(4, 2), torch.ones(3, 4))
    with pytest.raises(UsageError, match="does not divide"):
        value_output_eigenvalues(torch.ones(4, 6), torch.ones(6, 4), heads=4)
