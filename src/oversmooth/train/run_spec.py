"""One training run described as data: ``RunSpec``, what ``oversmooth train`` and studies run.

A ``RunSpec`` is JSON-able (``to_dict`` / ``from_dict``, ``save`` / ``load``), checked by
``check()`` with errors naming its fields (``FieldError``: a CLI maps them to its flags), and
equivalent to an ``oversmooth train`` command line: ``command_line()`` writes one and
``from_args`` reads one back, both derived from the fields by one rule (field ``batch_size`` is
flag ``--batch-size``; a bool that defaults to True is switched off by ``--no-FIELD``; each
``knobs`` entry is a flag of its own). Each field declares its help text and flag group
(``option``), from which ``oversmooth train`` generates its flags. The method and its knobs are
opaque here (only ``method``'s help lists the registry's names): the mitigation registry reads
them when the model is built. Imports no torch.

>>> spec = RunSpec(task="synthetic", model="vit", epochs=2, depth=2, method="neutreno", knobs={"lam": 0.5})
>>> spec.command_line()
['--task', 'synthetic', '--model', 'vit', '--epochs', '2', '--depth', '2', '--method', 'neutreno', '--lam', '0.5']
>>> RunSpec.from_args(spec.command_line()) == spec
True
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import shlex
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oversmooth.errors import FieldError, UsageError
from oversmooth.mitigations.registry import trainable
from oversmooth.train.compile_rule import AUTO_MIN_STEPS, COMPILE_MODES
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.plotting import DEFAULT_FORMATS, FORMATS, figure_formats
from oversmooth.utils.seeds import check_seed

#: fields that say where and how a run goes, not what it learns: they may differ between two
#: runs of one cell (and between a run and its resumption).
RUN_OPTIONS = ("out", "resume", "checkpoint_every", "compile", "threads", "progress", "tensorboard", "format")
#: fields that tell apart runs of one training (``training_key``): method, knobs, norm, seed.
VARIES = ("method", "knobs", "norm", "seed")
CHOICES = {"resume": ("auto", "never"), "device": ("auto", "cpu", "cuda"), "compile": COMPILE_MODES}
AT_LEAST_ONE = (
    "epochs",
    "batch_size",
    "seq_len",
    "vocab_size",
    "val_size",
    "passage_chars",
    "probe_size",
    "threads",
    "limit_train",
    "patch_size",
)


#: the groups of ``oversmooth train --help``, in its order.
GROUPS = MODEL, MITIGATION, DATA, OPTIMISATION, RUN = "task and model", "mitigation", "data", "optimisation", "run"
#: fields without which ``oversmooth train`` cannot run (unless it reads ``--spec FILE``).
REQUIRED = ("task", "model", "epochs", "out")


def option(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    group: str,
    bare: str | None = None,
    factory: Any = dataclasses.MISSING,
    applies: tuple[str, ...] = (),
) -> Any:
    """A ``RunSpec`` field: its default (or ``factory``), its ``oversmooth train --help`` text and
    flag ``group``; ``bare``: the value of the flag given alone (``--compile`` is ``on``);
    ``applies``: the models or tasks that read it (``run_kinds``), if not every run does."""
    meta = {
        "help": help,
        "group": group,
        **({"bare": bare} if bare is not None else {}),
        **({"applies": applies} if applies else {}),
    }
    return field(default=default, default_factory=factory, metadata=meta)


@dataclass(frozen=True)
class RunSpec:
    """Every setting of one training run (``oversmooth train --help`` explains each one: the
    flags are generated from these fields, their help and group).

    Shape fields left None take the model preset's value (``vit-cpu`` / ``lm-cpu``).
    """

    # task and model
    task: str = option(
        help="fmnist | austen | text:FILE[,FILE...] | text:FOLDER | synthetic (docs/analyze.md#text-sources)",
        group=MODEL,
    )
    model: str = option(help="vit | lm", group=MODEL)
    epochs: int = option(group=OPTIMISATION)
    preset: str | None = option(None, "model preset (default vit-cpu / lm-cpu)", group=MODEL)
    depth: int | None = option(None, group=MODEL)
    width: int | None = option(None, group=MODEL)
    heads: int | None = option(None, group=MODEL)
    mlp_ratio: float | None = option(None, group=MODEL)
    norm: str | None = option(None, "pre | post", group=MODEL)
    ln_sign: str | None = option(None, "LayerNorm weight sign option (see oversmooth.layers.norm)", group=MODEL)
    dropout: float | None = option(None, group=MODEL)
    patch_size: int | None = option(None, "ViT patch size (must divide the image size)", group=MODEL, applies=("vit",))
    # the mitigation: a method name ('+' combines) and its knobs, e.g. {"lam": 0.6}, one flag each
    method: str = option("softmax", f"softmax | {' | '.join(trainable())} ('+' combines)", group=MITIGATION)
    knobs: dict[str, Any] = option(factory=dict, group=MITIGATION)
    # data
    data_dir: str | None = option(
        None, "Fashion-MNIST IDX folder, or the unpacked janeaustenr package", group=DATA, applies=("fmnist", "austen")
    )
    val_size: int = option(5000, "fmnist validation images (default 5000)", group=DATA, applies=("fmnist",))
    augment: bool = option(
        False, "vit: random 2-pixel shifts and horizontal flips of the training images", group=DATA, applies=("vit",)
    )
    label_smoothing: float = option(0.1, "vit: label smoothing of the loss (default 0.1)", group=DATA, applies=("vit",))
    seq_len: int = option(64, "lm: tokens per sequence (default 64)", group=DATA, applies=("lm",))
    vocab_size: int = option(4096, "text: BPE vocabulary (default 4096)", group=DATA, applies=("austen", "text"))
    passage_chars: int = option(
        8000, "text: least characters per passage (smaller in a short text)", group=DATA, applies=("austen", "text")
    )
    text_column: str | None = option(
        None, "text: the column of a CSV or TSV file to read, one row a paragraph", group=DATA, applies=("text",)
    )
    limit_train: int | None = option(None, "use only the first N training examples", group=DATA)
    # optimisation
    batch_size: int = option(128, "global batch (split over DDP processes)", group=OPTIMISATION)
    lr: float = option(1e-3, group=OPTIMISATION)
    weight_decay: float = option(0.05, group=OPTIMISATION)
    warmup: float = option(0.05, "warm-up share of all steps", group=OPTIMISATION)
    grad_clip: float = option(1.0, "largest gradient norm; 0: no clipping", group=OPTIMISATION)
    seed: int = option(0, group=OPTIMISATION)
    # run (RUN_OPTIONS, and device, bf16, probe_size)
    out: str | None = option(None, "run folder: checkpoint, metrics.jsonl, results.json, model/", group=RUN)
    resume: str = option("never", "auto: continue the run in --out if there is one", group=RUN)
    checkpoint_every: int = option(0, "also checkpoint every K steps", group=RUN)  # 0: at epoch ends only
    device: str = option("auto", group=RUN)
    bf16: bool = option(True, "GPU: train in float32, not bf16 autocast", group=RUN)  # help of --no-bf16
    compile: str = option(
        "auto",
        "torch.compile the model: on (also a bare --compile), off, or auto (default): on "
        "only where benchmarks/bench_throughput.py measured it faster, a ViT of at least "
        f"{AUTO_MIN_STEPS} steps on a CPU. If it cannot compile, one line says so and the run "
        "trains eagerly",
        group=RUN,
        bare="on",
    )
    threads: int | None = option(None, "CPU threads for torch (default: torch's choice)", group=RUN)
    probe_size: int = option(32, "validation examples for layer metrics", group=RUN)
    progress: bool = option(True, "no progress bar", group=RUN)  # help of --no-progress
    tensorboard: bool = option(
        False, "also log every epoch's scores and per-layer similarity to OUT/tensorboard", group=RUN
    )
    format: str = option(
        ",".join(DEFAULT_FORMATS),
        f"the formats of the run's figures, comma-separated: {', '.join(FORMATS)} (default "
        f"{','.join(DEFAULT_FORMATS)}; PNGs at 200 dpi)",
        group=RUN,
    )

    def check(self) -> RunSpec:
        """Types, ranges and choices of every field, and that ``data_dir`` is a folder; returns
        ``self``. Raises ``FieldError`` naming the field. Writes nothing."""
        for name, kind in field_kinds().items():
            _check_type(name, getattr(self, name), kind)
        if not all(isinstance(k, str) for k in self.knobs):
            raise FieldError("{knobs} must map knob names to values, got {got!r}", got=self.knobs)
        for name in AT_LEAST_ONE:
            value = getattr(self, name)
            if value is not None and value < 1:
                raise FieldError("{%s} must be at least 1, got {got}" % name, got=value)
        for name in ("checkpoint_every", "weight_decay", "grad_clip"):
            if not getattr(self, name) >= 0:
                raise FieldError("{%s} must be >= 0, got {got}" % name, got=getattr(self, name))
        if not self.lr > 0:
            raise FieldError("{lr} must be > 0, got {got}", got=self.lr)
        check_seed(self.seed)
        for name in ("warmup", "label_smoothing"):
            if not 0 <= getattr(self, name) < 1:
                raise FieldError("{%s} must lie in [0, 1), got {got}" % name, got=getattr(self, name))
        for name, choices in CHOICES.items():
            if getattr(self, name) not in choices:
                raise FieldError(
                    "{%s} must be one of {choices}, got {got!r}" % name,
                    choices=" | ".join(choices),
                    got=getattr(self, name),
                )
        for f in dataclasses.fields(self):
            if (
                "applies" in f.metadata
                and getattr(self, f.name) != _default(f)
                and not set(f.metadata["applies"]) & run_kinds(self)
            ):
                raise FieldError(
                    "{%s} applies to %s runs only, not to {model} {model_name} on {task} {task_name}; "
                    "drop it" % (f.name, " and ".join(f.metadata["applies"])),
                    model_name=self.model,
                    task_name=self.task,
                )
        check_formats(self.format)
        if self.data_dir is not None and not Path(self.data_dir).is_dir():
            raise FieldError("{data_dir} {got} is not a folder; point it at your copy of the data", got=self.data_dir)
        return self

    def setting(self) -> dict[str, Any]:
        """What the run learns: every field but ``RUN_OPTIONS``. Two runs of one setting learn the
        same thing (bit for bit on one machine, eager; to float rounding when compiled)."""
        return {k: v for k, v in self.to_dict().items() if k not in RUN_OPTIONS}

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: dict(self.knobs) if f.name == "knobs" else getattr(self, f.name) for f in dataclasses.fields(self)
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        """The fields of ``to_dict``; unknown ones are refused, ``task``, ``model`` and ``epochs``
        are required. Values are checked by ``check``."""
        if not isinstance(data, dict):
            raise UsageError(f"a run spec is a table of fields, got {data!r}")
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise UsageError(f"unknown run field(s) {', '.join(unknown)}; valid: {', '.join(names)}")
        missing = [name for name in ("task", "model", "epochs") if name not in data]
        if missing:
            raise UsageError(f"a run spec needs {', '.join(missing)}")
        return cls(**data)

    def save(self, path: str | Path) -> None:
        """Write ``to_dict`` as JSON, atomically."""
        with atomic_write(Path(path)) as handle:
            json.dump(self.to_dict(), handle, indent=2)

    @classmethod
    def load(cls, path: str | Path) -> RunSpec:
        """Read a spec written by ``save``; an unreadable or damaged file is a UsageError."""
        try:
            data = json.loads(Path(path).read_text())
        except OSError as error:
            raise UsageError(
                f"cannot read run spec {path} ({error.strerror}); give a file written by RunSpec.save"
            ) from None
        except ValueError as error:
            raise UsageError(f"run spec {path} is not valid JSON ({error}); write it again") from None
        return cls.from_dict(data)

    def command_line(self) -> list[str]:
        """The ``oversmooth train`` arguments of this spec: every field that differs from its
        default, in field order, the knobs right after ``--method``."""
        words: list[str] = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "knobs":
                for knob, knob_value in value.items():
                    if knob_value is not False and knob_value is not None:
                        words += _flag_words(flag(knob), knob_value)
            elif value != _default(f):
                words += _flag_words(flag(f.name) if value is not False else flag("no_" + f.name), value)
        return words

    def command(self) -> str:
        """The ``oversmooth train`` command that runs this spec, as one shell line."""
        return shlex.join(["oversmooth", "train", *self.command_line()])

    @classmethod
    def from_args(cls, args: list[str] | tuple[str, ...]) -> RunSpec:
        """The spec of ``oversmooth train`` arguments as ``command_line`` writes them (and as older
        studies stored them in ``cell.json``): a flag that names no field is a knob; a knob without
        a value is True, a knob's value is read as an int, else a float, else kept as text."""
        by_flag = {flag(f.name): f for f in dataclasses.fields(cls) if f.name != "knobs"}
        by_flag.update({flag("no_" + f.name): f for f in dataclasses.fields(cls) if f.default is True})
        kinds, values, knobs, words = field_kinds(), {}, {}, list(args)
        while words:
            word = words.pop(0)
            f = by_flag.get(word)
            bare = not words or words[0].startswith("--")
            if f is None:
                if not word.startswith("--"):
                    raise UsageError(f"cannot read train arguments {list(args)}: {word!r} is no flag")
                knobs[word[2:].replace("-", "_")] = True if bare else literal(words.pop(0))
            elif kinds[f.name] is bool:
                values[f.name] = not word.startswith("--no-")
            elif bare and "bare" in f.metadata:
                values[f.name] = f.metadata["bare"]
            elif bare:
                raise UsageError(f"cannot read train arguments {list(args)}: {word} lacks its value")
            else:
                values[f.name] = _convert(kinds[f.name], words.pop(0))
        return cls.from_dict({**values, "knobs": knobs})


