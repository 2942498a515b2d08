"""The sink claims decided together (docs/registrations/sinks.md): S1 and the four trained claims in
one Holm family of 5 against scipy's paired t and Holm by hand, the registered readings (S3a an
existence claim, S4a/S4b beside the paper's effect carried), and the report's section."""

import json

import numpy as np
import pytest
from scipy import stats
from test_claims_sinks_pretrained import s1_measurement
from test_claims_sinks_trained import ARMS, cells

from oversmooth.claims import sinks_pretrained as sinks
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.claims.sinks_family import DECISION_STUDY, sinks_records, sinks_section
from oversmooth.claims.sinks_trained import CLAIMS, PILOT


def measured(results):
    """S1's hand-made measurement (12 passages, 4 layers) with S2's stream measures added."""
    unpatched, removed, _ = s1_measurement(results)
    path = sinks.result_path(results, "smollm2")
    record = json.loads(path.read_text())
    ones = np.ones_like(unpatched)
    arm = record["arms"][sinks.UNPATCHED]
    arm |= {"first_token_norm": (ones * [1, 2, 50, 60, 70]).tolist(), "repr_entropy": (ones * [3, 2, 1, 2, 2]).tolist()}
    arm["sink_rate"] = (ones[:, 1:] * [0, 0, 0.8, 0.9]).tolist()
    path.write_text(json.dumps(record))
    return unpatched, removed


def by_hand_holm(p_values):
    order = np.argsort(p_values)
    adjusted, running = np.empty(len(p_values)), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def test_one_family_of_five_holm_by_hand(tmp_path, monkeypatch):
    monkeypatch.setitem(CLAIMS_PRESETS, DECISION_STUDY, PILOT)  # the pilot's cells stand in for sinks-lm's
    unpatched, removed = measured(tmp_path)
    records = {r["claim"]: r for r in sinks_records(tmp_path, cells(tmp_path))}
    trained = {i: [ARMS[c.method](i)["trained"] for c in CLAIMS] for i in range(3)}
    p_values = [stats.ttest_rel(removed[:, 1:].mean(1), unpatched[:, 1:].mean(1)).pvalue]
    for k, claim in enumerate(CLAIMS[:4]):
        method = [claim.measure(trained[i][k]) for i in range(3)]
        baseline = [claim.measure(ARMS["softmax"](i)["init" if claim.id == "S3a" else "trained"]) for i in range(3)]
        p_values.append(stats.ttest_rel(method, baseline).pvalue)
    holm = by_hand_holm(np.array(p_values))
    for claim, expected in zip(["S3a", "S3b", "S4a", "S4b"], holm[1:]):
        assert records[claim]["test"]["p_holm"] == pytest.approx(expected)
    assert records["S3a"]["verdict"] in ("held", "not shown here")  # an existence claim: never contradicted
    assert records["S4c"]["verdict"] == "described" and "test" not in records["S4c"]
    assert "paper's effect carried: -2.416" in records["S4b"]["sentence"]
    section = "\n".join(sinks_section(list(records.values()), []))
    assert section.count("\n| S") == 7 and "pilot" in section
    assert records["S2"]["verdict"] == "held"  # norm jump, entropy valley and sink gain all at layer 2


def test_before_sinks_lm_exists_the_trained_claims_wait_and_s1_still_counts_five(tmp_path):
    measured(tmp_path)
    records = {r["claim"]: r for r in sinks_records(tmp_path, [])}
    assert all(records[c.id]["verdict"] == "pending" for c in CLAIMS)
    assert "over 5 claims" in records["S1"]["sentence"]


def test_the_readme_quotes_s1_and_s2_as_the_committed_measurements_decide_them():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if not sinks.result_path(root / "results", "smollm2").is_file():
        pytest.skip("no committed results/sinks in this checkout")
    records = {r["claim"]: r for r in sinks_records(root / "results", [])}
    s1, s2 = records["S1"], records["S2"]
    readme = " ".join((root / "README.md").read_text().split())
    assert s1["verdict"] == "contradicted" and s2["verdict"] == "held"
    assert f"−{abs(s1['numbers']['mean']):.3f} over layers" in readme
    assert f"perplexity ×{s1['numbers']['perplexity_ratio']:.3f}" in readme
    assert f"all form at layer {s2['numbers']['layers']['massive']}" in readme
    assert len(set(s2["numbers"]["layers"].values())) == 1


def test_a_pilot_without_a_sink_leaves_sinks_lm_unrun_and_says_so(tmp_path):
    from test_claims_sinks_trained import record
    from test_claims_sinks_trained import sinks as sink_record

    no_sink = {**ARMS, "softmax": lambda i: record(sink_record(0.01 + 0.002 * i, 0.05 + 0.001 * i, 7.0 + i))}
    found = cells(tmp_path, arms=no_sink)
    measured(tmp_path)
    records = {r["claim"]: r for r in sinks_records(tmp_path, found)}
    assert {records[c]["verdict"] for c in ("S3b", "S4a", "S4b")} == {"not tested"}
    assert records["S3a"]["verdict"] == "not shown here" and records["S4c"]["verdict"] == "described"
    assert "mean validation NLL softmax" in records["S4c"]["sentence"]
    section = "\n".join(sinks_section(list(records.values()), found))
    assert "it is not run: the pilot shows every trained claim untestable" in section
    # the regime: trained softmax's last cos_sim (0.3 on every seed) beside init's (0.2), under the 0.5 bar
    assert "last-layer cos_sim 0.300 against 0.200 for the same 3 seeds" in section and "does not oversmooth" in section
