"""The claims of the source papers under the second protocol (DESIGN 8, 9; docs/studies.md): a
registry ``CLAIMS`` of stable id -> ``ClaimSpec``, each decided by one function into one ``Claim``
(a row of the table and of ``claims.json``, with the fields of DESIGN 9.6).

Tested claims are ``Question``s: a statement, a measure, a test (paired t, or TOST with a margin)
and a source of evidence, one ``(unit, method, baseline)`` triple per seed (or per benchmark
round, or per sequence), with the first gate that failed. Where the evidence
comes from:

- cells trained in our studies (``oversmooth.claims.protocol``: 2a, 2b, 4a, 4b, 5b, 5c, 6, 7),
  grouped by setting and seed; a claim is not tested until every planned seed has finished;
- adaptations of each seed's trained softmax cell (``oversmooth.claims.adaptations``: 8, 2c);
- the interleaved cost benchmark (3) and the pretrained-model probe (5a).

The questions of each Holm family (``protocol.FAMILIES``) are decided together, once, in
``Inputs`` (``verdicts.decide_family``: m is fixed; an unfinished claim enters with p = 1). The
static claims 1a and 1b (``decide_no_training``) keep their deterministic rule and carry no p.

Each row keeps its registered verdict and adds the third protocol's reading of the same data
(DESIGN 9.8, ``_reading``): in magnitude where the paper states an effect, as an existence claim
where it is one, with a measure chosen after the data where one was (``Question.reread``), and
exploratory where the outcome was seen before its rule was written; a trained claim's row says
where it was tested (``regime``: its softmax arm's last-layer cos_sim beside the same architecture
at random init, and whether that baseline oversmooths).
"""

from __future__ import annotations

import math
import shlex
import statistics
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace

from oversmooth.analyze import Budget
from oversmooth.claims import adaptations
from oversmooth.claims.gates import arm_name
from oversmooth.claims.measures import Key
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.claims.probes import CurvePair, Probes
from oversmooth.claims.protocol import DEEP_PILOTS, FAILS_BELOW, FAMILIES, OVERSMOOTHS, PROTOCOLS, VIT_GATE, Protocol
from oversmooth.claims.similarity_claim import similarity_verdict
from oversmooth.claims.verdicts import (
    CONTRADICTED,
    HELD,
    INCONCLUSIVE,
    NOT_TESTED,
    Decision,
    PairedClaim,
    PaperEffect,
    decide_family,
    existence,
    in_magnitude,
)
from oversmooth.errors import UsageError
from oversmooth.study.config import StudyConfig
from oversmooth.study.report import seed_span
from oversmooth.study.results import CellResult

PROBES_COMMAND = "python -m oversmooth.claims.probes --out results/probes (about a minute)"
BENCH_COMMAND = "python benchmarks/bench_claim3.py --out results/claim3"
#: `oversmooth study` flags that keep part of a study's grid (``study_command`` drops them)
NARROWING = ("--methods", "--seeds", "--depths")
COST_MARGIN = math.log(1.10)  # claim 3: "about what softmax costs", within 1.10x either way
MEASURED_EARLY = (
    "disclosed 2026-11-25: measured once while its code was written, before the second protocol was committed; "
    "a deterministic measurement of a fixed model, its inputs and grid fixed in code, nothing tuned on it"
)
RETRAINED_STARTS = (
    "disclosed 2026-11-25 18:50 UTC: a start whose weights were not on the machine (only results/ is kept) "
    "was trained again from its recipe and seed before its continuations; both arms of a seed continue the "
    "same start, so the pairing holds (docs/studies.md, Deviations); corrected 2026-11-26 15:35: seeds 1-5's "
    "retrained starts differ from their archived cells by -0.46 to +0.90 pp of validation accuracy, and gate V "
    "was judged on the archived cells: the five models continued pass its floor (c) (89.14 % and above), "
    "(a) was not checked on them"
)


@dataclass(frozen=True)
class Regime:
    """Where a trained claim was tested (DESIGN 9.8): its softmax arm's last-layer cos_sim on the
    validation probe at the end of training, the mean over the claim's seeds that finished it,
    beside the same architecture's at random init (``oversmooth.study.null``; None: not computed)."""

    arm: str  # which softmax arm (``Protocol.softmax_arm``), of which studies' cells
    cos_sim: float | None  # None: no seed of the claim has finished it
    seeds: int
    null_mean: float | None
    null_sd: float | None
    null_inits: int | None
    oversmooths: bool | None  # cos_sim >= OVERSMOOTHS (None: no value)
    text: str  # the row's words for it


