"""``oversmooth adapt --ramp N``: the patched arm's knobs grow linearly from the method's off
setting to their values over the first N steps. Checked against the schedule written out by hand,
the knob read off the model at every step and evaluation, a model patched (or built) afresh at
the same knobs with the same weights, an adaptation without the flag, and an uninterrupted run."""

import json
from pathlib import Path

import pytest
import torch
from hf_tiny import prose, save_tiny, save_tiny_with_head
from test_adapt import vit_run  # noqa: F401 (a fixture: a tiny finished train run)

import oversmooth.adapt.run as adapt_run
import oversmooth.train.loop as loop
from oversmooth.adapt import AdaptConfig, adapt
from oversmooth.cli import main
from oversmooth.hf.patch import patch


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return save_tiny("bert", tmp_path_factory.mktemp("bert") / "bert")


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    path = tmp_path_factory.mktemp("text") / "text.txt"
    path.write_text(prose([150] * 40))
    return path


# (source, method, knob, value): NeuTRENO patched into a pretrained encoder, de-escalation built
# into our own ViT (its tau a buffer: a state-dict entry, saved with every checkpoint)
SOURCES = [("pretrained", "neutreno", "lam", 1.0), ("train run", "deescalate", "tau", 0.6)]


def config(source, method, knob, value, out, model, **settings):
    extra = {"batch_size": 16} if source == "train run" else {"text": f"text:{model[1]}", "seq_len": 16}
    return AdaptConfig(
        model=str(model[0]),
        out=str(out),
        method=method,
        knobs=({knob: value},),
        steps=6,
        record_every=1,
        eval_sequences=4,
        progress=False,
        threads=1,
        **extra,
        **settings,
    )


def held(model, method, knob) -> float:
    """The knob the patched arm ``model`` computes with now, read off the model itself."""
    state = getattr(model, "base", None) and model.base.__dict__.get("_oversmooth_patch")
    if state is not None:  # a pretrained model: the knobs its patch was built with
        return float(getattr(state.knobs[method], knob))
    from oversmooth.mitigations.registry import method as entry

    attribute = entry(method).attribute
    values = {float(getattr(m, knob)) for path, m in model.named_modules() if path.rpartition(".")[2] == attribute}
    assert len(values) == 1, values
    return values.pop()


def hand(step: int, ramp: int, value: float) -> float:
    """The linear schedule written out: 0 (the off setting) at step 0, ``value`` from ``ramp`` on."""
    return value * min(step, ramp) / ramp


@pytest.fixture
def model_of(vit_run, bert, text):  # noqa: F811
    return lambda source: (vit_run, None) if source == "train run" else (bert, text)


@pytest.mark.parametrize("source, method, knob, value", SOURCES)
def test_the_knob_in_force_follows_the_linear_schedule(source, method, knob, value, model_of, tmp_path, monkeypatch):
    trained, scored = [], []  # (steps done before it, knob) of each optimiser step; (step, knob) of each evaluation
    step_before, evaluate_before = loop.optimizer_step, loop.evaluate

    def optimizer_step(runner, model, *args):
        if held_patch(model):
            trained.append(held(model, method, knob))
        return step_before(runner, model, *args)

    def evaluate(model, task, split, *args):
        if held_patch(model) and split == "val":
            scored.append(held(model, method, knob))
        return evaluate_before(model, task, split, *args)

    def held_patch(model) -> bool:
        try:
            held(model, method, knob)
            return True
        except (AttributeError, AssertionError):
            return False

    start = []
    start_before = adapt_run.evaluate
    monkeypatch.setattr(loop, "optimizer_step", optimizer_step)
    monkeypatch.setattr(loop, "evaluate", evaluate)
    monkeypatch.setattr(
        adapt_run,
        "evaluate",
        lambda model, *a: (held_patch(model) and start.append(held(model, method, knob))) or start_before(model, *a),
    )
    result = adapt(config(source, method, knob, value, tmp_path / "a", model_of(source), ramp=4))

    # the ramp over 4 of 6 steps, as the model held it (our ViT holds tau in a float32 buffer)
    as_held = (lambda v: float(torch.tensor(v, dtype=torch.float32))) if source == "train run" else float
    assert trained == pytest.approx([as_held(hand(s, 4, value)) for s in range(6)], abs=1e-12)
    assert [trained[0], trained[2], trained[4], trained[5]] == pytest.approx(
        [0.0, as_held(value / 2), *[as_held(value)] * 2]
    )
    assert trained[4] == as_held(value) and trained[5] == as_held(value)  # the target's own number, no rounding of it
    # evaluations: step 0 (patched, before adaptation) at the target; step s at the knob in force at s
    assert start[-1] == as_held(value)
    assert scored == pytest.approx([as_held(hand(s, 4, value)) for s in range(1, 7)], abs=1e-12)
    stored = json.loads((tmp_path / "a" / "adapt.json").read_text())
    assert stored["config"]["ramp"] == 4
    rows = stored["arms"][f"{method}-{knob}{value:g}"]["rows"]
    assert [r["knobs_in_force"][knob] for r in rows] == pytest.approx(
        [value, *(hand(s, 4, value) for s in range(1, 7))], abs=1e-12
    )
    assert "knobs_in_force" not in stored["arms"]["control"]["rows"][0]
    report = (tmp_path / "a" / "report.md").read_text()
    assert "Ramped over the first 4 steps" in report and f"| {knob} {value / 2:.4g} |" in report
    csv = (tmp_path / "a" / "adapt.csv").read_text().splitlines()
    assert csv[0].split(",")[3] == "knobs_in_force"
    assert result.arms[f"{method}-{knob}{value:g}"].rows[2]["knobs_in_force"] == {knob: pytest.approx(value / 2)}


