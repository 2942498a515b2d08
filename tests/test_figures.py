"""Every kind of figure the tool draws (analyze, its saved-run form, train, adapt, theory, the study
and claims reports), rendered from tiny inputs with ``--format png,pdf,svg``: each format written and
valid (PDF: its magic; SVG: XML), each PNG at 200 dpi (its pixels are the SVG's size in inches x
200), no wider than a page, no text under 6 pt, no legend on any axes, whole-number ticks on an axis
that counts, and the frontier's labels apart; an unknown format refused by every command that draws,
one line, exit 2, nothing written."""

import struct
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import matplotlib
import pytest
from claims_cells import adapted, depth_cells, fmnist, make_cell, probes
from hf_tiny import WORDS, save_tiny

from oversmooth.cli import main
from oversmooth.utils.plotting import DPI, PAGE, STYLE

ALL = "png,pdf,svg"
THEORY = ["--depth", "3", "--tokens", "4", "--dim", "4", "--sequences", "2", "--no-progress"]
TRAIN = "--task synthetic --model lm --depth 2 --width 16 --heads 2 --epochs 2 --threads 1 --no-progress".split()
ADAPT = ["--text", "sample", "--seq-len", "16", "--eval-sequences", "4", "--steps", "2", "--no-progress"]
#: analyze: 3 sequences measured, 1 of them the attention sample (the attention figures say 1)
ANALYZE = ["--max-sequences", "3", "--max-length", "16", "--attention-sequences", "1", "--attention-tokens", "8"]
#: an axis labelled so counts: its ticks are whole numbers
COUNTING = ("layer", "block", "epoch", "step", "depth")


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """Every figure kind drawn once into its own folder with every format; the figures as saved."""
    from matplotlib.figure import Figure

    root = tmp_path_factory.mktemp("figures")
    figures: dict[int, Figure] = {}
    real = Figure.savefig

    def savefig(self, *args, **kwargs):
        figures[id(self)] = self
        return real(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", savefig)
        patch.setattr("builtins.print", lambda *a, **k: None)
        folders = _draw_everything(root)
    return folders, list(figures.values())


def _draw_everything(root: Path) -> dict[str, Path]:
    from oversmooth.claims.report import render_claims
    from oversmooth.study.results import read_study

    llama, bert = save_tiny("llama", root / "llama"), save_tiny("bert", root / "bert")
    text = " ".join(WORDS * 3)
    folders = {name: root / name for name in ("analyze", "train", "saved", "adapt", "theory", "report", "claims")}
    sweep = ["--methods", "neutreno,contranorm", "--sweep", "--cka", "--compare", str(llama)]
    assert (
        main(
            ["analyze", str(llama), "--text", text, *ANALYZE, *sweep, "--format", ALL, "--out", str(folders["analyze"])]
        )
        == 0
    )
    assert main(["train", *TRAIN, "--format", ALL, "--out", str(folders["train"])]) == 0
    saved = ["analyze", str(folders["train"]), "--max-sequences", "4", "--cka", "--format", ALL]
    assert main([*saved, "--out", str(folders["saved"]), "--no-progress"]) == 0
    assert main(["adapt", str(bert), *ADAPT, "--format", ALL, "--out", str(folders["adapt"])]) == 0
    assert main(["theory", "all", *THEORY, "--format", ALL, "--out", str(folders["theory"])]) == 0
    cells_root = root / "cells"
    fmnist(cells_root)
    depth_cells(cells_root)
    for seed in (10, 11):
        for depth in (8, 96):
            make_cell(cells_root, "depth-fixes", "softmax", seed, 0.84, norm="post", depth=depth)
            make_cell(cells_root, "depth-fixes", "deepnorm", seed, 0.85, norm="post", depth=depth)
    assert main(["report", str(cells_root / "depth-w32"), "--format", ALL, "--out", str(folders["report"])]) == 0
    cells = [cell for study in sorted(cells_root.iterdir()) for cell in read_study(study)]
    records = [adapted(0, 0.880, {0.2: 0.881, 0.6: 0.886, 1.8: 0.870}), adapted(1, 0.890, {0.6: 0.892})]
    _, report = render_claims(cells, probes(), adapted=records, formats=("png", "pdf", "svg"))
    report.write(folders["claims"])
    return folders


#: the figures each command draws, by stem (``analyze``: a few of its per-measure figures besides)
EXPECTED = {
    "analyze": ("cos_sim", "attn_entropy", "massive_ratio", "sinks", "frontier", "sublayers", "cka", "cka_compare"),
    "train": ("curves", "similarity"),
    "saved": ("cos_sim", "block_influence", "cka"),
    "adapt": ("adapt", "tradeoff"),
    "theory": ("smoothing", "lnflip", "escalation", "escalation_rates"),
    "report": ("depth-w32_scores", "depth-w32_layers", "depth-w32_curves"),
    "claims": ("claims", "claim4_depth", "depth_fixes", "claims_8_2c_lambda", "probes", "fmnist-p7_curves"),
}


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])


def svg_inches(path: Path) -> tuple[float, float]:
    """The SVG's width and height in inches, from its root element (``504pt``)."""
    root = ElementTree.parse(path).getroot()  # parses as XML, or raises
    return tuple(float(root.attrib[side].removesuffix("pt")) / 72 for side in ("width", "height"))