@dataclass(frozen=True)
class Claim:
    """One row of the claims table and of ``claims.json`` (DESIGN 9.6)."""

    id: str
    family: str | None  # primary | secondary; None for the static claims
    statement: str  # as the paper states it
    paper: str  # the paper's number
    measure: str  # what the numbers are, with their unit
    ours: str  # what we measured, in words: both arms, the effect, its interval, n
    effect: float | None
    ci: tuple[float, float] | None
    ci_level: float | None
    n: int
    p: float | None
    p_holm: float | None
    mde: float | None
    margin: float | None
    gate: str  # what had to hold first
    gate_passed: bool | None
    verdict: str  # held | contradicted | inconclusive | not tested
    reason: str  # why: the test, its Holm-matched interval, the smallest detectable effect, or what failed
    deviations: tuple[str, ...]
    command: str  # how to reproduce it
    paper_effect: float | None = None  # the paper's effect in our measure, where it states one
    mde_planned: float | None = None  # the smallest detectable effect registered before the runs
    ci95: tuple[float, float] | None = None  # the plain, unadjusted 95 % interval of the effect
    why_not_tested: str | None = None  # a not-tested claim's kind of reason, one of NOT_TESTED_WHY
    test: str = "paired t"  # what decided it: "paired t", "TOST" (equivalence) or "deterministic rule"
    reading: str = ""  # the third protocol's verdict on these same data (DESIGN 9.8)
    reading_reason: str = ""  # why it reads them so, where it says more than the registered verdict
    paper_transferred: float | None = None  # the paper's effect carried to our measure (DESIGN 9.8)
    direction: str | None = None  # the claimed sign of the effect, "higher" or "lower" (None: static claims)
    regime: Regime | None = None  # where a trained claim was tested (DESIGN 9.8; None: no trained model)

    def to_json(self) -> dict:
        """The JSON object of ``claims.json``: NaN and infinities become null."""
        clean = lambda x: None if isinstance(x, float) and not math.isfinite(x) else x  # noqa: E731
        row = asdict(self)
        for key in ("ci", "ci95"):
            row[key] = None if row[key] is None else [clean(x) for x in row[key]]
        row["deviations"] = list(self.deviations)
        return {k: clean(v) for k, v in row.items()}


#: the kinds of "not tested" (``Claim.why_not_tested``), in the order the report lists them
NOT_TESTED_WHY = ("a gate failed", "a finished seed gave no value", "runs not finished", "see its row")
_NO_VALUE = "finished but give the measure no value"
RULE = "deterministic rule"  # the static claims' test (no p-value)


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


@dataclass(frozen=True)
class Question:
    """A tested claim: how it is stated, measured and tested, and where its evidence comes from."""

    id: str
    statement: str
    paper: str
    measure: str
    direction: str
    gate: str
    evidence: Callable[[Inputs], Evidence]
    command: Callable[[Inputs], str]
    margin: float | None = None
    log_ratio: bool = False  # the measure is the log of a ratio: "ours" gives the ratio too
    units: str = "seeds"  # what the pairs are paired by
    deviations: tuple[str, ...] = ()
    paper_effect: float | None = None  # the paper's effect in this claim's measure, where it states one
    mde_planned: float | None = None  # the smallest detectable effect docs/studies.md registered (pilot's SD)
    scope: str = ""  # what the test shows and what it does not, printed with any verdict
    sides: tuple[str, str] = ("", "")  # what the two means in "ours" are: (method side, baseline side)
    paper_numbers: PaperEffect | None = None  # the paper's two numbers: its effect carried to ours (DESIGN 9.8)
    existence: bool = False  # an existence claim: held or not shown here (DESIGN 9.8)
    reread: Callable[[Inputs], Evidence] | None = None  # evidence by a measure chosen after the data
    reread_reference: str = ""  # what that measure compares against, in words
    softmax: Protocol | None = None  # whose softmax arm says where it was tested (``regime``; None: no trained model)
    unit: str = field(kw_only=True)  # the unit of ``measure``, in a word or two (the claims' summary)

    @property
    def family(self) -> str:
        return next(name for name, ids in FAMILIES.items() if self.id in ids)


