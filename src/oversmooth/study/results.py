"""Read what a study's cells have produced so far: one ``CellResult`` per cell folder.

Works at any moment: a cell may be finished (``results.json``), part-way (``metrics.jsonl``
with some epochs), or not started. The score of a cell is its test score when it completed,
else its last validation score (``score_split`` says which; a diverged run keeps the score of its
last good epoch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from oversmooth.errors import UsageError
from oversmooth.study.config import RESTRICTIONS, stored_spec
from oversmooth.study.files import (
    ANALYSIS_FILE,
    CELL_FILE,
    CELLS_DIR,
    METRICS_FILE,
    RESULTS_FIELDS,
    RESULTS_FILE,
    STUDY_FILE,
)
from oversmooth.study.null import read_null
from oversmooth.train.run_spec import RunSpec, training_key
from oversmooth.utils.json_files import NUMBER, check_table, read_jsonl, read_table

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
    label: str  # the arm: the method's label, after its recipe's (``RECIPE:LABEL``) in a study with recipes
    method: str
    knobs: dict
    seed: int
    status: str  # completed | diverged | partial | pending
    epochs: list[dict]  # the metrics.jsonl records
    results: dict | None  # results.json, once finished
    spec: RunSpec | None = None  # how it was trained (cell.json: its spec, or older cells' train_args)
    analysis: dict | None = None  # analysis.json: measurements on the trained model, once made
    null: dict | None = None  # its arm at random init (its study's null.json); None: not computed
    recipe: str = ""  # its recipe's label, in a study with recipes

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


def paired_score(cell: CellResult) -> float | None:
    """Test accuracy in percent, or an LM's test NLL per token (nats, the log perplexity). A
    diverged cell keeps the validation score of its last good epoch, or chance (10 %; an LM:
    log of the vocabulary) when it diverged in its first epoch."""
    if cell.status == "diverged" and not cell.epochs:
        return chance_score(cell)
    if cell.status not in ("completed", "diverged"):
        return None
    split = cell.results["test"] if cell.status == "completed" else cell.epochs[-1]["val"]
    return split["loss"] if cell.model == "lm" else 100 * split["accuracy"]


def chance_score(cell: CellResult) -> float:
    """What a model that learned nothing scores: 100 / classes percent, or an LM's log of its
    vocabulary (nats per token, the NLL of the uniform guess)."""
    config = cell.results["description"]["model_config"]
    return math.log(config["vocab_size"]) if cell.model == "lm" else 100 / config["num_classes"]


#: the fields a reader of ``cell.json`` (and its ``variant``) and ``study.json`` needs.
CELL_FIELDS = {
    "study": str,
    "name": str,
    "model": str,
    "task": str,
    "norm": str,
    "depth": int,
    "variant": dict,
    "seed": int,
}
VARIANT_FIELDS = {"label": str, "method": str}
STUDY_FIELDS = {"name": str, "methods": list}


def read_analysis(path: Path) -> dict:
    """A cell's ``analysis.json`` (``oversmooth.claims.cell_analysis``), checked for every field the
    claims read: the stream, each block's verdict and t_sim change, the value-path flips, the reference."""
    fix = "delete it to measure the model again"
    analysis = read_table(path, {"stream": dict, "blocks": list}, fix)
    check_table(analysis["stream"], f"{path} (its stream)", {"cos_sim": list}, fix)
    for block in analysis["blocks"]:
        check_table(block, f"{path} (a block)", {"layer": int, "verdict": dict, "attention": dict}, fix)
        check_table(block["verdict"], f"{path} (a block's verdict)", {"verdict": str}, fix)
        check_table(block["attention"], f"{path} (a block's attention)", {"t_sim_change": NUMBER}, fix)
    flips = check_table(analysis, path, {"value_flip": list}, fix)["value_flip"] if "value_flip" in analysis else []
    for flip in flips:
        fields = {"t_sim_change": NUMBER, "t_sim_change_trained": NUMBER, "verdict": str, "verdict_trained": str}
        check_table(flip, f"{path} (a value-path flip)", fields, fix)
    if "reference" in analysis:
        reference = check_table(analysis, path, {"reference": dict}, fix)["reference"]
        check_table(reference, f"{path} (its reference model)", dict.fromkeys(reference, NUMBER), fix)
    return analysis


