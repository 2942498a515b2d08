"""What a study trains: a grid of recipe x task x norm x depth x method variant x seed, one cell per run.

A study is written as a ``StudyConfig`` (a preset, or a JSON / TOML file with the same fields).
Each ``Cell`` is one training run with its own folder; ``Cell.spec()`` is its ``RunSpec``, whose
``command_line()`` re-runs it by hand with ``oversmooth train``.

>>> study = StudyConfig(name="demo", model="vit", tasks=("fmnist",), depths=(2, 4),
...                     variants=(Variant.parse("softmax"), Variant("neutreno", "neutreno", {"lam": 0.6})),
...                     train={"epochs": 1})
>>> [cell.name for cell in study.cells()]  # doctest: +NORMALIZE_WHITESPACE
['fmnist-pre-d2-softmax-s0', 'fmnist-pre-d2-neutreno-s0', 'fmnist-pre-d4-softmax-s0',
 'fmnist-pre-d4-neutreno-s0']
>>> " ".join(study.cells()[1].spec().command_line())
'--task fmnist --model vit --epochs 1 --depth 2 --norm pre --method neutreno --lam 0.6'
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oversmooth.errors import FieldError, UsageError
from oversmooth.mitigations.registry import knob_owners
from oversmooth.study.executor_settings import ExecutorSettings
from oversmooth.study.files import CELL_FILE
from oversmooth.train.run_spec import RunSpec

#: knobs a variant may set, by their ``RunSpec.knobs`` names (the registry's; ``oversmooth train --help``).
KNOBS = tuple(knob_owners("train"))
#: ``RunSpec`` fields that the grid (or the runner) sets itself, so ``train`` may not.
GRID_FLAGS = ("task", "model", "norm", "depth", "method", "knobs", "seed", "out", "resume", *KNOBS)
#: a variant's fields that keep it to some of the grid's norm placements or depths: never knobs
RESTRICTIONS = ("norms", "depths")


@dataclass(frozen=True)
class Variant:
    """One row of a comparison: a method (``train --method``) with its knobs, under a label;
    ``norms`` and ``depths`` restrict it to some of the study's norm placements and depths (None:
    all of them).

    >>> Variant("sharpen", "spectral", {"spectral": "sharpen"}).train_flags()
    {'method': 'spectral', 'spectral': 'sharpen'}
    >>> Variant.parse({"label": "deesc", "method": "deescalate", "tau": 1.0, "depths": [96]}).to_dict()
    {'label': 'deesc', 'method': 'deescalate', 'tau': 1.0, 'depths': [96]}
    """

    label: str
    method: str
    knobs: dict[str, Any] = field(default_factory=dict)
    norms: tuple[str, ...] | None = None
    depths: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.knobs) - set(KNOBS))
        if unknown:
            raise UsageError(
                f"method {self.label!r}: unknown knob(s) {', '.join(unknown)}; choose from {', '.join(KNOBS)}"
            )
        _check_label("method", self.label)

    def train_flags(self) -> dict[str, Any]:
        return {"method": self.method, **self.knobs}

    @classmethod
    def parse(cls, item: str | dict) -> Variant:
        """``"neutreno"``, or ``{"label": "lam=0.2", "method": "neutreno", "lam": 0.2}`` with an
        optional ``"norms": ["post"]`` and ``"depths": [96]``."""
        if isinstance(item, str):
            return cls(item, item)
        if not isinstance(item, dict) or not isinstance(item.get("label"), str):
            raise UsageError(f"a method entry must be a name or a table with a 'label', got {item!r}")
        knobs = {k: v for k, v in item.items() if k not in ("label", "method", *RESTRICTIONS)}
        norms, depths = (item.get(name) for name in RESTRICTIONS)
        if norms is not None:
            norms = _tuple(norms, f"{item['label']}.norms", str, "'pre' / 'post'")
        if depths is not None:
            depths = _tuple(depths, f"{item['label']}.depths", int, "whole numbers")
        return cls(item["label"], str(item.get("method", item["label"])), knobs, norms, depths)

    def to_dict(self) -> dict[str, Any]:
        restricted = {name: list(values) for name in RESTRICTIONS if (values := getattr(self, name))}
        return {"label": self.label, **self.train_flags(), **restricted}

    def trains(self, norm: str, depth: int) -> bool:
        """Whether this variant has a cell at ``norm`` and ``depth`` (its restrictions allow them)."""
        return (self.norms is None or norm in self.norms) and (self.depths is None or depth in self.depths)


@dataclass(frozen=True)
class Recipe:
    """One training recipe of a grid over recipes: ``train`` fields that override the study's
    (``lr``, ``warmup``, ``grad_clip``, ``width``...), under a label that goes into cell names.

    >>> Recipe("lr4e-3", {"lr": 4e-3}).label
    'lr4e-3'
    """

    label: str
    train: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_label("recipe", self.label)
        _check_train(self.train, f"recipe {self.label!r}")

    @classmethod
    def parse(cls, item: Any) -> Recipe:
        """``{"label": "lr4e-3", "lr": 4e-3}``: a label and the ``train`` fields it overrides."""
        if not isinstance(item, dict) or not isinstance(item.get("label"), str):
            raise UsageError(f"a recipe entry must be a table with a 'label', got {item!r}")
        return cls(item["label"], {k: v for k, v in item.items() if k != "label"})

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, **self.train}


def _check_label(kind: str, label: str) -> None:
    """UsageError unless ``label`` can stand in a cell's folder name."""
    if not re.fullmatch(r"[A-Za-z0-9_.+=-]+", label):
        raise UsageError(f"{kind} label {label!r} may use letters, digits and _.+=- only")


