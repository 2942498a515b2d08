"""Spectral diagnosis against explicit Kronecker products, numpy on full matrices, closed forms."""

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment

from oversmooth.errors import UsageError
from oversmooth.spectra import (
    dynamics_verdict,
    effective_matrix,
    mode_eigenvalues,
    predict_dynamics,
    summarize_spectrum,
    value_output_eigenvalues,
)


def multiset_distance(a, b):
    """Largest |a_i - b_pi(i)| under the best one-to-one matching (Hungarian)."""
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    assert a.shape == b.shape, (a.shape, b.shape)
    cost = np.abs(a[:, None] - b[None, :])
    rows, cols = linear_sum_assignment(cost)
    return cost[rows, cols].max()


def random_stochastic(n, generator):
    return torch.softmax(torch.randn(n, n, generator=generator, dtype=torch.float64), dim=-1)


@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("seed", range(5))
def test_kron_eigenvalues_are_one_plus_products(seed, residual):
    g = torch.Generator().manual_seed(seed)
    n, d = 5, 4
    a = random_stochastic(n, g)
    h = torch.randn(d, d, generator=g, dtype=torch.float64)
    # vec(A X H) with column-stacking vec is (H^T kron A) vec(X): check that first.
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    operator = int(residual) * torch.eye(n * d, dtype=torch.float64) + torch.kron(h.T.contiguous(), a)
    step = int(residual) * x + a @ x @ h
    assert torch.allclose(operator @ x.T.reshape(-1), step.T.reshape(-1), atol=1e-12)
    want = np.linalg.eigvals(operator.numpy())
    got = mode_eigenvalues(torch.linalg.eigvals(a), torch.linalg.eigvals(h), residual).numpy()
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
    blocks = (
        [slice(0, d_v)] if heads is None else [slice(h * d_v // heads, (h + 1) * d_v // heads) for h in range(heads)]
    )
    assert got.shape == ((d_v,) if heads is None else (heads, d_v // heads))
    for row, block in zip(got.reshape(len(blocks), -1), blocks):
        full = np.diag(scale) @ w_v.numpy()[:, block] @ w_o.numpy()[block, :]  # [d, d]
        eig = np.linalg.eigvals(full)
        nonzero = eig[np.argsort(np.abs(eig))[-row.numel() :]]  # rank <= block width
        assert np.abs(eig[np.argsort(np.abs(eig))[: -row.numel()]]).max(initial=0) < 1e-10
        assert multiset_distance(row.numpy(), nonzero) < 1e-9


def test_effective_matrix_is_diag_gamma_times_product():
    g = torch.Generator().manual_seed(2)
    w_v, w_o = torch.randn(5, 3, generator=g), torch.randn(3, 5, generator=g)
    gamma = torch.randn(5, generator=g)
    want = np.diag(gamma.numpy()) @ w_v.numpy() @ w_o.numpy()
    assert np.allclose(effective_matrix(w_v, w_o, gamma).numpy(), want, atol=1e-6)


def test_negative_layernorm_weights_flip_the_spectrum_and_the_sign_verdict():
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
    assert summarize_spectrum(plus, torch.ones(d)).sign_verdict == "smoothing"
    assert flipped.sign_verdict == "sharpening"
    assert flipped.negative_gamma_share == 1.0 and flipped.positive_real_share == 0.0
    assert abs(flipped.dominant - (-1.0)) < 1e-12


@pytest.mark.parametrize(
    "eigenvalues, verdict",
    [
        ([0.9, 0.3, 0.1 + 0.2j, 0.1 - 0.2j], "smoothing"),  # all Re > 0
        ([-0.9, -0.3, -0.5 + 0.4j, -0.5 - 0.4j], "sharpening"),  # all Re < 0
        ([-1.0, -0.5, -0.01], "sharpening"),  # in [-1, 0)
        ([2.0, 0.5, -0.4], "smoothing"),  # mixed, positive dominates 5x
        ([-2.0, 0.5, -0.4], "sharpening"),  # mixed, negative dominates 4x
        ([1.0, -0.9, 0.2], "mixed"),  # mixed, no clear dominance
        ([1.0, 0.5, 1e-12 * -1], "smoothing"),  # numerically-zero ignored
    ],
)
def test_sign_verdict_rules(eigenvalues, verdict):
    summary = summarize_spectrum(torch.tensor(eigenvalues, dtype=torch.complex128))
    assert summary.sign_verdict == verdict
    assert summary.negative_gamma_share is None


def test_sign_verdict_from_constructed_value_output_matrices():
    g = torch.Generator().manual_seed(4)
    d = 8
    basis = torch.randn(d, d, generator=g, dtype=torch.float64)  # generic, non-orthogonal
    for lam, verdict in [
        (torch.rand(d, generator=g, dtype=torch.float64) * 0.9 + 0.1, "smoothing"),
        (-torch.rand(d, generator=g, dtype=torch.float64) * 0.9 - 0.1, "sharpening"),
    ]:
        h = basis @ torch.diag(lam) @ torch.linalg.inv(basis)
        eig = value_output_eigenvalues(h, torch.eye(d, dtype=torch.float64))
        assert multiset_distance(eig.numpy(), lam.numpy()) < 1e-9
        assert summarize_spectrum(eig).sign_verdict == verdict


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
    both_complex = predict_dynamics(torch.tensor([1.0, -0.5 + 0.5j, -0.5 - 0.5j]), torch.tensor([-1 + 1j, -1 - 1j]))
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


def test_eigenvalues_of_a_collapsed_two_row_map():
    """Near-uniform attention with two distinct rows (float32 softmax, as in a collapsed deep
    post-norm layer), on which torch's LAPACK fails to converge. A = e_a r_a^T + e_b r_b^T has rank
    2: its nonzero eigenvalues are those of the 2 x 2 matrix [[r_a.e_a, r_a.e_b], [r_b.e_a, r_b.e_b]]
    and the other n - 2 are 0."""
    from oversmooth.spectra.dynamics import attention_eigenvalues

    n = 50
    r_a = torch.softmax(torch.cat([torch.zeros(25), torch.full((25,), 5e-7)]), dim=-1).double()
    r_b = torch.softmax(torch.zeros(n), dim=-1).double()
    e_a = (torch.arange(n) % 3 == 0).double()
    attention = torch.outer(e_a, r_a) + torch.outer(1 - e_a, r_b)
    small = torch.tensor([[r_a @ e_a, r_a @ (1 - e_a)], [r_b @ e_a, r_b @ (1 - e_a)]])
    expected = torch.cat([torch.linalg.eigvals(small), torch.zeros(n - 2, dtype=torch.complex128)])
    assert multiset_distance(attention_eigenvalues(attention), expected) < 1e-7
    assert dynamics_verdict(attention[None], torch.tensor([[0.5]])).verdict == "smoothing"


def four_cycle():
    """The 4-cycle permutation (row-stochastic): token k attends to token k + 1 (mod 4); eigenvalues 1, i, -1, -i."""
    return torch.roll(torch.eye(4, dtype=torch.float64), 1, dims=1)


def test_magnitudes_decide_where_the_signs_say_sharpening():
    # H eigenvalues {0.1, -1.9}: the sign rule says sharpening (dominant -1.9, 19x the positive one).
    # A = [[0.95, 0.05], [0.05, 0.95]]: eigenvalues 1 and 0.9.
    # c = max(|1 + 0.1|, |1 - 1.9|) = 1.1; o = max(|1 + 0.9 * 0.1|, |1 - 0.9 * 1.9|) = max(1.09, 0.71) = 1.09
    # c > o (1 + 1e-3) -> smoothing.
    lambda_h = torch.tensor([[0.1, -1.9]], dtype=torch.float64)
    attention = torch.tensor([[[0.95, 0.05], [0.05, 0.95]]], dtype=torch.float64)
    assert summarize_spectrum(lambda_h[0]).sign_verdict == "sharpening"
    result = dynamics_verdict(attention, lambda_h)
    assert (result.verdict, result.head_verdicts) == ("smoothing", ("smoothing",))
    assert result.c == pytest.approx(1.1, abs=1e-12) and result.o == pytest.approx(1.09, abs=1e-12)


def test_magnitudes_decide_where_the_signs_say_smoothing():
    # H eigenvalues 0.1 +- 2i: every real part > 0, the sign rule says smoothing.
    # A = the 4-cycle, eigenvalues 1, i, -1, -i. c = |1.1 +- 2i| = sqrt(1.21 + 4) = sqrt(5.21) ~ 2.2825.
    # o: -i (0.1 + 2i) = 2 - 0.1i -> |3 - 0.1i| = sqrt(9.01) ~ 3.0017, the largest
    #    (lambda_A = -1: |0.9 -+ 2i| = sqrt(4.81); i (0.1 + 2i) = -2 + 0.1i: |-1 + 0.1i| = sqrt(1.01)).
    # o > c (1 + 1e-3) -> sharpening.
    lambda_h = torch.tensor([[0.1 + 2j, 0.1 - 2j]], dtype=torch.complex128)
    assert summarize_spectrum(lambda_h[0]).sign_verdict == "smoothing"
    result = dynamics_verdict(four_cycle()[None], lambda_h)
    assert result.verdict == "sharpening"
    assert result.c == pytest.approx(5.21**0.5, abs=1e-12) and result.o == pytest.approx(9.01**0.5, abs=1e-12)


def test_ties_within_the_tolerance_are_mixed():
    # A = [[0.5, 0.5], [0.5, 0.5]]: eigenvalues 1, 0. H eigenvalue -2 (sign rule: sharpening):
    # c = |1 - 2| = 1, o = |1 + 0 * (-2)| = 1 -> exact tie: mixed.
    # H eigenvalue -2.0005: c = 1.0005 = o (1 + 5e-4): mixed at tolerance 1e-3, smoothing at 1e-4.
    attention = torch.full((1, 2, 2), 0.5, dtype=torch.float64)
    assert dynamics_verdict(attention, torch.tensor([[-2.0]])).verdict == "mixed"
    near = torch.tensor([[-2.0005]], dtype=torch.float64)
    assert dynamics_verdict(attention, near).verdict == "mixed"
    assert dynamics_verdict(attention, near, tolerance=1e-4).verdict == "smoothing"


def test_the_constant_mode_is_left_out_exactly_once():
    # Two tokens that attend only to themselves: A = I, eigenvalue 1 twice, one of them a
    # non-constant mode. H eigenvalue 0.5: c = 1.5 and o = |1 + 1 * 0.5| = 1.5 -> mixed
    # (dropping both eigenvalues 1 would leave no other mode, o = 0, and say smoothing).
    identity = torch.eye(2, dtype=torch.float64)[None]
    result = dynamics_verdict(identity, torch.tensor([[0.5]]))
    assert (result.verdict, result.c, result.o) == ("mixed", 1.5, 1.5)
    single = dynamics_verdict(torch.ones(1, 1, 1), torch.tensor([[0.5]]))  # one token: no other mode
    assert (single.verdict, single.o) == ("smoothing", 0.0)


def test_layer_verdict_takes_the_fastest_mode_over_heads():
    # Head 0: A eigenvalues {1, 0.9, 0, 0}, H {0.1, -1.9}: c = 1.1, o = max(1.09, 0.71, 1) = 1.09 -> smoothing.
    # Head 1: the 4-cycle, H 0.1 +- 2i: c = sqrt(5.21), o = sqrt(9.01) -> sharpening (tests above).
    # Layer: max c = sqrt(5.21) < max o = sqrt(9.01) -> sharpening.
    lambda_a = torch.tensor([[1, 0.9, 0, 0], [1, 1j, -1, -1j]], dtype=torch.complex128)
    lambda_h = torch.tensor([[0.1, -1.9], [0.1 + 2j, 0.1 - 2j]], dtype=torch.complex128)
    result = dynamics_verdict(lambda_a, lambda_h)
    assert result.head_verdicts == ("smoothing", "sharpening") and result.verdict == "sharpening"
    assert result.head_c == pytest.approx((1.1, 5.21**0.5)) and result.head_o == pytest.approx((1.09, 9.01**0.5))
    assert (result.c, result.o) == (max(result.head_c), max(result.head_o))
    assert result.as_dict()["tolerance"] == 1e-3


def test_verdict_agrees_with_the_dominant_eigenvector_of_the_full_update():
    """Reference without the mu = 1 + lambda_A lambda_H shortcut: the dominant eigenvector of the
    (n d x n d) update I + kron(H^T, A) is 1 u^T (every token row equal) iff the verdict is smoothing."""
    g = torch.Generator().manual_seed(5)
    n, d = 4, 3
    seen = {"smoothing": 0, "sharpening": 0, "mixed": 0}
    for _ in range(80):
        a = torch.softmax(3 * torch.randn(n, n, generator=g, dtype=torch.float64), dim=-1)
        h = 1.5 * torch.randn(d, d, generator=g, dtype=torch.float64)
        verdict = dynamics_verdict(a[None], torch.linalg.eigvals(h)[None]).verdict
        seen[verdict] += 1
        if verdict == "mixed":
            continue
        mu, vectors = torch.linalg.eig(torch.eye(n * d, dtype=torch.float64) + torch.kron(h.T.contiguous(), a))
        x = vectors[:, mu.abs().argmax()].reshape(d, n).T  # column-stacking vec -> X [n, d]
        spread = float((x - x.mean(dim=0)).norm() / x.norm())  # 0 iff X = 1 u^T
        assert (spread < 1e-8) == (verdict == "smoothing"), (verdict, spread)
    assert seen["smoothing"] >= 10 and seen["sharpening"] >= 10, seen


def test_verdict_rejects_bad_input():
    with pytest.raises(UsageError, match="rows do not sum to 1"):
        dynamics_verdict(torch.ones(2, 3, 3), torch.ones(2, 1))
    with pytest.raises(UsageError, match="do not pair up"):
        dynamics_verdict(torch.tensor([[1.0, 0.5]]), torch.ones(2, 1))
    with pytest.raises(UsageError, match="no attention eigenvalue equals 1"):
        dynamics_verdict(torch.tensor([[0.5, 0.2]]), torch.ones(1, 1))
    with pytest.raises(UsageError, match="tolerance"):
        dynamics_verdict(torch.tensor([[1.0, 0.5]]), torch.ones(1, 1), tolerance=-1.0)
