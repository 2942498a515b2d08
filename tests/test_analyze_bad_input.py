"""Bad input to `oversmooth analyze` / `oversmooth metrics` and their Python API: one line naming
the option (the field in Python) and the fix, exit 2, nothing written; the checks live in the library."""

import subprocess
import sys

import pytest
import torch
import transformers
from hf_tiny import CONFIGS, WORDS, save_tiny, tiny_inputs, tiny_model

from oversmooth.analyze.analysis import run_analysis
from oversmooth.analyze.settings import (
    DEFAULT_SEQUENCES,
    DEFAULT_TEXT_TOKENS,
    AnalysisSettings,
    Budget,
    default_sweeps,
    parse_sweeps,
)
from oversmooth.cli import main
from oversmooth.cli.analyze import build_defaults
from oversmooth.errors import FieldError, UsageError
from oversmooth.metrics import measure
from oversmooth.mitigations.registry import patchable

TEXT = " ".join(WORDS * 3)
FAST = ["--max-sequences", "2", "--max-length", "16", "--methods", "none", "--attention-sequences", "1"]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return save_tiny("bert", tmp_path_factory.mktemp("bert"))


def refused(capsys, out, argv, *needles):
    """``oversmooth analyze argv --out OUT`` exits 2 with one line holding every needle, OUT not made."""
    capsys.readouterr()
    assert main(["analyze", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and all(needle in err for needle in needles), err
    assert not out.exists(), "nothing may be written on failure"


@pytest.mark.parametrize(
    "flags, needles",
    [
        (["--attention-tokens", "0"], ["--attention-tokens must be at least 1, got 0"]),
        (["--max-sequences", "0"], ["--max-sequences must be at least 1, got 0"]),
        (["--text", ""], ["--text is empty", "quoted string"]),
        (["--text", "  "], ["--text is empty"]),
        (["--budget", "perplexity=1.1"], ["--budget perplexity=1.1 does not apply", "output cosine", "cosine=V"]),
        (["--budget", "kl=0.1"], ["--budget kl=0.1 does not apply"]),
        (["--budget", "perplexity=0.9"], ["--budget perplexity=0.9 is a ratio"]),
        (["--methods", "attnscale", "--lam", "2"], ["--lam sets neutreno, which is not in --methods (attnscale)"]),
        (["--attention-tokens", "1", "--exclude", "0"], ["--attention-tokens 1 leaves the attention sample"]),
    ],
)
def test_analyze_refuses_with_one_line_naming_the_flag(bert_dir, tmp_path, capsys, flags, needles):
    refused(capsys, tmp_path / "out", [str(bert_dir), *FAST, *flags], *needles)


def test_a_sequence_left_with_one_token_is_refused_not_dropped(bert_dir, tmp_path, capsys):
    """15 words in chunks of 16 tokens: the second chunk is [CLS] word [SEP]; leaving out
    positions 0 and 1 keeps one token of it, too few to compare: refused, the fix named, and the fix works."""
    argv = [str(bert_dir), "--text", " ".join(WORDS[:15]), *FAST, "--exclude", "0,1"]
    refused(
        capsys,
        tmp_path / "out",
        argv,
        "sequence 1 keeps 1 token(s) to compare after --exclude 0,1, and every sequence needs 2",
        "pass --max-sequences 1 to leave it out",
    )
    assert main(["analyze", *argv, "--max-sequences", "1", "--out", str(tmp_path / "kept")]) == 0


def test_python_api_refuses_what_the_cli_refuses():
    with pytest.raises(FieldError, match="attention_tokens must be at least 1"):
        AnalysisSettings(attention_tokens=0)
    with pytest.raises(FieldError, match="attention_sequences must be at least 0"):
        AnalysisSettings(attention_sequences=-1)
    with pytest.raises(FieldError, match=r"lam sets neutreno, which is not in methods \(attnscale\)"):
        AnalysisSettings(methods=("attnscale",), knobs={"neutreno": {"lam": 2}})
    with pytest.raises(UsageError, match="lambda must be a finite number >= 0"):
        AnalysisSettings(methods=("neutreno",), knobs={"neutreno": {"lam": -1}})
    AnalysisSettings(methods=("attnscale",), knobs={"neutreno": {}})  # no knob set: nothing to refuse
    with pytest.raises(FieldError, match="budget perplexity=1.1 does not apply to this model"):
        AnalysisSettings(budget=Budget(perplexity=1.1)).for_model(tiny_model("bert"))
    AnalysisSettings(budget=Budget(cosine=0.9)).for_model(tiny_model("bert"))
    language_model = transformers.GPT2LMHeadModel(CONFIGS["gpt2"]()).eval()
    with pytest.raises(FieldError, match=r"budget cosine=0.9 does not apply .*a causal LM.*set budget perplexity=V"):
        AnalysisSettings(budget=Budget(cosine=0.9)).for_model(language_model)
    AnalysisSettings(budget=Budget(perplexity=1.1)).for_model(language_model)


def test_a_knob_of_a_method_that_cannot_patch_the_model_is_refused():
    """phi (parallel blocks) takes only some methods; a knob of another one is named, not dropped."""
    from oversmooth.hf import supported_methods

    model = tiny_model("phi")
    other = next(m for m in patchable() if m not in supported_methods(model))
    knob = {"attnscale": "omega", "neutreno": "lam", "featscale": "s_hc", "deescalate": "tau", "contranorm": "s"}
    with pytest.raises(FieldError, match=f"sets {other}, which cannot patch this model"):
        AnalysisSettings(knobs={other: {knob[other]: 0.1}}).for_model(model)


def test_python_api_names_the_input_that_is_not_a_tensor():
    model, inputs = tiny_model("bert"), tiny_inputs("bert")
    with pytest.raises(UsageError) as error:
        run_analysis(model, {**inputs, "input_ids": inputs["input_ids"].tolist()})
    assert str(error.value) == ("inputs['input_ids'] are a list; pass a torch tensor [batch, tokens] (torch.as_tensor)")
    with pytest.raises(UsageError, match="inputs are a Tensor; pass a dict of torch tensors"):
        run_analysis(model, inputs["input_ids"])
    with pytest.raises(UsageError, match=r"inputs\['attention_mask'\] has shape \(2, 6\)"):
        run_analysis(model, {**inputs, "attention_mask": inputs["attention_mask"][:, :6]})


def test_python_api_refuses_a_sequence_with_one_token():
    """Before, a one-token row was dropped from every mean without a word."""
    model, inputs = tiny_model("bert"), tiny_inputs("bert")
    inputs["attention_mask"][1, 1:] = 0
    with pytest.raises(FieldError, match="sequence 1 keeps 1 token"):
        run_analysis(model, inputs, AnalysisSettings(methods=(), attention_sequences=0))


def test_bare_sweep_expands_in_the_library():
    assert parse_sweeps([""], ("neutreno",)) == default_sweeps(("neutreno",))
    assert parse_sweeps(["neutreno:lam=0.1", ""], None)[1:] == default_sweeps(patchable())
    with pytest.raises(FieldError, match="sweep alone sweeps the methods of methods, and there are none"):
        parse_sweeps([""], ())
    assert parse_sweeps([], ()) == ()


def test_the_cli_takes_its_defaults_from_the_library(capsys):
    """Defaults declared once: the parser's are the dataclasses' fields, and --help shows them."""
    defaults = build_defaults()
    assert defaults.attention_sequences == AnalysisSettings.attention_sequences
    assert defaults.rank_sequences == AnalysisSettings.rank_sequences
    assert defaults.max_sequences == DEFAULT_SEQUENCES
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for text in (
        f"default {Budget.perplexity:g}",
        f"nats, {Budget.kl:g}",
        f"top-1, {Budget.agreement:g}",
        f"output cosine, {Budget.cosine:g}",
        f"0 = skip (default {AnalysisSettings.attention_sequences})",
        f"0 = every sequence (default {AnalysisSettings.rank_sequences})",
        f"attention measures (default {DEFAULT_TEXT_TOKENS})",
    ):
        assert text in shown, text


def test_metrics_refuses_a_sequence_with_no_counted_token(tmp_path):
    """The mean over sequences would leave the empty one out and still say 'over 2 sequences'."""
    states = [torch.randn(2, 4, 3) for _ in range(2)]
    mask = torch.ones(2, 4, dtype=torch.bool)
    mask[1] = False
    with pytest.raises(UsageError, match=r"^sequence 1 has no token to measure: its mask is all 0"):
        measure(states, mask)
    mask[1, 0] = True
    with pytest.raises(UsageError, match=r"^sequence 1 has no token to measure: positions \[0\] are excluded"):
        measure(states, mask, exclude=(0,))
    assert measure(states, mask)["cos_sim"].notna().all()  # one token is a defined measure
    from safetensors.torch import save_file

    mask[1] = False
    save_file({"layer.0": states[0], "layer.1": states[1], "mask": mask}, tmp_path / "s.safetensors")
    out = tmp_path / "o.csv"
    done = subprocess.run(
        [sys.executable, "-m", "oversmooth", "metrics", str(tmp_path / "s.safetensors"), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.strip().splitlines() == [
        "oversmooth metrics: error: sequence 1 has no token to measure: its mask is all 0 (padding only); "
        "drop the sequence or mark its real tokens 1 in the mask"
    ]
    assert not out.exists()


@pytest.mark.parametrize(
    "settings, named",
    [
        (AnalysisSettings(knobs={"neutreno": {"lam": 0.2}}), "lam does not apply"),
        (AnalysisSettings(methods=("featscale",)), "methods does not apply"),
        (AnalysisSettings(sweeps=default_sweeps(("neutreno",))), "sweep does not apply"),
    ],
    ids=["knob", "methods", "sweep"],
)
def test_a_model_that_carries_its_patch_refuses_what_would_patch_it_again(settings, named):
    """An adapted model is measured as saved: a knob, a method or a sweep on top is refused,
    not dropped without a word."""
    from oversmooth.hf.patch import patch

    model = patch(tiny_model("bert"), "neutreno", lam=0.6)
    assert AnalysisSettings().for_model(model).methods == ()  # nothing asked: measured as saved
    with pytest.raises(FieldError, match=named + ".*neutreno"):
        settings.for_model(model)


def test_a_tiny_sample_is_measured_with_a_warning(tmp_path, capsys):
    """`--text "Hi there"`: one sequence of a few tokens is analysed, and stderr says why its
    numbers say little; the built-in sample (8 x 128 tokens) gets no such warning."""
    from oversmooth.analyze.inputs import small_sample_warning

    assert main(["analyze", "--text", "Hi there", "--methods", "none", "--out", str(tmp_path / "hi")]) == 0
    err = capsys.readouterr().err
    assert "warning: a small sample: 1 sequence(s)" in err and "anisotropy" in err
    ids = torch.ones(8, 128, dtype=torch.long)
    assert small_sample_warning({"input_ids": ids, "attention_mask": ids}) is None
