"""A model that ``oversmooth train`` (or ``adapt`` of a train run) saved, read back with the run it
came from: its task, data and recipe, so it can be measured on its own validation split.

``saved_run(path)`` accepts a train run's folder (``results.json`` + ``model/``), its ``model/``
folder, and an adaptation arm of a train run (``OUT/arms/<arm>`` or its ``model/``; the
adaptation's ``adapt_config.json`` names the run, a relative name read from where ``adapt`` ran).
Anything else is None: not one of ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from oversmooth.errors import UsageError
from oversmooth.train.loop import RESULTS_FILE as RESULTS

#: a finished run's model folder (``train.run``) and an adaptation's config (``adapt.run``'s ``CONFIG_FILE``)
MODEL, ADAPT_CONFIG = "model", "adapt_config.json"


def is_train_run(path: str | Path | None) -> bool:
    """True for a folder written by ``oversmooth train`` (``model/`` and ``results.json``)."""
    return path is not None and (Path(path) / RESULTS).is_file() and (Path(path) / MODEL).is_dir()


def is_saved_model(path: str | Path) -> bool:
    """True for a folder ``oversmooth.models.save_model`` wrote (its config names one of our families)."""
    from oversmooth.models.serialization import CONFIG, MODEL_CLASSES

    try:
        return json.loads((Path(path) / CONFIG).read_text()).get("family") in MODEL_CLASSES
    except (OSError, ValueError, AttributeError):
        return False


@dataclass(frozen=True)
class SavedRun:
    """``model_dir``: the saved model; ``run_dir``: the train run whose task it has; ``description``:
    that run's description (``results.json``: task, model kind, data, train, method);
    ``adaptation``: the adaptation folder the model is an arm of (None: the run's own model)."""

    model_dir: Path
    run_dir: Path
    description: dict
    adaptation: Path | None = None

    @property
    def name(self) -> str:
        return str(self.model_dir)

    @property
    def origin(self) -> str:
        """Where the model comes from, in words."""
        if self.adaptation is None:
            return f"trained by {self.run_dir}"
        return f"adapted by {self.adaptation} from {self.run_dir}"

    def load(self, device: str = "cpu"):
        """The saved ``HookedTransformer``, in eval mode on ``device``."""
        from oversmooth.models import load_model

        return load_model(self.model_dir, device)

    def task(self):
        """The run's ``SupervisedTask`` (its data options, the default data folder). A text task's
        tokenizer is rebuilt from the data: it must be the one the run saved (``tokenizer.json``),
        else the text is no longer what the run trained on (UsageError)."""
        from oversmooth.train.task_factory import DataOptions, check_data, make_task

        check_data(self.description["task"], None, self.description["data"].get("text_column"))
        options = DataOptions(**{**self.description["data"], "data_dir": None})
        task, tokenizer = make_task(self.description["task"], self.description["model"], options)
        saved = self.run_dir / "tokenizer.json"
        if tokenizer is not None and saved.is_file() and tokenizer.to_str() != saved.read_text():
            raise UsageError(
                f"{self.run_dir}'s text ({self.description['task']}) no longer gives the tokenizer it trained with "
                f"({saved}): the file changed or this version splits it differently; measure it where it was trained"
            )
        return task


def run_description(run_dir: Path) -> dict:
    """The description in ``run_dir/results.json``; UsageError if it is not a finished run's."""
    try:
        results = json.loads((run_dir / RESULTS).read_text())
        description = results["description"]
        if not {"task", "model", "data", "train"} <= set(description):
            raise KeyError("description")
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(
            f"{run_dir}/{RESULTS} is not a train run's results; give a folder written by `oversmooth train`"
        ) from None
    if results.get("status") != "completed":
        raise UsageError(
            f"{run_dir} holds a run that did not complete ({results.get('status')}); "
            "finish it first (oversmooth train --resume auto)"
        )
    return description


def _adaptation_of(model_dir: Path) -> Path | None:
    """The adaptation folder whose arm ``model_dir`` is (``OUT/arms/<arm>/model``), or None."""
    arm = model_dir.resolve().parent
    adaptation = arm.parent.parent
    return adaptation if arm.parent.name == "arms" and (adaptation / ADAPT_CONFIG).is_file() else None


def _source_of(adaptation: Path) -> Path:
    """The train run an adaptation started from: its config's ``model`` (a run, its ``model/``, or
    an arm of another adaptation: that one's run), a relative name read from the folder ``adapt``
    ran in (the adaptation folder less its relative ``out``)."""
    try:
        config = json.loads((adaptation / ADAPT_CONFIG).read_text())
        source, out = Path(config["model"]), Path(config["out"])
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(f"{adaptation / ADAPT_CONFIG} is damaged; run the adaptation again") from None
    if not source.is_absolute() and not out.is_absolute() and adaptation.parts[-len(out.parts) :] == out.parts:
        source = Path(*adaptation.parts[: -len(out.parts)]) / source
    adapted = saved_run(source) if source.is_dir() else None  # a run, its model/, an arm adapted again
    if adapted is not None:
        return adapted.run_dir
    raise UsageError(
        f"{adaptation} adapted {config['model']}, which is no finished train run at {source}; "
        "put the run back there (or the adaptation beside it) to measure its arms"
    )


def saved_run(path: str | Path | None) -> SavedRun | None:
    """The saved run at ``path`` (see the module docstring), or None if ``path`` is not ours."""
    if path is None or not Path(path).is_dir():
        return None
    model_dir = Path(path) / MODEL if (Path(path) / MODEL).is_dir() else Path(path)
    if not is_saved_model(model_dir):
        return None
    adaptation = _adaptation_of(model_dir)
    if adaptation is not None:
        run_dir = _source_of(adaptation)
    elif is_train_run(model_dir.parent):
        run_dir = model_dir.parent
    else:
        raise UsageError(
            f"{model_dir} holds a model `oversmooth train` saved, but no run beside it says what it was trained on; "
            "give the train run's folder (the one with results.json) or an adaptation arm's model folder"
        )
    return SavedRun(model_dir, run_dir, run_description(run_dir), adaptation)
