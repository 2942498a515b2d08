"""Quality beside similarity: each task's measure against an independent computation with
transformers itself, the budget, the one similarity-claim rule, and the frontier sweep."""

import csv
import math

import pytest
import torch
from hf_tiny import WORDS, save_tiny, save_tiny_with_head, write_images

from oversmooth.cli import main

TEXT = " ".join(WORDS * 4)
FAST = ["--max-sequences", "3", "--max-length", "16", "--attention-sequences", "0"]


def rows(path):
    return list(csv.DictReader(open(path)))


def quality_of(out, method, measure):
    return next(
        float(r["value"]) for r in rows(out / "quality.csv") if r["method"] == method and r["measure"] == measure
    )


def same_chunks(model_dir):
    from transformers import AutoTokenizer

    from oversmooth.analyze.inputs import text_batch

    return text_batch(AutoTokenizer.from_pretrained(model_dir), TEXT, 16, 3)


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_causal_lm_perplexity_matches_transformers_loss(kind, tmp_path):
    """Unpatched and NeuTRENO-patched perplexity equal exp(transformers' own LM loss) on the same
    chunks (labels = inputs, padding -100)."""
    import transformers

    import oversmooth

    model_dir = save_tiny_with_head(kind, tmp_path / "model")
    out = tmp_path / "out"
    assert (
        main(
            ["analyze", str(model_dir), "--text", TEXT, "--methods", "neutreno", "--lam", "2", "--out", str(out), *FAST]
        )
        == 0
    )
    batch = same_chunks(model_dir)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    model = (
        getattr(
            transformers,
            type(transformers.AutoConfig.from_pretrained(model_dir)).__name__.replace("Config", "")
            + ("LMHeadModel" if kind == "gpt2" else "ForCausalLM"),
        )
        .from_pretrained(model_dir)
        .eval()
    )
    with torch.no_grad():
        base = math.exp(model(**batch, labels=labels).loss.item())
        oversmooth.patch(model, "neutreno", lam=2.0)
        patched = math.exp(model(**batch, labels=labels).loss.item())
    assert quality_of(out, "baseline", "perplexity") == pytest.approx(base, rel=1e-4)
    assert quality_of(out, "neutreno", "perplexity") == pytest.approx(patched, rel=1e-4)
    assert abs(patched - base) > 1e-2 * base  # the patch changed the model, so the check can fail
    report = (out / "report.md").read_text()
    assert "positions 0 left out" in report and "attention sink" in report


def test_broken_patch_is_never_held(tmp_path, capsys):
    """NeuTRENO at lam 5 breaks a tiny LM: outside the budget, marked, and no 'held' anywhere."""
    model_dir = save_tiny_with_head("gpt2", tmp_path / "model")
    out = tmp_path / "out"
    assert (
        main(
            ["analyze", str(model_dir), "--text", TEXT, "--methods", "neutreno", "--lam", "5", "--out", str(out), *FAST]
        )
        == 0
    )
    printed = capsys.readouterr().out
    neutreno = [r for r in rows(out / "quality.csv") if r["method"] == "neutreno"]
    assert {r["within_budget"] for r in neutreno} == {"False"}
    assert float(next(r["ratio"] for r in neutreno if r["measure"] == "perplexity")) > 1.05
    assert "cos:neutreno!" in printed and "NO: perplexity x" in printed
    for text in (printed, (out / "report.md").read_text()):
        assert "held" not in text and "NO: perplexity x" in text  # analyze decides no claim (the claims report does)


