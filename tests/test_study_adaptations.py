"""The claims-8/2c driver (``python -m oversmooth.study.adaptations``): its refusals, in one
process and through its process pool, leave nothing behind."""

from __future__ import annotations

import pytest

from oversmooth.study import adaptations


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_seed_without_its_trained_model_is_refused_in_one_line(tmp_path, capsys, jobs):
    out, results = tmp_path / "adapt", tmp_path / "results"
    code = adaptations.main(["--seeds", "3,12", "--studies", str(tmp_path / "studies"), "--out", str(out),
                             "--results", str(results), "--jobs", jobs])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "has no trained model: train it first" in err, err
    assert not out.exists() and not results.exists()


@pytest.mark.parametrize("flags", [["--jobs", "0"], ["--threads", "0"], ["--seeds", "a,b"]])
def test_bad_flags_exit_2(tmp_path, capsys, flags):
    assert adaptations.main([*flags, "--out", str(tmp_path / "adapt")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert not (tmp_path / "adapt").exists()
