"""``oversmooth adapt`` with several methods beside one control: knobs read off ``analyze
--sweep``'s frontier, ramps, the tradeoff table and picture. Checked against the frontier the
recorded ``oversmooth analyze`` command itself writes, the batches each arm trained on, the
numbers of ``adapt.json`` worked out by hand, and a rerun after a cut."""

import csv
import dataclasses
import importlib
import json
import shlex
import time

import pytest
from hf_tiny import prose, save_tiny, save_tiny_with_head
from test_adapt import vit_run  # noqa: F401 (a fixture: a tiny finished train run)

import oversmooth.adapt.run as adapt_run
import oversmooth.train.loop as loop
from oversmooth.adapt import AdaptConfig, frontier_knobs
from oversmooth.adapt.arms import methods_of, plan_arms
from oversmooth.adapt.pretrained import PretrainedSource
from oversmooth.adapt.run import open_source
from oversmooth.cli import build_parser, main
from oversmooth.cli.adapt import config_of
from oversmooth.mitigations import registry

METHODS = "neutreno,contranorm,deescalate,layerscale"
hf_load = importlib.import_module("oversmooth.hf.load")  # the module (``oversmooth.hf.load`` is also its function)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """A headless BERT drawn wide enough that a strong patch breaks it (its frontier has values
    in and out of the budget)."""
    return save_tiny_with_head("bert", tmp_path_factory.mktemp("bert") / "bert", head="BertModel")


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    path = tmp_path_factory.mktemp("text") / "text.txt"
    path.write_text(prose([150] * 40))
    return path


def adapt_args(model, text, out, *extra) -> list[str]:
    return [
        *("adapt", str(model), "--out", str(out), "--text", f"text:{text}", "--seq-len", "16"),
        *("--eval-sequences", "4", "--steps", "4", "--record-every", "2", "--no-progress", "--threads", "1", *extra),
    ]


def refusal(capsys, args: list[str]) -> str:
    """The one line ``oversmooth ARGS`` prints as it exits 2."""
    code = main(args)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    return lines[0]


def best_in_csv(path, method: str) -> float | None:
    """The largest swept value of ``method`` within budget in analyze's ``frontier.csv``, by hand."""
    with open(path) as handle:
        rows = [r for r in csv.DictReader(handle) if r["method"] == method and float(r["value"]) != 0]
    fits = [float(r["value"]) for r in rows if r["within_budget"] == "True"]
    return max(fits, key=abs, default=None)


