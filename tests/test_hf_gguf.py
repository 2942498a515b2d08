"""GGUF checkpoints (written here with the gguf package's writer) load through transformers' GGUF
support: the same logits as the model they were written from, analyzed end to end, and a clear
one-line message for each missing piece."""

import csv

import pytest
import torch
from gguf_tiny import tiny_llama, write_gguf

from oversmooth.cli import main
from oversmooth.errors import UsageError
from oversmooth.hf.load import load, resolve

pytest.importorskip("gguf")
TEXT = "the cat sat on the mat and then the dog sat on the cat " * 4


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    model = tiny_llama()
    folder = tmp_path_factory.mktemp("gguf")
    return model, write_gguf(model, folder / "tiny.gguf")


def test_gguf_file_and_folder_load_the_same_model(written):
    model, path = written
    for spec in (path, path.parent):  # the file, or a folder holding only it
        loaded = load(str(spec), sequences=2, max_length=16)
        assert loaded.family.name == "Llama" and type(loaded.model).__name__ == "LlamaForCausalLM"
        assert resolve(str(spec)).gguf == "tiny.gguf"
        batch = loaded.tokenizer([TEXT], return_tensors="pt")
        with torch.no_grad():
            torch.testing.assert_close(loaded.model(**batch).logits, model(**batch).logits, atol=1e-5, rtol=0)


def test_analyze_a_gguf_file(written, tmp_path, capsys):
    _, path = written
    out = tmp_path / "out"
    assert (
        main(
            [
                "analyze",
                str(path),
                "--text",
                TEXT,
                *"--methods deescalate --max-sequences 2 --max-length 16 --attention-sequences 1 --out".split(),
                str(out),
            ]
        )
        == 0
    )
    assert "(Llama)" in capsys.readouterr().out
    measures = {row["measure"] for row in csv.DictReader(open(out / "quality.csv"))}
    assert measures == {"nll", "perplexity"}


def test_missing_pieces_are_named(written, tmp_path, monkeypatch):
    _, path = written
    two = tmp_path / "two"
    two.mkdir()
    for name in ("a.gguf", "b.gguf"):
        (two / name).write_bytes(path.read_bytes())
    with pytest.raises(UsageError, match=r"holds 2 GGUF files \(a.gguf, b.gguf\); pass one of them"):
        resolve(str(two))
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(UsageError, match="is a file but not a .gguf checkpoint"):
        resolve(str(tmp_path / "weights.bin"))
    unknown = write_gguf(tiny_llama(), tmp_path / "odd.gguf", architecture="oddformer")
    with pytest.raises(UsageError, match="cannot read .*odd.gguf as a GGUF model"):
        load(str(unknown), sequences=1)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a))
    with pytest.raises(UsageError, match=r"reading it needs the gguf package \(pip install gguf==0.19.0\)"):
        resolve(str(path))


def test_adapt_takes_a_gguf_lm_as_a_causal_lm(written, tmp_path):
    """A GGUF file lists no model class: adapt reads it as the causal LM it loads as, and the
    control's starting loss is the written model's own next-token cross-entropy on the same blocks."""
    import torch.nn.functional as F

    from oversmooth.adapt import AdaptConfig, adapt
    from oversmooth.adapt.text_blocks import documents, token_blocks

    model, path = written
    text = tmp_path / "text.txt"
    text.write_text(TEXT * 40)
    settings = {"text": f"text:{text}", "seq_len": 16, "eval_sequences": 4, "steps": 2, "record_every": 2}
    result = adapt(AdaptConfig(model=str(path), out=str(tmp_path / "a"), progress=False, **settings))
    assert result.objective == "causal_lm"
    blocks = token_blocks(load(str(path), 4).tokenizer, documents(f"text:{text}")["val"], 16, extra=1, limit=4)
    with torch.no_grad():
        logits = model(input_ids=blocks[:, :-1]).logits
    reference = F.cross_entropy(logits.flatten(0, 1), blocks[:, 1:].flatten())
    assert result.control.start["loss"] == pytest.approx(reference.item(), rel=1e-4)
    again = load(str(tmp_path / "a" / "arms" / "neutreno" / "model"), 2)  # the adapted arm loads again, patched
    assert again.patch["method"] == "neutreno" and type(again.model).__name__ == "LlamaForCausalLM"
