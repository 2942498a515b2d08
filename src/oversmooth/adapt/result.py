"""What an adaptation returns and writes to ``adapt.json``: per arm, its start, its records and
its end (val scores, test scores once, steps, wall seconds, last-layer cos_sim) and its cost
(seconds per optimiser step, peak memory)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from oversmooth.adapt.config import CONTROL
from oversmooth.utils.provenance import Provenance


def last_cos_sim(layers: list[dict] | None) -> float | None:
    """cos_sim of the last stream state (after the last block, before any final norm)."""
    return layers[-1].get("cos_sim") if layers else None


def row(arm: str, record: dict) -> dict[str, Any]:
    """One checkpoint of one arm, flat: step, train loss, val scores, per-layer cos_sim."""
    flat = {"arm": arm, "step": record["step"], "train_loss": record.get("train_loss"), "lr": record.get("lr")}
    flat.update({f"val_{k}": v for k, v in record["val"].items()})
    layers = record.get("layers") or []
    flat["cos_sim_last"] = last_cos_sim(layers)
    flat.update({f"cos_sim_{r['layer']}": r.get("cos_sim") for r in layers})
    return flat


@dataclass
class ArmResult:
    """One arm. ``start``: the val scores before any step; ``val`` / ``test``: after the last
    step (test scored once, at the end); ``rows``: step 0 and every record (``row``; under
    ``--ramp`` also the ramped knobs each evaluation used, ``knobs_in_force``)."""

    name: str
    method: str
    knobs: dict | None
    status: str
    steps: int
    wall_seconds: float
    start: dict
    val: dict | None
    test: dict | None
    start_cos_sim_last: float | None
    cos_sim_last: float | None
    rows: list[dict] = field(default_factory=list)
    seconds_per_step: float | None = None
    memory: dict | None = None

    @classmethod
    def of(
        cls,
        name: str,
        method: str,
        knobs: dict | None,
        start: dict,
        records: list[dict],
        results: dict,
        evaluated: Callable[[int], dict] | None = None,
        batch_size: int | None = None,
        memory: dict | None = None,
    ) -> ArmResult:
        """``evaluated(step)``: the ramped knobs the evaluation at ``step`` used (``adapt --ramp``),
        kept in each row as ``knobs_in_force``; None: no ramp, no such key. ``batch_size``: the
        examples per step, to read the seconds per step off the train loop's examples per second."""
        last = records[-1] if records else start
        rows = [row(name, start), *(row(name, r) for r in records)]
        for flat in rows if evaluated else ():
            flat["knobs_in_force"] = evaluated(flat["step"])
        return cls(
            name,
            method,
            knobs,
            results["status"],
            results["steps"],
            results["wall_seconds"],
            start["val"],
            results["val"],
            results["test"],
            last_cos_sim(start.get("layers")),
            last_cos_sim(last.get("layers")),
            rows,
            batch_size / rate if batch_size and (rate := results.get("train_examples_per_second")) else None,
            memory,
        )


@dataclass
class AdaptResult:
    """The whole adaptation: its config (defaults filled in), what was adapted, the objective, the
    arms by name (``control`` first), ``data``: per split, the ``examples`` trained or scored on
    and, for text, the ``tokens`` they hold (``adapt.run.sizes``), ``methods``: per method asked
    for, how its arms got their knobs or why it has none (``adapt.arms.plan_arms``), with
    ``knobs="frontier"`` the ``frontier`` they were read off (``adapt.frontier_knobs.frontier``),
    and ``provenance`` (``utils.provenance``; None in adaptations written before it was recorded)."""

    config: dict
    source: dict
    objective: str
    arms: dict[str, ArmResult]
    data: dict[str, dict[str, int]]
    methods: dict[str, str] = field(default_factory=dict)
    frontier: dict | None = None
    provenance: Provenance | None = None

    @property
    def control(self) -> ArmResult:
        return self.arms[CONTROL]

    @property
    def patched(self) -> list[ArmResult]:
        return [arm for name, arm in self.arms.items() if name != CONTROL]

    @property
    def model(self) -> str:
        """The adapted model as a report in the adaptation's folder names it: its identity (package,
        hub name, or path relative to the folder)."""
        return self.provenance.data["model"] if self.provenance else self.source.get("path", "?")

    def to_dict(self) -> dict:
        return {
            "config": self.config,
            "source": self.source,
            "objective": self.objective,
            "arms": {name: asdict(arm) for name, arm in self.arms.items()},
            "data": self.data,
            "methods": self.methods,
            "frontier": self.frontier,
            **({"provenance": self.provenance.to_json()} if self.provenance is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict) -> AdaptResult:
        return cls(
            data["config"],
            data["source"],
            data["objective"],
            {name: ArmResult(**arm) for name, arm in data["arms"].items()},
            data.get("data", {}),  # adaptations written before it was recorded have none
            data.get("methods", {}),  # nor these, written before adaptations held several methods
            data.get("frontier"),
            Provenance.from_json(data["provenance"]) if isinstance(data.get("provenance"), dict) else None,  # nor this
        )