def test_several_methods_with_frontier_knobs_and_a_ramp_beside_one_control(bert, text, tmp_path, monkeypatch, capsys):
    # de-escalation swept only where it breaks the model (tau 0.5: output cosine 0.90; 1: 0.69): no arm
    entry = registry.METHODS["deescalate"]
    monkeypatch.setitem(registry.METHODS, "deescalate", dataclasses.replace(entry, sweep={"tau": (0.5, 1.0)}))
    loads, batches, current, seconds = [], {}, [], {}
    load_before, step_before, run_arm_before = hf_load.load, loop.optimizer_step, adapt_run._run_arm

    def load(*args, **kwargs):
        loads.append(args[0])
        return load_before(*args, **kwargs)

    def run_arm(config, source, task, env, folder, arm, *rest):
        current.append(arm.name)
        return run_arm_before(config, source, task, env, folder, arm, *rest)

    def optimizer_step(runner, model, task, inputs, targets, *rest):
        batches.setdefault(current[-1], []).append(inputs.clone())
        started = time.perf_counter()
        try:
            return step_before(runner, model, task, inputs, targets, *rest)
        finally:
            seconds.setdefault(current[-1], []).append(time.perf_counter() - started)

    monkeypatch.setattr(hf_load, "load", load)
    monkeypatch.setattr(adapt_run, "_run_arm", run_arm)
    monkeypatch.setattr(loop, "optimizer_step", optimizer_step)
    out = tmp_path / "a"
    assert main(adapt_args(bert, text, out, "--method", METHODS, "--knobs", "frontier", "--ramp", "2")) == 0
    printed = capsys.readouterr().out
    assert loads == [str(bert)]  # the weights loaded once; every arm a copy
    stored = json.loads((out / "adapt.json").read_text())
    frontier = json.loads((out / "frontier.json").read_text())
    arms = list(stored["arms"])

    # the frontier's knobs equal those the recorded analyze command reports, worked out from its frontier.csv
    analyzed = tmp_path / "analyze"
    assert main([*shlex.split(frontier["command"])[1:], "--out", str(analyzed), "--no-progress"]) == 0
    chosen = {m: frontier["methods"][m][0]["value"] for m in ("neutreno", "contranorm", "deescalate")}
    assert chosen == {m: best_in_csv(analyzed / "frontier.csv", m) for m in chosen}
    assert chosen["neutreno"] is not None and chosen["contranorm"] is not None and chosen["deescalate"] is None
    with open(analyzed / "frontier.csv") as handle:  # the frontier has values out of budget too: the choice is one
        assert {r["within_budget"] for r in csv.DictReader(handle) if r["method"] == "neutreno"} == {"True", "False"}
    lam, s = chosen["neutreno"], chosen["contranorm"]
    assert arms == ["control", f"neutreno-lam{lam:g}", f"contranorm-s{s:g}"]  # layerscale at gamma 1: the control
    assert stored["arms"][f"contranorm-s{s:g}"]["knobs"] == {"s": s, "tau": 1.0}  # its other knob at the default

    # one control, every arm on the same batches in the same order (the control takes no step: lr 0)
    assert list(batches) == arms and all(len(b) == 4 for b in batches.values())
    for name in arms[1:]:
        assert all((a == b).all() for a, b in zip(batches[name], batches["control"])), name
    assert not (batches["control"][0] == batches["control"][1]).all()  # an order, not one batch again
    # the ramp: each patched arm's knob in force at step 2 is its value (0 at the first step)
    for name in arms[1:3]:
        assert [r.get("knobs_in_force") for r in stored["arms"][name]["rows"]][1:] == [
            {k: v for k, v in stored["arms"][name]["knobs"].items() if k != "tau"}
        ] * 2

    # the report: which knob each arm got and why, the method left without an arm, the tradeoff by hand
    report = (out / "report.md").read_text()
    assert f"the largest lam of analyze's grid (0.05, 0.1, 0.2, 0.4, 0.6, 1) within the budget: lam {lam:g}" in report
    assert "- deescalate: no tau of analyze's grid (0.5, 1) stays within the budget" in report
    assert "- layerscale: analyze --sweep sweeps no knob of it" in report
    assert "layerscale left out: at gamma 1, its off setting, the patch leaves the model as it is" in report
    assert frontier["command"] in report and (out / "tradeoff.png").stat().st_size > 0
    control, table = stored["arms"]["control"], report.split("## Similarity against quality")[1]
    drops = {}
    for name in arms[1:]:
        arm = stored["arms"][name]
        removed = control["cos_sim_last"] - arm["cos_sim_last"]
        lost = control["val"]["output_cosine"] - arm["val"]["output_cosine"]
        start_removed = control["start_cos_sim_last"] - arm["start_cos_sim_last"]
        row = next(line for line in table.splitlines() if line.startswith(f"| {name} |")).split(" | ")
        assert row[2] == f"{start_removed:.3f} -> {removed:.3f}"
        assert row[4].endswith(f"-> {lost:.4g}")
        assert row[5].endswith(f"-> {removed / lost:.3g}" if lost > 0 else "-> no loss")
        if arm["val"]["output_cosine"] >= 0.95:  # the verdict's budget for an encoder
            drops[name] = removed
    top = max(drops, key=drops.get, default=None)
    if top is not None and drops[top] >= 0.01:
        assert f"Largest similarity drop within the quality budget after adaptation: {top}," in report
        assert f"adaptation: {top}," in printed
    else:
        assert "No arm" in report

    # the cost: seconds per step at least the optimiser steps' own time, at most the arm's wall time per step;
    # memory watched over each arm; the report's ratios to the control worked out by hand
    cost = report.split("## Cost per arm, against the control")[1]
    for name in arms:
        arm = stored["arms"][name]
        assert sum(seconds[name]) / 4 <= arm["seconds_per_step"] <= arm["wall_seconds"] / 4
        assert arm["memory"]["measure"] == "resident memory of the process (RSS)"
        assert 0 < arm["memory"]["start_mib"] <= arm["memory"]["peak_mib"]
        added = arm["memory"]["peak_mib"] - arm["memory"]["start_mib"]
        row = next(line for line in cost.splitlines() if line.startswith(f"| {name} |")).split(" | ")
        assert row[2] == f"{arm['seconds_per_step'] / control['seconds_per_step']:.3f}"
        control_added = control["memory"]["peak_mib"] - control["memory"]["start_mib"]
        assert row[6].rstrip(" |") == f"{added / control_added:.3f}"

    # resumable arm by arm: cut after the third arm, rerun: the frontier and the first arms are kept
    written = lambda folder: {p: p.stat().st_mtime_ns for p in folder.rglob("[!.]*") if p.is_file()}  # noqa: E731
    kept = written(out / "arms" / arms[1])
    frontier_written = (out / "frontier.json").stat().st_mtime_ns
    (out / "adapt.json").unlink()
    for name in ("metrics.jsonl", "results.json"):
        (out / "arms" / arms[-1] / name).unlink()
    assert main(adapt_args(bert, text, out, "--method", METHODS, "--knobs", "frontier", "--ramp", "2")) == 0
    assert written(out / "arms" / arms[1]) == kept
    assert (out / "frontier.json").stat().st_mtime_ns == frontier_written
    again = json.loads((out / "adapt.json").read_text())
    for arm in (*stored["arms"].values(), *again["arms"].values()):
        arm.pop("wall_seconds")
    for arm in (stored["arms"][arms[-1]], again["arms"][arms[-1]]):  # trained again: timed again
        arm.pop("seconds_per_step"), arm.pop("memory")
    assert again == stored  # the arms kept keep their cost (memory.json)


