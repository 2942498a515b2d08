"""The shared rank computation (one centred Gram for effective and stable rank) against numpy's
SVD (tests/reference_metrics.py) on masked, near-rank-deficient and tiny-scale inputs, and the
analysis option that takes the ranks on a sample of sequences."""

import numpy as np
import pytest
import torch

import reference_metrics as ref
from hf_tiny import tiny_inputs, tiny_model
from oversmooth.errors import UsageError
from oversmooth.hf.analysis import AnalysisSettings, run_analysis
from oversmooth.hf.capture import capture
from oversmooth.metrics import measure
from oversmooth.metrics.rank import effective_rank, rank_measures, stable_rank


def masked_batch(seed, batch, n, d, rank=None, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    if rank is None:
        x = torch.randn(batch, n, d, generator=g, dtype=torch.float64)
    else:  # rank-`rank` tokens plus a 1e-9 perturbation: near-rank-deficient
        x = (torch.randn(batch, n, rank, generator=g, dtype=torch.float64)
             @ torch.randn(batch, rank, d, generator=g, dtype=torch.float64))
        x += 1e-9 * torch.randn(batch, n, d, generator=g, dtype=torch.float64)
    x += 3 * torch.randn(batch, 1, d, generator=g, dtype=torch.float64)  # a large shared mean
    mask = torch.rand(batch, n, generator=g) > 0.3
    mask[:, :2] = True
    return x * scale, mask


@pytest.mark.parametrize("n, d", [(12, 7), (7, 12), (9, 9)])  # features side, tokens side, square
@pytest.mark.parametrize("rank, scale", [(None, 1.0), (2, 1.0), (None, 1e-158), (3, 1e-158), (None, 1e150)])
def test_shared_ranks_match_numpy_svd(n, d, rank, scale):
    x, mask = masked_batch(n * d, 4, n, d, rank, scale)
    effective, stable = rank_measures(x, mask, exclude=(0,))
    assert torch.equal(effective, effective_rank(x, mask, (0,)))
    assert torch.equal(stable, stable_rank(x, mask, (0,)))
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


def test_rank_sample_is_the_first_sequences():
    torch.manual_seed(0)
    model, inputs = tiny_model("bert"), tiny_inputs("bert")
    batch = inputs["input_ids"].shape[0]
    assert batch > 1
    full = run_analysis(model, inputs, AnalysisSettings(methods=(), attention_sequences=0)).tables["baseline"]
    sampled = run_analysis(model, inputs, AnalysisSettings(methods=(), attention_sequences=0,
                                                           rank_sequences=1)).tables["baseline"]
    assert sampled.metrics == full.metrics and list(sampled.rows[0]) == list(full.rows[0])
    assert "first 1 of" in sampled.notes["rank_sequences"]
    for got, want in zip(sampled.rows, full.rows):
        assert got["cos_sim"] == want["cos_sim"]  # the cheap measures still see every sequence
    subset = {k: v[:1] for k, v in inputs.items()}
    _, cache = capture(model, subset, hooks=("resid_pre", "resid_post"))
    want = measure(cache.stream(), cache.mask, metrics=("effective_rank", "stable_rank"))
    for got, row in zip(sampled.rows, want.rows):
        assert got["effective_rank"] == pytest.approx(row["effective_rank"], rel=1e-9)
        assert got["stable_rank"] == pytest.approx(row["stable_rank"], rel=1e-9)
        assert got["effective_rank_std"] == 0.0


def test_rank_sample_must_be_positive():
    with pytest.raises(UsageError, match="rank_sequences"):
        AnalysisSettings(rank_sequences=0)