def test_masked_lm_loss_matches_transformers(tmp_path):
    import transformers

    from oversmooth.analyze.quality import mask_tokens

    model_dir = save_tiny_with_head("bert", tmp_path / "model")
    out = tmp_path / "out"
    assert main(["analyze", str(model_dir), "--text", TEXT, "--methods", "none", "--out", str(out), *FAST]) == 0
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    masked, labels = mask_tokens(same_chunks(model_dir), tokenizer.mask_token_id, set(tokenizer.all_special_ids))
    assert 0.1 < (labels != -100).sum() / masked["attention_mask"].sum() < 0.25
    model = transformers.BertForMaskedLM.from_pretrained(model_dir).eval()
    with torch.no_grad():
        expected = model(**masked, labels=labels).loss.item()
    assert quality_of(out, "baseline", "masked_nll") == pytest.approx(expected, rel=1e-4)
    assert quality_of(out, "baseline", "masked_perplexity") == pytest.approx(math.exp(expected), rel=1e-4)


def test_masking_skips_padding_and_special_tokens():
    from oversmooth.analyze.quality import mask_tokens

    ids = torch.tensor([[2, 5, 6, 7, 8, 3, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 0, 0]])
    for seed in range(20):
        masked, labels = mask_tokens({"input_ids": ids, "attention_mask": mask}, 99, {0, 2, 3}, rate=0.5, seed=seed)
        chosen = (labels != -100).nonzero()[:, 1].tolist()
        assert len(chosen) == 2 and set(chosen) <= {1, 2, 3, 4}
        assert masked["input_ids"][0, chosen].tolist() == [99, 99]


def test_classifier_agreement_and_kl(tmp_path):
    """Top-1 agreement and KL(unpatched || patched) against torch.nn.functional.kl_div."""
    import transformers

    import oversmooth
    from oversmooth.analyze.inputs import image_batch, read_images

    model_dir = save_tiny_with_head("vit", tmp_path / "model")
    images = write_images(tmp_path / "images", 4)
    out = tmp_path / "out"
    assert (
        main(
            [
                "analyze",
                str(model_dir),
                "--images",
                str(images),
                "--methods",
                "deescalate",
                "--tau",
                "1",
                "--out",
                str(out),
                "--attention-sequences",
                "0",
            ]
        )
        == 0
    )
    model = transformers.ViTForImageClassification.from_pretrained(model_dir).eval()
    batch = image_batch(read_images(str(images), 4)[0], 16, (0.5,) * 3, (0.5,) * 3)
    with torch.no_grad():
        base = model(**batch).logits.double()
        oversmooth.patch(model, "deescalate", tau=1.0)
        patched = model(**batch).logits.double()
    kl = torch.nn.functional.kl_div(
        patched.log_softmax(-1), base.log_softmax(-1), log_target=True, reduction="batchmean"
    ).item()
    agreement = (base.argmax(-1) == patched.argmax(-1)).double().mean().item()
    assert quality_of(out, "deescalate", "kl") == pytest.approx(kl, rel=1e-6, abs=1e-12)
    assert quality_of(out, "deescalate", "top1_agreement") == pytest.approx(agreement)
    assert kl > 0 and quality_of(out, "baseline", "kl") == 0.0


