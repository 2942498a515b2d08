"""Run the theory experiments into a folder: CSVs, figures (PNG, or each format asked for), and the
tables to print.

``run_theory(which, setup, out)`` is what ``oversmooth theory`` does: ``which`` is a preset
(``THEORY_PRESETS``), ``"escalation"`` (Yu & Zhang's study) or ``"all"``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import torch

from oversmooth.errors import FieldError, UsageError
from oversmooth.theory.escalation import RATE_DRAWS
from oversmooth.theory.experiment import Setup
from oversmooth.theory.presets import THEORY_PRESETS
from oversmooth.utils.memory import check_memory
from oversmooth.utils.plotting import DEFAULT_FORMATS, FORMATS, figure_files

RUNS = ("all", *THEORY_PRESETS, "escalation")
ROW_BYTES = 10 * 2**10  # the table and CSV rows of one layer, all cases together (measured: about 7 KiB)
RATE_DEPTH = 48  # the most layers of the escalation rate study
#: every file a run may write (``all`` in every format writes them all); one a run does not write is
#: removed from its folder
OUTPUTS = (
    *(name for preset in THEORY_PRESETS for name in figure_files(preset, FORMATS)),
    "predictions.csv",
    "trajectories.csv",
    *figure_files("escalation", FORMATS),
    "escalation.csv",
    *figure_files("escalation_rates", FORMATS),
    "escalation_rates.csv",
    "provenance.json",
)


def needed_bytes(setup: Setup, escalation: bool = True) -> float:
    """About the most memory a run holds, in bytes: per layer, one case's states (and softmax
    attention) twice over and its table rows; besides, the d x d matrices and, with
    ``escalation`` (the rate study runs too), its draws' attention and states (measured peaks stay
    under this, by up to 2x)."""
    n, d, b = setup.tokens, setup.dim, setup.sequences
    per_layer = 2 * 8 * b * n * (d + (n if setup.attention == "softmax" else 0)) + ROW_BYTES
    rate = RATE_DRAWS * n * (n + (RATE_DEPTH + 1) * d) if escalation else 0
    fixed = 16 * (rate + b * n * n + 10 * d * d)
    return (setup.depth + 1) * per_layer + fixed


def check_size(setup: Setup, escalation: bool = True) -> None:
    """FieldError when a run would not fit in memory, naming the sizes set above their defaults."""
    try:
        check_memory(
            needed_bytes(setup, escalation),
            f"a run of depth {setup.depth} ({setup.sequences} sequences, {setup.tokens} tokens, {setup.dim} features)",
            "",
        )
    except UsageError as error:
        sizes = ("depth", "sequences", "tokens", "dim")
        raised = [name for name in sizes if getattr(setup, name) > getattr(Setup, name)] or sizes
        raise FieldError(
            "{needs}; lower %s" % " or ".join("{%s}" % name for name in raised), needs=str(error).rstrip("; ")
        ) from None


def run_theory(
    which: str,
    setup: Setup,
    out: str | Path,
    progress: bool = True,
    formats: tuple[str, ...] = DEFAULT_FORMATS,
    command: str | None = None,
) -> str:
    """Run ``which`` (one of ``RUNS``) with ``setup``; write its files into ``out`` all at once
    (atomically, replacing those of an earlier run: ``OUTPUTS``), each figure in ``formats``, with
    ``provenance.json`` (``command``: the command line that asked for it; None: the Python API), and
    return its tables as text; ``progress``: a bar over the presets."""
    from oversmooth.utils import atomic
    from oversmooth.utils.provenance import Provenance

    if which not in RUNS:
        raise UsageError(f"unknown theory run {which!r}; choose from {', '.join(RUNS)}")
    check_size(setup, escalation=which in ("all", "escalation"))
    presets = THEORY_PRESETS if which == "all" else () if which == "escalation" else (which,)
    tables = []
    with atomic.atomic_directory(out, replaces=OUTPUTS) as staging:
        if presets:
            tables.append(_presets(setup, presets, staging, formats, progress))
        if which in ("all", "escalation"):
            tables.append(_escalation(setup, staging, formats))
        provenance = Provenance.gather(
            command or f"oversmooth.theory.run_theory({which!r}, {setup!r})",
            torch.device("cpu"),
            {"seed": setup.seed},
            {"inputs": "simulated from the seed (no data read)"},
        )
        (staging / "provenance.json").write_text(json.dumps({"provenance": provenance.to_json()}, indent=1) + "\n")
    return "\n\n".join(tables)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _write_csv(path: Path, rows: list[dict]) -> None:
    from oversmooth.utils.atomic import atomic_write

    with atomic_write(path) as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _presets(setup: Setup, names: tuple[str, ...], out: Path, formats: tuple[str, ...], progress: bool = True) -> str:
    """Run the presets: one figure each, predictions.csv, trajectories.csv; returns the table."""
    from tqdm import tqdm

    from oversmooth.theory import experiment
    from oversmooth.theory.plots import plot_metrics_vs_depth

    summary, trajectories = [], []
    for name in tqdm(names, desc="theory presets", disable=not progress):
        results = experiment.run_preset(name, setup)
        plot_metrics_vs_depth(
            {r.case.label: r.table for r in results},
            f"{name}: X <- X + A X H ({setup.attention} A, n={setup.tokens}, d={setup.dim}; "
            f"mean over {setup.sequences} starting X)",
            out / name,
            formats=formats,
        )
        for r in results:
            summary.append(r.summary_row())
            trajectories += [{"preset": name, "case": r.case.label, **row} for row in r.table.to_dict("records")]
    _write_csv(out / "predictions.csv", summary)
    _write_csv(out / "trajectories.csv", trajectories)
    return _table(
        [["preset", "case", "dominant mu", "sep", "predicted", "simulated", "t_sim 0 -> L", "agree"]]
        + [
            [
                row["preset"],
                row["case"],
                f"{complex(row['dominant_mu_real'], row['dominant_mu_imag']):.3f}",
                f"{row['separation']:.3f}",
                row["predicted"],
                row["simulated"],
                f"{row['t_sim_first']:.3f} -> {row['t_sim_last']:.3f}",
                f"{row['agree']}/{row['sequences']} ({row['compared']})",
            ]
            for row in summary
        ]
    )


def _escalation(setup: Setup, out: Path, formats: tuple[str, ...]) -> str:
    """Yu & Zhang: t_sim curves with and without de-escalation, and rate vs |lambda_2|; returns
    the t_sim table and the prediction errors."""
    from oversmooth.theory.escalation import escalation_curves, escalation_rates
    from oversmooth.theory.plots import plot_escalation_rates, plot_metrics_vs_depth

    generator = torch.Generator().manual_seed(setup.seed)
    curves = escalation_curves(setup.tokens, setup.dim, setup.depth, generator, sequences=setup.sequences)
    plot_metrics_vs_depth(
        curves,
        f"Yu & Zhang: repeated attention, H = I (n={setup.tokens}, d={setup.dim}; mean over {setup.sequences} "
        "starting X); tau = de-escalation",
        out / "escalation",
        metrics=("t_sim", "cos_sim"),
        formats=formats,
    )
    _write_csv(
        out / "escalation.csv",
        [{"variant": label, **row} for label, table in curves.items() for row in table.to_dict("records")],
    )
    marks = sorted({0, 1, setup.depth // 4, setup.depth // 2, setup.depth})
    lines = [
        _table(
            [["variant", *(f"t_sim@{m}" for m in marks)]]
            + [[label, *(f"{table['t_sim'].iloc[m]:.3f}" for m in marks)] for label, table in curves.items()]
        ),
        "",
    ]
    depth = min(setup.depth, RATE_DEPTH)
    study = escalation_rates(setup.tokens, setup.dim, depth, generator)
    title = f"Yu & Zhang: {RATE_DRAWS} draws of A (n={setup.tokens}, d={setup.dim}), {depth} layers each"
    plot_escalation_rates(study, title, out / "escalation_rates", formats)
    _write_csv(
        out / "escalation_rates.csv",
        [
            {
                "lambda2": float(study.lambda2[k]),
                **{f"{name}_measured": float(v[k]) for name, v in study.measured.items()},
                **{f"{name}_predicted": float(v[k]) for name, v in study.predicted.items()},
            }
            for k in range(study.lambda2.numel())
        ],
    )
    for name, predicted in study.predicted.items():
        measured = study.measured[name]
        ok = ~measured.isnan()
        error = ((measured[ok] - predicted[ok]).abs() / predicted[ok]).median()
        lines.append(
            f"escalation rate, {name}: median relative error of the prediction "
            f"{float(error):.3f} over {int(ok.sum())} attention matrices "
            f"(|lambda_2| {float(study.lambda2.min()):.2f}..{float(study.lambda2.max()):.2f})"
        )
    return "\n".join(lines)
