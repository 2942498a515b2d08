"""Bad input, class by class: each refusal is one line naming the option or file and the fix,
exit 2, and nothing written. The references are the libraries' own limits (torch, numpy) and
files damaged on purpose, not the code under test.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from oversmooth.errors import UsageError
from oversmooth.utils.seeds import SEED_LIMIT, check_seed


@pytest.mark.parametrize("seed", [0, 1, 2**63, SEED_LIMIT - 1, -1, SEED_LIMIT, -(2**63), 2**70])
def test_a_seed_is_taken_exactly_when_every_generator_takes_it(seed):
    def generators_take(value) -> bool:
        try:
            torch.Generator().manual_seed(value)
            np.random.default_rng(value)
        except (ValueError, RuntimeError, OverflowError):
            return False
        return True

    try:
        check_seed(seed)
        taken = True
    except UsageError as error:
        assert str(error).startswith("seed must be a whole number in [0, 2**64)")
        taken = False
    assert taken == generators_take(seed)


def refused(argv: list[str], capsys, root, *needles: str) -> str:
    """``oversmooth argv`` exits 2 with one stderr line holding every needle, and ``root`` is as before."""
    from oversmooth.cli import main

    before = sorted(p for p in root.rglob("*"))
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err.strip()
    assert code == 2, (argv, code, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    assert sorted(p for p in root.rglob("*")) == before, "a refusal wrote files"
    return err


TINY_VIT = (
    "train --task synthetic --model vit --epochs 1 --depth 2 --width 16 --heads 2 --limit-train "
    "32 --batch-size 16 --no-progress --compile off"
).split()


@pytest.mark.parametrize(
    "method, knob, value",
    [
        ("neutreno", "--lam", "1e30"),
        ("contranorm", "--contranorm-s", "1e30"),
        ("contranorm", "--contranorm-tau", "1e-300"),
    ],
)
def test_a_knob_that_overflows_a_new_model_is_named_not_trained(method, knob, value, tmp_path, capsys):
    refused(
        [*TINY_VIT, "--method", method, knob, value, "--out", str(tmp_path / "run")],
        capsys,
        tmp_path,
        f"--method {method} {knob} {float(value):g}",
        "NaN or Inf",
    )


def test_a_knob_that_overflows_a_patched_model_is_named_not_the_weights():
    from hf_tiny import tiny_inputs, tiny_model

    from oversmooth.analyze.analysis import AnalysisSettings, run_analysis

    for method, knobs, named in (
        ("neutreno", {"lam": 1e30}, "neutreno lam=1e+30"),
        ("contranorm", {"tau": 1e-300}, "tau=1e-300"),
    ):
        settings = AnalysisSettings(methods=(method,), knobs={method: knobs}, attention_sequences=0)
        with pytest.raises(UsageError) as error:
            run_analysis(tiny_model("bert"), tiny_inputs("bert"), settings)
        assert named in str(error.value) and "weights" not in str(error.value)


# --- damaged files: generated corruptions of a valid study cell, read by `oversmooth claims` ---

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CORRUPT = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
WRONG = st.sampled_from([None, "x", -1.5, [], {}, True, [1, "a"]])
REPORTED = ("study.json", "cell.json", "results.json", "metrics.jsonl", "analysis.json", "adapt.json")
ONE_TABLE = ("study.json", "analysis.json")  # written on several lines: made one line to be damaged


def corrupted(text: str, data) -> str:
    """``text`` (one JSON table, or JSON lines) cut short, or with a field dropped or of a wrong type."""
    lines = text.splitlines()
    index = data.draw(st.integers(0, len(lines) - 1))
    kind = data.draw(st.sampled_from(["truncate", "drop", "retype"]))
    if kind == "truncate":
        return text[: data.draw(st.integers(0, len(text) - 1))]
    table = json.loads(lines[index])
    key = data.draw(st.sampled_from(sorted(table)))
    if kind == "drop":
        del table[key]
    else:
        table[key] = data.draw(WRONG)
    lines[index] = json.dumps(table)
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def study_cell(tmp_path_factory):
    from claims_cells import analysis, make_cell

    root = tmp_path_factory.mktemp("damaged")
    make_cell(root, "fmnist-p7", "softmax", 0, 0.90, cell_analysis=analysis())
    make_cell(root, "fmnist-p7", "neutreno", 0, 0.91, cell_analysis=analysis())
    from claims_cells import adapted

    from oversmooth.claims.adaptations import LR, NAME, RESULT_FILE, STEPS, WARMUP

    record = adapted(0, 0.90, {0.6: 0.91})
    record["config"] = {
        "seed": 0,
        "steps": STEPS,
        "lr": LR,
        "warmup": WARMUP,
        "method": "neutreno",
        "objective": "task",
    }
    for arm in record["arms"].values():
        arm.update(status="completed", wall_seconds=1.0, start={"accuracy": 0.9}, val={"accuracy": 0.9})
    (root / NAME / "s0").mkdir(parents=True)
    (root / NAME / "s0" / RESULT_FILE).write_text(json.dumps(record))
    return root / "fmnist-p7"


@CORRUPT
@given(data=st.data())
def test_report_on_a_damaged_study_or_results_file_exits_2_naming_it(study_cell, capsys, data):
    from oversmooth.cli import main

    name = data.draw(st.sampled_from(REPORTED))
    adaptations = study_cell.parent / "fmnist-p7-adapt"
    path = (
        study_cell / name
        if name == "study.json"
        else sorted([*study_cell.glob(f"*/{name}"), *adaptations.glob(f"*/{name}")])[0]
    )
    original = path.read_text()
    out = study_cell.parent / "rep"
    try:
        path.write_text(corrupted(original if name not in ONE_TABLE else json.dumps(json.loads(original)), data))
        capsys.readouterr()
        code = main(["claims", str(study_cell), str(adaptations), "--no-probes", "--out", str(out)])
        err = capsys.readouterr().err.strip()
        if code == 0:  # the damage was harmless (a field the report does not read)
            return
        assert code == 2 and len(err.splitlines()) == 1 and name in err, (code, err)
        assert not out.exists()
    finally:
        path.write_text(original)
        shutil.rmtree(out, ignore_errors=True)


def test_a_run_refused_inside_its_lock_leaves_no_lock_file_or_folder(tmp_path):
    from oversmooth.train.run_lock import LOCK_FILE, run_lock

    with pytest.raises(UsageError), run_lock(tmp_path / "new" / "run"):
        assert (tmp_path / "new" / "run" / LOCK_FILE).is_file()
        raise UsageError("refused")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "checkpoint.pt").write_text("x")
    with pytest.raises(UsageError), run_lock(tmp_path / "old"):
        raise UsageError("refused")
    assert [p.name for p in (tmp_path / "old").iterdir()] == ["checkpoint.pt"]
    with run_lock(tmp_path / "kept"):  # a run that goes on keeps its lock file (other runs flock it)
        pass
    assert (tmp_path / "kept" / LOCK_FILE).is_file()


def test_a_study_whose_cells_would_fail_on_their_settings_is_refused_before_any_runs(tmp_path, capsys):
    study = {
        "name": "tiny",
        "model": "vit",
        "tasks": ["synthetic"],
        "depths": [1, 2],
        "methods": ["softmax", {"label": "neutreno", "lam": 0.5}],
        "train": {"width": 8, "heads": 2, "epochs": 1, "probe_size": 8},
    }
    for change, named in (
        ({"patch_size": 5}, "patch_size (5) must divide"),
        ({"batch_size": 10**5}, "batch_size"),
        ({"seq_len": 8}, "seq_len applies to lm runs only"),
    ):
        path = tmp_path / "study.json"
        path.write_text(json.dumps({**study, "train": {**study["train"], **change}}))
        refused(["study", str(path), "--out", str(tmp_path / "out")], capsys, tmp_path, named)
    path.write_text(json.dumps({**study, "methods": ["softmax", {"label": "neutreno", "lam": 1e30}]}))
    refused(["study", str(path), "--out", str(tmp_path / "out")], capsys, tmp_path, "neutreno-s0", "lam 1e+30")


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.measure([[[1.0, 2.0], [3.0, 4.0]]]),
        lambda m: m.cos_sim([[[1.0, 2.0]]]),
        lambda m: m.t_sim(np.ones((2, 3, 4))),
        lambda m: m.attention_entropy([[[[1.0]]]]),
        lambda m: m.measure(torch.randn(2, 3, 0, 5)),
        lambda m: m.measure(torch.randn(2, 3, 4, 0)),
        lambda m: m.stable_rank(torch.randn(0, 4, 5)),
        lambda m: m.measure(torch.randn(2, 3, 4, 5), exclude=[0, 1, 2, -1]),
    ],
)
def test_the_python_api_refuses_lists_arrays_and_empty_sizes_with_one_usage_error(call):
    from oversmooth import metrics

    with pytest.raises(UsageError) as error:
        call(metrics)
    assert "\n" not in str(error.value) and (
        "torch tensor" in str(error.value) or "at least 1" in str(error.value) or "leaves no token" in str(error.value)
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """One folder for every example (its path, and so the files' lengths, stay the same)."""
    return tmp_path_factory.mktemp("spec")


@CORRUPT
@given(data=st.data())
def test_a_damaged_spec_or_study_file_exits_2_naming_it_and_writes_nothing(scratch, capsys, data):
    """``train --spec FILE`` and ``study FILE``: a file cut short, a field dropped or of a wrong type
    is refused before anything is written (or, where the damage is harmless, is a valid input: the
    dry run or the stubbed training is reached)."""
    from oversmooth.cli import main
    from oversmooth.train.run_spec import RunSpec

    root = scratch
    for old in root.iterdir():
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    spec = RunSpec("synthetic", "vit", 1, depth=1, width=8, heads=2, batch_size=16, out=str(root / "run"))
    study = {
        "name": "tiny",
        "model": "vit",
        "tasks": ["synthetic"],
        "depths": [1],
        "methods": ["softmax"],
        "train": {"width": 8, "heads": 2, "epochs": 1, "batch_size": 16},
    }
    kind = data.draw(st.sampled_from(["spec", "study"]))
    path = root / f"{kind}.json"
    path.write_text(corrupted(json.dumps(spec.to_dict() if kind == "spec" else study), data))
    argv = (
        ["train", "--spec", str(path)]
        if kind == "spec"
        else ["study", str(path), "--out", str(root / "out"), "--dry-run"]
    )
    before = sorted(root.rglob("*"))

    class Reached(Exception):
        """Past every check, at the training itself (stubbed out)."""

    def reached(*args, **kwargs):
        raise Reached

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("oversmooth.train.run.train", reached)
        capsys.readouterr()
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code
        except Reached:
            return
    err = capsys.readouterr().err.strip()
    assert code in (0, 2) and "Traceback" not in err, (code, err)
    if code == 2:
        assert len(err.splitlines()) == 1, err
        assert sorted(root.rglob("*")) == before


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    from oversmooth.cli import main

    run = tmp_path_factory.mktemp("finished") / "run"
    assert main([*TINY_VIT, "--out", str(run)]) == 0
    return run


@pytest.mark.parametrize("name", ["checkpoint.pt", "results.json"])
def test_a_resume_from_a_truncated_checkpoint_or_results_file_names_it(finished_run, tmp_path, capsys, name):
    """Cut at offsets spread over the file (a seeded draw): ``--resume auto`` exits 2 with one line
    naming the file and the fix, and leaves the folder byte for byte as it was."""
    size = (finished_run / name).stat().st_size
    for offset in sorted({0, 1, size - 1, *np.random.default_rng(0).integers(0, size, 4).tolist()}):
        run = tmp_path / f"cut{offset}"
        shutil.copytree(finished_run, run)
        if name == "checkpoint.pt":
            (run / "results.json").unlink()  # unfinished: the resume reads the checkpoint
        (run / name).write_bytes((finished_run / name).read_bytes()[:offset])
        before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
        err = refused([*TINY_VIT, "--out", str(run), "--resume", "auto"], capsys, tmp_path, name, f"delete {run}")
        assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before, err


@pytest.mark.parametrize("flags", [["--max-length", "16"], ["--attention-tokens", "16"], ["--text", "a few words"]])
def test_text_options_given_to_an_image_model_are_refused(tmp_path, capsys, flags):
    """Options that only cut or feed text name themselves when the model reads images."""
    from hf_tiny import save_tiny

    from oversmooth.cli import main

    model_dir = save_tiny("vit", tmp_path / "vit")
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["analyze", str(model_dir), *flags, "--methods", "neutreno", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and flags[0] in err and ("text models only" in err or "cuts text only" in err), err
    assert not out.exists()
