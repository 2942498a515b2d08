"""``analyze`` for a model this tool trained (``oversmooth.train.saved_run``: a train run, its
``model/`` folder, an adaptation arm's model): every measure of the residual stream per layer
(layer 0 = embeddings, i = after block i; no position left out) on the first ``sequences``
examples of the run's own validation split, the model's job on that whole split (loss and
accuracy; an LM's perplexity), and with ``null_inits`` the null (``oversmooth.analyze.null``)
beside each measure. Our models carry their method in their config, so nothing is patched on top:
``oversmooth adapt`` continues one with another method.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from oversmooth.analyze.null import (
    by_layer,
    excess_columns,
    measure_null,
    measure_shuffled,
    shuffled_patches,
    shuffled_tokens,
)
from oversmooth.analyze.plots import plot_layers
from oversmooth.analyze.report import ANY_ANALYSIS, write_cka, write_csv
from oversmooth.analyze.representation import layer_cka
from oversmooth.errors import UsageError
from oversmooth.metrics import METRICS, measure_columns
from oversmooth.train.distributed import Distributed
from oversmooth.train.evaluation import evaluate, stream_table, validation_probe
from oversmooth.train.saved_run import SavedRun
from oversmooth.utils.atomic import atomic_directory
from oversmooth.utils.json_files import json_text
from oversmooth.utils.plotting import DEFAULT_FORMATS, embed, figure, save_figure
from oversmooth.utils.provenance import Provenance, digest, shown_path

#: the files ``write_run_report`` writes (one figure per measure besides)
FILES = ("metrics.csv", "quality.json", "report.md")


@dataclass
class RunAnalysis:
    """What ``analyze_saved`` measured: ``table`` a ``metric_table`` over the layers, ``quality``
    the validation split's scores, ``null`` and ``shuffled`` the random-init and shuffled-order
    nulls (None without ``null_inits``)."""

    saved: SavedRun
    method: str  # the saved model's own method (its config), e.g. an adaptation arm's
    table: pd.DataFrame
    quality: dict[str, float]
    null: pd.DataFrame | None
    shuffled: pd.DataFrame | None
    sequences: int
    tokens: int
    inputs_sha256: str  # of the examples measured (``utils.provenance.digest``)
    cka: torch.Tensor | None = None  # [layers, layers] linear CKA of the model's stream
    cka_compare: torch.Tensor | None = None  # [layers, other's layers] with ``compare`` on the same inputs
    compare: str | None = None

    def tidy(self) -> pd.DataFrame:
        """The tidy table ``oversmooth.analyze`` returns: this model's own method per layer, every
        measure and its std; ``quality`` its validation perplexity (an LM) or accuracy."""
        frame = self.table[["layer", *measure_columns(METRICS)]].copy()
        frame.insert(0, "method", self.method)
        measure = "perplexity" if "perplexity" in self.quality else "accuracy"
        frame["within_budget"] = True
        frame["quality"] = self.quality[measure]
        frame.attrs.update(model=self.saved.name, inputs=self.inputs, quality_measure=f"validation {measure}")
        return frame

    @property
    def inputs(self) -> str:
        """What was measured, in words."""
        kind = "images" if self.saved.description["model"] == "vit" else f"sequences x {self.tokens} tokens"
        return f"the first {self.sequences} validation {kind} of {self.saved.description['task']}"


def analyze_saved(
    saved: SavedRun,
    sequences: int = 64,
    null_inits: int = 0,
    device: str = "cpu",
    batch_size: int = 256,
    cka: bool = False,
    other: SavedRun | None = None,
) -> RunAnalysis:
    """Measure ``saved``'s model per layer on its first ``sequences`` validation examples and score
    it on the whole validation split (see the module docstring); ``cka``: its layer x layer CKA;
    ``other``: another of our models of the same task, compared layer by layer (CKA) on the same
    inputs (UsageError naming ``--compare`` when its inputs differ)."""
    if other is not None:
        check_same_inputs(saved, other)
    model, task = saved.load(device), saved.task()
    inputs = validation_probe(task, sequences).to(device)
    table = stream_table(model, inputs)
    quality = evaluate(model, task, "val", batch_size, Distributed(device=torch.device(device)))
    null = measure_null(model, null_inits, lambda fresh: stream_table(fresh, inputs), METRICS) if null_inits else None
    shuffled = _shuffled(model, inputs, null_inits) if null_inits else None
    own = layer_cka(model, inputs, ()) if cka else None
    compared = None if other is None else layer_cka(model, inputs, (), other.load(device))
    return RunAnalysis(
        saved,
        model.cfg.mitigation.name,
        table,
        quality,
        null,
        shuffled,
        len(inputs),
        table.attrs["tokens"],
        digest([inputs]),
        own,
        compared,
        None if other is None else other.name,
    )


def check_same_inputs(saved: SavedRun, other: SavedRun) -> None:
    """UsageError (naming ``--compare``) unless ``other`` was trained on the same task, kind of model
    and (text) tokenizer: CKA pairs the two models' states example by example."""
    same = all(saved.description[k] == other.description[k] for k in ("task", "model", "data"))
    tokenizers = [run.run_dir / "tokenizer.json" for run in (saved, other)]
    if same and all(t.is_file() for t in tokenizers):
        same = tokenizers[0].read_text() == tokenizers[1].read_text()
    if not same:
        raise UsageError(
            f"--compare {other.name}: trained on other inputs ({other.description['task']}, "
            f"{other.description['model']}) than {saved.name} ({saved.description['task']}, "
            f"{saved.description['model']}); compare runs of one task and data"
        )