def test_all_patchable_lists_what_the_model_takes_and_says_why_not_the_rest(bert, text, tmp_path):
    neox = save_tiny("gpt_neox", tmp_path / "neox")  # attention and MLP in parallel: no stream for ContraNorm
    config = AdaptConfig(model=str(neox), text=f"text:{text}", seq_len=16, method="all-patchable", ramp=2)
    methods, left_out = methods_of(config, PretrainedSource(config))
    assert methods == ("attnscale", "neutreno", "featscale", "deescalate", "layerscale", "sink_removal", "massive_clip")
    assert set(left_out) == {"contranorm", "sigma_reparam", "gated_attention"}
    assert "in parallel" in left_out["contranorm"] and "nothing to ramp" in left_out["sigma_reparam"]
    assert "nothing to ramp" in left_out["gated_attention"]
    config = AdaptConfig(model=str(bert), text=f"text:{text}", seq_len=16, method="all-patchable", lora=2)
    assert methods_of(config, PretrainedSource(config))[1].keys() == {"sigma_reparam"}  # LoRA adapts its weights


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--method", "neutreno,bogus"], "unknown mitigation 'bogus'"),
        (["--method", " , "], "--method names no method"),
        (["--method", "neutreno,neutreno"], "--method names neutreno twice"),
        (["--method", "neutreno,all-patchable"], "all-patchable stands alone"),
        (["--method", "neutreno,rezero"], "rezero cannot be patched into a pretrained model"),
        (["--method", "neutreno,sigma_reparam", "--ramp", "2"], "sigma_reparam has nothing to ramp"),
        (["--method", "neutreno,contranorm", "--ramp", "5"], "--ramp 5 is longer than --steps 4"),
        (["--method", "neutreno,contranorm", "--omega", "0.1"], "add attnscale to --method"),
        (["--knobs", "frontier", "--lam", "0.2"], "--lam and --knobs frontier both set knobs"),
        (["--method", "layerscale"], "--method layerscale would train no arm: at gamma 1, its off setting"),
        (["--lam", "0"], "--method neutreno would train no arm: at lam 0, its off setting"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(extra, words, bert, text, tmp_path, capsys):
    out = tmp_path / "out"
    assert words in refusal(capsys, adapt_args(bert, text, out, *extra))
    assert not out.exists()


def test_a_method_that_cannot_patch_the_model_is_named_with_the_reason(text, tmp_path, capsys):
    neox = save_tiny("gpt_neox", tmp_path / "neox")
    line = refusal(capsys, adapt_args(neox, text, tmp_path / "out", "--method", "neutreno,contranorm"))
    assert "contranorm edits the stream after the attention residual add" in line and "in parallel" in line
    assert not (tmp_path / "out").exists()


def test_frontier_knobs_are_refused_for_a_train_run(vit_run, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "out"
    args = ["adapt", str(vit_run), "--out", str(out), "--knobs", "frontier", "--batch-size", "16", "--steps", "2"]
    assert "--knobs frontier reads the frontier of `oversmooth analyze --sweep`" in refusal(capsys, args)
    assert not out.exists()


def test_knob_flags_make_each_methods_arms_and_the_config_keeps_its_old_form():
    parser = build_parser()
    several = config_of(
        parser.parse_args(
            ["adapt", "--out", "x", "--method", "neutreno,contranorm,layerscale", "--lam", "0.2,0.6"]
            + ["--contranorm-s", "0.1", "--contranorm-tau", "0.5,2"]
        )
    )
    assert several.knobs == {
        "neutreno": ({"lam": 0.2}, {"lam": 0.6}),
        "contranorm": ({"s": 0.1, "tau": 0.5}, {"s": 0.1, "tau": 2}),
    }
    assert several.knobs_of("layerscale") == ({},) and several.check() is several
    assert AdaptConfig.from_dict(json.loads(json.dumps(several.to_dict()))) == several
    one = config_of(parser.parse_args(["adapt", "--out", "x", "--lam", "0.2,0.6"]))
    assert one.knobs == ({"lam": 0.2}, {"lam": 0.6}) and one.to_dict()["knobs"] == [{"lam": 0.2}, {"lam": 0.6}]
    plain = config_of(parser.parse_args(["adapt", "--out", "x", "--method", "neutreno,contranorm"]))
    assert plain.knobs == ({},) and plain.method_names() == ("neutreno", "contranorm")


def test_an_arm_that_would_repeat_the_control_is_left_out_with_why(bert, text, vit_run):  # noqa: F811
    """A pretrained model's patch at its off setting (NeuTRENO at lambda 0) is the model itself and
    trains nothing: no arm, the report's note says why; a train run keeps an arm asked for by its knobs
    (whether it repeats the control there depends on the run's method and on learnable knobs)."""
    knobs = ({"lam": 0.0}, {"lam": 0.2})
    config = AdaptConfig(model=str(bert), text=f"text:{text}", seq_len=16, knobs=knobs)
    arms, notes = plan_arms(config, PretrainedSource(config), ("neutreno",), {}, None)
    assert [a.name for a in arms] == ["control", "neutreno-lam0.2"]
    assert "neutreno-lam0 left out: at lam 0, its off setting, the patch leaves the model as it is" in notes["neutreno"]
    config = AdaptConfig(model=str(vit_run), knobs=knobs, batch_size=16)
    arms, _ = plan_arms(config, open_source(config), ("neutreno",), {}, None)
    assert [a.name for a in arms] == ["control", "neutreno-lam0", "neutreno-lam0.2"]


def test_frontier_from_reads_another_adaptations_sweep_and_refuses_another_setting(
    bert, text, tmp_path, capsys, monkeypatch
):
    """``--frontier-from``: the knobs of an earlier adaptation's frontier.json, with no sweep run (the
    sweep would raise here); a frontier of another text, one lacking a method, or the flag without
    ``--knobs frontier`` is refused in one line, nothing written."""
    first = tmp_path / "first"
    quick = ("--method", "neutreno,contranorm", "--knobs", "frontier", "--steps", "2", "--record-every", "2")
    assert main(adapt_args(bert, text, first, *quick)) == 0
    swept = json.loads((first / "frontier.json").read_text())

    def no_sweep(*args):
        raise AssertionError("the sweep ran again")

    monkeypatch.setattr(frontier_knobs, "frontier", no_sweep)
    again = tmp_path / "again"
    one = ("--method", "neutreno", "--knobs", "frontier", "--steps", "2", "--record-every", "2")
    assert main(adapt_args(bert, text, again, *one, "--frontier-from", str(first / "frontier.json"))) == 0
    kept = json.loads((again / "frontier.json").read_text())
    assert kept["methods"] == {"neutreno": swept["methods"]["neutreno"]} and kept["command"] == swept["command"]
    lam = swept["methods"]["neutreno"][0]["value"]
    assert list(json.loads((again / "adapt.json").read_text())["arms"]) == ["control", f"neutreno-lam{lam:g}"]

    capsys.readouterr()  # the runs' logs
    other = tmp_path / "other.txt"
    other.write_text(prose([150] * 40, seed=1))
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(swept | {"command": swept["command"].replace(str(text), str(other))}))
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(swept | {"command": "oversmooth analyze --sweep"}))
    cases = [
        (["--frontier-from", str(moved)], "it swept another setting"),
        (["--frontier-from", str(damaged)], "damaged.json is damaged (its command names no --methods)"),
        (["--method", "neutreno,deescalate", "--frontier-from", str(first / "frontier.json")], "it lacks deescalate"),
        (["--frontier-from", str(tmp_path / "none.json")], "none.json"),
    ]
    for extra, words in cases:
        out = tmp_path / "refused"
        base = one if "--method" not in extra else one[2:]  # extra names its own methods
        assert words in refusal(capsys, adapt_args(bert, text, out, *base, *extra)), extra
        assert not out.exists()
    column = AdaptConfig(text="text:notes.csv", text_column="body")  # the column is part of the sweep's identity
    swept_column = frontier_knobs.command(column, ("neutreno",))
    assert "--text text:notes.csv --text-column body --methods neutreno" in swept_column
    plain = ["--frontier-from", str(first / "frontier.json"), "--lam", "0.2"]
    assert "--frontier-from is read by --knobs frontier only" in refusal(capsys, adapt_args(bert, text, out, *plain))
