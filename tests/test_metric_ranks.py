"""The shared rank computation (one centred Gram for effective and stable rank) against numpy's
SVD (tests/reference_metrics.py) on masked, near-rank-deficient and tiny-scale inputs, and the
analysis option that takes the ranks on a sample of sequences."""

import numpy as np
import pytest
import reference_metrics as ref
import torch
from hf_tiny import tiny_inputs, tiny_model

from oversmooth.analyze.analysis import AnalysisSettings, run_analysis
from oversmooth.errors import UsageError
from oversmooth.hf.capture import capture
from oversmooth.metrics import measure
from oversmooth.metrics.lanczos import top_eigenvalue
from oversmooth.metrics.rank import effective_rank, rank_measures, stable_rank


def masked_batch(seed, batch, n, d, rank=None, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    if rank is None:
        x = torch.randn(batch, n, d, generator=g, dtype=torch.float64)
    else:  # rank-`rank` tokens plus a 1e-9 perturbation: near-rank-deficient
        x = torch.randn(batch, n, rank, generator=g, dtype=torch.float64) @ torch.randn(
            batch, rank, d, generator=g, dtype=torch.float64
        )
        x += 1e-9 * torch.randn(batch, n, d, generator=g, dtype=torch.float64)
    x += 3 * torch.randn(batch, 1, d, generator=g, dtype=torch.float64)  # a large shared mean
    mask = torch.rand(batch, n, generator=g) > 0.3
    mask[:, :2] = True
    return x * scale, mask


@pytest.mark.parametrize("n, d", [(12, 7), (7, 12), (9, 9)])  # features side, tokens side, square
@pytest.mark.parametrize("rank, scale", [(None, 1.0), (2, 1.0), (None, 1e-158), (3, 1e-158), (None, 1e150)])
def test_ranks_match_numpy_svd(n, d, rank, scale):
    x, mask = masked_batch(n * d, 4, n, d, rank, scale)
    effective, stable = effective_rank(x, mask, (0,)), stable_rank(x, mask, (0,))
    for b in range(x.shape[0]):
        keep = mask[b].clone()
        keep[0] = False
        tokens = (x[b][keep] / scale).numpy()  # the reference in unit scale: numpy's SVD underflows at 1e-158
        assert stable[b].item() == pytest.approx(ref.stable_rank(tokens), rel=1e-9)
        if rank is None:
            assert effective[b].item() == pytest.approx(ref.effective_rank(tokens), rel=1e-9)
        else:  # the 1e-9 perturbation is below the Gram's sqrt(eps) floor: counted as zero
            centred = tokens - tokens.mean(axis=0)
            s = np.linalg.svd(centred, compute_uv=False)
            p = s[s > 1e-7 * s[0]] / s[s > 1e-7 * s[0]].sum()
            assert effective[b].item() == pytest.approx(np.exp(-(p * np.log(p)).sum()), rel=1e-6)
            assert effective[b].item() <= rank + 1e-6


def test_both_ranks_take_one_eigensolve_and_the_bits_each_gives_alone(monkeypatch):
    """The suite computes the two rank measures in one pass (``Measure.together``): one symmetric
    eigensolve per chunk of sequences, whose top eigenvalue bounds the stable rank's Lanczos error
    (without it Lanczos seldom stops and a second eigensolve answers); each value is the one its
    measure gives alone, bit for bit, and numpy's SVD (``test_ranks_match_numpy_svd``) checks those."""
    x, mask = masked_batch(3, 5, 24, 16)
    alone = {"effective_rank": effective_rank(x, mask, (0,)), "stable_rank": stable_rank(x, mask, (0,))}
    solves = []
    eigvalsh = torch.linalg.eigvalsh
    monkeypatch.setattr(torch.linalg, "eigvalsh", lambda gram: solves.append(gram.shape) or eigvalsh(gram))
    table = measure([x], mask, exclude=(0,), metrics=("effective_rank", "stable_rank"))
    assert solves == [(5, 16, 16)]  # one chunk of 5 sequences, the features side (16 < 24 tokens)
    for name, values in alone.items():
        assert table[name][0] == values.mean().item(), name
        assert torch.equal(rank_measures(x, mask, (0,))[name], values), name


def test_rank_sample_is_the_first_sequences():
    torch.manual_seed(0)
    model, inputs = tiny_model("bert"), tiny_inputs("bert")
    batch = inputs["input_ids"].shape[0]
    assert batch > 1
    full = run_analysis(model, inputs, AnalysisSettings(methods=(), attention_sequences=0, rank_sequences=None)).tables[
        "baseline"
    ]
    sampled = run_analysis(model, inputs, AnalysisSettings(methods=(), attention_sequences=0, rank_sequences=1)).tables[
        "baseline"
    ]
    assert sampled.attrs["metrics"] == full.attrs["metrics"] and list(sampled.columns) == list(full.columns)
    assert "first 1 of" in sampled.attrs["notes"]["rank_sequences"]
    assert sampled["cos_sim"].tolist() == full["cos_sim"].tolist()  # the cheap measures still see every sequence
    subset = {k: v[:1] for k, v in inputs.items()}
    _, cache = capture(model, subset, hooks=("resid_pre", "resid_post"))
    want = measure(cache.stream(), cache.mask, metrics=("effective_rank", "stable_rank"))
    for got, row in zip(sampled.to_dict("records"), want.to_dict("records")):
        assert got["effective_rank"] == pytest.approx(row["effective_rank"], rel=1e-9)
        assert got["stable_rank"] == pytest.approx(row["stable_rank"], rel=1e-9)
        assert got["effective_rank_std"] == 0.0


def test_rank_sample_must_be_positive():
    with pytest.raises(UsageError, match="rank_sequences"):
        AnalysisSettings(rank_sequences=0)


def psd_cases():
    """Random PSD batches: generic, a near-degenerate top pair, rank-deficient, zero, 1 x 1."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(6, 40, 30, generator=g, dtype=torch.float64)
    generic = x @ x.transpose(1, 2)
    q, _ = torch.linalg.qr(torch.randn(4, 30, 30, generator=g, dtype=torch.float64))
    values = torch.rand(4, 30, generator=g, dtype=torch.float64)
    values[:, :2] = torch.tensor([7.0, 7.0 - 1e-9])  # top two 1e-9 apart
    close_pair = q @ torch.diag_embed(values) @ q.transpose(1, 2)
    low = x[:, :, :3] @ x[:, :, :3].transpose(1, 2)  # rank 3 in 40 dims
    return {
        "generic": generic,
        "close_pair": close_pair,
        "rank3": low,
        "zero": torch.zeros(2, 5, 5, dtype=torch.float64),
        "one": torch.full((1, 1, 1), 4.0, dtype=torch.float64),
    }


@pytest.mark.parametrize("steps", [32, 2])  # 2 steps never converge: the eigvalsh fallback answers
@pytest.mark.parametrize("case", list(psd_cases()))
def test_top_eigenvalue_matches_numpy(case, steps):
    gram = psd_cases()[case]
    want = np.linalg.eigvalsh(gram.numpy())[:, -1]
    got = top_eigenvalue(gram, steps=steps).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12 * max(1.0, np.abs(want).max()))


def test_top_eigenvalue_escapes_a_start_in_an_invariant_subspace():
    """A start vector that is an eigenvector of a smaller eigenvalue must not end the search there
    (hypothesis found this with the tokens [[1, -3], [-3, 1]], whose mean is such an eigenvector)."""
    gram = torch.tensor([[[10.0, -6.0], [-6.0, 10.0]]], dtype=torch.float64)  # eigenvalues 16, 4
    start = torch.tensor([[1.0, 1.0]], dtype=torch.float64)  # eigenvalue 4's vector
    for second in (None, torch.tensor([16.0], dtype=torch.float64)):
        assert top_eigenvalue(gram, start, second).item() == pytest.approx(16.0, rel=1e-12)
    big = torch.diag(torch.arange(1.0, 41.0, dtype=torch.float64))[None]
    trap = torch.zeros(1, 40, dtype=torch.float64)
    trap[0, 0] = 1.0  # eigenvector of 1
    assert top_eigenvalue(big, trap).item() == pytest.approx(40.0, rel=1e-12)