def test_encoder_output_cosine(tmp_path):
    """A headless encoder: cosine of mean-pooled last states, unpatched vs patched, by hand."""
    from transformers import AutoModel

    import oversmooth

    model_dir = save_tiny("bert", tmp_path / "model")
    out = tmp_path / "out"
    assert (
        main(
            [
                "analyze",
                str(model_dir),
                "--text",
                TEXT,
                "--methods",
                "deescalate",
                "--tau",
                "1",
                "--out",
                str(out),
                *FAST,
            ]
        )
        == 0
    )
    batch = same_chunks(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    weights = batch["attention_mask"][..., None].double()
    pool = lambda h: (h.double() * weights).sum(1) / weights.sum(1)  # noqa: E731
    with torch.no_grad():
        base = pool(model(**batch).last_hidden_state)
        oversmooth.patch(model, "deescalate", tau=1.0)
        patched = pool(model(**batch).last_hidden_state)
    expected = torch.nn.functional.cosine_similarity(base, patched).mean().item()
    assert quality_of(out, "deescalate", "output_cosine") == pytest.approx(expected, rel=1e-6)
    assert expected < 0.9999


def test_sweep_writes_the_frontier(tmp_path, capsys):
    model_dir = save_tiny_with_head("gpt2", tmp_path / "model")
    out = tmp_path / "out"
    assert (
        main(
            [
                "analyze",
                str(model_dir),
                "--text",
                TEXT,
                "--methods",
                "neutreno",
                "--out",
                str(out),
                "--sweep",
                "neutreno:lam=0,0.01,4",
                "--sweep",
                "deescalate:tau=0.5",
                *FAST,
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    frontier = rows(out / "frontier.csv")
    assert [(r["method"], r["knob"], float(r["value"])) for r in frontier] == [
        ("neutreno", "lam", 0.0),
        ("neutreno", "lam", 0.01),
        ("neutreno", "lam", 4.0),
        ("deescalate", "tau", 0.5),
    ]
    metrics = rows(out / "metrics.csv")
    last_base = [r for r in metrics if r["method"] == "baseline"][-1]
    assert float(frontier[0]["cos_sim"]) == pytest.approx(float(last_base["cos_sim"]))  # lam 0 = unpatched
    assert float(frontier[0]["ratio"]) == pytest.approx(1.0) and frontier[0]["within_budget"] == "True"
    assert frontier[2]["within_budget"] == "False"
    assert (out / "frontier.png").stat().st_size > 0
    assert "largest within budget lam=0.01" in printed


def test_default_sweep_covers_every_method(tmp_path):
    model_dir = save_tiny("bert", tmp_path / "model")
    out = tmp_path / "out"
    assert main(["analyze", str(model_dir), "--text", TEXT, "--out", str(out), "--sweep", *FAST]) == 0
    from oversmooth.hf.patch import SWEEP_GRIDS

    found = {(r["method"], r["knob"]) for r in rows(out / "frontier.csv")}
    assert found == {(m, k) for m, grid in SWEEP_GRIDS.items() for k in grid}


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--budget", "perplexity=0.9"], "ratio to the unpatched"),
        (["--budget", "speed=2"], "bad budget item"),
        (["--budget", "kl=nan"], "finite"),
        (["--sweep", "neutreno:lam"], "bad sweep"),
        (["--sweep", "neutreno:tau=0.1"], "no knob 'tau'"),
        (["--sweep", "neutreno:lam=-1"], "lambda must be a finite number >= 0"),
        (["--sweep", "magic:x=1"], "unknown method"),
        (["--methods", "none", "--sweep"], "there are none"),
    ],
)
def test_bad_budget_or_sweep_exit_2_and_write_nothing(tmp_path, capsys, flags, message):
    model_dir = save_tiny("bert", tmp_path / "model")
    out = tmp_path / "out"
    assert main(["analyze", str(model_dir), "--text", TEXT, "--out", str(out), *flags, *FAST]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_similarity_rule():
    from oversmooth.analyze.quality import Quality, QualityRow
    from oversmooth.claims.similarity_claim import similarity_verdict

    ok = Quality((QualityRow("m", "", "perplexity", 10.0, 10.0, 1.0, True),))
    broken = Quality((QualityRow("m", "", "perplexity", 7e5, 10.0, 7e4, False),))
    assert similarity_verdict([0.1, 0.3, 0.5, 0.6], [0.1, 0.3, 0.4, 0.5], ok)[0] == "held"
    verdict, sentence = similarity_verdict([0.1, 0.3, 0.5, 0.6], [0.1, 0.3, 0.4, 0.5], broken)
    assert verdict == "model broken" and sentence == "similarity lower, model broken (perplexity x70,000): not held"
    assert similarity_verdict([0.1, 0.3, 0.5, 0.6], [0.1, 0.3, 0.4, 0.7], ok)[0] == "did not hold"
    nan = float("nan")
    assert similarity_verdict([0.1, 0.3, nan, 0.6], [0.1, 0.3, nan, 0.5], ok)[0] == "not tested"
