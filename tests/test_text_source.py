"""One syntax for text (``oversmooth.data.text_source``): every command reads the same forms, and a
path-like argument that is not there says ``no such file or folder: X``."""

import pathlib

import pytest

from oversmooth.adapt import AdaptConfig
from oversmooth.adapt.text_blocks import documents
from oversmooth.analyze.inputs import image_files, read_text
from oversmooth.cli import build_parser, main
from oversmooth.cli.adapt import config_of
from oversmooth.data.text_source import TEXT_FORMS, TextSource, parse_text, sample_text
from oversmooth.errors import UsageError
from oversmooth.train.task_factory import check_data
from oversmooth.utils.paths import path_like

ROOT = pathlib.Path(__file__).resolve().parents[1]
ESSAY = "It is a truth universally acknowledged.\n\nThat a single man in possession of a good fortune."


@pytest.fixture
def essays(tmp_path, monkeypatch):
    """A folder ``essays/`` with two text files and a CSV, the working folder its parent."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "essays"
    folder.mkdir()
    (folder / "b.txt").write_text(ESSAY)
    (folder / "a.md").write_text("First essay.")
    (folder / "notes.csv").write_text("not text")
    return folder


def test_every_form_parses_and_the_text_prefix_is_optional(essays):
    b, a = essays / "b.txt", essays / "a.md"
    assert parse_text("sample") == TextSource("sample") and parse_text("austen") == TextSource("austen")
    assert parse_text(str(b)) == parse_text(f"text:{b}") == TextSource("files", (b,))
    rel = pathlib.Path("essays")
    assert parse_text("essays") == parse_text("text:essays") == TextSource("files", (rel / "a.md", rel / "b.txt"))
    assert parse_text(f"{b},{a}") == TextSource("files", (b, a))  # the order given
    assert parse_text("Hello, world").string == "Hello, world"  # commas in a string name no files
    assert parse_text("the cat and/or the dog").kind == "string"
    (essays.parent / "sample").write_text(ESSAY)
    assert parse_text("./sample") == TextSource("files", (pathlib.Path("sample"),))  # a file named sample


@pytest.mark.parametrize(
    "value", ["gone.txt", "./gone", "~/surely-not-here-42", "essays/gone", "text:gone", "a,./gone"]
)
def test_a_path_that_is_not_there_is_refused_not_read_as_text(essays, value):
    missing = value.removeprefix("text:").split(",")[-1]
    with pytest.raises(UsageError, match=f"^no such file or folder: {missing};"):
        parse_text(value)


def test_path_like_tells_paths_from_names(essays):
    assert path_like("essays/model")  # its first folder is here
    assert not path_like("openai-community/gpt2")  # a Hugging Face name
    assert path_like("a/b/c") and path_like("~/x") and path_like("./x") and not path_like("gpt2")


def test_analyze_and_adapt_read_a_plain_file_and_text_file_alike(essays):
    """``analyze --text FILE`` and ``adapt --text FILE`` (refused before) read the file, as the
    ``text:FILE`` form does; the reference is the file read by hand."""
    file = str(essays / "b.txt")
    assert read_text(file)[0] == read_text(f"text:{file}")[0] == ESSAY.replace("\n\n", "\n")  # reflowed paragraphs
    assert read_text(None) == read_text("sample") == (sample_text(), "built-in sample (austen_sample.txt)")
    AdaptConfig(text=file).check()
    args = build_parser().parse_args(["adapt", "--text", file, "--out", "runs/a"])
    assert config_of(args).check().text == file
    long = essays / "long.txt"
    long.write_text("\n\n".join(f"Paragraph {i}: " + "words and more words " * 40 for i in range(60)))
    assert documents(str(long)) == documents(f"text:{long}")
    assert documents("essays") == documents(f"text:{essays}")


def test_adapt_refuses_a_missing_text_file_in_either_form(essays):
    for value in ("gone.txt", "text:gone.txt"):
        with pytest.raises(UsageError, match="no such file or folder: gone.txt"):
            AdaptConfig(text=value).check()


def test_train_task_takes_a_folder_and_hints_at_the_prefix(essays):
    check_data("text:essays")  # reads both files
    from oversmooth.train.task_factory import task_model_kind

    with pytest.raises(UsageError, match=r"\(a text file or folder: text:essays\)"):
        task_model_kind("essays", "lm")


def test_analyze_of_a_missing_run_folder_says_no_such_file(essays, capsys):
    """``analyze runs/nonexistent`` beside a ``runs/`` folder: not the hub-name message."""
    (essays.parent / "runs").mkdir()
    for argv in (["runs/nonexistent"], ["--text", "runs/missing.txt"], ["--compare", "runs/other"]):
        assert main(["analyze", *argv, "--out", "out", "--methods", "none"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "no such file or folder: runs/" in err, err
        assert "hub" not in err
    assert not (essays.parent / "out").exists()
    with pytest.raises(UsageError, match="no such file or folder: runs/pictures"):
        image_files("runs/pictures")


def test_every_text_flag_is_documented_by_one_help_and_one_section():
    helps = {
        name: next(a.help for a in sub._actions if a.dest in ("text", "task"))
        for name, sub in next(a for a in build_parser()._actions if a.dest == "command").choices.items()
        if name in ("analyze", "adapt", "train")
    }
    assert TEXT_FORMS in helps["analyze"] and TEXT_FORMS in helps["adapt"]
    assert all("docs/analyze.md#text-sources" in text for text in helps.values()), helps
    section = (ROOT / "docs" / "analyze.md").read_text().split("## Text sources")[1].split("\n## ")[0]
    for form in ("`sample`", "`austen`", "`FILE`", "`FOLDER`", "`text:FILE`", "no such file or folder: X"):
        assert form in section