@pytest.mark.slow
@pytest.mark.parametrize("command", EXPECTED)
def test_each_figure_is_written_in_every_format_at_200_dpi(drawn, command):
    folders, _ = drawn
    folder = folders[command]
    for stem in EXPECTED[command]:
        png, pdf, svg = (folder / f"{stem}.{fmt}" for fmt in ("png", "pdf", "svg"))
        assert pdf.read_bytes()[:5] == b"%PDF-", pdf
        width, height = svg_inches(svg)
        assert png_size(png) == (round(width * DPI), round(height * DPI)), stem
        assert width <= PAGE + 1e-6, stem  # printed at its size: no wider than a page
    stems = {p.stem for p in folder.iterdir() if p.suffix in (".png", ".pdf", ".svg")}
    assert all({f"{s}.{fmt}" for fmt in ("png", "pdf", "svg")} <= {p.name for p in folder.iterdir()} for s in stems)


def _drawn_in_style(fig) -> None:
    """Lay ``fig`` out again as it was saved (under the style: ticks are made at draw time)."""
    with matplotlib.rc_context(STYLE):
        fig.canvas.draw()


@pytest.mark.slow
def test_no_legend_covers_any_axes_and_no_text_is_too_small_to_print(drawn):
    from matplotlib.text import Text

    _, figures = drawn
    assert len(figures) >= sum(map(len, EXPECTED.values()))
    legends = 0
    for fig in figures:
        _drawn_in_style(fig)
        renderer = fig.canvas.get_renderer()
        panels = [ax.get_window_extent(renderer) for ax in fig.axes if ax.get_visible()]
        for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]:
            box = legend.get_window_extent(renderer)
            assert not any(box.overlaps(panel) for panel in panels), [t.get_text() for t in legend.get_texts()]
            legends += 1
        sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]
        assert min(sizes) >= 6, min(sizes)
    assert legends >= 20  # the check ran on the figures that have legends


@pytest.mark.slow
def test_an_axis_that_counts_ticks_whole_numbers(drawn):
    _, figures = drawn
    checked = 0
    for fig in figures:
        _drawn_in_style(fig)
        for ax in fig.axes:
            for axis, label, view in (
                (ax.xaxis, ax.get_xlabel(), ax.get_xlim()),
                (ax.yaxis, ax.get_ylabel(), ax.get_ylim()),
            ):
                if label.split(" ")[0] in COUNTING and axis.get_scale() == "linear":
                    low, high = sorted(view)
                    ticks = [t for t in axis.get_ticklocs() if low <= t <= high]
                    assert ticks and all(float(t).is_integer() for t in ticks), (label, ticks)
                    checked += 1
    assert checked >= 30


@pytest.mark.slow
def test_the_frontier_labels_stay_apart_inside_the_axes(drawn):
    _, figures = drawn
    (fig,) = [f for f in figures if any(ax.get_xlabel().startswith("quality loss") for ax in f.axes)]
    _drawn_in_style(fig)
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    boxes = [text.get_window_extent(renderer) for text in ax.texts]
    inside = ax.get_window_extent(renderer)
    assert len(boxes) >= 3
    for i, box in enumerate(boxes):
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
        assert not any(box.overlaps(other) for other in boxes[i + 1 :])


@pytest.mark.slow
def test_attention_figures_name_the_attention_sample_they_read(drawn):
    """analyze measured 3 sequences, its attention sample 1: each figure's title says which it shows."""
    _, figures = drawn
    titles = {ax.get_ylabel(): ax.get_title() for fig in figures for ax in fig.axes if "llama" in ax.get_title()}
    assert "3 sequences x" in titles["cos_sim"] and "attention sample" not in titles["cos_sim"]
    for measure in ("attn_entropy", "sink_rate", "massive_ratio"):
        assert "attention sample, unpatched: 1 sequences x 8 tokens" in titles[measure].replace("\n", " "), measure


@pytest.mark.slow
def test_a_report_shows_the_figures_in_the_formats_it_wrote(tmp_path):
    """A report of PDFs alone links them (no browser shows a PDF inline); with SVG it shows the SVG."""
    make_cell(tmp_path / "cells", "fmnist-p7", "softmax", 0, 0.88)
    for fmt, shown in (
        ("pdf", "[validation curves](fmnist-p7_curves.pdf)"),
        ("svg,pdf", "![validation curves](fmnist-p7_curves.svg)"),
    ):
        out = tmp_path / fmt
        assert main(["report", str(tmp_path / "cells" / "fmnist-p7"), "--format", fmt, "--out", str(out)]) == 0
        assert shown in (out / "report.md").read_text()
        assert not list(out.glob("*.png")) and (out / "fmnist-p7_curves.pdf").is_file()


@pytest.mark.parametrize("command", ["analyze", "theory", "report", "claims", "train", "adapt"])
def test_an_unknown_format_is_refused_with_one_line_and_nothing_written(command, tmp_path, capsys):
    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.88)
    argv = {
        "analyze": ["analyze", "--text", " ".join(WORDS), *ANALYZE],
        "theory": ["theory", "smoothing", *THEORY],
        "report": ["report", str(tmp_path / "fmnist-p7")],
        "claims": ["claims", str(tmp_path / "fmnist-p7"), "--no-probes"],
        "train": ["train", *TRAIN],
        "adapt": ["adapt", *ADAPT],
    }[command]
    out = tmp_path / "out"
    try:
        code = main([*argv, "--format", "png,gif", "--out", str(out)])
    except SystemExit as refused:  # argparse's refusal of a flag's value
        code = refused.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown figure format 'gif'" in err and "png, pdf, svg" in err, err
    assert "--format" in err
    assert not out.exists()