def _shuffled(model: nn.Module, inputs: torch.Tensor, shuffles: int) -> pd.DataFrame:
    """The shuffled-order null: our LM's tokens, or our ViT's patches, shuffled per sequence."""
    if inputs.dim() == 2:
        shuffle = lambda g: shuffled_tokens(inputs, None, (), g)  # noqa: E731
    else:
        shuffle = lambda g: shuffled_patches(inputs, model.cfg.patch_size, g)  # noqa: E731
    return measure_shuffled(shuffles, shuffle, lambda x: stream_table(model, x), METRICS)


def csv_rows(analysis: RunAnalysis) -> list[dict]:
    """One row per layer: each measure and its std; with the nulls, their means and spreads and
    the excess over the random-init null."""
    null, shuffled = by_layer(analysis.null), by_layer(analysis.shuffled)
    rows = []
    for row in analysis.table.to_dict("records"):
        out = {"layer": int(row["layer"]), **{c: row.get(c) for c in measure_columns(METRICS)}}
        if null:
            out.update(excess_columns(row, null[out["layer"]], shuffled[out["layer"]], METRICS))
        rows.append(out)
    return rows


def quality_text(quality: dict[str, float]) -> str:
    """``val accuracy 84.64 %, loss 0.496`` (an LM: perplexity too)."""
    parts = [f"accuracy {100 * quality['accuracy']:.2f} %", f"loss {quality['loss']:.4f}"]
    if "perplexity" in quality:
        parts.append(f"perplexity {quality['perplexity']:.2f}")
    return "validation " + ", ".join(parts)


def format_run(analysis: RunAnalysis) -> str:
    """The printed summary: what was measured, the job, and cos_sim per layer (beside the null)."""
    null = analysis.null
    lines = [
        f"{analysis.saved.name} (our {analysis.saved.description['model']}, {analysis.method}; "
        f"{analysis.saved.origin}): {analysis.inputs}",
        quality_text(analysis.quality),
        "layer  cos_sim  anisotropy  block_influence"
        + ("  cos_sim null (sd)  cos_sim shuffled (sd)" if null is not None else ""),
    ]
    for index, row in enumerate(analysis.table.to_dict("records")):
        line = f"{int(row['layer']):>5}  {row['cos_sim']:7.3f}  {row['anisotropy']:10.3f}"
        line += f"  {row['block_influence']:15.3f}"
        if null is not None:
            null_row, shuffled_row = null.iloc[index], analysis.shuffled.iloc[index]
            line += f"  {null_row['cos_sim_null']:.3f} ({null_row['cos_sim_null_sd']:.3f})"
            line += f"     {shuffled_row['cos_sim_shuffled']:.3f} ({shuffled_row['cos_sim_shuffled_sd']:.3f})"
        lines.append(line)
    return "\n".join(lines)


def plot_run_metric(analysis: RunAnalysis, metric: str, stem: Path, formats=DEFAULT_FORMATS) -> list[str]:
    """``metric`` per layer (``plots.plot_layers``) with a band of one std over sequences, the
    nulls beside it; the names written."""
    with figure(height=3.4) as (fig, axes):
        plot_layers(analysis.tidy(), metric, axes[0][0], analysis.null, analysis.shuffled)
        return save_figure(fig, stem, formats)


def write_run_report(
    analysis: RunAnalysis, out: str | Path, provenance: Provenance, formats=DEFAULT_FORMATS
) -> list[str]:
    """``metrics.csv``, ``quality.json`` (the scores and the provenance), ``report.md`` and one figure
    per measure (in each of ``formats``), written together (atomically) into ``out``, where any file
    an earlier ``analyze`` wrote and this one does not is removed; returns the names written."""
    plotted = [m for m in METRICS if analysis.table[m].notna().any()]
    with atomic_directory(out, replaces=ANY_ANALYSIS) as staging:
        write_csv(staging / "metrics.csv", csv_rows(analysis))
        quality = {**analysis.quality, "provenance": provenance.to_json()}
        (staging / "quality.json").write_text(json_text(quality, indent=2) + "\n")
        (staging / "report.md").write_text(
            f"# {shown_path(analysis.saved.model_dir, out)}\n\n```\n{format_run(analysis)}\n```\n\n"
            + "".join(f"{embed(m, m, formats)}\n" for m in plotted)
            + "\n"
            + provenance.to_markdown()
        )
        figures = [name for metric in plotted for name in plot_run_metric(analysis, metric, staging / metric, formats)]
        cka = write_cka(
            staging, analysis.saved.name, analysis.cka, analysis.cka_compare, analysis.compare, analysis.inputs, formats
        )
    return [*FILES, *figures, *cka]
