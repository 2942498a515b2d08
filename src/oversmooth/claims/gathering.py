"""A tested claim's evidence (docs/registrations/second-protocol.md: validation decides, the gates):
its pairs, one ``(unit, method, baseline)`` triple per seed (or per benchmark round, or per
sequence), with the first gate that failed and what has not finished. Where the evidence comes from:

- cells trained in our studies (``gather`` on a ``Protocol``: 2a, 2b, 4a, 4b, 5b, 5c, 6, 7),
  grouped by setting and seed; a claim is not tested until every planned seed has finished;
- adaptations of each seed's trained softmax cell (``adaptation_evidence``: 8, 2c);
- the interleaved cost benchmark (``cost_evidence``: 3) and the pretrained-model probe
  (``existence_evidence``: 5a).

``baseline_gate`` is the same gates' judgement before a setting's method arms run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from oversmooth.claims import adaptations
from oversmooth.claims.commands import study_command
from oversmooth.claims.gates import arm_name
from oversmooth.claims.measures import Key
from oversmooth.claims.protocol import PROTOCOLS, Protocol
from oversmooth.errors import UsageError
from oversmooth.study.config import StudyConfig
from oversmooth.study.report import seed_span
from oversmooth.study.results import CellResult

if TYPE_CHECKING:
    from oversmooth.claims.probes import Probes

_NO_VALUE = "finished but give the measure no value"


@dataclass
class Inputs:
    """What the claims are decided on: the cells, the probes (None: not run), the adaptations'
    records, the cost benchmark's rounds (None: not run), the command of each study preset by name."""

    cells: list[CellResult]
    probes: Probes | None = None
    adaptations: list[dict] = field(default_factory=list)
    benchmark: dict | None = None
    commands: Mapping[str, str] = field(default_factory=dict)

    def command(self, preset_name: str) -> str:
        """How to reproduce a claim of ``preset_name`` (``study_command``)."""
        return study_command(preset_name, self.commands.get(preset_name))


@dataclass(frozen=True)
class Evidence:
    """A question's data: ``values[i] = (unit, method, baseline)`` (unit: a seed, a round, a
    sequence), the first gate that failed (None: all passed; None too while nothing was
    judged), whether every gate was judged, what is still missing, a note, what a passed gate
    measured, what a gate still waits for, and the seeds that finished without a value."""

    values: tuple[tuple[int, float, float], ...]
    gate_failure: str | None = None
    judged: bool = False
    missing: str | None = None
    note: str = ""
    gate_measured: str = ""  # what a passed gate measured
    gate_waiting: str | None = None  # what a gate waits for before it can be judged (a long run)
    valueless: tuple[int, ...] = ()  # finished seeds that gave the measure no value

    @property
    def not_tested(self) -> str | None:
        """Why the claim is not tested: a failed gate first (it decides), then what has not finished."""
        parts = [part for part in (self.gate_failure, self.gate_waiting, self.missing) if part]
        return "; ".join(parts) or None

    @property
    def why_not_tested(self) -> str | None:
        """``not_tested`` in a few words (one of ``NOT_TESTED_WHY``); None when nothing stops the test."""
        if self.gate_failure:
            return "a gate failed"
        if self.valueless:
            return "a finished seed gave no value"
        return "runs not finished" if self.gate_waiting or self.missing else None


def group_cells(protocol: Protocol, cells: list[CellResult]) -> dict[int, dict[Key, CellResult]]:
    """The cells of ``protocol``'s setting by seed and arm (only the arms it reads).

    A UsageError, rather than a seed silently left out of its pair: a cell of the protocol's own
    study trained in another setting, or two cells for one seed and arm (two studies that trained
    it alike; one cell read twice is refused before, by ``read_studies``)."""
    seeds: dict[int, dict[Key, CellResult]] = {}
    for cell in cells:
        arm = (cell.norm, cell.label, cell.depth)
        if arm not in protocol.arms:
            continue
        differ = _trained_otherwise(protocol, cell)
        if differ:
            if cell.study == protocol.preset.name:
                raise UsageError(
                    f"cell {cell.study}/{cell.name} (its cell.json) was trained with {differ}, "
                    f"not as preset {cell.study} trains it (claim {protocol.id} cannot pair it); "
                    "move it out of the folders reported on and train it again"
                )
            continue
        other = seeds.setdefault(cell.seed, {}).get(arm)
        if other is not None:
            raise UsageError(
                f"two cells are seed {cell.seed}'s {cell.label} arm in one setting (claim {protocol.id}): "
                f"{other.study}/{other.name} and {cell.study}/{cell.name}; move one of them out of the folders "
                "reported on"
            )
        seeds[cell.seed][arm] = cell
    return seeds