Groups = dict[tuple, dict[int, dict[Key, CellResult]]]  # setting -> seed -> (norm, label, depth) -> cell


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
        seed: ", ".join(arm_name(arm) for arm in sorted(protocol.needs) if not _finished(seeds.get(seed, {}).get(arm)))
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
        tuple(values),
        failed,
        bool(judged) and waiting is None,
        _missing(len(values), len(protocol.seeds), "seed pairs", valueless, lacking),
        "; ".join(filter(None, notes)),
        "" if failed or waiting else "; ".join(o.measured for o in outcomes),
        waiting,
        tuple(valueless),
    )


def _finished(cell: CellResult | None) -> bool:
    return cell is not None and cell.results is not None


def regime(protocol: Protocol, cells: list[CellResult]) -> Regime:
    """Where ``protocol``'s claim was tested (DESIGN 9.8): the last-layer cos_sim of its softmax arm
    (``Protocol.softmax_arm``) in the last record of each of its seeds that finished it, their
    mean, beside that arm's random-init null; below ``OVERSMOOTHS`` the words say that the claim was
    tested where the baseline does not oversmooth."""
    arm = protocol.softmax_arm
    seeds = group_cells(protocol, cells)
    found = [cell for seed in protocol.seeds if _finished(cell := seeds.get(seed, {}).get(arm)) and cell.final_layers]
    if not found:
        return Regime(arm_name(arm), None, 0, None, None, None, None, "no finished cell yet")
    null = next((cell.null for cell in found if cell.null is not None), None)
    studies = ", ".join(sorted({cell.study for cell in found}))
    value = statistics.fmean(cell.final_layers[-1]["cos_sim"] for cell in found)
    text = f"{value:.3f} ({len(found)} seeds) vs "
    if null is None:
        text += "random init: null not computed"
    else:
        spread = "" if null["sd"] is None else f" ± {null['sd']:.3f}"
        text += f"{null['mean']:.3f}{spread} at random init ({null['inits']} inits)"
    oversmooths = value >= OVERSMOOTHS
    text += (
        f": the baseline oversmooths (>= {OVERSMOOTHS:g})"
        if oversmooths
        else f": tested where the baseline does not oversmooth (< {OVERSMOOTHS:g})"
    )
    return Regime(
        f"{studies} {arm_name(arm)}",
        value,
        len(found),
        None if null is None else null["mean"],
        None if null is None else null["sd"],
        None if null is None else null["inits"],
        oversmooths,
        text,
    )


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


def study_command(name: str, recorded: str | None) -> str:
    """How to run study ``name`` whole: the ``recorded`` command that last ran it, less the flags that
    keep only some of its methods, seeds or depths (a narrowed run cannot make a claim's pairs).

    >>> study_command("fmnist-p7", "oversmooth study fmnist-p7 --out runs/x --seeds 6,7 --methods=softmax")
    'oversmooth study fmnist-p7 --out runs/x'
    >>> study_command("depth-w32", "oversmooth study depth-w32 --out runs/y --depths 48 --jobs 2")
    'oversmooth study depth-w32 --out runs/y --jobs 2'
    """
    if recorded is None:
        return f"oversmooth study {name} --out runs/studies/{name} --results results"
    words = shlex.split(recorded)
    drop = {i for i, word in enumerate(words) if word.split("=")[0] in NARROWING}
    drop |= {i + 1 for i in drop if words[i] in NARROWING}  # the flag's value, as a word of its own
    return shlex.join(word for i, word in enumerate(words) if i not in drop)


def _study_command(preset_name: str) -> Callable[[Inputs], str]:
    return lambda inputs: inputs.command(preset_name)


def _from_protocol(protocol: Protocol) -> Question:
    return Question(
        protocol.id,
        protocol.statement,
        protocol.paper,
        protocol.measure_text,
        protocol.direction,
        "; ".join(gate.describe() for gate in protocol.gates) or "none",
        lambda inputs: gather(protocol, inputs.cells),
        _study_command(protocol.preset.name),
        margin=protocol.margin,
        deviations=protocol.deviations,
        paper_effect=protocol.paper_effect,
        mde_planned=protocol.mde_planned,
        scope=protocol.scope,
        sides=protocol.sides or (protocol.method[1], protocol.baseline[1]),
        paper_numbers=protocol.paper_numbers,
        unit=protocol.unit,
        existence=protocol.existence,
        reread=None
        if protocol.reread is None
        else lambda inputs: gather(replace(protocol, measure=protocol.reread), inputs.cells),
        reread_reference=protocol.reread_reference,
        softmax=protocol,
    )