def _outputs(model, inputs) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        return model(inputs)


def _patched_afresh(source, arm, inputs, lam: float) -> torch.Tensor:
    """The outputs of ``arm``'s weights loaded into a fresh copy of the model, patched at ``lam``."""
    again = source.arm(None)
    again.model.load_state_dict(arm.model.state_dict())
    patch(again.base, "neutreno", lam=lam)
    return _outputs(again, inputs)


@pytest.mark.parametrize("lora", [0, 2])
def test_a_pretrained_arm_re_patched_by_the_ramp_computes_what_a_fresh_patch_does(lora, bert, text, tmp_path):
    """Each ramp step re-patches the model: the same parameters (objects and values), the
    optimiser's state still theirs, and outputs equal to the same weights patched afresh at the
    knob of that step, the target after the ramp. Whole model and LoRA."""
    from oversmooth.adapt.pretrained import PretrainedSource

    cfg = config("pretrained", "neutreno", "lam", 1.0, tmp_path / "a", (bert, text), ramp=4, lora=lora)
    source = PretrainedSource(cfg)
    knobs = source.resolve("neutreno", {"lam": 1.0})
    arm, inputs = source.arm("neutreno", knobs), torch.randint(5, 40, (2, 12))
    target = _outputs(arm, inputs)
    optimizer = torch.optim.AdamW([p for p in arm.parameters() if p.requires_grad], lr=1e-3)
    arm.train()
    arm(inputs).float().pow(2).mean().backward()
    optimizer.step()  # moments to keep
    parameters = {name: id(p) for name, p in arm.named_parameters()}
    weights = {k: v.clone() for k, v in arm.state_dict().items()}
    moments = {id(p): {k: v.clone() for k, v in s.items()} for p, s in optimizer.state.items()}
    ramp = source.ramp(arm, "neutreno", knobs)
    for step, lam in ((0, 0.0), (2, 0.5), (3, 0.75), (4, 1.0), (6, 1.0)):
        ramp(step)
        torch.testing.assert_close(_outputs(arm, inputs), _patched_afresh(source, arm, inputs, lam), rtol=0, atol=0)
    # the knob shows in the outputs
    assert not torch.equal(_patched_afresh(source, arm, inputs, 0.5), _patched_afresh(source, arm, inputs, 1.0))
    assert {name: id(p) for name, p in arm.named_parameters()} == parameters  # the same objects
    assert all(torch.equal(v, weights[k]) for k, v in arm.state_dict().items())
    assert set(map(id, optimizer.state)) == set(moments)
    for p, s in optimizer.state.items():
        assert all(torch.equal(v, moments[id(p)][k]) for k, v in s.items())
    assert any("lora_A" in name for name in parameters) == bool(lora)
    # the weights moved since the model was patched at the target: the equal outputs above are no
    # accident of unchanged weights
    assert not torch.equal(_outputs(arm, inputs), target)