def check_formats(text: str) -> None:
    """A FieldError naming field ``format`` unless ``text`` lists figure formats (``figure_formats``)."""
    try:
        figure_formats(text)
    except UsageError as error:
        raise FieldError("{format}: {why}", why=str(error)) from None


def run_kinds(spec: RunSpec) -> set[str]:
    """What a setting may apply to (``option(applies=...)``): the run's model and its task's name
    (``text:a.txt`` is ``text``).

    >>> sorted(run_kinds(RunSpec("text:a.txt", "lm", 1)))
    ['lm', 'text']
    """
    return {spec.model, spec.task.partition(":")[0]}


def flag(name: str) -> str:
    """The command-line flag of field (or knob) ``name``: ``batch_size`` -> ``--batch-size``."""
    return "--" + name.replace("_", "-")


def training_key(spec: RunSpec, across: tuple[str, ...] = ()) -> tuple:
    """How a run was trained, less what ``VARIES`` within one comparison: the sorted
    ``(field, value)`` pairs of its ``setting`` without method, knobs, norm and seed (and the
    fields in ``across``, for a comparison across them, e.g. depth). Runs with equal keys and
    seeds differ only in method (and norm), so they pair, whatever study ran them.

    >>> a = RunSpec("fmnist", "vit", 10, method="neutreno", knobs={"lam": 0.6}, seed=1)
    >>> training_key(a) == training_key(RunSpec("fmnist", "vit", 10, norm="post", checkpoint_every=9))
    True
    """
    return tuple(sorted((k, v) for k, v in spec.setting().items() if k not in VARIES + across))