def _starts(measure: Callable[[dict], tuple[float, float] | None]) -> Protocol:
    """Claims 8 / 2c: the softmax cells their continuations of ``measure`` start from, at its seeds."""
    return replace(adaptations.STARTS, seeds=adaptations.SEEDS[measure])


def _adaptation_evidence(
    measure: Callable[[dict], tuple[float, float] | None], note: Callable[[list[dict]], str] | None = None
) -> Callable[[Inputs], Evidence]:
    """Claims 8 / 2c: ``measure`` on each planned seed's adaptation; the gate is the softmax
    baseline's (V), on the cells the adaptations started from; ``note``: more to say, from the records."""

    def evidence(inputs: Inputs) -> Evidence:
        found: dict[int, dict] = {}
        for record in inputs.adaptations:
            if found.setdefault(record["seed"], record) is not record:
                raise UsageError(f"two adaptations of seed {record['seed']}: report the adaptations' folder once")
        starts = _starts(measure)
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


def _cost_evidence(inputs: Inputs) -> Evidence:
    """Claim 3: per interleaved round, log seconds per training example of NeuTRENO and softmax."""
    if inputs.benchmark is None:
        return Evidence((), missing="the cost benchmark has not run")
    rounds = inputs.benchmark["rounds"]
    return Evidence(
        tuple((i, math.log(r["neutreno"]), math.log(r["softmax"])) for i, r in enumerate(rounds)),
        note=inputs.benchmark.get("note", ""),
    )


def _existence_evidence(inputs: Inputs) -> Evidence:
    """Claim 5a: per held-out sequence, MiniLM's cos_sim after block l + 1 and after block l, at the
    pair (l, l + 1) chosen on other sequences."""
    if inputs.probes is None or inputs.probes.existence is None:
        return Evidence((), missing="the pretrained-model probe has not run")
    found = inputs.probes.existence
    return Evidence(tuple((i, after, before) for i, (before, after) in enumerate(found.values)), note=found.text())


QUESTIONS: dict[str, Question] = {protocol.id: _from_protocol(protocol) for protocol in PROTOCOLS}
QUESTIONS["8"] = Question(
    "8",
    "a short continuation with NeuTRENO patched in beats the same continuation with softmax",
    "DeiT-tiny 'NeuTRENO Adaptation' 72.63 vs softmax 72.17 (+0.46 pp; Nguyen et al. 2023, Table 1)",
    "test accuracy after the continuation, pp (NeuTRENO lam 0.6 - control)",
    "higher",
    VIT_GATE.describe(),
    _adaptation_evidence(adaptations.neutreno_vs_control),
    lambda inputs: adaptations.COMMAND,
    unit="pp",
    deviations=(RETRAINED_STARTS,),
    paper_effect=0.46,
    mde_planned=0.45,
    sides=("NeuTRENO", "control"),
    paper_numbers=PaperEffect(72.17, 72.63, "accuracy"),
    softmax=_starts(adaptations.neutreno_vs_control),
)
QUESTIONS["2c"] = Question(
    "2c",
    "NeuTRENO's lambda has a sweet spot: too small or too large hurts",
    "ADE20K mIoU 35.72 (softmax); 34.94 at the smallest lambda, 37.54 best, 26.25 at the largest (Nguyen et al. "
    "2023, Table 13)",
    "test accuracy after the continuation, pp: lam 0.6 - the better of lam 0.2 and lam 1.8 (the continuations "
    "across lambda stand in for training from scratch per lambda, as pre-registered)",
    "higher",
    VIT_GATE.describe(),
    _adaptation_evidence(adaptations.middle_vs_extremes, adaptations.extremes_note),
    lambda inputs: adaptations.COMMAND,
    unit="pp",
    deviations=(RETRAINED_STARTS,),
    mde_planned=0.66,
    sides=("lam 0.6", "better extreme"),
    scope="the better extreme is taken per seed on test accuracy, as registered: the larger of two noisy scores, "
    "which biases the difference against the claim; the paper's +2.6 mIoU over its better extreme is in another "
    "measure (scope written 2026-11-26 10:54, after its values were in)",
    softmax=_starts(adaptations.middle_vs_extremes),
)
QUESTIONS["3"] = Question(
    "3",
    "NeuTRENO costs about what softmax costs (here: within 1.10x the time per training example)",
    "FLOPs, memory and time ratios vs softmax about 1 (Nguyen et al. 2023, App. G.4)",
    "log thread-CPU seconds per training example per interleaved round, NeuTRENO - softmax",
    "higher",
    "none",
    _cost_evidence,
    lambda inputs: BENCH_COMMAND,
    unit="log time ratio",
    margin=COST_MARGIN,
    log_ratio=True,
    units="rounds",
    sides=("NeuTRENO", "softmax"),
    scope="time only, of one training step of fmnist-p7's model (17 tokens, width 64) on a CPU; FLOPs and memory "
    "are not measured, and at 17 tokens attention is a small share of a step (scope written 2026-11-26 07:27, "
    "after its values were in)",
)
QUESTIONS["5a"] = Question(
    "5a",
    "token similarity need not grow with depth, even in pretrained models",
    "Dovonon et al. 2025, Fig. 1: similarity falls in the last layers of pretrained models",
    "per held-out sequence: MiniLM's cos_sim after block l + 1 - after block l, at the pair chosen on other sequences",
    "lower",
    "none",
    _existence_evidence,
    lambda inputs: PROBES_COMMAND,
    unit="cos_sim",
    deviations=(
        "re-framed 2026-11-25 as an existence claim on a pretrained model, after the first protocol had "
        "measured 'last block vs peak' on its softmax cells (DESIGN 9.1)",
        MEASURED_EARLY,
        "clarified 2026-11-26: docs/studies.md's table wrote the difference the other way round; the measure "
        "(after l + 1 - after l, lower) is the one decided since before the probe ran",
    ),
    units="sequences",
    sides=("after l + 1", "after l"),
    existence=True,
)


