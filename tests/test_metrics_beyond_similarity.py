"""CKA, block influence, angular distance, anisotropy and sink mass against naive references
written from their definitions (loops over pairs and quadruples), and the properties their papers
state: CKA is 1 on itself, invariant to orthogonal maps and isotropic scaling, near 0 for
independent features (unbiased) where the biased estimator is not; padding never counts."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from oversmooth.errors import UsageError
from oversmooth.metrics import CKA, angular_distance, anisotropy, block_influence, measure, sink_mass
from oversmooth.metrics.cka import hsic_biased, hsic_unbiased


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---- CKA ---------------------------------------------------------------------------------------


def naive_hsic_unbiased(k, l):
    """Song et al. (2012) as a U-statistic: the mean over ordered distinct (i, j, q, r) of
    k_ij l_ij + k_ij l_qr - 2 k_ij l_iq."""
    n = k.shape[0]
    total, count = 0.0, 0
    for i, j, q, r in itertools.permutations(range(n), 4):
        total += k[i, j] * l[i, j] + k[i, j] * l[q, r] - 2 * k[i, j] * l[i, q]
        count += 1
    return total / count


def naive_hsic_biased(k, l):
    """(1/(n-1)^2) sum_ij kc_ij lc_ij with double-centred matrices, entry by entry."""
    n = k.shape[0]

    def centred(m):
        rows, cols, every = m.mean(1), m.mean(0), m.mean()
        return torch.tensor([[m[i, j] - rows[i] - cols[j] + every for j in range(n)] for i in range(n)])

    return (centred(k) * centred(l)).sum() / (n - 1) ** 2


def test_hsic_estimators_equal_their_definitions():
    x = torch.randn(7, 5, generator=gen(0), dtype=torch.float64)
    y = torch.randn(7, 3, generator=gen(1), dtype=torch.float64) + x[:, :3]
    k, l = x @ x.T, y @ y.T  # noqa: E741
    assert hsic_unbiased(k, l).item() == pytest.approx(naive_hsic_unbiased(k, l).item(), rel=1e-10)
    assert hsic_biased(k, l).item() == pytest.approx(naive_hsic_biased(k, l).item(), rel=1e-10)


def one_layer_cka(a, b, unbiased=True):
    cka = CKA(unbiased=unbiased)
    cka.update([a], [b])
    return cka.result().item()


def test_cka_is_one_on_itself_and_invariant_to_rotation_and_scale():
    x = torch.randn(12, 4, 10, generator=gen(0), dtype=torch.float64)
    y = torch.randn(12, 4, 6, generator=gen(1), dtype=torch.float64) + 2 * x[..., :6]
    q10, _ = torch.linalg.qr(torch.randn(10, 10, generator=gen(2), dtype=torch.float64))
    q6, _ = torch.linalg.qr(torch.randn(6, 6, generator=gen(3), dtype=torch.float64))
    assert one_layer_cka(x, x) == pytest.approx(1.0, abs=1e-12)
    assert one_layer_cka(x, 3.5 * x @ q10) == pytest.approx(1.0, abs=1e-12)
    base = one_layer_cka(x, y)
    assert 0.05 < base < 0.99
    assert one_layer_cka(0.2 * x @ q10, 7.0 * y @ q6) == pytest.approx(base, abs=1e-12)


def test_unbiased_cka_is_near_zero_for_independent_features_where_the_biased_one_is_not():
    unbiased, biased = [], []
    for seed in range(5):
        a = torch.randn(32, 1, 512, generator=gen(2 * seed))
        b = torch.randn(32, 1, 512, generator=gen(2 * seed + 1))
        unbiased.append(one_layer_cka(a, b))
        biased.append(one_layer_cka(a, b, unbiased=False))
    assert max(abs(v) for v in unbiased) < 0.1
    assert min(biased) > 0.8


def test_minibatch_cka_averages_each_term_over_batches():
    """Nguyen, Raghu & Kornblith (2021): HSIC terms averaged over minibatches, then the ratio."""
    batches = [torch.randn(6, 3, 5, generator=gen(s), dtype=torch.float64) for s in range(2)]
    other = [
        b[..., :4] * 2 + torch.randn(6, 3, 4, generator=gen(9 + s), dtype=torch.float64) for s, b in enumerate(batches)
    ]
    cka = CKA()
    for a, b in zip(batches, other):
        cka.update([a], [b])
    grams = [(a.mean(1) @ a.mean(1).T, b.mean(1) @ b.mean(1).T) for a, b in zip(batches, other)]
    cross = sum(naive_hsic_unbiased(k, l) for k, l in grams)
    self_a = sum(naive_hsic_unbiased(k, k) for k, _ in grams)
    self_b = sum(naive_hsic_unbiased(l, l) for _, l in grams)
    assert cka.result().item() == pytest.approx((cross / math.sqrt(self_a * self_b)).item(), rel=1e-10)


@pytest.mark.parametrize("pooling", ["mean", "tokens"])
def test_padding_never_enters_cka(pooling):
    x = torch.randn(6, 5, 8, generator=gen(0), dtype=torch.float64)
    y = torch.randn(6, 5, 3, generator=gen(1), dtype=torch.float64) + x[..., :3]
    padded_x = torch.cat([x, 1e3 * torch.randn(6, 2, 8, generator=gen(2), dtype=torch.float64)], dim=1)
    padded_y = torch.cat([y, torch.randn(6, 2, 3, generator=gen(3), dtype=torch.float64)], dim=1)
    mask = torch.cat([torch.ones(6, 5), torch.zeros(6, 2)], dim=1).bool()
    plain, padded = CKA(pooling), CKA(pooling)
    plain.update([x], [y])
    padded.update([padded_x], [padded_y], mask=mask)
    assert padded.result().item() == pytest.approx(plain.result().item(), rel=1e-10)


def test_models_of_different_depths_give_a_rectangle():
    a = [torch.randn(8, 3, 6, generator=gen(s)) for s in range(3)]
    b = [torch.randn(8, 3, 4, generator=gen(10 + s)) for s in range(5)]
    cka = CKA()
    cka.update(a, b)
    assert tuple(cka.result().shape) == (3, 5)


def test_cka_refuses_too_few_examples_and_mismatched_batches():
    with pytest.raises(UsageError, match="at least 4 examples"):
        CKA().update([torch.randn(3, 2, 4)])
    with pytest.raises(UsageError, match="same inputs"):
        CKA().update([torch.randn(6, 2, 4)], [torch.randn(5, 2, 4)])


# ---- block influence and angular distance ------------------------------------------------------


def cosine(a, b):
    na, nb = math.sqrt(sum(v * v for v in a)), math.sqrt(sum(v * v for v in b))
    return 0.0 if na == 0 or nb == 0 else sum(p * q for p, q in zip(a, b)) / (na * nb)


def test_block_influence_is_shortgpts_formula():
    """BI = 1 - E_tokens cos(x_in, x_out) (Men et al. 2024), over real tokens only."""
    before = torch.randn(3, 6, 5, generator=gen(0), dtype=torch.float64)
    after = before + torch.randn(3, 6, 5, generator=gen(1), dtype=torch.float64)
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4]).bool()
    got = block_influence(before, after, mask)
    for b in range(3):
        tokens = [t for t in range(6) if mask[b, t]]
        want = 1 - sum(cosine(before[b, t].tolist(), after[b, t].tolist()) for t in tokens) / len(tokens)
        assert got[b].item() == pytest.approx(want, rel=1e-12)
        angle = sum(math.acos(max(-1.0, min(1.0, cosine(before[b, t].tolist(), after[b, t].tolist())))) for t in tokens)
        assert angular_distance(before, after, mask)[b].item() == pytest.approx(
            angle / len(tokens) / math.pi, rel=1e-12
        )


def test_block_influence_on_hand_built_states():
    x = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
    assert block_influence(x, 3 * x).item() == 0.0  # the same directions
    assert block_influence(x, -x).item() == 2.0  # flipped
    assert block_influence(x, x.flip(-1)).item() == 1.0  # each turned by 90 degrees


# ---- anisotropy ---------------------------------------------------------------------------------


def test_anisotropy_is_the_mean_cosine_across_sequences():
    """Ethayarajh (2019): cosine between tokens of different sequences, every such pair."""
    x = torch.randn(4, 5, 3, generator=gen(0), dtype=torch.float64) + torch.tensor([1.0, 0.5, 0.0], dtype=torch.float64)
    mask = torch.tensor([[1] * 5, [1] * 3 + [0] * 2, [1] * 5, [1] * 4 + [0]]).bool()
    x[1, 3:] = 1e6  # padding: never counted
    got = anisotropy(x, mask)
    tokens = [(b, t) for b in range(4) for t in range(5) if mask[b, t]]
    for b in range(4):
        pairs = [
            cosine(x[b, t].tolist(), x[c, s].tolist()) for (bb, t) in tokens if bb == b for (c, s) in tokens if c != b
        ]
        assert got[b].item() == pytest.approx(sum(pairs) / len(pairs), rel=1e-12)
    same = torch.randn(3, 4, 3, generator=gen(1), dtype=torch.float64)
    every_pair = [
        cosine(same[b, t].tolist(), same[c, s].tolist())
        for b, c in itertools.permutations(range(3), 2)
        for t in range(4)
        for s in range(4)
    ]
    assert anisotropy(same).mean().item() == pytest.approx(sum(every_pair) / len(every_pair), rel=1e-12)


def test_anisotropy_of_one_sequence_is_undefined():
    assert math.isnan(anisotropy(torch.randn(1, 5, 3)).item())


# ---- sink mass ------------------------------------------------------------------------------


def test_sink_mass_is_the_attention_on_the_first_token_over_real_queries():
    scores = torch.randn(2, 3, 5, 5, generator=gen(0))
    attn = scores.masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
    mask = torch.tensor([[1] * 5, [1] * 3 + [0] * 2]).bool()
    got = sink_mass(attn, mask, per_head=True)
    for b in range(2):
        queries = [q for q in range(5) if mask[b, q]]
        for h in range(3):
            assert got[b, h].item() == pytest.approx(sum(attn[b, h, q, 0].item() for q in queries) / len(queries))
    two = sink_mass(attn, sinks=(0, 1), per_head=True)
    assert two[0, 0].item() == pytest.approx(sum((attn[0, 0, q, 0] + attn[0, 0, q, 1]).item() for q in range(5)) / 5)


# ---- the suite ------------------------------------------------------------------------------


def test_the_suite_reports_the_new_measures_per_layer():
    states = [torch.randn(3, 6, 4, generator=gen(s)) for s in range(3)]
    attentions = [torch.rand(3, 2, 6, 6, generator=gen(5 + s)).softmax(-1) for s in range(3)]
    table = measure(states, attentions=attentions)
    assert math.isnan(table["block_influence"][0])
    assert table["block_influence"][2] == pytest.approx(block_influence(states[1], states[2]).mean().item())
    assert table["anisotropy"][1] == pytest.approx(anisotropy(states[1]).mean().item())
    assert table["sink_mass"][0] == pytest.approx(sink_mass(attentions[0]).mean().item())