def test_a_train_run_arm_set_by_the_ramp_computes_what_a_model_built_at_that_knob_does(vit_run, tmp_path):  # noqa: F811
    from oversmooth.adapt.train_run import TrainRunSource
    from oversmooth.train.saved_run import saved_run

    cfg = config("train run", "deescalate", "tau", 0.6, tmp_path / "a", (vit_run, None), ramp=4)
    source = TrainRunSource(cfg, saved_run(vit_run))
    arm = source.arm("deescalate", {"tau": 0.6})
    with torch.no_grad():
        for p in arm.parameters():
            p.add_(0.01 * torch.randn_like(p))  # weights of its own, as after some steps
    images = torch.randn(3, *source.task().batch("val", torch.arange(1))[0].shape[1:])
    ramp = source.ramp(arm, "deescalate", {"tau": 0.6})
    own = {k: v for k, v in arm.state_dict().items() if not k.endswith(".tau")}  # its weights, not its knob
    for step, tau in ((0, 0.0), (2, 0.3), (4, 0.6), (5, 0.6)):
        ramp(step)
        built = source.arm("deescalate", {"tau": tau})
        missing, unexpected = built.load_state_dict(own, strict=False)
        assert not unexpected and all(k.endswith(".tau") for k in missing)
        torch.testing.assert_close(_outputs(arm, images), _outputs(built, images), rtol=0, atol=0)
    assert sum(k.endswith(".tau") for k in arm.state_dict()) > 0  # the knob is a buffer, and was set in place


def _numbers(folder):
    """adapt.json without its timings and memory, its own folder and its provenance (the command differs)."""
    stored = json.loads((folder / "adapt.json").read_text())
    stored["config"].pop("out")
    stored.pop("provenance")
    for arm in stored["arms"].values():
        arm.pop("wall_seconds"), arm.pop("seconds_per_step"), arm.pop("memory")
    return stored


def test_ramp_0_is_no_ramp(vit_run, tmp_path, capsys):  # noqa: F811
    base = [str(vit_run), "--steps", "4", "--record-every", "2", "--batch-size", "16", "--no-progress"]
    base += ["--method", "deescalate", "--tau", "0.6", "--threads", "1"]
    assert main(["adapt", *base, "--out", str(tmp_path / "none")]) == 0
    assert main(["adapt", *base, "--out", str(tmp_path / "zero"), "--ramp", "0"]) == 0
    assert main(["adapt", *base, "--out", str(tmp_path / "two"), "--ramp", "2"]) == 0
    none, zero, two = (_numbers(tmp_path / name) for name in ("none", "zero", "two"))
    assert zero == none and "ramp" not in zero["config"]
    assert "knobs_in_force" not in json.dumps(zero)
    assert (tmp_path / "zero" / "report.md").read_text().count("Ramped") == 0
    # the comparison can fail: a ramp changes the patched arm's numbers (the control's stay)
    assert two["arms"]["control"] == none["arms"]["control"]
    assert (
        two["arms"]["deescalate-tau0.6"]["rows"][1]["val_loss"]
        != none["arms"]["deescalate-tau0.6"]["rows"][1]["val_loss"]
    )


