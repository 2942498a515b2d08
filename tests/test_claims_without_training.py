"""The claims that need no training (the probes): 1a and 1b by their deterministic rule, 5a on
held-out sequences, the untrained probe itself, and the probes' archive read back."""

import json

import pytest
from claims_cells import probes

from oversmooth.analyze.quality import Quality, QualityRow
from oversmooth.claims.probes import Existence, random_init
from oversmooth.claims.registry import decide_claims
from oversmooth.errors import UsageError


def test_static_claims_from_known_curves():
    broken = Quality((QualityRow("neutreno", "lam=0.6", "output_cosine", 0.2, 1.0, None, False),))
    claims = {c.id: c for c in decide_claims([], probes(broken), ids=("1a", "1b"))}
    assert claims["1a"].verdict == "held" and "0.600 -> 0.450" in claims["1a"].ours and claims["1a"].family is None
    # 1b at the frontier (lambda 0.1, within budget): higher at two layers, so the change does not happen
    assert claims["1b"].verdict == "contradicted" and "lower at 0 of 2 layers" in claims["1b"].reason
    assert "at lam 0.6: similarity lower, model broken (output cosine 0.2)" in claims["1b"].ours


def test_claim_5a_is_decided_on_held_out_sequences():
    falls = Existence(5, 32, 0.03, [(0.34 + 0.001 * (i % 5), 0.29 + 0.002 * (i % 3)) for i in range(64)], "test model")
    claim = {c.id: c for c in decide_claims([], probes(existence=falls))}["5a"]
    assert claim.verdict == "held" and claim.n == 64 and claim.family == "secondary"
    assert "layer 5 -> 6" in claim.ours


def test_untrained_neutreno_probe_matches_the_baseline_where_it_must():
    """Same weights: at lambda 0 every layer equals softmax; at 0.6 the embeddings and block 1 still do."""
    zero = random_init(seeds=(0,), lam=0.0, images=4)
    assert zero.neutreno[0] == pytest.approx(zero.baseline[0], abs=1e-6)
    pair = random_init(seeds=(0,), lam=0.6, images=4)
    assert pair.neutreno[0][:2] == pytest.approx(pair.baseline[0][:2], abs=1e-6)
    assert len(pair.baseline[0]) == 13 and pair.neutreno[0][-1] != pytest.approx(pair.baseline[0][-1], abs=1e-3)


def test_archived_probes_read_back_as_they_were(tmp_path):
    """probes.json round-trips: the Probes read back equal the ones written, tuples and all."""
    from oversmooth.claims.evidence import read_folders
    from oversmooth.claims.files import PROBES_FILE

    broken = Quality((QualityRow("neutreno", "lam=0.6", "perplexity", 90.0, 30.0, 3.0, False),))
    falls = Existence(5, 32, 0.03, [(0.34, 0.29), (0.33, 0.30)], "a model")
    written = probes(broken, existence=falls)
    (tmp_path / "probes").mkdir()
    (tmp_path / "probes" / PROBES_FILE).write_text(json.dumps(written.to_json()))
    assert read_folders([tmp_path / "probes"]).probes == written
    (tmp_path / "probes" / PROBES_FILE).write_text('{"random_init": {}}')
    with pytest.raises(UsageError, match="probes.json is damaged"):
        read_folders([tmp_path / "probes"])
