"""Where a study's cells run and with what: the ``[executor]`` table of a study file and the
``oversmooth study`` flags of the same names (flags win).

>>> ExecutorSettings.from_dict({"kind": "slurm", "partition": "debug", "time": "1-02:03"}).minutes
1563
>>> slurm_minutes("90")
90
>>> slurm_minutes("soon")
Traceback (most recent call last):
...
oversmooth.errors.UsageError: time limit 'soon' does not parse; write minutes (90), HH:MM:SS (1:30:00) or ...
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from oversmooth.errors import FieldError, UsageError

KINDS = ("local", "slurm")
#: settings only a Slurm job array reads: refused with the local executor, which would drop them
SLURM_ONLY = ("partition", "sbatch", "cpus_per_task", "wait")
LOCAL_MINUTES = 60 * 24 * 365  # a local cell has no time limit unless one is given


def slurm_minutes(text: str) -> int:
    """Slurm's time-limit forms (``sbatch --time``) in whole minutes, rounded up."""
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text.strip())
    if not match:
        raise UsageError(
            f"time limit {text!r} does not parse; write minutes (90), HH:MM:SS (1:30:00) or D-HH[:MM[:SS]] (2-00)"
        )
    days, first, second, third = (int(part) if part else 0 for part in match.groups())
    if match[1] is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        seconds = ((days * 24 + first) * 60 + second) * 60 + third
    elif match[4] is not None:  # HH:MM:SS
        seconds = (first * 60 + second) * 60 + third
    else:  # MM or MM:SS
        seconds = first * 60 + second
    if seconds <= 0:
        raise UsageError(f"time limit {text!r} must be longer than zero")
    return math.ceil(seconds / 60)


@dataclass(frozen=True)
class ExecutorSettings:
    """``kind`` local (processes on this machine) or slurm (a job array); ``jobs`` cells at once
    (local processes, or the array's ``%jobs``); per cell: ``time`` limit (Slurm's forms),
    ``gpus_per_node``, ``tasks_per_node`` (> 1: one DDP process each, and one GPU each if any);
    Slurm only (``SLURM_ONLY``): ``cpus_per_task``, ``partition``, extra ``sbatch`` options
    (``--qos=high``) and ``wait`` (the submitting call returns once the cells have ended).

    A Slurm-only setting with the local executor, or more processes than GPUs, is a ``FieldError``
    naming the settings (``checked``, once the flags have overridden the file): a CLI names its
    flags, a study file its keys."""

    kind: str = "local"
    jobs: int = 1
    time: str | None = None
    cpus_per_task: int | None = None
    gpus_per_node: int = 0
    tasks_per_node: int = 1
    partition: str | None = None
    sbatch: tuple[str, ...] = ()
    wait: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UsageError(f"unknown executor {self.kind!r}; choose local or slurm")
        for name in ("jobs", "tasks_per_node", "cpus_per_task"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise UsageError(f"executor {name} must be a whole number of at least 1, got {value!r}")
        if not isinstance(self.gpus_per_node, int) or self.gpus_per_node < 0:
            raise UsageError(f"executor gpus_per_node must be a whole number, got {self.gpus_per_node!r}")
        if not isinstance(self.wait, bool):
            raise FieldError("{wait} must be true or false, got {got!r}", got=self.wait)
        if self.time is not None:
            slurm_minutes(self.time)
        bad = [option for option in self.sbatch if not re.fullmatch(r"--[A-Za-z][A-Za-z0-9-]*(=.+)?", option)]
        if bad:
            raise UsageError(f"sbatch option {bad[0]!r} is not of the form --name or --name=value")

    @property
    def minutes(self) -> int:
        return LOCAL_MINUTES if self.time is None else slurm_minutes(self.time)

    def sbatch_options(self) -> dict[str, Any]:
        """The extra sbatch options as submitit's ``additional_parameters``."""
        options = {}
        for option in self.sbatch:
            name, sep, value = option[2:].partition("=")
            options[name.replace("-", "_")] = value if sep else True
        return options

    def checked(self) -> ExecutorSettings:
        """These settings if they fit together (a FieldError if not): no Slurm-only setting with
        the local executor, no more processes per cell than GPUs. Checked once the command line
        has overridden the study file (``updated``), and by ``run_study``."""
        if self.gpus_per_node and self.tasks_per_node > self.gpus_per_node:
            raise FieldError(
                "{tasks_per_node} {tasks} with {gpus_per_node} {gpus}: each process takes a GPU of its own; "
                "give {gpus_per_node} {tasks}, or 0 to train on CPUs",
                tasks=self.tasks_per_node,
                gpus=self.gpus_per_node,
            )
        given = [
            f.name for f in dataclasses.fields(self) if f.name in SLURM_ONLY and getattr(self, f.name) != f.default
        ]
        if given and self.kind == "local":
            raise FieldError("{%s} is a Slurm setting: drop it, or run on Slurm ({kind} slurm)" % given[0])
        return self

    def updated(self, **changes: Any) -> ExecutorSettings:
        """These settings with the given ones (None: unchanged), checked again. A change of ``kind``
        to local drops the Slurm-only settings it had (a Slurm study file run here); any given
        with it are refused."""
        given = {name: value for name, value in changes.items() if value is not None}
        if given.get("kind") == "local":
            given = {f.name: f.default for f in dataclasses.fields(self) if f.name in SLURM_ONLY} | given
        return (dataclasses.replace(self, **given) if given else self).checked()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExecutorSettings:
        """From a study file's ``[executor]`` table; errors name its keys (``[executor] partition``)."""
        if not isinstance(data, dict):
            raise UsageError("study field 'executor' must be a table of executor settings")
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise UsageError(f"unknown executor setting(s) {', '.join(unknown)}; valid: {', '.join(sorted(fields))}")
        if "sbatch" in data:
            data = {**data, "sbatch": tuple(data["sbatch"]) if isinstance(data["sbatch"], list) else (data["sbatch"],)}
        try:
            return cls(**data)
        except FieldError as error:
            raise UsageError(error.message(lambda name: f"[executor] {name}")) from None
