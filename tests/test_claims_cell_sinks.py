"""Claims S3 and S4's measures of a trained LM cell (docs/registrations/sinks.md) against naive loops
over the model's own attention maps and stream, and the initial model against the one training
starts from."""

import json

import numpy as np
import pytest
import reference_metrics as ref
import torch

from oversmooth.claims.cell_analysis import analyze_cell, initial_model
from oversmooth.claims.cell_sinks import sink_record
from oversmooth.cli import main
from oversmooth.models import CausalLM, CausalLMConfig


def lm(method="softmax"):
    torch.manual_seed(0)
    shape = {"depth": 2, "width": 16, "heads": 2, "vocab_size": 50, "context": 12}
    return CausalLM(CausalLMConfig.preset("lm-cpu", **shape, mitigation=method)).eval()


@pytest.mark.parametrize("method", ["softmax", "softpick", "gated_attention"])
def test_the_sink_record_equals_naive_loops(method):
    model = lm(method)
    inputs = torch.randint(0, 50, (3, 12), generator=torch.Generator().manual_seed(1))
    record = sink_record(model, inputs)
    _, cache = model.run_with_cache(inputs)
    maps = [cache[f"blocks.{b}.attn.hook_pattern"].double().numpy() for b in range(2)]
    streams = [cache["blocks.0.hook_resid_pre"]] + [cache[f"blocks.{b}.hook_resid_post"] for b in range(2)]
    queries = list(range(1, 12))
    rates = [np.mean([ref.sink_rate(a[s], queries) for s in range(3)]) for a in maps]
    shares = [np.mean([a[s][:, queries, 0].mean() for s in range(3)]) for a in maps]
    ratios = [np.mean([ref.massive_ratio(x[s].double().numpy()) for s in range(3)]) for x in streams]
    last = np.mean([ref.cos_sim(streams[-1][s, 1:].double().numpy()) for s in range(3)])
    assert record["sink_rate"] == pytest.approx(rates) and record["sink_rate_model"] == pytest.approx(np.mean(rates))
    assert record["first_token_share"] == pytest.approx(shares)
    assert record["first_token_share_model"] == pytest.approx(np.mean(shares))
    assert record["massive_ratio"] == pytest.approx(ratios)
    assert record["massive_ratio_max"] == pytest.approx(max(ratios[1:]))
    assert record["cos_sim_last"] == pytest.approx(last)


def test_a_trained_lm_cell_records_its_sinks_trained_and_at_initialisation(tmp_path):
    out = tmp_path / "cell"
    flags = "train --task synthetic --model lm --depth 2 --width 16 --heads 2 --epochs 1 --batch-size 32 --seed 3"
    assert main([*flags.split(), "--no-progress", "--out", str(out)]) == 0
    analysis = analyze_cell(out)
    sinks = json.loads((out / "analysis.json").read_text())["sinks"]
    assert sinks == json.loads(json.dumps(analysis["sinks"]))
    assert len(sinks["trained"]["sink_rate"]) == 2 and len(sinks["init"]["massive_ratio"]) == 3
    assert sinks["trained"] != sinks["init"]


def test_the_initial_model_is_the_one_training_starts_from():
    """An independent path: ``train.run.build_model`` from the run's spec and seed."""
    from oversmooth.train.run import build_model
    from oversmooth.train.run_spec import RunSpec
    from oversmooth.train.task_factory import DataOptions, make_task

    spec = RunSpec(task="synthetic", model="lm", epochs=1, depth=2, width=16, heads=2, seed=5).check()
    task, _ = make_task(spec.task, spec.model, DataOptions())
    built = build_model(spec, task)
    with torch.no_grad():
        next(built.parameters()).add_(1.0)  # "trained"
    rebuilt = initial_model(built, 5)
    expected = build_model(spec, task).state_dict()
    assert all(torch.equal(rebuilt.state_dict()[k], v) for k, v in expected.items())


def test_a_softpick_cell_is_measured_with_its_verdicts_undefined(tmp_path):
    """Softpick's rows need not sum to 1, so the dynamics verdict (a row-stochastic A) is undefined
    there; the rest of the analysis, the sinks included, is taken as for softmax."""
    out = tmp_path / "cell"
    flags = "train --task synthetic --model lm --depth 2 --width 16 --heads 2 --epochs 1 --batch-size 32"
    assert main([*flags.split(), "--method", "softpick", "--no-progress", "--out", str(out)]) == 0
    analysis = analyze_cell(out)
    assert {b["verdict"]["verdict"] for b in analysis["blocks"]} == {"undefined"}
    assert {f["verdict"] for f in analysis["value_flip"]} == {"undefined"}
    assert 0 <= analysis["sinks"]["trained"]["sink_rate_model"] <= 1
