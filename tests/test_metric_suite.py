"""The suite table and the `oversmooth metrics` command."""

import csv
import json
import subprocess
import sys

import pytest
import reference_metrics as ref
import torch

from oversmooth.metrics import ATTENTION_METRICS, METRICS, measure
from oversmooth.metrics.suite import table_json, write_csv


def test_table_has_one_row_per_layer_and_reference_means():
    g = torch.Generator().manual_seed(0)
    states = [torch.randn(4, 7, 5, generator=g) for _ in range(3)]
    table = measure(states)
    assert table["layer"].tolist() == [0, 1, 2]
    want = sum(ref.cos_sim(s[b].double().numpy()) for b in range(4) for s in states[2:]) / 4
    assert table["cos_sim"][2] == pytest.approx(want, rel=1e-6)  # float32 input
    assert set(table.columns) == {"layer"} | set(METRICS) | {f"{m}_std" for m in METRICS}


def test_attention_columns_and_nan_for_first_layer_similarity(tmp_path):
    states = [torch.randn(2, 4, 3) for _ in range(2)]
    attn = [torch.softmax(torch.randn(2, 2, 4, 4), -1) for _ in range(2)]
    table = measure(states, attentions=attn, metrics=("t_sim",))
    assert table.attrs["metrics"] == ("t_sim",) + ATTENTION_METRICS
    data = json.loads(table_json(table))
    assert data["rows"][0]["attn_similarity"] is None
    assert 0 < data["rows"][1]["attn_similarity"] <= 1
    write_csv(table, tmp_path / "t.csv")
    rows = list(csv.DictReader((tmp_path / "t.csv").open()))
    assert len(rows) == 2 and float(rows[1]["t_sim"]) == pytest.approx(table["t_sim"][1])
    assert rows[0]["attn_similarity"] == "nan"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "oversmooth", "metrics", *args], capture_output=True, text=True)


def test_cli_reads_tensor_and_dict_files(tmp_path):
    x = torch.randn(3, 2, 6, 4)
    torch.save(x, tmp_path / "s.pt")
    mask = torch.ones(2, 6, dtype=torch.bool)
    mask[1, 4:] = False
    from safetensors.torch import save_file

    save_file({f"layer.{i}": x[i] for i in range(3)} | {"mask": mask}, tmp_path / "s.safetensors")
    done = run_cli(str(tmp_path / "s.pt"), "--out", str(tmp_path / "o.csv"))
    assert done.returncode == 0, done.stderr
    assert "effective_rank" in done.stdout and (tmp_path / "o.csv").exists()
    done = run_cli(str(tmp_path / "s.safetensors"), "--json")
    rows = json.loads(done.stdout)["rows"]
    want = measure(list(x), mask)
    assert rows[2]["t_sim"] == pytest.approx(want["t_sim"][2])


@pytest.mark.parametrize(
    "content, needle",
    [
        (None, "no such file"),
        (torch.randn(3, 4), "expected a [layers"),
        (b"not a tensor", "not a file of tensors written by torch.save"),
        (b"PK\x03\x04 truncated zip", "cannot read it as .pt"),
    ],
)
def test_cli_bad_files_exit_2_with_one_line(tmp_path, content, needle):
    path = tmp_path / "bad.pt"
    if isinstance(content, torch.Tensor):
        torch.save(content, path)
    elif content is not None:
        path.write_bytes(content)
    done = run_cli(str(path), "--out", str(tmp_path / "never.csv"))
    assert done.returncode == 2
    assert needle in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "never.csv").exists()


def test_cli_reader_that_stops_early_gets_no_traceback(tmp_path):
    """`oversmooth metrics FILE --json | head`: a closed pipe ends the command quietly (141)."""
    torch.save(torch.randn(3, 2, 6, 4), tmp_path / "s.pt")
    proc = subprocess.Popen(
        [sys.executable, "-m", "oversmooth", "metrics", str(tmp_path / "s.pt"), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # before the command (still importing torch) writes anything
    stderr = proc.stderr.read().decode()
    assert proc.wait() == 141 and stderr == ""