@functools.cache
def field_kinds(config: type | None = None) -> dict[str, type]:
    """Each field's type of dataclass ``config`` (default ``RunSpec``), ``X | None`` as ``X``."""
    kinds = {}
    for name, hint in typing.get_type_hints(config or RunSpec).items():
        if isinstance(hint, types.UnionType):
            hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
        kinds[name] = typing.get_origin(hint) or hint
    return kinds


def _default(f: dataclasses.Field) -> Any:
    return (
        f.default_factory()
        if f.default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING
        else f.default
    )


def _check_type(name: str, value: Any, kind: type) -> None:
    if value is None and (_default(RunSpec.__dataclass_fields__[name]) is None):
        return
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        what = "a finite number"
    elif kind is int:
        ok, what = isinstance(value, int) and not isinstance(value, bool), "a whole number"
    else:
        ok, what = isinstance(value, kind), {str: "text", bool: "true or false", dict: "a table"}[kind]
    if not ok:
        raise FieldError("{%s} must be %s, got {got!r}" % (name, what), got=value)


def _flag_words(name: str, value: Any) -> list[str]:
    """``--augment`` for True (and for a ``--no-...`` switch), ``--lr 0.002`` for a value."""
    return [name] if isinstance(value, bool) else [name, str(value)]


def _convert(kind: type, text: str) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise UsageError(f"cannot read train arguments: {text!r} is not {kind.__name__}") from None


def literal(text: str) -> bool | int | float | str:
    """A value written as text: ``"5"`` -> 5, ``"1e-3"`` -> 0.001, ``"true"`` -> True, anything
    else stays text."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