def _check_train(train: dict[str, Any], where: str) -> None:
    """UsageError when ``train`` sets a field that the grid sets itself."""
    taken = sorted(set(train) & set(GRID_FLAGS))
    if taken:
        raise UsageError(
            f"{where} may not set {', '.join(taken)}: the grid sets them (use tasks, norms, depths, methods, seeds)"
        )


@dataclass(frozen=True)
class Cell:
    """One training run of the grid; ``recipe`` is the label of its recipe ("" in a study without recipes)."""

    study: str
    model: str
    task: str
    norm: str
    depth: int
    variant: Variant
    seed: int
    train: dict[str, Any]
    recipe: str = ""

    @property
    def name(self) -> str:
        """The cell's folder name, unique within a study."""
        task = re.sub(r"[^A-Za-z0-9]+", "_", self.task).strip("_")
        recipe = f"-{self.recipe}" if self.recipe else ""
        return f"{task}{recipe}-{self.norm}-d{self.depth}-{self.variant.label}-s{self.seed}"

    def spec(self) -> RunSpec:
        """The cell's run, less where it runs (``out``, ``resume``: the runner's)."""
        return RunSpec.from_dict(
            {
                "task": self.task,
                "model": self.model,
                "norm": self.norm,
                "depth": self.depth,
                "method": self.variant.method,
                "knobs": dict(self.variant.knobs),
                "seed": self.seed,
                **self.train,
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """``cell.json``: what the cell is, its ``spec`` and, for people, its ``oversmooth train`` command."""
        spec = self.spec()
        return {
            "study": self.study,
            "name": self.name,
            "model": self.model,
            "task": self.task,
            "norm": self.norm,
            "depth": self.depth,
            "variant": self.variant.to_dict(),
            "seed": self.seed,
            **({"recipe": self.recipe} if self.recipe else {}),
            "spec": spec.to_dict(),
            "command": spec.command(),
        }


def stored_spec(info: Any, path: str | Path = CELL_FILE, fix: str = "") -> RunSpec:
    """The ``RunSpec`` of a ``cell.json``'s contents ``info``: its ``spec``, or for cells archived
    before there were specs, their ``train_args`` (``oversmooth train`` arguments) read back with
    ``RunSpec.from_args``. Anything else is a UsageError naming ``path`` and ``fix``."""
    try:
        return RunSpec.from_dict(info["spec"]) if "spec" in info else RunSpec.from_args(info["train_args"])
    except (UsageError, TypeError, KeyError, AttributeError, ValueError) as error:
        raise UsageError(f"{path} is damaged (its run spec: {error}); {fix}") from None


def _tuple(value: Any, name: str, kind: type | tuple[type, ...], what: str) -> tuple:
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    if not values or not all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
        raise UsageError(f"study field {name!r} must be a non-empty list of {what}, got {value!r}")
    return values


@dataclass(frozen=True)
class StudyConfig:
    """A grid of training runs. ``train`` holds every other ``RunSpec`` field (``width``,
    ``heads``, ``epochs``, ``lr``, ``batch_size``, ``limit_train``, ``compile``...), shared by all cells;
    ``recipes`` (optional) make the grid run once per recipe, each overriding some ``train`` fields.
    A list that names one value twice (seeds, depths, tasks, norms, method or recipe labels) is a
    ``FieldError`` naming it: a study file's key, or the CLI's flag.
    """

    name: str
    model: str
    tasks: tuple[str, ...]
    depths: tuple[int, ...]
    variants: tuple[Variant, ...]
    norms: tuple[str, ...] = ("pre",)
    seeds: tuple[int, ...] = (0,)
    train: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    recipes: tuple[Recipe, ...] = ()
    #: where the cells run (a file's ``[executor]`` table); not part of what the study trains
    executor: ExecutorSettings = field(default_factory=ExecutorSettings, compare=False)

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        set_("tasks", _tuple(self.tasks, "tasks", str, "task names"))
        set_("depths", _tuple(self.depths, "depths", int, "whole numbers"))
        set_("norms", _tuple(self.norms, "norms", str, "'pre' / 'post'"))
        set_("seeds", _tuple(self.seeds, "seeds", int, "whole numbers"))
        set_("variants", tuple(v if isinstance(v, Variant) else Variant.parse(v) for v in self.variants))
        set_("recipes", tuple(r if isinstance(r, Recipe) else Recipe.parse(r) for r in self.recipes))
        if self.model not in ("vit", "lm"):
            raise UsageError(f"study model must be vit or lm, got {self.model!r}")
        if not self.variants:
            raise UsageError("a study needs at least one method")
        lists = {name: getattr(self, name) for name in ("tasks", "norms", "depths", "seeds")}
        labelled = {"methods": [v.label for v in self.variants], "recipes": [r.label for r in self.recipes]}
        for name, values in {**lists, **labelled}.items():
            twice = list(dict.fromkeys(v for v in values if values.count(v) > 1))
            if twice:
                raise FieldError(
                    "{%s}%s must be unique; %s given more than once"
                    % (name, " labels" if name in labelled else "", ", ".join(map(str, twice)))
                )
        for variant in self.variants:
            for name in RESTRICTIONS:
                stray = sorted(set(getattr(variant, name) or ()) - set(getattr(self, name)))
                if stray:
                    raise UsageError(
                        f"method {variant.label!r} asks for {name[:-1]}(s) {', '.join(map(str, stray))} that the "
                        f"study does not train ({name}: {', '.join(map(str, getattr(self, name)))})"
                    )
        if isinstance(self.train.get("compile"), bool):  # `compile = true` in a file: compile mode on
            set_("train", {**self.train, "compile": "on" if self.train["compile"] else "off"})
        _check_train(self.train, "study 'train'")

    def cells(self) -> list[Cell]:
        """Every cell, in the order they run: seed, recipe, task, norm, depth, then method, so the
        first seed's grid is whole before the next starts and partial results compare like with like."""
        return [
            Cell(self.name, self.model, task, norm, depth, variant, seed, {**self.train, **train}, recipe)
            for seed in self.seeds
            for recipe, train in ([(r.label, r.train) for r in self.recipes] or [("", {})])
            for task in self.tasks
            for norm in self.norms
            for depth in self.depths
            for variant in self.variants
            if variant.trains(norm, depth)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "model": self.model,
            "tasks": list(self.tasks),
            "norms": list(self.norms),
            "depths": list(self.depths),
            "methods": [v.to_dict() for v in self.variants],
            "seeds": list(self.seeds),
            "train": self.train,
            **({"recipes": [r.to_dict() for r in self.recipes]} if self.recipes else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], default_name: str = "study") -> StudyConfig:
        """From the file form: like ``to_dict``; ``methods`` entries are names or tables."""
        fields = {
            "name",
            "description",
            "model",
            "tasks",
            "norms",
            "depths",
            "methods",
            "seeds",
            "train",
            "recipes",
            "executor",
        }
        unknown = sorted(set(data) - fields)
        if unknown:
            raise UsageError(f"unknown study field(s) {', '.join(unknown)}; valid: {', '.join(sorted(fields))}")
        missing = sorted({"model", "tasks", "depths", "methods"} - set(data))
        if missing:
            raise UsageError(f"study file lacks {', '.join(missing)}")
        if not isinstance(data.get("train", {}), dict):
            raise UsageError("study field 'train' must be a table of oversmooth train flags")
        rest = {k: v for k, v in data.items() if k not in ("methods", "name", "executor", "recipes")}
        try:
            return cls(
                name=str(data.get("name", default_name)),
                executor=ExecutorSettings.from_dict(data.get("executor", {})),
                variants=tuple(
                    Variant.parse(m) for m in _tuple(data["methods"], "methods", (str, dict), "method names or tables")
                ),
                recipes=tuple(Recipe.parse(r) for r in _tuple(data["recipes"], "recipes", dict, "recipe tables"))
                if "recipes" in data
                else (),
                **rest,
            )
        except FieldError as error:
            raise UsageError(error.message(lambda name: f"study field {name!r}")) from None

    def narrowed(
        self,
        *,
        seeds: tuple[int, ...] = (),
        depths: tuple[int, ...] = (),
        labels: tuple[str, ...] = (),
        train: dict[str, Any] | None = None,
    ) -> StudyConfig:
        """This study with other ``seeds`` or ``depths``, only the variants ``labels``, and
        ``train`` fields set (empty / None: unchanged; the description names the changed fields);
        UsageError on a label it does not have."""
        changes: dict[str, Any] = {name: value for name, value in (("seeds", seeds), ("depths", depths)) if value}
        if labels:
            unknown = [label for label in labels if label not in [v.label for v in self.variants]]
            if unknown:
                raise UsageError(
                    f"methods {', '.join(unknown)} not in this study; it has "
                    f"{', '.join(v.label for v in self.variants)}"
                )
            changes["variants"] = tuple(v for v in self.variants if v.label in labels)
        changed = {key: value for key, value in (train or {}).items() if self.train.get(key) != value}
        if changed:
            changes["train"] = {**self.train, **changed}
            # the description is free text written for the preset's values: say what differs
            changes["description"] = (
                f"{self.description} (changed: " + ", ".join(f"{key}={value}" for key, value in changed.items()) + ")"
            )
        return dataclasses.replace(self, **changes) if changes else self

    @classmethod
    def load(cls, path: str | Path) -> StudyConfig:
        """Read a ``.json`` or ``.toml`` study file."""
        path = Path(path)
        try:
            text = path.read_text()
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except OSError as error:
            raise UsageError(f"cannot read study file {path} ({error.strerror})") from None
        except (ValueError, tomllib.TOMLDecodeError) as error:
            raise UsageError(
                f"study file {path} is not valid {'TOML' if path.suffix == '.toml' else 'JSON'}: "
                f"{str(error).splitlines()[0]}"
            ) from None
        if not isinstance(data, dict):
            raise UsageError(f"study file {path} must hold a table/object of study fields")
        return cls.from_dict(data, default_name=path.stem)
