"""`analyze`'s sink measures: taken on the attention sample of the unpatched model, the first-token
measures reading the first token that a causal LM's similarity measures leave out; their columns,
report section and sinks.png."""

import csv

import pytest
from hf_tiny import WORDS, save_tiny, tiny_inputs, tiny_model

from oversmooth import metrics
from oversmooth.analyze.analysis import AnalysisSettings, run_analysis
from oversmooth.cli import main
from oversmooth.hf import capture
from oversmooth.metrics import SINK_METRICS
from oversmooth.metrics.massive import LOCATION_COLUMNS

FAST = ["--max-sequences", "3", "--max-length", "16", "--attention-tokens", "8"]


@pytest.mark.parametrize("kind, exclude", [("gpt2", (0,)), ("bert", ())])
def test_the_sink_table_is_the_attention_sample_s_with_the_first_token_read(kind, exclude):
    model, inputs = tiny_model(kind), tiny_inputs(kind)
    analysis = run_analysis(model, inputs, AnalysisSettings(methods=(), attention_tokens=64))
    assert analysis.tables["baseline"].attrs["exclude"] == exclude  # a causal LM's default
    sinks, attention = analysis.sinks, analysis.attention
    sample = {k: v[:2, :64] for k, v in inputs.items()}
    _, cache = capture(model, sample, hooks=("resid_pre", "resid_post"), pattern=True)
    states = cache.stream()
    assert sinks["layer"].tolist() == list(range(len(states)))
    for layer, state in enumerate(states):
        for name in SINK_METRICS:
            want = getattr(metrics, name)(state, cache.mask, exclude).mean().item()
            assert sinks[name].iloc[layer] == pytest.approx(want, rel=1e-9), (name, layer)
        for name in ("massive_ratio", "first_token_norm", "repr_entropy"):  # the first token is read all the same
            assert sinks[name].iloc[layer] == pytest.approx(getattr(metrics, name)(state, cache.mask).mean().item())
        assert sinks["cos_sim"].iloc[layer] == pytest.approx(metrics.cos_sim(state, cache.mask, exclude).mean().item())
        where = metrics.massive_location(state, cache.mask)
        assert {c: sinks[c].iloc[layer] for c in LOCATION_COLUMNS} == where
    for layer, pattern in enumerate(cache.layer_stack("pattern"), start=1):  # block l makes state l
        want = metrics.sink_rate(pattern, cache.mask, exclude).mean().item()
        assert attention.set_index("layer")["sink_rate"][layer] == pytest.approx(want)


def test_analyze_writes_the_sink_columns_report_and_figure(tmp_path):
    model_dir = save_tiny("llama", tmp_path / "model")
    out = tmp_path / "out"
    text = " ".join(WORDS * 3)
    assert main(["analyze", str(model_dir), "--text", text, "--methods", "neutreno", "--out", str(out), *FAST]) == 0
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    base = [r for r in rows if r["method"] == "baseline"]
    patched = [r for r in rows if r["method"] == "neutreno"]
    for column in (*SINK_METRICS, *LOCATION_COLUMNS, "sink_rate"):
        assert all(r[column] != "" for r in base[1:]), column  # the attention sample's, unpatched
        assert all(r[column] == "" for r in patched), column
    assert int(base[0]["massive_token"]) >= 0 and base[0]["sink_rate"] == ""  # no block makes layer 0
    for name in ("sinks.png", *(f"{m}.png" for m in SINK_METRICS), "sink_rate.png"):
        assert (out / name).stat().st_size > 0, name
    report = (out / "report.md").read_text()
    assert "## Sinks and massive activations" in report and "![sinks](sinks.png)" in report

    again = tmp_path / "again"
    args = ["analyze", str(model_dir), "--text", text, "--methods", "none", "--attention-sequences", "0"]
    assert main([*args, "--out", str(again), *FAST]) == 0
    assert not (again / "sinks.png").exists() and not (again / "massive_ratio.png").exists()
    assert "## Sinks" not in (again / "report.md").read_text()
    assert all(r["massive_ratio"] == "" for r in csv.DictReader(open(again / "metrics.csv")))


def test_the_per_method_tables_take_no_sink_measure():
    """The sink measures are the attention sample's: every method's stream table is as before them
    (and so is training's, ``measure``'s default set: tests/test_metrics_registry.py)."""
    tables = run_analysis(tiny_model("gpt2"), tiny_inputs("gpt2")).tables
    assert all(not set(SINK_METRICS) & set(table.columns) for table in tables.values())