def refusal(capsys, args: list[str]) -> str:
    code = main(["adapt", *args, "--no-progress", "--device", "cpu"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    return lines[0]


def test_bad_ramps_exit_2_with_one_line_and_write_nothing(vit_run, bert, capsys, tmp_path):  # noqa: F811
    out = tmp_path / "out"
    run = [str(vit_run), "--out", str(out), "--batch-size", "16", "--steps", "4"]
    pretrained = [str(bert), "--out", str(out), "--text", "sample", "--seq-len", "16", "--steps", "4"]
    cases = [
        (run + ["--ramp", "-1"], "--ramp must be a whole number >= 0, got -1"),
        (run + ["--ramp", "5"], "--ramp 5 is longer than --steps 4; ramp over at most 4 steps"),
        (pretrained + ["--ramp", "5"], "--ramp 5 is longer than --steps 4"),
        (
            pretrained + ["--method", "sigma_reparam", "--ramp", "2"],
            "--ramp 2: sigma_reparam has nothing to ramp: it has no off setting",
        ),
        (
            run + ["--method", "attnscale", "--ramp", "2"],
            "--ramp 2: attnscale has nothing to ramp: in an `oversmooth train` run's model it learns omega",
        ),
        (
            run + ["--method", "deescalate", "--tau-learnable", "True", "--ramp", "2"],
            "deescalate's tau is a learned parameter",
        ),
    ]
    for args, words in cases:
        line = refusal(capsys, args)
        assert words in line, line
        assert not out.exists()


class Killed(Exception):
    pass


@pytest.mark.parametrize("source, method, knob, value", [*SOURCES, ("train run", "neutreno", "lam", 1.0)])
def test_a_ramp_cut_mid_way_resumes_bit_identical(source, method, knob, value, model_of, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from oversmooth.hf.load import resolve

    whole = adapt(config(source, method, knob, value, tmp_path / "whole", model_of(source), ramp=4))
    record_before = loop._Run.end_epoch

    def end_epoch(run, *args):
        record_before(run, *args)  # scored and checkpointed at this step
        if run.step == 2 and run.out_dir.name != "control":
            raise Killed

    monkeypatch.setattr(loop._Run, "end_epoch", end_epoch)
    cut = config(source, method, knob, value, tmp_path / "cut", model_of(source), ramp=4)
    with pytest.raises(Killed):
        adapt(cut)
    arm = f"{method}-{knob}{value:g}"
    from oversmooth.train import load_checkpoint

    assert load_checkpoint(tmp_path / "cut" / "arms" / arm / "checkpoint.pt")["step"] == 2  # mid-ramp
    monkeypatch.setattr(loop._Run, "end_epoch", record_before)
    again = adapt(cut)
    for name in ("control", arm):  # read as the loader reads them: through a distillation control's reference
        first, second = (
            load_file(resolve(str(f / "arms" / name / "model")).path / "model.safetensors")
            for f in (tmp_path / "whole", tmp_path / "cut")
        )
        assert first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)
        assert again.arms[name].rows == whole.arms[name].rows
        assert again.arms[name].test == whole.arms[name].test


def test_an_arm_restored_from_its_records_is_returned_not_retrained(text, tmp_path, monkeypatch):
    """A new machine holds only a finished arm's ``ARM_RECORDS`` (its weights were not kept): the
    rerun returns that arm as the uninterrupted run scored it, writes it no model (an untrained one
    would pass for adapted), and trains the arm that had not finished to the same weights."""
    import shutil

    from safetensors.torch import load_file

    model = (save_tiny_with_head("llama", tmp_path / "llama"), text)  # a causal LM: its control trains
    whole = adapt(config("pretrained", "neutreno", "lam", 1.0, tmp_path / "whole", model, ramp=4))
    restored = config("pretrained", "neutreno", "lam", 1.0, tmp_path / "restored", model, ramp=4)
    (tmp_path / "restored" / "arms" / "control").mkdir(parents=True)
    shutil.copy(tmp_path / "whole" / adapt_run.CONFIG_FILE, tmp_path / "restored")
    for name in adapt_run.ARM_RECORDS:
        shutil.copy(tmp_path / "whole" / "arms" / "control" / name, tmp_path / "restored" / "arms" / "control")
    trained, before = [], loop.optimizer_step
    monkeypatch.setattr(
        loop, "optimizer_step", lambda runner, model, *args: trained.append(1) or before(runner, model, *args)
    )
    again = adapt(restored)
    assert len(trained) == 6  # the patched arm's steps only
    assert not (tmp_path / "restored" / "arms" / "control" / "model").exists()
    for name in whole.arms:
        assert again.arms[name].rows == whole.arms[name].rows and again.arms[name].test == whole.arms[name].test
    first, second = (
        load_file(f / "arms" / "neutreno-lam1" / "model" / "model.safetensors")
        for f in (tmp_path / "whole", tmp_path / "restored")
    )
    assert all(torch.equal(first[k], second[k]) for k in first)
    memory = tmp_path / "restored" / "arms" / "control" / adapt_run.MEMORY_FILE
    memory.unlink()  # as if cut between the arm's results and its memory: a rerun completes its records
    (tmp_path / "restored" / adapt_run.RESULT_FILE).unlink()
    assert adapt(restored).arms["control"].rows == whole.arms["control"].rows and json.loads(memory.read_text()) is None
    script = Path(__file__).resolve().parents[1] / "scripts" / "smollm2_8_fair.sh"  # archives these per arm
    assert f'ARM_RECORDS="{" ".join(adapt_run.ARM_RECORDS)}"' in script.read_text()


def test_help_shows_the_flag():
    from oversmooth.cli import build_parser

    parser = build_parser()
    subparsers = next(action for action in parser._actions if action.dest == "command")
    text = " ".join(subparsers.choices["adapt"].format_help().split())
    assert "--ramp N bring the patch in over the first N steps" in text and "(default 0:" in text
    from oversmooth.cli.adapt import config_of

    assert config_of(parser.parse_args(["adapt", "--out", "x", "--ramp", "3"])).ramp == 3
