"""Where a trained claim was tested (``claims.regime``, docs/registrations/fourth-step.md): its
softmax baseline's last-layer cos_sim beside the same architecture's at random init, and whether it
oversmooths."""

import json
import statistics

import pytest
from claims_cells import NULL_ARM, SEEDS, claims_of, fmnist

from oversmooth.claims.report import render_claims
from oversmooth.study.results import read_study


def softmax_cos_sim(root, value_of_seed=None) -> dict[int, float]:
    """fmnist-p7's softmax cells' last-layer cos_sim in their last record, by seed, read from their
    metrics.jsonl; set first to ``value_of_seed(seed)`` where given."""
    found = {}
    for folder in (root / "fmnist-p7").glob("fmnist-pre-d8-softmax-s*"):
        seed = int(folder.name.rsplit("-s", 1)[1])
        records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        if value_of_seed is not None:
            records[-1]["layers"][-1]["cos_sim"] = value_of_seed(seed)
            (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        found[seed] = records[-1]["layers"][-1]["cos_sim"]
    return found


def test_each_trained_claims_row_gives_its_baselines_cos_sim_beside_the_random_init_null(tmp_path):
    """docs/registrations/fourth-step.md: the softmax arm's last-layer cos_sim, the mean over the
    claim's own seeds, beside the same architecture's at random init (the study's null.json); none
    for the static claims."""
    fmnist(tmp_path)
    softmax_cos_sim(tmp_path, lambda seed: 0.2 + 0.01 * seed)
    (tmp_path / "fmnist-p7" / "null.json").write_text(json.dumps({"study": "fmnist-p7", "arms": [NULL_ARM]}))
    trained = softmax_cos_sim(tmp_path)
    claims = claims_of(tmp_path)
    for claim_id, seeds in (
        ("2a", SEEDS),
        ("7", SEEDS),
        ("8", SEEDS),
        ("2c", range(8)),
        ("6", range(8)),
        ("5c", range(4, 14)),
    ):
        regime = claims[claim_id].regime
        mean = statistics.fmean(trained[seed] for seed in seeds)
        assert regime.cos_sim == pytest.approx(mean, abs=1e-12) and regime.seeds == len(seeds), claim_id
        assert (regime.arm, regime.null_mean, regime.null_sd, regime.null_inits) == (
            "fmnist-p7 softmax (pre-norm, depth 8)",
            0.14,
            0.017,
            3,
        )
        low, high = min(trained[seed] for seed in seeds), max(trained[seed] for seed in seeds)
        assert regime.text.startswith(
            f"{mean:.3f} ({len(seeds)} seeds, from {low:.3f} to {high:.3f}) vs 0.140 ± 0.017 at random init (3 inits)"
        )
        assert claims[claim_id].to_json()["regime"]["cos_sim"] == regime.cos_sim
    assert claims["4a"].regime.text == "no finished cell with a probe yet"  # no depth-w32 cells here
    assert all(claims[claim_id].regime is None for claim_id in ("1a", "1b", "3", "5a"))


@pytest.mark.parametrize("value, oversmooths", [(0.499, False), (0.5, True), (0.9, True)])
def test_the_row_says_it_was_tested_where_the_baseline_does_not_oversmooth_exactly_below_one_half(
    tmp_path, value, oversmooths
):
    """Below 0.5 (fourth-step.md's gate) the row, its details and the summary say so; a study
    without null.json says the null was not computed, and the report is still written."""
    fmnist(tmp_path)
    softmax_cos_sim(tmp_path, lambda seed: value)
    cells = [cell for study in sorted(p for p in tmp_path.iterdir() if p.is_dir()) for cell in read_study(study)]
    claims, report = render_claims(cells)
    said = "tested where the baseline does not oversmooth"
    tail = "the baseline oversmooths (>= 0.5)" if oversmooths else f"{said} (< 0.5)"
    for claim in claims:
        if claim.regime is not None and claim.regime.cos_sim is not None:
            assert claim.regime.oversmooths is oversmooths
            seeds = claim.regime.seeds
            assert claim.regime.text == f"{value:.3f} ({seeds} seeds) vs random init: null not computed: {tail}"
            family_row = f"| {claim.id} | {claim.statement} | {claim.paper} |"  # not the summary's
            row = next(line for line in report.markdown.splitlines() if line.startswith(family_row))
            assert row.endswith(f"| {claim.regime.text} |")
    summary = next(line for line in report.markdown.splitlines() if line.startswith("- *where the problem exists*"))
    assert (f"{said}: 2a, 2c, 5b, 5c, 6, 7, 8" in summary) is not oversmooths
    assert ("the baseline oversmooths: 2a, 2c, 5b, 5c, 6, 7, 8" in summary) is oversmooths
