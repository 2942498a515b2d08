"""What `oversmooth claims` reads, and what it refuses in one line, writing no report: a folder of no
study, a damaged file, a cell trained otherwise or read twice, an adaptation that is not the
registered continuation."""

import json
import shutil
from pathlib import Path

import pytest
from claims_cells import NULL_ARM, adapted, make_cell

from oversmooth.cli import main
from oversmooth.study.results import read_study


def test_claims_without_dir_reads_the_protocols_archives_under_results(tmp_path, monkeypatch, capsys):
    """With no DIR, `oversmooth claims` reads the protocol's archives under ./results (named in the
    command the report records) and nothing else there; it needs --out then, and a results/ without
    them is one line, exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    assert main(["claims", "--no-probes", "--out", "rep"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds none of the claims protocol's archives" in err
    make_cell(tmp_path / "results", "fmnist-p7", "softmax", 0, 0.90)
    make_cell(tmp_path / "results", "fmnist-p7", "neutreno", 0, 0.91)
    (tmp_path / "results" / "mine").mkdir()  # no archive of the protocol, and no study: not read
    (tmp_path / "results" / "mine" / "notes.txt").write_text("mine")
    assert main(["claims", "--no-probes"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pass --out" in err
    assert not Path("rep").exists() and not (tmp_path / "results" / "fmnist-p7" / "report.md").exists()
    assert main(["claims", "--no-probes", "--out", "rep"]) == 0
    report = Path("rep/report.md").read_text()
    assert "written by `oversmooth claims results/fmnist-p7 --out rep --no-probes`" in report
    assert "Cells: 2 completed" in report


def test_report_of_a_folder_that_is_no_study_exits_2(tmp_path, capsys):
    assert main(["claims", str(tmp_path), "--no-probes"]) == 2
    assert "not a study folder" in capsys.readouterr().err


@pytest.mark.parametrize("damaged", ["study.json", "null.json", "results.json", "metrics.jsonl", "cell.json"])
def test_a_damaged_file_is_one_line_naming_it(tmp_path, capsys, damaged):
    """A truncated study.json, null.json, results.json, metrics.jsonl or cell.json: exit 2, one line
    naming the file, no report written."""
    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.90)
    study = tmp_path / "fmnist-p7"
    (study / "null.json").write_text(json.dumps({"study": "fmnist-p7", "arms": [NULL_ARM]}))
    path = study / damaged if damaged in ("study.json", "null.json") else next(study.glob(f"*/{damaged}"))
    path.write_text(path.read_text()[:-10])  # its tail lost
    assert main(["claims", str(study), "--no-probes", "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{damaged} is damaged" in err
    assert not (tmp_path / "rep").exists()


def test_a_cell_folder_without_its_cell_json_is_named_not_skipped(tmp_path, capsys):
    """A seed's folder whose cell.json was lost would otherwise vanish from its pair: exit 2, one
    line naming the folder, no report written."""
    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.90)
    make_cell(tmp_path, "fmnist-p7", "softmax", 1, 0.91)
    study = tmp_path / "fmnist-p7"
    lost = next(study.glob("*-s1"))
    (lost / "cell.json").unlink()
    assert main(["claims", str(study), "--no-probes", "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and lost.name in err and "without its cell.json" in err
    assert not (tmp_path / "rep").exists()
    for path in lost.iterdir():  # emptied, as a study stopped while making the folder leaves it: passed over
        path.unlink()
    assert main(["claims", str(study), "--no-probes", "--out", str(tmp_path / "rep")]) == 0


def test_a_report_refuses_a_mismatched_or_doubled_cell_instead_of_dropping_its_seed(tmp_path, capsys):
    """A cell of a protocol study trained in another setting, a study folder given twice, and an
    adaptation that is not the registered continuation: each is one line naming it, exit 2, and no
    report (a seed silently left out of its pair would change n without a word)."""
    from oversmooth.cli import main

    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.90)
    make_cell(tmp_path, "fmnist-p7", "neutreno", 0, 0.91)
    study, out = tmp_path / "fmnist-p7", tmp_path / "rep"
    assert main(["claims", str(study), "--no-probes", "--out", str(out)]) == 0
    shutil.rmtree(out)

    copy = tmp_path / "copy" / "fmnist-p7"
    shutil.copytree(study, copy)
    assert main(["claims", str(study), str(copy), "--no-probes", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"fmnist-p7/fmnist-pre-d8-softmax-s0 is read twice, from {study} and from {copy}" in err
    assert len(err.splitlines()) == 1 and not out.exists()

    info = study / "fmnist-pre-d8-neutreno-s0" / "cell.json"
    cell = json.loads(info.read_text())
    cell["spec"]["lr"], cell["command"] = 0.01, cell["command"].replace("--lr 0.002", "--lr 0.01")
    info.write_text(json.dumps(cell))
    assert main(["claims", str(study), "--no-probes", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "fmnist-p7/fmnist-pre-d8-neutreno-s0 (its cell.json) was trained with lr=0.01" in err
    assert len(err.splitlines()) == 1 and not out.exists()
    shutil.rmtree(study)


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda cell, results: cell["spec"]["knobs"].update(lam=0.2), "cell.json's knobs {'lam': 0.6}"),
        (
            lambda cell, results: cell.update(command=cell["command"].replace("0.6", "0.2")),
            "command is not the one its spec makes",
        ),
        (lambda cell, results: results.update(description=DESCRIBED(lam=0.2)), "results.json's lam 0.2"),
        (lambda cell, results: results.update(description=DESCRIBED(epochs=12)), "results.json's epochs 12"),
        (lambda cell, results: AT_LAMBDA_0_2(cell, results), "lam=0.2, not as preset fmnist-p7 trains it"),
    ],
    ids=["spec-knob", "command", "recorded-knob", "recorded-epochs", "not-the-presets-knob"],
)
def test_a_cell_trained_at_another_knob_is_refused_not_paired(tmp_path, capsys, edit, named):
    """A NeuTRENO arm whose files disagree on lambda (its spec, its command, or the configuration
    its run recorded), or that agree on a lambda its preset does not train, is not paired as if it
    were the registered arm: one line naming the cell, exit 2, no report."""
    from oversmooth.cli import main

    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.90)
    make_cell(tmp_path, "fmnist-p7", "neutreno", 0, 0.91)
    folder, out = tmp_path / "fmnist-p7" / "fmnist-pre-d8-neutreno-s0", tmp_path / "rep"
    cell, results = json.loads((folder / "cell.json").read_text()), json.loads((folder / "results.json").read_text())
    results["description"] = DESCRIBED()
    (folder / "results.json").write_text(json.dumps(results))
    assert main(["claims", str(tmp_path / "fmnist-p7"), "--no-probes", "--out", str(out)]) == 0
    shutil.rmtree(out)
    edit(cell, results)
    (folder / "cell.json").write_text(json.dumps(cell))
    (folder / "results.json").write_text(json.dumps(results))
    assert main(["claims", str(tmp_path / "fmnist-p7"), "--no-probes", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "fmnist-pre-d8-neutreno-s0" in err and named in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def AT_LAMBDA_0_2(cell: dict, results: dict) -> None:
    """Every file of the cell says lambda 0.2, which fmnist-p7 does not train."""
    cell["variant"]["lam"] = cell["spec"]["knobs"]["lam"] = 0.2
    cell["command"] = cell["command"].replace("--lam 0.6", "--lam 0.2")
    results["description"] = DESCRIBED(lam=0.2)


def DESCRIBED(lam: float = 0.6, epochs: int = 10) -> dict:
    """The part of results.json's ``description`` that says how fmnist-p7's NeuTRENO seed 0 trained."""
    mitigation = {"methods": ["neutreno"], "lam": lam}
    return {"method": "neutreno", "model_config": {"mitigation": mitigation}, "train": {"seed": 0, "epochs": epochs}}


def test_a_resumed_run_that_trained_no_step_is_read_not_called_damaged(tmp_path):
    """A run killed after its last checkpoint and resumed records no speed (null): it is finished."""
    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.90)
    path = tmp_path / "fmnist-p7" / "fmnist-pre-d8-softmax-s0" / "results.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "train_examples_per_second": None}))
    (cell,) = read_study(tmp_path / "fmnist-p7")
    assert cell.status == "completed" and cell.examples_per_second is None


def test_an_adaptation_that_is_not_the_registered_continuation_is_refused(tmp_path, capsys):
    from oversmooth.claims.adaptations import LR, NAME, STEPS, WARMUP
    from oversmooth.cli import main

    out = tmp_path / "rep"

    record = adapted(0, 0.88, {0.6: 0.885})
    record["config"] = {
        "seed": 0,
        "steps": STEPS // 2,
        "lr": LR,
        "warmup": WARMUP,
        "method": "neutreno",
        "objective": "task",
    }
    (tmp_path / NAME / "s0").mkdir(parents=True)
    (tmp_path / NAME / "s0" / "adapt.json").write_text(json.dumps(record))
    assert main(["claims", str(tmp_path / NAME), "--no-probes", "--out", str(out)]) == 2
    assert "s0/adapt.json is not the registered continuation of seed 0" in capsys.readouterr().err
    assert not out.exists()