def _trained_otherwise(protocol: Protocol, cell: CellResult) -> str:
    """How ``cell`` was trained otherwise than ``protocol``'s preset trains its arm: its setting,
    or the method and knobs of the preset's variant of that label ('' where it was not)."""
    differ = dict(set(protocol.key(cell)) - set(protocol.training))
    variant = next((v for v in protocol.preset.variants if v.label == cell.label), None)
    if variant is not None:
        meant, got = {"method": variant.method, **variant.knobs}, {"method": cell.method, **cell.knobs}
        differ |= {k: got.get(k) for k in meant.keys() | got.keys() if got.get(k) != meant.get(k)}
    return ", ".join(f"{k}={v!r}" for k, v in sorted(differ.items()))


def gather(protocol: Protocol, cells: list[CellResult]) -> Evidence:
    """The protocol's pairs on its setting and the first gate that fails. A gate judges the seeds
    in the test, or before any pair the finished cells of the planned seeds whose baseline has
    finished (so a baseline that fails alone shows before any method trains, and one that has not
    run yet is not judged), and may read all ``cells`` of the report."""
    seeds = group_cells(protocol, cells)
    values, finished, valueless = [], [], []
    for seed in protocol.seeds:
        group = seeds.get(seed, {})
        if protocol.needs <= group.keys():
            pair = protocol.measure(group, (protocol.method, protocol.baseline))
            if pair is not None:
                values.append((seed, *pair))
                finished.append(group)
            elif all(c.results is not None for c in group.values()):
                valueless.append(seed)
    done = {seed for seed, *_ in values} | set(valueless)
    lacking = {  # seed -> the arms it has not finished
        seed: ", ".join(
            arm_name(arm) for arm in sorted(protocol.needs) if not has_finished(seeds.get(seed, {}).get(arm))
        )
        for seed in protocol.seeds
        if seed not in done
    }
    gated = frozenset().union(*(gate.arms for gate in protocol.gates))
    judged = finished or [
        group
        for seed in protocol.seeds
        if (group := {arm: c for arm, c in seeds.get(seed, {}).items() if c.results is not None})
        and gated <= group.keys()  # a seed whose baseline has not finished is not judged yet
    ]
    outcomes = [gate.judge(judged, cells) for gate in protocol.gates] if judged else []
    failed = next((o.failure for o in outcomes if o.failure), None)
    waiting = None if failed else next((o.waiting for o in outcomes if o.waiting), None)
    notes = [protocol.note(finished, protocol.method) if protocol.note else ""]
    notes += [gate.equal_budget(finished, protocol.needs) for gate in protocol.gates]
    return Evidence(
        values=tuple(values),
        gate_failure=failed,
        judged=bool(judged) and waiting is None,
        missing=_missing(len(values), len(protocol.seeds), "seed pairs", valueless, lacking),
        note="; ".join(filter(None, notes)),
        gate_measured="" if failed or waiting else "; ".join(o.measured for o in outcomes),
        gate_waiting=waiting,
        valueless=tuple(valueless),
    )


def has_finished(cell: CellResult | None) -> bool:
    """Whether ``cell`` is there and has finished (its ``results.json``)."""
    return cell is not None and cell.results is not None


