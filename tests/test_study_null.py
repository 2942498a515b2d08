"""The random-init null of a study's arms (``oversmooth.study.null``,
docs/registrations/fourth-step.md): recomputed here from each init's last block output with the
naive cos_sim of tests/reference_metrics.py."""

import dataclasses
import json
import statistics

import numpy as np
import pytest
import torch
from reference_metrics import cos_sim

from oversmooth.errors import UsageError
from oversmooth.study import StudyConfig
from oversmooth.study.null import read_null, write_null
from oversmooth.train.run import build_model, data_options
from oversmooth.train.task_factory import make_task

TINY = StudyConfig.from_dict(
    {
        "name": "tiny",
        "model": "vit",
        "tasks": ["synthetic"],
        "norms": ["pre", "post"],
        "depths": [2],
        "methods": ["softmax", {"label": "neutreno", "lam": 0.5}],
        "seeds": [0, 1],
        "train": {"width": 8, "heads": 2, "epochs": 1, "batch_size": 32, "probe_size": 5},
    }
)


def by_hand(cell, seed: int) -> float:
    """Init ``seed`` of ``cell``'s model (as training draws it), its last block's output on the
    first ``probe_size`` validation images, the reference cos_sim of each image's tokens averaged."""
    spec = dataclasses.replace(cell.spec(), seed=seed)
    task, _ = make_task(spec.task, spec.model, data_options(spec))
    model = build_model(spec, task).eval()
    with torch.no_grad():
        images = task.batch("val", torch.arange(spec.probe_size))[0]
        last = model.run_blocks(model.embed(images)).double().numpy()
    return float(np.mean([cos_sim(tokens) for tokens in last]))


def test_the_null_is_each_arms_last_layer_cos_sim_at_random_init(tmp_path):
    path = write_null(TINY, tmp_path, 3, "python scripts/random_init_null.py tiny")
    assert path == tmp_path / "tiny" / "null.json"
    written = json.loads(path.read_text())
    assert written["study"] == "tiny" and written["command"] == "python scripts/random_init_null.py tiny"
    arms = {(a["norm"], a["label"]): a for a in written["arms"]}
    assert sorted(arms) == [("post", "neutreno"), ("post", "softmax"), ("pre", "neutreno"), ("pre", "softmax")]
    for (norm, label), arm in arms.items():
        cell = next(c for c in TINY.cells() if (c.norm, c.variant.label, c.seed) == (norm, label, 0))
        expected = [by_hand(cell, seed) for seed in range(3)]
        assert arm["cos_sim"] == pytest.approx(expected, abs=1e-5), (norm, label)
        assert arm["mean"] == pytest.approx(statistics.fmean(expected), abs=1e-5)
        assert arm["sd"] == pytest.approx(statistics.stdev(expected), abs=1e-5)
        assert (arm["inits"], arm["probe_examples"], arm["depth"], arm["model"]) == (3, 5, 2, "vit")
    assert len(set(arms[("pre", "softmax")]["cos_sim"])) == 3  # each init its own draw
    assert read_null(tmp_path / "tiny")[("synthetic", "pre", "softmax", 2)] == arms[("pre", "softmax")]


def test_no_null_reads_as_none_and_a_damaged_one_is_named(tmp_path):
    assert read_null(tmp_path) == {}
    (tmp_path / "null.json").write_text(json.dumps({"arms": [{"task": "fmnist", "norm": "pre"}]}))
    with pytest.raises(UsageError, match=r"null\.json \(an arm\) is damaged \(no field 'label'\)"):
        read_null(tmp_path)