@dataclass
class Inputs:
    """What the claims are decided on: the cells, the probes (None: not run), the adaptations'
    records, the cost benchmark's rounds (None: not run), the command of each study preset by name;
    each question's evidence and decision, decided once per Holm family; and, for a question with
    a measure chosen after its data (``Question.reread``), its evidence and decision by that
    measure, its family otherwise as registered."""

    cells: list[CellResult]
    probes: Probes | None = None
    adaptations: list[dict] = field(default_factory=list)
    benchmark: dict | None = None
    commands: Mapping[str, str] = field(default_factory=dict)
    decided: dict[str, tuple[Evidence, Decision]] = field(default_factory=dict)
    reread: dict[str, tuple[Evidence, Decision]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for ids in FAMILIES.values():
            found = [QUESTIONS[claim_id].evidence(self) for claim_id in ids]
            self.decided.update(zip(ids, zip(found, _decide(ids, found))))
            for index, claim_id in enumerate(ids):
                reread = QUESTIONS[claim_id].reread
                if reread is not None:
                    again = [*found[:index], reread(self), *found[index + 1 :]]
                    self.reread[claim_id] = again[index], _decide(ids, again)[index]

    def command(self, preset_name: str) -> str:
        """How to reproduce a claim of ``preset_name`` (``study_command``)."""
        return study_command(preset_name, self.commands.get(preset_name))


def _decide(ids: tuple[str, ...], found: list[Evidence]) -> list[Decision]:
    """The decisions of one Holm family's questions ``ids`` on their evidence ``found``."""
    claims = [
        PairedClaim(
            tuple(m for _, m, _ in e.values),
            tuple(b for _, _, b in e.values),
            QUESTIONS[claim_id].direction,
            e.not_tested,
            QUESTIONS[claim_id].margin,
        )
        for claim_id, e in zip(ids, found)
    ]
    return decide_family(claims)


def _ours(question: Question, evidence: Evidence, decision: Decision) -> str:
    """Both arms' means, the difference with its 95 % CI and n ("interim" while pairs are missing),
    the ratio where the measure is a log ratio, and the evidence's note."""
    if not evidence.values:
        return "no finished pair yet"
    _, method, baseline = zip(*evidence.values)
    ours, theirs = (f"{side} " if side else "" for side in question.sides)
    text = f"{ours}{statistics.fmean(method):.4g} vs {theirs}{statistics.fmean(baseline):.4g}"
    text += f"; difference {decision.test.mean:+.3g}"
    if decision.test.n >= 2:
        text += f", 95 % CI [{decision.test.ci_low:+.3g}, {decision.test.ci_high:+.3g}]"
    text += f", n = {decision.test.n}"
    if question.units == "seeds":
        text += f" (seeds {seed_span([unit for unit, _, _ in evidence.values])})"
    if evidence.missing:
        text = f"interim, not decided: {text}"
    if question.log_ratio and decision.verdict != NOT_TESTED:
        low, high = math.exp(decision.ci_low), math.exp(decision.ci_high)
        text += f"; as a ratio {math.exp(decision.effect):.3f} [{low:.3f}, {high:.3f}] Holm-matched"
        if question.margin is not None:
            text += f", margin [{math.exp(-question.margin):.3f}, {math.exp(question.margin):.3f}]"
    return text + (f"; {evidence.note}" if evidence.note else "")


def _number(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _planned(question: Question, decision: Decision) -> str:
    """An inconclusive claim's detectable effect as registered before the runs, beside the measured one."""
    if decision.verdict != INCONCLUSIVE or question.mde_planned is None:
        return ""
    return f"; registered from the pilot's spread: {question.mde_planned:g}"


def _beside_paper(question: Question, decision: Decision) -> str:
    """Where the paper's effect lies against our Holm-matched interval; for an inconclusive claim
    whose paper states no effect in our measure, that it does not ("" otherwise)."""
    effect, low, high = question.paper_effect, decision.ci_low, decision.ci_high
    if effect is None and decision.verdict == INCONCLUSIVE:
        return "; the paper states no effect in this measure to set beside it"
    if effect is None or decision.verdict == NOT_TESTED or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    where = "above" if effect > high else "below" if effect < low else "inside"
    return f"; the paper's effect ({effect:+g}) lies {where} this interval"


SEEN_FIRST = "exploratory: its outcome was seen before its rule was written"


def _reading(question: Question, inputs: Inputs) -> tuple[str, str, float | None]:
    """The third protocol's verdict on a tested claim's data (DESIGN 9.8), why it reads them so
    ("" where nothing is added to the registered verdict), and the paper's effect carried to our
    measure (None where the paper states none, or the claim is not tested)."""
    evidence, decision = inputs.decided[question.id]
    if decision.verdict == NOT_TESTED:
        return NOT_TESTED, "", None
    if question.softmax is not None and question.softmax.needs_failing_depth:
        trains = post_norm_trains_deep(inputs.cells)
        if trains:
            return NOT_TESTED, trains, None
    why, transferred = [], None
    if question.id in inputs.reread:
        decision = inputs.reread[question.id][1]
        found = (
            decision.reason
            if decision.verdict == NOT_TESTED
            else f"mean difference {decision.effect:+.3g}, Holm-matched {100 * decision.ci_level:.4g} % CI "
            f"[{decision.ci_low:+.3g}, {decision.ci_high:+.3g}], Holm p {decision.p_adjusted:.3g}"
        )
        why.append(
            f"read against {question.reread_reference}, a reference chosen after its data (exploratory): "
            f"{found}; fresh seeds decide"
        )
    verdict = decision.verdict
    if question.existence:
        verdict = existence(verdict)
        if verdict != decision.verdict:
            why.append("an existence claim: a setting where it did not show cannot contradict it")
    if question.paper_numbers is not None and question.margin is None:
        ours = statistics.fmean(b for _, _, b in evidence.values)
        transferred = question.paper_numbers.transferred(ours)
        verdict = in_magnitude(decision, transferred)
        if decision.verdict != CONTRADICTED:  # contradicted stays: its interval lies beyond 0 the other way
            where = "lies entirely short of it" if verdict != decision.verdict else "reaches it"
            why.append(
                f"the paper's effect carried to our measure is {transferred:+.3g} ({_transfer(question, ours)}); "
                f"the Holm-matched interval [{decision.ci_low:+.3g}, {decision.ci_high:+.3g}] {where}"
            )
    if MEASURED_EARLY in question.deviations:
        why.append(SEEN_FIRST)
    return verdict, "; ".join(why), transferred


def post_norm_trains_deep(cells: list[CellResult]) -> str:
    """Why claim 4 is not tested by the third protocol: every post-norm softmax seed of its deep
    pilots (``DEEP_PILOTS``) trained, a final validation accuracy of ``FAILS_BELOW`` or more; ""
    while a pilot is missing or unfinished, or a seed failed."""
    pilots = [c for c in cells if c.study in DEEP_PILOTS and c.norm == "post" and c.label == "softmax"]
    planned = {
        (name, cell.seed)
        for name in DEEP_PILOTS
        for cell in CLAIMS_PRESETS[name].cells()
        if (cell.norm, cell.variant.label) == ("post", "softmax")
    }
    finished = {(c.study, c.seed) for c in pilots if c.status == "completed"} == planned
    if not finished:
        return ""
    final = {(c.depth, c.seed): c.epochs[-1]["val"]["accuracy"] for c in pilots}
    if min(final.values()) < FAILS_BELOW:
        return ""
    depths = sorted({depth for depth, _ in final})
    by_depth = "; ".join(
        f"depth {depth}: " + ", ".join(f"{100 * a:.1f} %" for (d, _), a in sorted(final.items()) if d == depth)
        for depth in depths
    )
    return (
        f"post-norm trains at depths {' and '.join(map(str, depths))} with a recipe that trains "
        f"pre-norm to its plateau (post-norm softmax's final validation accuracy by seed, {by_depth}; failing is "
        f"below {100 * FAILS_BELOW:.0f} %: {', '.join(DEEP_PILOTS)}, docs/studies.md)"
    )


def _transfer(question: Question, ours: float) -> str:
    """How DESIGN 9.8 carries the paper's effect to our measure, in words."""
    numbers = question.paper_numbers
    if numbers.scale == "perplexity":
        return f"nats per token: ln({numbers.method:g} / {numbers.baseline:g})"
    return (
        f"{100 * numbers.error_removed:.3g} % of the paper's error removed, of our {question.sides[1]}'s "
        f"{100 - ours:.4g} % error"
    )


def decide_question(claim_id: str) -> Callable[[Inputs], Claim]:
    """The rule of tested claim ``claim_id``: its family's decision on its evidence."""

    def decide(inputs: Inputs) -> Claim:
        question = QUESTIONS[claim_id]
        evidence, decision = inputs.decided[claim_id]
        tested = decision.verdict != NOT_TESTED
        reading, reading_reason, transferred = _reading(question, inputs)
        gate_passed = None if not evidence.judged else evidence.gate_failure is None
        gate = question.gate + (
            ""
            if gate_passed is None
            else f" (passed: {evidence.gate_measured})"
            if gate_passed
            else f" (failed: {evidence.gate_failure})"
        )
        return Claim(
            claim_id,
            question.family,
            question.statement,
            question.paper,
            question.measure,
            _ours(question, evidence, decision),
            _number(decision.effect) if tested else None,
            (decision.ci_low, decision.ci_high) if tested else None,
            _number(decision.ci_level) if tested else None,
            decision.test.n,
            _number(decision.p) if tested else None,
            _number(decision.p_adjusted),
            _number(decision.mde),
            question.margin,
            gate,
            gate_passed,
            decision.verdict,
            decision.reason
            + _planned(question, decision)
            + _beside_paper(question, decision)
            + (f"; scope: {question.scope}" if question.scope else ""),
            question.deviations,
            question.command(inputs),
            question.paper_effect,
            question.mde_planned,
            (decision.test.ci_low, decision.test.ci_high) if tested and decision.test.n >= 2 else None,
            None if tested else evidence.why_not_tested or "see its row",
            "paired t" if question.margin is None else "TOST",
            reading,
            reading_reason,
            transferred,
            question.direction,
            None if question.softmax is None else regime(question.softmax, inputs.cells),
        )

    return decide


def decide_no_training(
    claim_id: str,
    paper: str,
    gate: str,
    curves: Callable[[Probes], CurvePair | None],
    beside: Callable[[Probes], CurvePair] | None = None,
    deviations: tuple[str, ...] = (),
) -> Callable:
    """The rule of claims 1a / 1b (NeuTRENO App. G.3 / G.9): ``similarity_verdict`` on ``curves``,
    with ``beside`` (the paper's own knob, say) reported next to it."""

    def decide(inputs: Inputs) -> Claim:
        pair = None if inputs.probes is None else curves(inputs.probes)
        if pair is None:
            return Claim(
                claim_id,
                None,
                "NeuTRENO lowers per-layer token cos_sim without training",
                paper,
                "per-layer cos_sim, NeuTRENO vs unpatched",
                "the probes have not run",
                None,
                None,
                None,
                0,
                None,
                None,
                None,
                None,
                gate,
                None,
                NOT_TESTED,
                "not tested: the probes have not run (oversmooth claims without --no-probes runs them)",
                (),
                PROBES_COMMAND,
                why_not_tested="runs not finished",
                test=RULE,
                reading=NOT_TESTED,
            )
        base, neut = pair.mean("baseline"), pair.mean("neutreno")
        rule, sentence = similarity_verdict(base, neut, pair.quality)
        verdict = rule if rule in (HELD, NOT_TESTED) else CONTRADICTED  # "model broken" is a reason (DESIGN 9.4)
        if verdict != rule:  # the rule's own word ("did not hold", "model broken") becomes the reason
            sentence = f"{verdict} (the claimed change does not happen within the quality budget): {sentence}"
        return Claim(
            claim_id,
            None,
            f"NeuTRENO (lam {pair.lam:g}) lowers per-layer token cos_sim without training ({pair.source})",
            paper,
            "per-layer cos_sim, NeuTRENO vs unpatched",
            f"last layer {base[-1]:.3f} -> {neut[-1]:.3f}"
            + (f"; {pair.note}" if pair.note else "")
            + ("" if beside is None else _beside(beside(inputs.probes))),
            None,
            None,
            None,
            len(pair.baseline),
            None,
            None,
            None,
            None,
            gate,
            None if pair.quality is None else pair.quality.within_budget,
            verdict,
            sentence + " (oversmooth.claims.similarity_claim.similarity_verdict; deterministic, no statistics)",
            deviations,
            PROBES_COMMAND,
            why_not_tested="see its row" if verdict == NOT_TESTED else None,
            test=RULE,
            reading=verdict,
            reading_reason=SEEN_FIRST if MEASURED_EARLY in deviations and verdict != NOT_TESTED else "",
        )

    return decide


def _beside(pair: CurvePair) -> str:
    """The same rule at another knob, in a clause: ``"; at lam 0.6: similarity lower, model broken ..."``."""
    _, sentence = similarity_verdict(pair.mean("baseline"), pair.mean("neutreno"), pair.quality)
    return f"; at lam {pair.lam:g}: {sentence}"


ClaimSpec = Callable[[Inputs], "Claim"]


def _claim_order(claim_id: str) -> tuple[int, str]:
    """ "2a" < "2c" < "3" < "10": the number, then the letter."""
    digits = claim_id.rstrip("abcdefghijklmnopqrstuvwxyz")
    return int(digits), claim_id[len(digits) :]


#: Every claim by its stable id, in the report's order.
CLAIMS: dict[str, ClaimSpec] = {
    "1a": decide_no_training(
        "1a",
        "random-init DeiT-tiny, Fig. 6: NeuTRENO well below softmax from layer 2 on",
        "none (untrained: no job to keep)",
        lambda probes: probes.random_init,
    ),
    "1b": decide_no_training(
        "1b",
        "pretrained BERT-base, Fig. 7: lower in every layer, no fine-tuning",
        "decided at the largest lambda whose output stays within the quality budget (for this sentence encoder: "
        f"output cosine >= {Budget().cosine:g}; the frontier of analyze --sweep)",
        lambda probes: probes.frontier,
        beside=lambda probes: probes.pretrained,
        deviations=(MEASURED_EARLY,),
    ),
    **{claim_id: decide_question(claim_id) for claim_id in sorted(QUESTIONS, key=_claim_order)},
}


def decide_claims(
    cells: list[CellResult],
    probes: Probes | None = None,
    commands: Mapping[str, str] | None = None,
    ids: tuple[str, ...] | None = None,
    adapted: list[dict] | None = None,
    benchmark: dict | None = None,
) -> list[Claim]:
    """Every registered claim (or those in ``ids``) decided on this evidence, in registry order
    (a claim whose evidence has not run is "not tested", never left out)."""
    inputs = Inputs(cells, probes, adapted or [], benchmark, commands or {})
    return [CLAIMS[claim_id](inputs) for claim_id in (ids or CLAIMS)]
