"""The claims-8/2c driver (``python -m oversmooth.claims.adaptations``): its refusals, in one
process and through its process pool, leave nothing behind."""

from __future__ import annotations

import pytest

from oversmooth.claims import adaptations


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_seed_without_its_trained_model_is_refused_in_one_line(tmp_path, capsys, jobs):
    out, results = tmp_path / "adapt", tmp_path / "results"
    code = adaptations.main(
        [
            "--seeds",
            "3,12",
            "--studies",
            str(tmp_path / "studies"),
            "--out",
            str(out),
            "--results",
            str(results),
            "--jobs",
            jobs,
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "has no trained model: train it first" in err, err
    assert not out.exists() and not results.exists()


@pytest.mark.parametrize("flags", [["--jobs", "0"], ["--threads", "0"], ["--seeds", "a,b"]])
def test_bad_flags_exit_2(tmp_path, capsys, flags):
    assert adaptations.main([*flags, "--out", str(tmp_path / "adapt")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert not (tmp_path / "adapt").exists()


def test_train_starts_trains_only_the_missing_softmax_cell_of_that_seed(tmp_path, monkeypatch):
    """--train-starts hands the study runner fmnist-p7 narrowed to the seed's softmax cell, then
    adapts the model it trained (here a stand-in runner that records the call and makes the folder)."""
    import oversmooth.study

    studies, seen = tmp_path / "studies", []

    def fake_run_study(study, out, **kwargs):
        seen.append(([(c.variant.label, c.seed) for c in study.cells()], out))
        (out / "cells" / study.cells()[0].name / "model").mkdir(parents=True)
        raise SystemExit("trained")  # stop before the (real) continuation

    monkeypatch.setattr(oversmooth.study, "run_study", fake_run_study)
    with pytest.raises(SystemExit, match="trained"):
        adaptations.main(
            ["--seeds", "12", "--studies", str(studies), "--out", str(tmp_path / "adapt"), "--train-starts"]
        )
    assert seen == [([("softmax", 12)], studies / "fmnist-p7")]
