"""``oversmooth adapt``: our own train runs (the claim-8 path), tiny pretrained models (causal LM,
distillation, LoRA), the saved patch, refusals. Each is checked against an independent reference:
a hand-written forward and loss, transformers' own loss, peft's own merge."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hf_tiny import ESSAY_WORDS, prose, save_tiny, save_tiny_with_head

from oversmooth.adapt import AdaptConfig, adapt, adapt_arms
from oversmooth.adapt.result import AdaptResult
from oversmooth.errors import UsageError
from oversmooth.train.run import run
from oversmooth.train.run_spec import RunSpec

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture(scope="module")
def vit_run(tmp_path_factory):
    """A tiny finished `oversmooth train` ViT run on the synthetic task."""
    out = tmp_path_factory.mktemp("run") / "vit"
    run(
        RunSpec(
            task="synthetic",
            model="vit",
            epochs=2,
            depth=2,
            width=16,
            heads=2,
            batch_size=32,
            out=str(out),
            device="cpu",
            progress=False,
            compile="off",
        )
    )
    return out


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    """~23 kB of in-vocabulary text with structure a tiny LM can learn."""
    path = tmp_path_factory.mktemp("text") / "text.txt"
    path.write_text(prose([150] * 40))
    return path


def small(out, model, **settings):
    return AdaptConfig(
        **{"model": str(model), "out": str(out), "steps": 4, "record_every": 2, "progress": False, **settings}
    )


def test_train_run_arms_share_weights_schedule_and_report_everything(vit_run, tmp_path):
    from oversmooth.models import ViT, load_model

    result = adapt(small(tmp_path / "a", vit_run, knobs=({"lam": 0.6}, {"lam": 1.0}), batch_size=16))
    stored = json.loads((tmp_path / "a" / "adapt.json").read_text())
    assert list(stored["arms"]) == ["control", "neutreno-lam0.6", "neutreno-lam1"]
    for name, arm in stored["arms"].items():
        assert arm["steps"] == 4 and arm["status"] == "completed"
        assert [r["step"] for r in arm["rows"]] == [0, 2, 4]
        assert set(arm["test"]) == {"loss", "accuracy"} and arm["cos_sim_last"] is not None
        assert arm["wall_seconds"] > 0
    assert stored["config"]["lr"] == pytest.approx(1e-4)  # a tenth of the run's 1e-3
    # a finished arm keeps its model, not its training checkpoint (resume needs it only while it runs)
    arms = sorted((tmp_path / "a" / "arms").iterdir())
    assert [a.name for a in arms] == ["control", "neutreno-lam0.6", "neutreno-lam1"]
    assert all((a / "model" / "model.safetensors").is_file() for a in arms)
    assert not [p.name for p in (tmp_path / "a").rglob("*.pt")]
    from oversmooth.data import synthetic_images

    # the run's own splits, counted from the data set itself: images, no tokens
    assert stored["data"] == {split: {"examples": len(images.images)} for split, images in synthetic_images().items()}

    # independent reference: the patched arm's start is the run's weights in a NeuTRENO ViT,
    # scored by hand on the run's own validation split
    saved = load_model(vit_run / "model")
    cfg = type(saved.cfg).from_dict({**saved.cfg.to_dict(), "mitigation": {"methods": ["neutreno"], "lam": 0.6}})
    patched = ViT(cfg).eval()
    patched.load_state_dict(saved.state_dict())
    from oversmooth.train.task_factory import make_task

    task = make_task("synthetic", "vit")[0]
    images, labels = task.batch("val", torch.arange(task.size("val")))
    with torch.no_grad():
        expected = F.cross_entropy(patched(images), labels).item()  # scores: plain cross-entropy
    assert result.arms["neutreno-lam0.6"].start["loss"] == pytest.approx(expected, rel=1e-5)

    # the adapted model loads again with its method, and its test score is the one reported
    adapted = load_model(tmp_path / "a" / "arms" / "neutreno-lam0.6" / "model")
    assert adapted.cfg.mitigation.name == "neutreno" and adapted.cfg.mitigation.lam == 0.6
    images, labels = task.batch("test", torch.arange(task.size("test")))
    with torch.no_grad():
        test_loss = F.cross_entropy(adapted(images), labels).item()
    assert result.arms["neutreno-lam0.6"].test["loss"] == pytest.approx(test_loss, rel=1e-5)

    # a finished adaptation rerun does nothing: same result, files untouched
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "a").rglob("*") if p.is_file()}
    assert (
        adapt(small(tmp_path / "a", vit_run, knobs=({"lam": 0.6}, {"lam": 1.0}), batch_size=16)).to_dict()
        == result.to_dict()
    )
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "a").rglob("*") if p.is_file()} == before


def test_control_arm_is_the_plain_continuation(vit_run, tmp_path):
    """The control arm equals a hand-written AdamW loop over the same batches and schedule."""
    from oversmooth.models import load_model
    from oversmooth.train.loop import epoch_order
    from oversmooth.train.task_factory import make_task

    adapt(small(tmp_path / "a", vit_run, batch_size=16, warmup=0.25))
    model = load_model(vit_run / "model").train()
    task = make_task("synthetic", "vit")[0]
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.05}, {"params": rest, "weight_decay": 0.0}], lr=1e-4
    )
    lrs = [1e-4 * f for f in (1.0, 1.0, 0.75, 0.25)]  # warm-up 1 step, then cosine over 3: 1, (1 + cos(pi k/3)) / 2
    order = epoch_order(0, 0, task.size("train"))
    for step in range(4):
        for group in optimizer.param_groups:
            group["lr"] = lrs[step]
        images, labels = task.batch("train", order[step * 16 : (step + 1) * 16])
        loss = F.cross_entropy(model(images), labels, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    control = load_model(tmp_path / "a" / "arms" / "control" / "model")
    for (name, mine), theirs in zip(model.state_dict().items(), control.state_dict().values()):
        torch.testing.assert_close(mine, theirs, msg=name)


def test_causal_lm_objective_scores_as_transformers_does(text_file, tmp_path):
    from transformers import AutoModelForCausalLM

    model_dir = save_tiny_with_head("gpt2", tmp_path / "gpt2")
    result = adapt(small(tmp_path / "a", model_dir, text=f"text:{text_file}", seq_len=16, eval_sequences=6))
    assert result.objective == "causal_lm"
    # reference: transformers' own loss on the held-out blocks, rebuilt from the same text split
    from oversmooth.adapt.text_blocks import documents, token_blocks
    from oversmooth.hf.load import load

    loaded = load(str(model_dir), 6)
    blocks = token_blocks(loaded.tokenizer, documents(f"text:{text_file}")["val"], 16, extra=1, limit=6)
    reference = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    with torch.no_grad():
        loss = reference(input_ids=blocks[:, :-1], labels=blocks[:, :-1].clone()).loss  # shifts inside
        loss = F.cross_entropy(reference(input_ids=blocks[:, :-1]).logits.flatten(0, 1), blocks[:, 1:].flatten())
    assert result.control.start["loss"] == pytest.approx(loss.item(), rel=1e-5)
    # the patched model is saved with its patch: our loader re-applies it, plain transformers refuses
    from oversmooth.hf.patch import patch, patched_method

    saved = tmp_path / "a" / "arms" / "neutreno" / "model"
    again = load(str(saved), 2)
    # a causal LM's default lambda: the paper's LM value (one rule for defaults, mitigations.registry.patch_knobs)
    assert patched_method(again.model) == "neutreno" and again.patch["knobs"] == {"lam": 0.4}
    fresh = patch(AutoModelForCausalLM.from_pretrained(saved, config=again.model.config).eval(), "neutreno", lam=0.4)
    ids = blocks[:2, :-1]
    with torch.no_grad():
        torch.testing.assert_close(again.model(input_ids=ids).logits, fresh(input_ids=ids).logits)
    with pytest.raises(ValueError, match="oversmooth_patched"):
        AutoModelForCausalLM.from_pretrained(saved)


def test_distillation_of_a_headless_encoder_starts_where_the_patch_left_it(text_file, tmp_path):
    from transformers import AutoModel

    from oversmooth.hf.patch import patch

    model_dir = save_tiny("bert", tmp_path / "bert")
    result = adapt(
        small(tmp_path / "a", model_dir, text=f"text:{text_file}", seq_len=16, eval_sequences=4, knobs=({"lam": 1.0},))
    )
    assert result.objective == "distill"
    assert result.control.start["output_cosine"] == pytest.approx(1.0)
    from oversmooth.adapt.text_blocks import documents, token_blocks
    from oversmooth.hf.load import load

    blocks = token_blocks(load(str(model_dir), 4).tokenizer, documents(f"text:{text_file}")["val"], 16, limit=4)
    teacher = AutoModel.from_pretrained(model_dir).eval()
    student = patch(AutoModel.from_pretrained(model_dir).eval(), "neutreno", lam=1.0)
    with torch.no_grad():
        t, s = teacher(input_ids=blocks).last_hidden_state, student(input_ids=blocks).last_hidden_state
    cosine = F.cosine_similarity(t.mean(1).double(), s.mean(1).double(), dim=-1).mean().item()
    assert result.arms["neutreno-lam1"].start["output_cosine"] == pytest.approx(cosine, rel=1e-5)
    assert result.arms["neutreno-lam1"].start["loss"] == pytest.approx(
        (1 - F.cosine_similarity(s, t, dim=-1)).mean().item(), rel=1e-4
    )
    # the control is its own teacher, at its objective's minimum: it stays the model, bit for bit
    # (AdamW would step on rounding noise), while the patched arm trains
    assert [r["val_output_cosine"] for r in result.control.rows] == pytest.approx([1.0] * 3, abs=1e-6)
    from safetensors.torch import load_file

    original = load_file(model_dir / "model.safetensors")
    adapted = load_file(tmp_path / "a" / "arms" / "neutreno-lam1" / "model" / "model.safetensors")
    assert not all(torch.equal(original[k], adapted[k]) for k in original)
    # so the control saves no copy: its model refers to its source, and our loader follows the reference
    control = tmp_path / "a" / "arms" / "control" / "model"
    assert [p.name for p in control.iterdir()] == ["same_as.json"]
    loaded = load(str(control), 4).model.state_dict()
    assert all(torch.equal(tensor, loaded[name]) for name, tensor in teacher.state_dict().items())
    assert "refers to the model as it came: its `same_as.json`" in (tmp_path / "a" / "report.md").read_text()


def test_a_reference_to_a_model_that_is_gone_is_named(tmp_path):
    from oversmooth.hf.load import resolve
    from oversmooth.hf.model_reference import write_reference

    source = save_tiny("bert", tmp_path / "bert")
    write_reference(tmp_path / "control", source)
    assert resolve(str(tmp_path / "control")).path == source.resolve()  # what analyze and adapt load
    source.rename(tmp_path / "moved")
    gone = f"^{re.escape(str(tmp_path / 'control'))} stands for {re.escape(str(source.resolve()))} .* which is gone"
    with pytest.raises(UsageError, match=gone):
        resolve(str(tmp_path / "control"))


def test_progress_lines_name_their_arm(vit_run, tmp_path, capsys):
    adapt(small(tmp_path / "a", vit_run, knobs=({"lam": 0.6},), batch_size=16))
    records = [line for line in capsys.readouterr().err.splitlines() if "train_loss" in line]
    assert [line.split("  ")[0] for line in records] == ["control"] * 2 + ["neutreno-lam0.6"] * 2, records


def test_a_verdict_on_four_sequences_warns_on_the_terminal_and_in_the_report(tmp_path, capsys):
    from oversmooth.cli import main

    model_dir = save_tiny("bert", tmp_path / "bert")
    argv = ["adapt", str(model_dir), "--text", "sample", "--seq-len", "16", "--eval-sequences", "4", "--steps", "2"]
    assert main([*argv, "--no-progress", "--out", str(tmp_path / "a")]) == 0
    warning = "the verdict rests on 4 validation sequences, fewer than 8: another sample may reverse it"
    assert f"warning: {warning}" in capsys.readouterr().err
    assert f"**Warning**: {warning}" in (tmp_path / "a" / "report.md").read_text()


def test_a_short_text_is_split_by_characters_and_the_report_counts_its_tokens(tmp_path):
    """A 17 kB essay used to make three 8 kB passages, one per split (train: the remainder, too
    little for one batch of 8); now train holds about 90 % of it and val and test 5 % each."""
    essay = tmp_path / "essay.txt"
    essay.write_text(prose(ESSAY_WORDS))
    model_dir = save_tiny_with_head("gpt2", tmp_path / "gpt2")
    config = small(tmp_path / "a", model_dir, text=f"text:{essay}", seq_len=16, eval_sequences=1000, batch_size=8)
    result = adapt(config)
    # reference: the tiny tokenizer is word-level, so the essay holds as many tokens as words, and a
    # sequence of 16 wraps 14 of them in [CLS] ... [SEP]
    words = len(essay.read_text().split())
    shares = {split: sizes["examples"] * 14 / words for split, sizes in result.data.items()}
    assert 0.87 <= shares["train"] <= 0.93 and all(0.03 <= shares[s] <= 0.07 for s in ("val", "test")), shares
    assert all(sizes["tokens"] == 16 * sizes["examples"] for sizes in result.data.values())
    report = (tmp_path / "a" / "report.md").read_text()
    assert "train {tokens:,} tokens ({examples:,} sequences)".format(**result.data["train"]) in report
    assert "test {tokens:,} tokens".format(**result.data["test"]) in report
    # provenance: the model named relative to the adaptation's folder, never by an absolute path
    assert report.startswith("# Adaptation: neutreno on ../gpt2\n") and str(tmp_path) not in report
    stored = json.loads((tmp_path / "a" / "adapt.json").read_text())
    recorded = stored["provenance"]
    assert recorded["data"]["model"] == "../gpt2" and recorded["data"]["text"] == "text:../essay.txt"
    assert recorded["seeds"] == {"seed": 0} and "adapt_config.json" in recorded["command"]  # the Python API
    arm = json.loads((tmp_path / "a" / "arms" / "control" / "results.json").read_text())
    assert arm["provenance"] == recorded
    del stored["provenance"]  # an adaptation written before provenance was recorded still reads
    assert AdaptResult.from_dict(stored).provenance is None and AdaptResult.from_dict(stored).model


def test_lora_trains_adapters_only_and_saves_them_merged(text_file, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model_dir = save_tiny_with_head("gpt2", tmp_path / "gpt2")
    adapt(small(tmp_path / "a", model_dir, text=f"text:{text_file}", seq_len=16, eval_sequences=4, lora=2))
    original = AutoModelForCausalLM.from_pretrained(model_dir).state_dict()
    control = AutoModelForCausalLM.from_pretrained(tmp_path / "a" / "arms" / "control" / "model").state_dict()
    changed = {name for name, tensor in control.items() if not torch.equal(tensor, original[name])}
    # reference: the modules peft itself targets for GPT-2
    probe = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir), LoraConfig(r=2))
    targets = probe.peft_config["default"].target_modules
    assert changed and all(any(t in name for t in targets) for name in changed)


def test_refusals_write_nothing(vit_run, tmp_path):
    out = tmp_path / "out"
    cases = [
        (small(out, vit_run, steps=0), "steps"),
        (small(out, vit_run, knobs=({"lam": -1.0},)), "lambda"),
        (small(out, vit_run, method="spectral"), "re-parameterises"),
        *((small(out, vit_run, method=m), "from its own initialisation") for m in ("layerscale", "rezero")),
        *((small(out, vit_run, method=m), "from its own initialisation") for m in ("mv_split", "sigma_reparam")),
        *((small(out, vit_run, method=m), "own initialisation") for m in ("softpick", "gated_attention", "registers")),
        (small(out, vit_run, method="sink_removal"), "sink_removal does not train"),
        (small(out, vit_run, objective="masked_lm"), "own task"),
        (small(out, tmp_path / "nothing-here"), "no such file or folder"),
        (small(out, vit_run, batch_size=10_000), "exceeds"),
    ]
    for config, words in cases:
        with pytest.raises(UsageError, match=words):
            adapt(config)
    assert not out.exists()
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "metrics.jsonl").write_text("")
    with pytest.raises(UsageError, match="not finished"):
        adapt(small(out, unfinished))
    bert = save_tiny("bert", tmp_path / "bert")
    with pytest.raises(UsageError, match="causal-lm head"):
        adapt(small(out, bert, objective="causal_lm", text="sample"))
    with pytest.raises(UsageError, match="cannot read|no such|not"):
        adapt(small(out, bert, text=f"text:{tmp_path / 'missing.txt'}"))
    assert not out.exists()


def test_cli_exit_2_one_line_and_other_runs_folder_refused(vit_run, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    base = [
        sys.executable,
        "-m",
        "oversmooth",
        "adapt",
        str(vit_run),
        "--steps",
        "2",
        "--batch-size",
        "16",
        "--no-progress",
    ]
    done = subprocess.run(
        [*base, "--out", str(tmp_path / "a"), "--lam", "0.6"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "neutreno-lam0.6" in done.stdout
    for extra, words in (
        (["--lam", "0.2"], "another adaptation"),
        (["--steps", "-1"], "steps"),
        (["--omega", "0.1"], "attnscale"),
        (["--lam", "0.6", "--arm", "control,neutreno-lam0.2"], "no arm neutreno-lam0.2"),
    ):
        done = subprocess.run([*base, "--out", str(tmp_path / "a"), *extra], env=env, capture_output=True, text=True)
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    done = subprocess.run(
        [*base, "--out", str(tmp_path / "b"), "--lam", "0.6", "--arm", "neutreno-lam0.6"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and "ended neutreno-lam0.6 (completed)" in done.stdout, done.stderr
    assert [p.name for p in (tmp_path / "b" / "arms").iterdir()] == ["neutreno-lam0.6"]
    assert not (tmp_path / "b" / "adapt.json").exists()


@pytest.mark.parametrize("source", ["train run", "causal LM, ramped"])
def test_arms_trained_apart_are_those_of_the_whole_adaptation(source, vit_run, text_file, tmp_path):
    """The patched arms, then the control, each by its own ``adapt_arms`` call, then ``adapt``: the
    same rows and weights as one ``adapt`` call (each arm seeds itself), and nothing trained twice.
    Our ViT, and a tiny GPT-2 with two NeuTRENO arms ramped in (claim 8's path on SmolLM2)."""
    from safetensors.torch import load_file

    if source == "train run":
        model, settings = vit_run, {"knobs": ({"lam": 0.6},)}
    else:
        model = save_tiny_with_head("gpt2", tmp_path / "gpt2")
        settings = {"knobs": ({"lam": 0.6}, {"lam": 0.1}), "ramp": 2, "text": f"text:{text_file}", "seq_len": 16}
        settings |= {"eval_sequences": 4}
    whole = adapt(small(tmp_path / "whole", model, **settings))
    out = tmp_path / "apart"
    config = small(out, model, **settings)
    patched = [name for name in whole.arms if name != "control"]
    with pytest.raises(UsageError, match="no arm neutreno-lam0.2 in this adaptation; its arms are control, neutreno"):
        adapt_arms(config, ("neutreno-lam0.2",))
    with pytest.raises(UsageError, match="at least one arm"):
        adapt_arms(config, ())
    assert not out.exists()
    assert list(adapt_arms(config, patched)) == patched
    assert sorted(p.name for p in (out / "arms").iterdir()) == sorted(patched) and not (out / "adapt.json").exists()
    adapt_arms(config, "control")  # one name
    written = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file() and p.name != ".lock"}
    apart = adapt(config)
    assert [p.name for p, t in written.items() if p.stat().st_mtime_ns != t] == []
    for name in whole.arms:
        assert apart.arms[name].rows == whole.arms[name].rows
        one, other = (load_file(f / "arms" / name / "model" / "model.safetensors") for f in (tmp_path / "whole", out))
        assert one.keys() == other.keys() and all(torch.equal(one[k], other[k]) for k in one)


