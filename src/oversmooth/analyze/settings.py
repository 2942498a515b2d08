"""What an analysis is asked to do, and the checks and defaults of each setting: ``AnalysisSettings``
(methods, knobs, the attention and rank samples, the sweeps), the quality ``Budget``, and the size
of the batch ``analysis_inputs`` builds. Torch-free: ``oversmooth analyze --help`` reads the defaults
from here. Errors name the fields (``FieldError``), which the CLI writes as its flags.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING

from oversmooth.errors import FieldError, UsageError
from oversmooth.mitigations.registry import (
    check_patchable,
    default_patches,
    make_knobs,
    method,
    patch_knobs,
    patchable,
    split_methods,
    stack_knobs,
)

if TYPE_CHECKING:
    from oversmooth.hf import Task

DEFAULT_SEQUENCES = 8  # sequences (text chunks or images) in the analysed batch
DEFAULT_TEXT_TOKENS = 128  # tokens per text chunk, and per sequence of the attention sample

#: the budget bounds each task is judged by (``QualityProbe.judge``), and the task in words
TASK_BOUNDS: dict[str, tuple[str, ...]] = {
    "causal_lm": ("perplexity",),
    "masked_lm": ("perplexity",),
    "classifier": ("agreement", "kl"),
    "encoder": ("cosine",),
}
TASK_WORDS = {
    "causal_lm": "a causal LM",
    "masked_lm": "a masked LM",
    "classifier": "a classifier",
    "encoder": "an encoder without a head",
}


@dataclass(frozen=True)
class Sweep:
    """One curve: ``method`` with ``knob`` at each of ``values`` (its other knobs at 0)."""

    method: str
    knob: str
    values: tuple[float, ...]

    def knobs(self, value: float) -> dict[str, float]:
        return patch_knobs(self.method, {**method(self.method).zero, self.knob: value})


def default_sweeps(methods: tuple[str, ...]) -> tuple[Sweep, ...]:
    """Every knob of every single method in ``methods`` (not a stack) over its default grid (its
    registry entry's ``sweep``)."""
    singles = (m for m in methods if len(split_methods(m)) == 1)
    return tuple(Sweep(m, knob, values) for m in singles for knob, values in method(m).sweep.items())


def parse_sweep(text: str) -> Sweep:
    """``"neutreno:lam=0,0.05,0.1"`` -> a Sweep; every value is checked as that knob's value.

    >>> parse_sweep("neutreno:lam=0,0.1")
    Sweep(method='neutreno', knob='lam', values=(0.0, 0.1))
    """
    method, _, rest = text.partition(":")
    knob, _, values = rest.partition("=")
    if not (method and knob and values):
        raise UsageError(f"bad sweep {text!r}; write METHOD:KNOB=V1,V2,... e.g. neutreno:lam=0,0.1,0.2")
    name, knob = check_patchable(method.strip()), knob.strip()
    knobs = patch_knobs(name, {})
    if knob not in knobs:
        raise UsageError(f"{name} has no knob {knob!r}; it takes {', '.join(knobs)}")
    try:
        grid = tuple(float(v) for v in values.split(",") if v.strip())
    except ValueError:
        raise UsageError(f"sweep values {values!r} are not numbers; write e.g. {knob}=0,0.1,0.2") from None
    if not grid or not all(math.isfinite(v) for v in grid):
        raise UsageError(f"sweep {text!r} needs finite numbers after '='")
    sweep = Sweep(name, knob, grid)
    for value in grid:
        sweep.knobs(value)  # a value the method refuses fails here, before any work
    return sweep


def parse_sweeps(specs: Sequence[str], methods: tuple[str, ...] | None) -> tuple[Sweep, ...]:
    """``analyze --sweep`` values -> Sweeps, each once: ``""`` is the default grid of each of
    ``methods`` (None: every patchable method), else ``parse_sweep``. FieldError naming ``sweep``
    when ``""`` finds no method.

    >>> parse_sweeps(["", "neutreno:lam=0.1"], ("neutreno",))[-1]
    Sweep(method='neutreno', knob='lam', values=(0.1,))
    """
    grids = default_sweeps(patchable() if methods is None else methods)
    if "" in specs and not grids:
        raise FieldError("{sweep} alone sweeps the methods of {methods}, and there are none; name some")
    return tuple(dict.fromkeys(s for spec in specs for s in ((parse_sweep(spec),) if spec else grids)))


def check_count(name: str, value: int | None, least: int) -> None:
    """FieldError naming ``name`` unless ``value`` is None or at least ``least``."""
    if value is not None and value < least:
        raise FieldError("{%s} must be at least {least}, got {got}" % name, least=least, got=value)


def check_sequences(max_sequences: int) -> None:
    """FieldError unless the batch ``analysis_inputs`` builds is to hold at least one sequence."""
    check_count("max_sequences", max_sequences, 1)


@dataclass(frozen=True)
class Budget:
    """The quality a patched model may lose and still count as working."""

    perplexity: float = 1.05  # max ratio to the unpatched perplexity (also bounds nll - nll_base)
    kl: float = 0.05  # max KL(unpatched || patched), nats
    agreement: float = 0.95  # min top-1 agreement with the unpatched model
    cosine: float = 0.95  # min cosine between unpatched and patched outputs

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not math.isfinite(value) or value < 0:
                raise FieldError("{budget} {name}={value} must be a finite number >= 0", name=f.name, value=value)
        if self.perplexity < 1:
            raise FieldError(
                "{budget} perplexity={value} is a ratio to the unpatched model; pass a value >= 1, "
                "e.g. perplexity=1.05",
                value=self.perplexity,
            )
        if self.agreement > 1 or self.cosine > 1:
            raise FieldError("{budget} agreement and cosine are at most 1")

    @classmethod
    def parse(cls, text: str) -> Budget:
        """``"perplexity=1.1,kl=0.1"``: the named bounds changed, the rest at their defaults.

        >>> Budget.parse("perplexity=1.1").perplexity, Budget.parse("kl=0.2").agreement
        (1.1, 0.95)
        """
        names = [f.name for f in fields(cls)]
        changes = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, _, value = item.partition("=")
            if name.strip() not in names or not value:
                raise UsageError(f"bad budget item {item!r}; write NAME=VALUE with NAME one of {', '.join(names)}")
            try:
                changes[name.strip()] = float(value)
            except ValueError:
                raise UsageError(f"budget {name.strip()}={value!r} is not a number") from None
        return replace(cls(), **changes)

    def describe(self, task: Task) -> str:
        return {
            "causal_lm": f"perplexity <= {self.perplexity:g} x unpatched",
            "masked_lm": f"masked-token perplexity <= {self.perplexity:g} x unpatched",
            "classifier": f"top-1 agreement >= {self.agreement:g} and KL <= {self.kl:g} nats",
            "encoder": f"output cosine to the unpatched model >= {self.cosine:g}",
        }[task]

    def check_task(self, task: Task) -> None:
        """FieldError naming ``budget`` when a bound moved from its default is one ``task`` is not judged by.

        >>> Budget(perplexity=1.1).check_task("encoder")
        Traceback (most recent call last):
        ...
        oversmooth.errors.FieldError: budget perplexity=1.1 does not apply to this model (an encoder without a ...
        """
        unused = [
            f.name for f in fields(self) if f.name not in TASK_BOUNDS[task] and getattr(self, f.name) != f.default
        ]
        if unused:
            raise FieldError(
                "{budget} {name}={value:g} does not apply to this model ({kind}: its budget is {measure}); "
                "drop it, or set {budget} " + " or ".join(f"{bound}=V" for bound in TASK_BOUNDS[task]),
                name=unused[0],
                value=getattr(self, unused[0]),
                kind=TASK_WORDS[task],
                measure=self.describe(task),
            )


def _knob_name(name: str, values: dict) -> str:
    """The global name (the CLI flag) of the first knob of method ``name`` in ``values``."""
    return method(name).flag(next(iter(values)))


def default_exclude(causal: bool) -> tuple[int, ...]:
    """The positions left out of the similarity measures unless asked otherwise: a causal LM's
    first token (a huge-norm attention sink), none for other models."""
    return (0,) if causal else ()


@dataclass(frozen=True)
class AnalysisSettings:
    """Which methods (with knob overrides) to compare, and how much data the attention pass sees.
    ``methods`` and ``exclude`` left None take the model's defaults (``for_model``). FieldError on
    a count out of range, or a knob of a method that is not compared."""

    methods: tuple[str, ...] | None = None  # None: every method that can patch the model
    knobs: dict[str, dict] = field(default_factory=dict)
    attention_sequences: int = 2  # sequences of the attention sample; 0: no attention measures
    attention_tokens: int | None = None  # text tokens per attention sequence; None: DEFAULT_TEXT_TOKENS (images: whole)
    exclude: tuple[int, ...] | None = None  # token positions left out; None: 0 for causal LMs, none otherwise
    rank_sequences: int | None = 8  # effective / stable rank on the first k sequences; None = all
    null_inits: int = 0  # the null: each measure on this many random inits of the architecture (0: none)
    cka: bool = False  # linear CKA between every pair of the model's layers
    budget: Budget = Budget()
    sweeps: tuple[Sweep, ...] = ()  # the frontier's curves; () = no sweep

    def __post_init__(self) -> None:
        check_count("attention_sequences", self.attention_sequences, 0)
        check_count("attention_tokens", self.attention_tokens, 1)
        check_count("rank_sequences", self.rank_sequences, 1)
        check_count("null_inits", self.null_inits, 0)
        chosen = default_patches() if self.methods is None else self.methods
        members = {name for entry in chosen for name in split_methods(entry)}  # a stack's methods too
        for name, values in self.knobs.items():
            make_knobs(name, values, scope="patch")  # an unknown method or knob, or a value out of range
            if values and name not in members:
                raise FieldError(
                    "{%s} sets %s, which is not in {methods} (%s); add it there or drop the knob"
                    % (_knob_name(name, values), name, ", ".join(chosen) or "none")
                )

    def resolved_knobs(self, causal: bool = False) -> dict[str, dict[str, dict]]:
        """Per entry of ``methods`` (one method or a stack ``a+b``; None: ``default_patches``), each
        of its methods' knobs: the defaults (a causal LM's with ``causal``) overridden by ``knobs``.
        UsageError on an unknown method or knob, a value out of range, or a stack the registry
        does not allow."""
        return {
            entry: stack_knobs(entry, self.knobs, causal)
            for entry in (default_patches() if self.methods is None else self.methods)
        }

    def for_model(self, model) -> AnalysisSettings:
        """These settings for ``model``, defaults filled in: methods None -> every default patch
        (``default_patches``) that can patch it (and the sweeps of those only); exclude None ->
        position 0 for a causal LM, whose first token is a huge-norm attention sink, else none. A
        model that carries a patch already (an adapted model, loaded with its patch) is measured as
        it is: no method or sweep on top.
        FieldError on a setting that does not apply to it (a knob of a method that cannot patch
        it, text tokens for an image model, a budget bound its task is not judged by)."""
        from oversmooth.hf import layout, patched_method, supported_methods, task_of

        knobs = self.knobs
        if patched_method(model) is not None:
            given = next((_knob_name(m, v) for m, v in knobs.items() if v), None)
            given = given or ("methods" if self.methods else "sweep" if self.sweeps else None)
            if given:
                raise FieldError(
                    "{%s} does not apply: this model carries its adaptation's patch (%s) and is measured as "
                    "saved; drop it, or analyze the unpatched model" % (given, patched_method(model))
                )
            methods, sweeps, knobs = (), (), {}
        elif self.methods is None:
            methods = tuple(m for m in supported_methods(model) if m in default_patches())
            sweeps = tuple(s for s in self.sweeps if s.method in methods)
            unfit = next(((m, values) for m, values in knobs.items() if values and m not in methods), None)
            if unfit:
                raise FieldError(
                    "{%s} sets %s, which cannot patch this model; drop it" % (_knob_name(*unfit), unfit[0])
                )
        else:
            methods, sweeps = self.methods, self.sweeps
        family = layout(model).family
        if self.attention_tokens is not None and family.modality != "text":
            raise FieldError(
                "{attention_tokens} cuts text only, and this is an image model (images are kept whole); drop it"
            )
        self.budget.check_task(task_of(model))
        exclude = self.exclude if self.exclude is not None else default_exclude(family.causal)
        tokens = DEFAULT_TEXT_TOKENS if self.attention_tokens is None else self.attention_tokens
        return replace(self, methods=methods, knobs=knobs, sweeps=sweeps, exclude=exclude, attention_tokens=tokens)
