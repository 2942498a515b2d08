"""Text data: Austen loader, document splits, tokenizer round trip and caching, LM blocks."""

import numpy as np
import pytest
from hf_tiny import ESSAY_WORDS, prose

from oversmooth.data import (
    END_OF_TEXT,
    NOVELS,
    Document,
    blocks,
    cached_tokenizer,
    default_austen_dir,
    load_austen,
    passages,
    read_text_files,
    split_documents,
    split_text,
    token_stream,
    train_tokenizer,
)
from oversmooth.errors import UsageError

PROSE = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife. However little known the feelings or views of such a man may be "
    "on his first entering a neighbourhood, this truth is so well fixed in the minds of the "
    "surrounding families, that he is considered the rightful property of some one or other of "
    "their daughters. "
)


def test_austen_loader_yields_the_six_novels():
    folder = default_austen_dir()
    if not (folder / "data" / "Rdata.rdb").is_file():
        pytest.skip(f"janeaustenr data absent from {folder} (run scripts/install_data.sh or set OVERSMOOTH_DATA)")
    novels = load_austen(folder)
    assert [d.name for d in novels] == list(NOVELS)
    pride = novels[1].text
    assert pride.startswith("PRIDE AND PREJUDICE")
    assert "It is a truth universally acknowledged, that a single man in possession" in pride
    assert 3.5e6 < sum(len(d.text) for d in novels) < 4.5e6  # "4.0 M characters" (README)
    splits = split_text(novels, 8000)
    assert [len(splits[k]) for k in ("train", "val", "test")] == [430, 24, 24]  # docs/training.md


def test_austen_loader_missing_folder_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="Jane Austen data not found"):
        load_austen(tmp_path)


def test_passages_cut_at_paragraph_breaks_and_concatenate_back():
    text = "\n".join(f"paragraph {i} " + "word " * (i % 7) for i in range(50))
    pieces = passages(Document("doc", text), min_chars=60)
    assert "".join(p.text for p in pieces) == text
    assert all(len(p.text) >= 60 and p.text.endswith("\n") for p in pieces[:-1])
    assert len({p.name for p in pieces}) == len(pieces)


def test_document_splits_are_disjoint_cover_everything_and_follow_the_characters():
    equal = [Document(f"d{i}", f"text {i:02d}") for i in range(40)]
    splits = split_documents(equal, (0.8, 0.1, 0.1), seed=1)
    assert [len(splits[k]) for k in ("train", "val", "test")] == [32, 4, 4]
    assert split_documents(equal, (0.8, 0.1, 0.1), seed=1) == splits
    documents = [Document(f"d{i}", "x" * (10 + 37 * i % 90)) for i in range(40)]  # 10 to 99 characters
    splits = split_documents(documents, (0.8, 0.1, 0.1), seed=1)
    names = {k: {d.name for d in v} for k, v in splits.items()}
    assert not (names["train"] & names["val"] or names["train"] & names["test"] or names["val"] & names["test"])
    assert set().union(*names.values()) == {d.name for d in documents}
    # by hand: each split ends within half a document (at most 99 characters) of its share
    chars = {k: sum(len(d.text) for d in v) for k, v in splits.items()}
    total = sum(len(d.text) for d in documents)
    assert abs(chars["train"] - 0.8 * total) <= 99 / 2 and abs(chars["test"] - 0.1 * total) <= 99 / 2, chars
    one_long = split_documents([Document("a", "x" * 1000), Document("b", "y"), Document("c", "z")])
    assert all(len(v) == 1 for v in one_long.values())
    with pytest.raises(UsageError, match="at least 3 documents"):
        split_documents(documents[:2])


@pytest.mark.parametrize("paragraphs", [True, False])
def test_a_short_text_is_cut_smaller_and_split_in_proportion_of_its_characters(paragraphs):
    """A 17 kB essay (with or without paragraph breaks) would make two or three passages of 8000
    characters; it is cut smaller, and train gets about 90 % of its characters."""
    text = prose(ESSAY_WORDS) if paragraphs else " ".join(prose(ESSAY_WORDS).split())
    assert 16_000 < len(text) < 18_000
    splits = split_text([Document("essay", text)], 8000)
    ordered = sorted((int(p.name.split("#")[1]), p.text) for docs in splits.values() for p in docs)
    assert "".join(piece for _, piece in ordered) == text  # every character once
    shares = {k: sum(len(p.text) for p in v) / len(text) for k, v in splits.items()}
    assert 0.88 <= shares["train"] <= 0.92 and all(0.03 <= shares[k] <= 0.07 for k in ("val", "test")), shares


def test_train_on_a_short_text_file_gets_the_same_proportions(tmp_path):
    from oversmooth.train.task_factory import DataOptions, make_task

    (tmp_path / "essay.txt").write_text(prose(ESSAY_WORDS))
    task, _ = make_task(f"text:{tmp_path / 'essay.txt'}", "lm", DataOptions(seq_len=16, vocab_size=300), tmp_path)
    blocks = {k: task.size(k) for k in ("train", "val", "test")}
    assert 0.86 <= blocks["train"] / sum(blocks.values()) <= 0.94, blocks


def test_text_files_are_read_and_reflowed(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n\nthree\n", encoding="utf-8")
    assert read_text_files([tmp_path / "a.txt"]) == [Document("a.txt", "one two\nthree")]
    with pytest.raises(UsageError, match="no such file or folder: "):
        read_text_files([tmp_path / "missing.txt"])
    (tmp_path / "empty.txt").write_text("\n\n", encoding="utf-8")
    with pytest.raises(UsageError, match="empty"):
        read_text_files([tmp_path / "empty.txt"])


def test_tokenizer_round_trips_text_including_unseen_characters():
    tokenizer = train_tokenizer([PROSE] * 3, vocab_size=400)
    assert tokenizer.token_to_id(END_OF_TEXT) == 0
    for text in (PROSE, "Mr. Darcy's\nnew line, ünïcödé — and 12345 \t tabs"):
        ids = tokenizer.encode(text).ids
        assert tokenizer.decode(ids) == text
    assert len(tokenizer.encode(PROSE).ids) < len(PROSE) / 2  # it learned merges


def test_tokenizer_cache_returns_the_same_tokenizer(tmp_path):
    first = cached_tokenizer([PROSE], 300, cache_dir=tmp_path)
    files = list((tmp_path / "tokenizers").glob("*.json"))
    assert len(files) == 1
    second = cached_tokenizer([PROSE], 300, cache_dir=tmp_path)
    assert second.to_str() == first.to_str()
    cached_tokenizer([PROSE + "x"], 300, cache_dir=tmp_path)
    assert len(list((tmp_path / "tokenizers").glob("*.json"))) == 2


def test_token_stream_and_blocks_cover_every_token_once():
    tokenizer = train_tokenizer([PROSE], vocab_size=300)
    documents = [Document("a", PROSE), Document("b", "short one")]
    stream = token_stream(documents, tokenizer)
    expected = tokenizer.encode(PROSE).ids + [0] + tokenizer.encode("short one").ids + [0]
    assert stream.tolist() == expected
    windows = blocks(stream, 8)
    assert windows.shape == ((len(stream) - 1) // 8, 9)
    targets = windows[:, 1:].reshape(-1)
    np.testing.assert_array_equal(targets, stream[1 : 1 + targets.size])
    with pytest.raises(UsageError, match="too short"):
        blocks(stream[:5], 8)
