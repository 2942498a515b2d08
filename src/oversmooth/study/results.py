"""Read what a study's cells have produced so far: one ``CellResult`` per cell folder.

Works at any moment: a cell may be finished (``results.json``), part-way (``metrics.jsonl``
with some epochs), or not started. The score of a cell is its test score when it completed,
else its last validation score (``score_split`` says which; a diverged run keeps the score of its
last good epoch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from oversmooth.errors import UsageError
from oversmooth.study.config import stored_spec
from oversmooth.study.files import ANALYSIS_FILE, CELL_FILE, CELLS_DIR, METRICS_FILE, RESULTS_FILE, STUDY_FILE
from oversmooth.train.run_spec import RunSpec, training_key

#: the score reported per model kind, and whether higher is better.
SCORES = {"vit": ("accuracy", True), "lm": ("perplexity", False)}


@dataclass
class CellResult:
    """One cell: what it is (from ``cell.json``) and what it has produced."""

    study: str
    name: str
    model: str
    task: str
    norm: str
    depth: int
    label: str
    method: str
    knobs: dict
    seed: int
    status: str                   # completed | diverged | partial | pending
    epochs: list[dict]            # the metrics.jsonl records
    results: dict | None          # results.json, once finished
    spec: RunSpec | None = None   # how it was trained (cell.json: its spec, or older cells' train_args)
    analysis: dict | None = None  # analysis.json: measurements on the trained model, once made

    @property
    def score_name(self) -> str:
        return SCORES[self.model][0]

    @property
    def higher_is_better(self) -> bool:
        return SCORES[self.model][1]

    @property
    def score_split(self) -> str | None:
        """``test`` for a completed run, ``val`` for a diverged or unfinished one, None before epoch 1."""
        if self.status == "completed":
            return "test"
        return "val" if self.epochs else None

    @property
    def score(self) -> float | None:
        if self.status == "completed":
            return self.results["test"][self.score_name]
        return self.epochs[-1]["val"][self.score_name] if self.epochs else None

    @property
    def final_layers(self) -> list[dict]:
        """The per-layer metric rows of the last recorded epoch (empty before epoch 1)."""
        return self.epochs[-1].get("layers", []) if self.epochs else []

    @property
    def examples_per_second(self) -> float | None:
        return (self.results or {}).get("train_examples_per_second")

    def training(self) -> tuple:
        """``training_key`` of this cell: cells with equal ``training()`` and seed are paired,
        whatever study ran them."""
        return training_key(self.spec)


def _parse(path: Path, text: str):
    """``json.loads(text)``; a damaged file is a UsageError naming it and the way out."""
    try:
        return json.loads(text)
    except ValueError as error:
        raise UsageError(f"{path} is damaged ({error}); restore it, or delete the cell's folder to train "
                         "it again") from None


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [_parse(path, line) for line in path.read_text().splitlines() if line.strip()]


def _read_json(path: Path):
    return _parse(path, path.read_text())


def read_cell(folder: Path) -> CellResult:
    info = _read_json(folder / CELL_FILE)
    results = _read_json(folder / RESULTS_FILE) if (folder / RESULTS_FILE).is_file() else None
    epochs = _read_jsonl(folder / METRICS_FILE)
    status = results["status"] if results else ("partial" if epochs else "pending")
    variant = info["variant"]
    analysis = json.loads((folder / ANALYSIS_FILE).read_text()) if (folder / ANALYSIS_FILE).is_file() else None
    return CellResult(
        study=info["study"], name=info["name"], model=info["model"], task=info["task"], norm=info["norm"],
        depth=info["depth"], label=variant["label"], method=variant["method"],
        knobs={k: v for k, v in variant.items() if k not in ("label", "method", "norms")}, seed=info["seed"],
        status=status, epochs=epochs, results=results, spec=stored_spec(info), analysis=analysis,
    )


def study_info(folder: str | Path) -> dict:
    """The ``study.json`` of a study folder (name, methods, command...); UsageError if it is none."""
    path = Path(folder) / STUDY_FILE
    if not path.is_file():
        raise UsageError(f"{folder} is not a study folder (no {STUDY_FILE}); make one with `oversmooth study`")
    return _read_json(path)


def read_study(folder: str | Path) -> list[CellResult]:
    """Every cell that has its ``cell.json``, under ``folder/cells`` (a study folder) or right under
    ``folder`` (its archive, ``results/<study>``), in the study's method order (then by task,
    norm, depth and seed)."""
    folder = Path(folder)
    methods = study_info(folder)["methods"]
    cells = folder / CELLS_DIR if (folder / CELLS_DIR).is_dir() else folder
    found = [read_cell(cell) for cell in sorted(cells.iterdir()) if (cell / CELL_FILE).is_file()]
    rank = {method["label"]: index for index, method in enumerate(methods)}
    return sorted(found, key=lambda c: (rank.get(c.label, len(rank)), c.label, c.task, c.norm, c.depth, c.seed))