def read_cell(folder: Path) -> CellResult:
    """What the cell in ``folder`` is and has produced; a damaged file, or one that lacks a field
    the report reads (or holds it with a wrong type), is a UsageError naming it."""
    fix = f"restore it, or delete {folder} to train the cell again"
    info = read_table(folder / CELL_FILE, CELL_FIELDS, fix)
    variant = check_table(info["variant"], f"{folder / CELL_FILE} (its variant)", VARIANT_FIELDS, fix)
    if info["model"] not in SCORES:
        raise UsageError(
            f"{folder / CELL_FILE} is damaged (model {info['model']!r} is none of {', '.join(SCORES)}); {fix}"
        )
    scores = {"loss": NUMBER, SCORES[info["model"]][0]: NUMBER}
    results = read_table(folder / RESULTS_FILE, RESULTS_FIELDS, fix) if (folder / RESULTS_FILE).is_file() else None
    if results is not None:  # the report sums the one and prints the other (null: a resume that ran no step)
        timings = {"wall_seconds": NUMBER, "train_examples_per_second": (*NUMBER, type(None))}
        timings = {k: kind for k, kind in timings.items() if k in results}
        check_table(results, folder / RESULTS_FILE, timings, fix)
    if results is not None and results["status"] == "completed":
        check_table(results, folder / RESULTS_FILE, {"test": dict}, fix)
        check_table(results["test"], f"{folder / RESULTS_FILE} (its test scores)", scores, fix)
    if results is not None and "description" in results:  # how the run says it was trained
        recorded = check_table(results, folder / RESULTS_FILE, {"description": dict}, fix)["description"]
        where = f"{folder / RESULTS_FILE} (its description)"
        check_table(recorded, where, {"method": str, "train": dict, "model_config": dict}, fix)
        check_table(recorded["train"], where, {"seed": int, "epochs": int}, fix)
        check_table(recorded["model_config"], where, {"mitigation": dict}, fix)
    epochs = read_jsonl(folder / METRICS_FILE, fix)
    for epoch in epochs:
        check_table(
            epoch, folder / METRICS_FILE, {"val": dict, "layers": list} if "layers" in epoch else {"val": dict}, fix
        )
        check_table(epoch["val"], f"{folder / METRICS_FILE} (an epoch's val scores)", scores, fix)
        for row in epoch.get("layers", []):
            measures = {name: (*NUMBER, type(None)) for name in (row if isinstance(row, dict) else ())}
            check_table(row, f"{folder / METRICS_FILE} (a layer row)", {**measures, "layer": int}, fix)
    status = results["status"] if results else ("partial" if epochs else "pending")
    analysis = read_analysis(folder / ANALYSIS_FILE) if (folder / ANALYSIS_FILE).is_file() else None
    spec = stored_spec(info, folder / CELL_FILE, fix)
    knobs = {k: v for k, v in variant.items() if k not in ("label", "method", *RESTRICTIONS)}
    disagree = _disagreement(info, {"method": variant["method"], "knobs": knobs}, spec, results)
    if disagree:
        raise UsageError(f"{folder} contradicts itself ({disagree}): it cannot be paired; {fix}")
    return CellResult(
        study=info["study"],
        name=info["name"],
        model=info["model"],
        task=info["task"],
        norm=info["norm"],
        depth=info["depth"],
        label=f"{info['recipe']}:{variant['label']}" if info.get("recipe") else variant["label"],
        method=variant["method"],
        knobs=knobs,
        seed=info["seed"],
        status=status,
        epochs=epochs,
        results=results,
        spec=spec,
        analysis=analysis,
        recipe=info.get("recipe", ""),
    )