def _missing(found: int, planned: int, what: str, valueless: list[int], lacking: Mapping[int, str]) -> str | None:
    """What has not finished: the seeds that lack something (``lacking``: seed -> what it lacks),
    and the seeds that finished without a value of the measure."""
    if found == planned:
        return None
    text = f"{found} of {planned} planned {what} finished"
    seeds_by_lack: dict[str, list[int]] = {}
    for seed, lack in lacking.items():
        seeds_by_lack.setdefault(lack, []).append(seed)
    text += "".join(f"; seed(s) {seed_span(seeds)} lack {lack}" for lack, seeds in seeds_by_lack.items() if lack)
    if valueless:
        text += (
            f"; seed(s) {', '.join(map(str, valueless))} {_NO_VALUE} "
            "(no analysis.json, no score, or no block the measure counts)"
        )
    return text


def baseline_gate(preset: StudyConfig, cells: list[CellResult]) -> str | None:
    """Why the method arms of ``preset`` must not run yet, as the report judges its baseline among
    ``cells`` (``gather``): a gate of a claim trained on it failed (first), or waits for a long
    run, or some claim has no finished baseline cell to judge; None when every gate of every such
    claim passed. The claims runner (scripts/run_claims.sh) trains the baselines first and stops
    on anything but None."""
    gated = [p for p in PROTOCOLS if p.preset is preset and p.gates]
    if not gated:
        return None
    found = [gather(protocol, cells) for protocol in gated]
    failure = next((e.gate_failure for e in found if e.gate_failure), None)
    waiting = next((e.gate_waiting for e in found if e.gate_waiting), None)
    if failure is None and waiting is None and not all(e.judged for e in found):
        return f"not judged yet: not every claim trained on {preset.name} has a finished baseline cell"
    return failure or waiting


def adaptation_starts(measure: Callable[[dict], tuple[float, float] | None]) -> Protocol:
    """Claims 8 / 2c: the softmax cells their continuations of ``measure`` start from, at its seeds."""
    return replace(adaptations.STARTS, seeds=adaptations.SEEDS[measure])


def adaptation_evidence(
    measure: Callable[[dict], tuple[float, float] | None], note: Callable[[list[dict]], str] | None = None
) -> Callable[[Inputs], Evidence]:
    """Claims 8 / 2c: ``measure`` on each planned seed's adaptation; the gate is the softmax
    baseline's (V), on the cells the adaptations started from; ``note``: more to say, from the records."""

    def evidence(inputs: Inputs) -> Evidence:
        found: dict[int, dict] = {}
        for record in inputs.adaptations:
            if found.setdefault(record["seed"], record) is not record:
                raise UsageError(f"two adaptations of seed {record['seed']}: report the adaptations' folder once")
        starts = adaptation_starts(measure)
        seeds = starts.seeds
        pairs = {seed: measure(found[seed]) for seed in seeds if seed in found}
        values = tuple((seed, *pair) for seed, pair in pairs.items() if pair is not None)
        valueless = [seed for seed, pair in pairs.items() if pair is None]
        start = gather(starts, inputs.cells)  # the gate reads the tested seeds
        lacking = dict.fromkeys((seed for seed in seeds if seed not in found), "their adaptation")
        missing = _missing(len(values), len(seeds), "adaptations", valueless, lacking)
        said = note(list(found.values())) if note else ""
        return replace(start, values=values, missing=missing, note=said, valueless=tuple(valueless))

    return evidence


def cost_evidence(inputs: Inputs) -> Evidence:
    """Claim 3: per interleaved round, log seconds per training example of NeuTRENO and softmax."""
    if inputs.benchmark is None:
        return Evidence(values=(), missing="the cost benchmark has not run")
    rounds = inputs.benchmark["rounds"]
    return Evidence(
        values=tuple((i, math.log(r["neutreno"]), math.log(r["softmax"])) for i, r in enumerate(rounds)),
        note=inputs.benchmark.get("note", ""),
    )


def existence_evidence(inputs: Inputs) -> Evidence:
    """Claim 5a: per held-out sequence, MiniLM's cos_sim after block l + 1 and after block l, at the
    pair (l, l + 1) chosen on other sequences."""
    if inputs.probes is None or inputs.probes.existence is None:
        return Evidence(values=(), missing="the pretrained-model probe has not run")
    found = inputs.probes.existence
    values = tuple((i, after, before) for i, (before, after) in enumerate(found.values))
    return Evidence(values=values, note=found.text())
