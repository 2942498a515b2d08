"""Inputs: text chunking keeps every token in order; images are resized and normalised."""

import pytest
import torch
from hf_tiny import WORDS, tiny_tokenizer

from oversmooth.analyze.inputs import image_batch, read_text, text_batch
from oversmooth.data.text_source import sample_text
from oversmooth.errors import UsageError


def test_chunks_cover_the_text_in_order():
    tok = tiny_tokenizer()
    text = " ".join(WORDS * 3)
    batch = text_batch(tok, text, max_length=16, max_sequences=100)
    ids, mask = batch["input_ids"], batch["attention_mask"].bool()
    assert ids.shape[1] <= 16
    content = [int(i) for row, m in zip(ids, mask) for i in row[m] if int(i) not in (0, 2, 3)]
    assert content == tok(text, add_special_tokens=False)["input_ids"]
    assert all(row[m][0] == 2 and row[m][-1] == 3 for row, m in zip(ids, mask))  # [CLS] ... [SEP]
    assert mask[:-1].all()  # only the last chunk is padded
    assert text_batch(tok, text, 16, 2)["input_ids"].shape[0] == 2


def test_read_text_sources(tmp_path):
    text, where = read_text(None)
    assert text == sample_text() and "Pride and Prejudice" in text and len(text) > 5000
    (tmp_path / "a.txt").write_text("It is a truth.")
    assert read_text(str(tmp_path / "a.txt"))[0] == "It is a truth."
    assert read_text("a plain string")[0] == "a plain string"
    with pytest.raises(UsageError, match="no such file or folder: .*missing.txt"):
        read_text(str(tmp_path / "missing.txt"))
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(UsageError, match="UTF-8"):
        read_text(str(tmp_path / "bin.txt"))


def test_read_text_takes_several_files_or_a_folder(tmp_path):
    folder = tmp_path / "essays"
    folder.mkdir()
    (folder / "b.txt").write_text("Second essay.")
    (folder / "a.md").write_text("First essay.")
    (folder / "notes.csv").write_text("not text")
    assert read_text(str(folder)) == ("First essay.\n\nSecond essay.", "2 files (a.md, b.txt)")
    listed = f"{folder / 'b.txt'},{folder / 'a.md'}"
    assert read_text(listed)[0] == "Second essay.\n\nFirst essay."  # in the order given
    assert read_text("Hello, world")[0] == "Hello, world"  # commas in a string name no files
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="holds no .txt or .md file"):
        read_text(str(tmp_path / "empty"))


def test_image_batch_resizes_and_normalises():
    from PIL import Image

    images = [Image.new("L", (28, 28), 255), Image.new("RGB", (10, 30), (0, 0, 0))]
    pixels = image_batch(images, 16, (0.5, 0.5, 0.5), (0.25, 0.5, 0.5), channels=3)["pixel_values"]
    assert pixels.shape == (2, 3, 16, 16)
    torch.testing.assert_close(pixels[0, 0], torch.full((16, 16), 2.0))
    torch.testing.assert_close(pixels[1, 1], torch.full((16, 16), -1.0))