def _disagreement(info: dict, variant: dict, spec: RunSpec, results: dict | None) -> str:
    """Where a cell's files disagree on how it was trained ('' where they agree): ``cell.json``'s
    fields and ``variant`` against its run spec, its ``command`` against the one the spec makes,
    and the configuration ``results.json`` recorded against the spec."""
    said = {**{k: info[k] for k in ("model", "task", "norm", "depth", "seed")}, **variant}
    found = [
        f"cell.json's {k} {v!r}, its spec's {getattr(spec, k)!r}" for k, v in said.items() if getattr(spec, k) != v
    ]
    if "spec" in info and info.get("command", "") not in ("", spec.command()):
        found.append("cell.json's command is not the one its spec makes")
    if results is not None and "description" in results:
        recorded = results["description"]
        ran = {"method": recorded["method"], "seed": recorded["train"]["seed"], "epochs": recorded["train"]["epochs"]}
        ran |= {k: recorded["model_config"]["mitigation"].get(k) for k in spec.knobs}
        meant = {"method": spec.method, "seed": spec.seed, "epochs": spec.epochs, **spec.knobs}
        found += [
            f"results.json's {k} {ran[k]!r}, the spec's {meant[k]!r}"
            for k in ran
            if meant[k] is not None and ran[k] != meant[k]
        ]
    return "; ".join(found)


def study_info(folder: str | Path) -> dict:
    """The ``study.json`` of a study folder (name, methods, command...); UsageError if it is none."""
    path = Path(folder) / STUDY_FILE
    if not path.is_file():
        raise UsageError(
            f"{folder} is not a study folder (no {STUDY_FILE}); make one with `oversmooth study` "
            "(the claims protocol's archives under results/ are read by `oversmooth claims`)"
        )
    fix = "restore it, or run the study again with `oversmooth study`"
    info = read_table(path, STUDY_FIELDS, fix)
    check_table(info, path, {"command": str} if "command" in info else {}, fix)
    for method in info["methods"]:
        check_table(method, f"{path} (a method)", {"label": str}, fix)
    return info


def read_study(folder: str | Path) -> list[CellResult]:
    """Every cell folder under ``folder/cells`` (a study folder) or right under ``folder`` (its
    archive, ``results/<study>``), in the study's method order (then by task, norm, depth and
    seed), each with its arm's random-init null where ``folder/null.json`` has it. A folder there
    that holds files but not its ``cell.json`` is a UsageError naming it:
    leaving it out would drop a seed from its pair without a word (an empty one, left by a study
    stopped while it made the folder, holds nothing and is passed over)."""
    folder = Path(folder)
    methods = study_info(folder)["methods"]
    cells = folder / CELLS_DIR if (folder / CELLS_DIR).is_dir() else folder
    found = []
    for cell in sorted(path for path in cells.iterdir() if path.is_dir() and not path.name.startswith(".")):
        if (cell / CELL_FILE).is_file():
            found.append(read_cell(cell))
        elif any(cell.iterdir()):
            raise UsageError(
                f"{cell} is a cell folder without its {CELL_FILE}: restore it, or delete {cell} "
                "(its cell is then missing, and the report says so)"
            )
    nulls = read_null(folder)
    for cell in found:
        cell.null = nulls.get((cell.task, cell.norm, cell.label, cell.depth))
    rank = {method["label"]: index for index, method in enumerate(methods)}
    return sorted(found, key=lambda c: (rank.get(c.label, len(rank)), c.label, c.task, c.norm, c.depth, c.seed))


def read_studies(folders: list[str | Path]) -> tuple[list[CellResult], dict[str, str]]:
    """The cells of each study folder (or archive) in ``folders`` (``read_study``), and the command
    that ran each study, by its name, where ``study.json`` recorded one. A cell found in two of
    ``folders`` (a folder given twice, or a study folder beside its archive) is a UsageError naming
    both: counted twice, its seed would weigh double in every mean and pair."""
    cells: list[CellResult] = []
    commands: dict[str, str] = {}
    read_from: dict[tuple[str, str], str | Path] = {}  # (study, cell) -> the folder it was read from
    for folder in folders:
        study = study_info(folder)
        if study.get("command"):
            commands[study["name"]] = study["command"]
        found = read_study(folder)
        for cell in found:
            if (cell.study, cell.name) in read_from:
                raise UsageError(
                    f"cell {cell.study}/{cell.name} is read twice, from {read_from[(cell.study, cell.name)]} and "
                    f"from {folder}: give each study once (its folder or its archive, not both)"
                )
        read_from |= {(cell.study, cell.name): folder for cell in found}
        cells += found
    return cells, commands