@pytest.mark.slow
def test_killed_adaptation_resumes_bit_identical(vit_run, tmp_path):
    import signal
    import time

    env = {**os.environ, "PYTHONPATH": str(SRC)}
    command = [
        sys.executable,
        "-m",
        "oversmooth",
        "adapt",
        str(vit_run),
        *"--steps 12 --record-every 3 --batch-size 16 --lam 0.6 --no-progress --threads 1".split(),
    ]
    subprocess.run([*command, "--out", str(tmp_path / "whole")], env=env, check=True, capture_output=True)
    out = tmp_path / "killed"
    process = subprocess.Popen(
        [*command, "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    target = out / "arms" / "neutreno-lam0.6" / "checkpoint.pt"
    deadline = time.monotonic() + 120
    while not target.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL, "the adaptation ended before it could be killed"
    from oversmooth.train import load_checkpoint

    assert load_checkpoint(target)["step"] < 12 and not (out / "adapt.json").exists()
    # the finished control arm holds its model only; the cut arm its checkpoint, to resume from
    assert (out / "arms" / "control" / "model").is_dir() and not (out / "arms" / "control" / "checkpoint.pt").exists()
    subprocess.run([*command, "--out", str(out)], env=env, check=True, capture_output=True)
    assert not [p.name for p in out.rglob("*.pt")]
    from safetensors.torch import load_file

    for arm in ("control", "neutreno-lam0.6"):
        whole = load_file(tmp_path / "whole" / "arms" / arm / "model" / "model.safetensors")
        again = load_file(out / "arms" / arm / "model" / "model.safetensors")
        assert all(torch.equal(whole[k], again[k]) for k in whole)
    rows = lambda folder: [
        {k: v for k, v in r.items()}
        for r in json.loads((folder / "adapt.json").read_text())["arms"]["neutreno-lam0.6"]["rows"]  # noqa: E731
    ]
    assert rows(tmp_path / "whole") == rows(out)


@pytest.mark.slow
def test_a_trained_tiny_causal_lm_recovers_within_10_percent_of_its_control(text_file, tmp_path, capsys):
    """A tiny GPT-2 first trained on the text (the control arm of a first adaptation, saved as a
    plain checkpoint), then adapted with NeuTRENO lam 0.6: held-out perplexity back within 10 %
    of the control arm's. (The numbers in docs/adapt.md come from this test, run with -s.)"""
    random_lm = save_tiny_with_head("gpt2", tmp_path / "gpt2")
    common = dict(text=f"text:{text_file}", seq_len=32, steps=60, record_every=20, lr=1e-3, progress=False)
    adapt(AdaptConfig(model=str(random_lm), out=str(tmp_path / "pretrain"), **common))
    trained = tmp_path / "pretrain" / "arms" / "control" / "model"
    result = adapt(AdaptConfig(model=str(trained), out=str(tmp_path / "a"), knobs=({"lam": 0.6},), **common))
    arm, control = result.arms["neutreno-lam0.6"], result.control
    with capsys.disabled():
        print(
            f"\nperplexity: unpatched {control.start['perplexity']:.2f}, patched {arm.start['perplexity']:.2f}, "
            f"adapted {arm.val['perplexity']:.2f} vs control {control.val['perplexity']:.2f} (val); test "
            f"{arm.test['perplexity']:.2f} vs {control.test['perplexity']:.2f}; last-layer cos_sim "
            f"{arm.cos_sim_last:.3f} vs {control.cos_sim_last:.3f}"
        )
    assert arm.start["perplexity"] > control.start["perplexity"]  # the patch did damage
    assert arm.val["perplexity"] <= 1.1 * control.val["perplexity"]
    assert arm.test["perplexity"] <= 1.1 * control.test["perplexity"]


@pytest.mark.parametrize("kind,head", [("gpt2", "GPT2LMHeadModel"), ("llama", "LlamaForCausalLM")])
def test_gradient_checkpointing_keeps_the_patched_gradients(kind, head):
    """--gradient-checkpointing recomputes blocks in backward; the patch's hooks (V1 carried from
    block 0) must give the same gradients as without it."""
    import transformers as tf
    from hf_tiny import CONFIGS

    from oversmooth.hf.patch import patch

    ids = torch.randint(3, 50, (2, 12), generator=torch.Generator().manual_seed(1))
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        model = getattr(tf, head)(CONFIGS[kind]()).train()
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        patch(model, "neutreno", lam=0.6)
        model(input_ids=ids).logits.square().mean().backward()
        grads.append({n: p.grad for n, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], msg=name)


@pytest.mark.parametrize("kind", ["bert", "llama"])
def test_a_patched_lora_arm_computes_what_its_merged_weights_patched_compute(kind, text_file, tmp_path):
    """The patch must see the adapters: NeuTRENO's V and V1 are the value projection's output
    *with* the LoRA part. Reference: peft's own merge, loaded into a fresh model, patched."""
    import copy

    from transformers import AutoModel

    from oversmooth.adapt.pretrained import PretrainedSource
    from oversmooth.hf.patch import patch

    folder = save_tiny(kind, tmp_path / kind)
    source = PretrainedSource(AdaptConfig(model=str(folder), text=f"text:{text_file}", seq_len=16, lora=2))
    arm = source.arm("neutreno", {"lam": 0.6}).eval()
    with torch.no_grad():
        for name, p in arm.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5, generator=torch.Generator().manual_seed(hash(name) % 1000))
    merged = copy.deepcopy(arm.model).merge_and_unload().state_dict()
    reference = AutoModel.from_pretrained(folder).eval()
    reference.load_state_dict(merged)
    patch(reference, "neutreno", lam=0.6)
    ids = torch.randint(4, 50, (2, 12), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(arm(ids), reference(input_ids=ids).last_hidden_state, atol=1e-5, rtol=1e-4)


def test_a_model_wrapped_by_peft_is_discovered_through_its_adapters():
    from hf_tiny import tiny_model
    from peft import LoraConfig, get_peft_model

    from oversmooth.hf import layout

    wrapped = get_peft_model(tiny_model("bert"), LoraConfig(r=2, target_modules=["query", "value"]))
    lay = layout(wrapped.get_base_model())
    assert type(lay.blocks[0].get_submodule(lay.family.value)).__module__.startswith("peft")


def test_masked_lm_objective_scores_as_transformers_does(text_file, tmp_path):
    from transformers import AutoModelForMaskedLM

    from oversmooth.adapt.pretrained import PretrainedSource

    folder = save_tiny_with_head("bert", tmp_path / "bert")
    config = AdaptConfig(
        model=str(folder),
        text=f"text:{text_file}",
        seq_len=16,
        eval_sequences=6,
        steps=2,
        progress=False,
        out=str(tmp_path / "a"),
    )
    source = PretrainedSource(config)
    assert source.objective == "masked_lm"
    task = source.task()
    inputs, labels = task.batch("val", torch.arange(task.size("val")))
    assert (labels != -100).any() and (inputs[labels != -100] == source.loaded.tokenizer.mask_token_id).all()
    reference = AutoModelForMaskedLM.from_pretrained(folder).eval()
    with torch.no_grad():
        expected = reference(input_ids=inputs, labels=labels).loss.item()
    result = adapt(config)
    assert result.control.start["masked_nll"] == pytest.approx(expected, rel=1e-5)
    # training masks are drawn afresh each step, from the loop's per-step generator
    first = task.batch("train", torch.arange(4), torch.Generator().manual_seed(1))[1]
    second = task.batch("train", torch.arange(4), torch.Generator().manual_seed(2))[1]
    assert not torch.equal(first, second)


def adapted_and_reloaded(method: str, kind: str, text_file, tmp_path) -> dict:
    """Adapt a tiny ``kind`` with ``method`` patched in (one arm, at its defaults): the arm starts
    exactly where the control does, moves away from it, and its saved model, loaded with its
    recorded patch, scores what the arm scored at its last step. Returns the saved tensors."""
    from safetensors.torch import load_file

    from oversmooth.adapt.text_blocks import documents, token_blocks
    from oversmooth.hf.load import load
    from oversmooth.hf.patch import patched_method

    model_dir = save_tiny_with_head(kind, tmp_path / kind)
    config = small(tmp_path / "a", model_dir, text=f"text:{text_file}", seq_len=16, eval_sequences=6)
    result = adapt(AdaptConfig(**{**config.to_dict(), "method": method, "knobs": [{}]}))
    (arm,) = result.patched
    assert arm.start["loss"] == result.control.start["loss"]
    saved = tmp_path / "a" / "arms" / arm.name / "model"
    again = load(str(saved), 6)
    assert patched_method(again.model) == method
    blocks = token_blocks(again.tokenizer, documents(f"text:{text_file}")["val"], 16, extra=1, limit=6)
    with torch.no_grad():
        logits = again.model(input_ids=blocks[:, :-1]).logits
    loss = F.cross_entropy(logits.flatten(0, 1), blocks[:, 1:].flatten())
    assert loss.item() == pytest.approx(arm.val["loss"], rel=1e-5)
    assert arm.val["loss"] != result.control.val["loss"]
    return load_file(str(saved / "model.safetensors"))


def test_a_sigma_reparam_adaptation_starts_as_the_model_and_saves_what_it_learned(text_file, tmp_path):
    """sigmaReparam patched into a tiny GPT-2 (Conv1D weights): its saved model holds plain weights
    (gamma / sigma W folded in), which the recorded patch re-wraps exactly."""
    saved = adapted_and_reloaded("sigma_reparam", "gpt2", text_file, tmp_path)
    assert not any("parametrizations" in key for key in saved)


def test_lora_is_refused_for_a_patch_that_reparametrises_the_weights(text_file, tmp_path):
    model_dir = save_tiny_with_head("gpt2", tmp_path / "gpt2")
    config = small(tmp_path / "a", model_dir, text=f"text:{text_file}", seq_len=16, lora=2)
    with pytest.raises(UsageError, match="sigma_reparam reparametrises the weights that LoRA adapts"):
        adapt(AdaptConfig(**{**config.to_dict(), "method": "sigma_reparam", "knobs": [{}]}))
    assert not (tmp_path / "a").exists()


def test_a_gated_attention_adaptation_starts_as_the_model_and_saves_its_gates(text_file, tmp_path):
    """Gated attention patched into a tiny Llama (gate 2 sigmoid(0) = 1): the arm trains the gates
    away from 0 and saves them with the model, and loading reads them back."""
    saved = adapted_and_reloaded("gated_attention", "llama", text_file, tmp_path)
    gates = {k: v for k, v in saved.items() if "oversmooth_gate" in k}
    assert len(gates) == 4 and all(v.abs().max() > 0 for v in gates.values())  # 2 blocks x (weight, bias)
