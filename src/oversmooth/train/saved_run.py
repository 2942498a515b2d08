"""A model that ``oversmooth train`` (or ``adapt`` of a train run) saved, read back with the run it
came from: its task, data and recipe, so it can be measured on its own validation split.

``saved_run(path)`` accepts a train run's folder (``results.json`` + ``model/``), its ``model/``
folder, and an arm's ``arms/<arm>/model`` folder of an adaptation of a train run (whose
``adapt_config.json`` names the run). Anything else is None: not one of ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from oversmooth.errors import UsageError

#: what a run folder holds once finished (``train.loop``'s results file and ``run``'s model folder)
RESULTS, MODEL, ADAPT_CONFIG = "results.json", "model", "adapt_config.json"


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
    that run's description (``results.json``: task, model kind, data, train, method)."""

    model_dir: Path
    run_dir: Path
    description: dict

    @property
    def name(self) -> str:
        return str(self.model_dir)

    @property
    def causal(self) -> bool:
        return self.description["model"] == "lm"

    def load(self, device: str = "cpu"):
        """The saved ``HookedTransformer``, in eval mode on ``device``."""
        from oversmooth.models import load_model

        return load_model(self.model_dir, device)

    def task(self):
        """The run's ``SupervisedTask`` (its data options, the default data folder)."""
        from oversmooth.train.task_factory import DataOptions, check_data, make_task

        check_data(self.description["task"], None)
        options = DataOptions(**{**self.description["data"], "data_dir": None})
        return make_task(self.description["task"], self.description["model"], options)[0]


def run_description(run_dir: Path) -> dict:
    """The description in ``run_dir/results.json``; UsageError if it is not a finished run's."""
    try:
        results = json.loads((run_dir / RESULTS).read_text())
        description = results["description"]
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


def _run_of(model_dir: Path) -> Path:
    """The train run a saved model belongs to: the run an adaptation arm started from
    (``OUT/arms/<arm>/model``, named in ``OUT/adapt_config.json``), else the folder holding it."""
    adaptation = model_dir.resolve().parents[2] if len(model_dir.resolve().parents) > 2 else None
    if adaptation is not None and (adaptation / ADAPT_CONFIG).is_file():
        try:
            source = Path(json.loads((adaptation / ADAPT_CONFIG).read_text())["model"])
        except (OSError, ValueError, KeyError, TypeError):
            raise UsageError(f"{adaptation / ADAPT_CONFIG} is damaged; run the adaptation again") from None
        if is_train_run(source):
            return source
        raise UsageError(
            f"{model_dir} is an arm of an adaptation of {source}, which is no longer a finished train run there; "
            "run from the folder the adaptation was started in"
        )
    if is_train_run(model_dir.parent):
        return model_dir.parent
    raise UsageError(
        f"{model_dir} holds a model `oversmooth train` saved, but no run beside it says what it was trained on; "
        "give the train run's folder (the one with results.json) or an adaptation arm's model folder"
    )


def saved_run(path: str | Path | None) -> SavedRun | None:
    """The saved run at ``path`` (see the module docstring), or None if ``path`` is not ours."""
    if path is None or not Path(path).is_dir():
        return None
    model_dir = Path(path) / MODEL if (Path(path) / MODEL).is_dir() else Path(path)
    if not is_saved_model(model_dir):
        return None
    run_dir = _run_of(model_dir)
    return SavedRun(model_dir, run_dir, run_description(run_dir))
