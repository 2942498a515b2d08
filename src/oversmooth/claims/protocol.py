"""The second claims protocol (docs/registrations/second-protocol.md; docs/claims.md), declared
before its method arms ran: per claim trained in our studies, the primary measure, the arms it
compares, the seeds, the test, its Holm family and the gates (how each claim is stated, with the
deviations logged since, is its row of ``claims.statements``).

Each claim is one question: one setting (task, width, training), its cells paired by seed. A
protocol names its setting by the study preset that trains it, and its arms by ``(norm, label,
depth)``. ``across`` lists setting fields the comparison spans (claim 4 compares depths). The
tests and Holm's correction are ``oversmooth.study.stats`` and ``oversmooth.claims.verdicts``;
``oversmooth.claims.gathering`` applies each protocol to the cells.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from oversmooth.claims import measures
from oversmooth.claims.gates import PlateauGate
from oversmooth.claims.measures import Key, Measure, val_score
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.claims.statements import STATEMENTS
from oversmooth.study.config import StudyConfig
from oversmooth.study.results import CellResult
from oversmooth.study.stats import min_detectable_effect
from oversmooth.train.run_spec import training_key

PRIMARY, SECONDARY = "primary", "secondary"
#: docs/registrations/fourth-step.md: a trained softmax baseline oversmooths when its last-layer cos_sim
#: on the validation probe is at least this (NeuTRENO's trained DeiT, Fig. 1: about 0.9 in its last two
#: layers)
OVERSMOOTHS = 0.5


def rule_side(cos_sim: float) -> str:
    """Where a softmax baseline's last-layer ``cos_sim`` stands against ``OVERSMOOTHS``, in words.

    >>> rule_side(0.667), rule_side(0.127)
    ("at or above the rule's 0.5", "below the rule's 0.5")
    """
    return f"{'at or above' if cos_sim >= OVERSMOOTHS else 'below'} the rule's {OVERSMOOTHS:g}"


#: claim 4's third-protocol pilots (docs/studies.md): a depth where post-norm softmax *fails* (a seed's
#: final validation accuracy below FAILS_BELOW; chance is 0.10) is where 4a and 4b are to be tested
DEEP_PILOTS = ("depth-w32-d96-pilot", "depth-w32-d192-pilot")
FAILS_BELOW = 0.20
#: docs/registrations/second-protocol.md, fixed before the runs: Holm within each family, m never
#: shrinks.
FAMILIES = {PRIMARY: ("2a", "2b", "4a", "4b", "6", "7", "8"), SECONDARY: ("2c", "3", "5a", "5b", "5c")}


def family_of(claim_id: str) -> str:
    """The Holm family of tested claim ``claim_id``."""
    return next(name for name, ids in FAMILIES.items() if claim_id in ids)


@dataclass(frozen=True)
class Protocol:
    """One claim ``id`` trained in our studies: ``measure`` on the ``method`` and ``baseline`` arms
    of the cells trained as ``preset`` trains them, paired over ``seeds``; ``direction`` is the
    claimed sign of ``method - baseline`` (``margin``: an equivalence claim, |difference| <
    margin)."""

    id: str
    preset: StudyConfig
    method: Key
    baseline: Key
    measure: Measure
    direction: str  # "higher" | "lower"
    gates: tuple[PlateauGate, ...] = ()
    seeds: tuple[int, ...] = field(default=())
    every_arm: bool = False  # the measure reads every arm of a seed: the seed waits for all of them
    reads: tuple[Key, ...] = ()  # other arms the measure reads: the seed waits for them too
    note: Callable[[list[Mapping[Key, CellResult]], Key], str] | None = None  # more to say, on the method arm
    margin: float | None = None
    across: tuple[str, ...] = ()
    mde_planned: float | None = None  # the smallest detectable effect docs/studies.md registered (pilot's SD)
    existence: bool = False  # an existence claim ("can improve"): held or not shown here (fourth-step.md)
    reread: Measure | None = None  # a measure chosen after the data: the third protocol reads them with it
    reread_reference: str = ""  # what ``reread`` compares against, in words
    needs_failing_depth: bool = False  # claim 4: tested where a deep pilot (DEEP_PILOTS) finds post-norm failing

    def __post_init__(self) -> None:
        if not self.seeds:
            object.__setattr__(self, "seeds", self.preset.seeds)

    def key(self, cell: CellResult) -> tuple:
        """The setting a cell belongs to, for this claim (its ``training_key`` less ``across``)."""
        return training_key(cell.spec, self.across)

    @property
    def training(self) -> tuple:
        """The preset's setting: the cells of this claim have it."""
        return training_key(self.preset.cells()[0].spec(), self.across)

    @property
    def arms(self) -> frozenset[Key]:
        """The arms the measure and gates may read: the preset's own, the baseline, the gates' baselines."""
        return frozenset(self.own_arms | {self.baseline} | {arm for gate in self.gates for arm in gate.arms})

    @property
    def own_arms(self) -> frozenset[Key]:
        """The arms the preset trains itself."""
        return frozenset((c.norm, c.variant.label, c.depth) for c in self.preset.cells())

    @property
    def softmax_arm(self) -> Key:
        """The softmax arm whose last-layer cos_sim says whether this setting oversmooths
        (docs/registrations/fourth-step.md): the deepest softmax arm the claim compares, else its
        gate's baseline."""
        compared = [arm for arm in (self.method, self.baseline) if arm[1] == "softmax"]
        return max(compared, key=lambda arm: arm[2]) if compared else self.gates[0].arm

    @property
    def needs(self) -> frozenset[Key]:
        """The arms a seed must have finished before it counts: all of them if the measure reads every arm."""
        return self.arms if self.every_arm else frozenset({self.method, self.baseline, *self.reads})


def _preset(name: str) -> StudyConfig:
    return CLAIMS_PRESETS[name]


VIT, SPECTRAL, LM, DEPTH = (_preset(name) for name in ("fmnist-p7", "fmnist-p7-spectral", "austen-p3", "depth-w32"))
SOFTMAX = ("pre", "softmax", 8)  # the baseline arm of every setting at depth 8
SEEDS_A = tuple(range(14))  # 2a, 7, 8: NeuTRENO, FeatScale and softmax (fmnist-p7's seeds)
SEEDS_C = tuple(range(4, 14))  # 5c: seeds 0-3 were its pilot (their flip was measured before 5c was fixed)
SEEDS_B = tuple(range(8))  # 6, 5b, 2c: the spectral arms, the extra lambdas (fmnist-p7-spectral's seeds)
#: gate V: the Fashion-MNIST ViT's softmax baseline, on validation
#: (docs/registrations/second-protocol.md)
VIT_GATE = PlateauGate(
    SOFTMAX,
    87.0,
    "Xiao et al. 2017, Table 3: MLPClassifier 0.870",
    _preset("fmnist-p7-long"),
    tolerance=0.5,
    long_tolerance=0.5,
)
#: gate L: the Jane Austen LM's softmax baseline against a bigram model run on the same tokens
LM_GATE = PlateauGate(
    SOFTMAX,
    None,
    "a reference model run in the same study",
    _preset("austen-p3-long"),
    tolerance=0.005,
    long_tolerance=0.01,
)
#: gate W: claim 4's pre-norm softmax at depth 48 against a logistic regression run on the same images
DEPTH_GATE = PlateauGate(
    ("pre", "softmax", 48),
    None,
    "a reference model run in the same study: Xiao et al. 2017's LogisticRegression baseline",
    _preset("depth-w32-long"),
    tolerance=0.5,
    long_tolerance=0.5,
)
DEPTH_PILOT = _preset("depth-w32-pilot")
PROTOCOLS: tuple[Protocol, ...] = (
    Protocol(
        id="2a",
        preset=VIT,
        method=("pre", "neutreno", 8),
        baseline=SOFTMAX,
        measure=measures.score,
        direction="higher",
        gates=(VIT_GATE,),
        seeds=SEEDS_A,
        mde_planned=0.45,
    ),
    Protocol(
        id="2b",
        preset=LM,
        method=("pre", "neutreno", 8),
        baseline=SOFTMAX,
        measure=measures.score,
        direction="lower",
        gates=(LM_GATE,),
        mde_planned=0.0099,
    ),
    Protocol(
        id="4a",
        preset=DEPTH,
        method=("post", "softmax", 48),
        baseline=("post", "softmax", 8),
        measure=measures.deficit_by_depth,
        direction="higher",
        gates=(DEPTH_GATE,),
        across=("depth",),
        reads=(("pre", "softmax", 48), ("pre", "softmax", 8)),
        mde_planned=1.55,
        needs_failing_depth=True,
    ),
    Protocol(
        id="4b",
        preset=DEPTH,
        method=("post", "deescalate", 48),
        baseline=("post", "softmax", 48),
        measure=measures.score,
        direction="higher",
        gates=(DEPTH_GATE,),
        across=("depth",),
        mde_planned=0.80,
        needs_failing_depth=True,
    ),
    Protocol(
        id="6",
        preset=SPECTRAL,
        method=("pre", "smooth", 8),
        baseline=("pre", "sharpen", 8),
        measure=measures.score,
        direction="higher",
        gates=(VIT_GATE,),
        seeds=SEEDS_B,
        note=measures.arm_beside(("pre", "free", 8)),
        mde_planned=0.70,
        existence=True,
    ),
    Protocol(
        id="7",
        preset=VIT,
        method=("pre", "featscale", 8),
        baseline=SOFTMAX,
        measure=measures.score,
        direction="higher",
        gates=(VIT_GATE,),
        seeds=SEEDS_A,
        margin=0.5,
        mde_planned=0.46,
    ),
    Protocol(
        id="5b",
        preset=SPECTRAL,
        method=("pre", "smooth", 8),
        baseline=SOFTMAX,
        measure=measures.verdict_vs_majority,
        direction="higher",
        gates=(VIT_GATE,),
        seeds=SEEDS_B,
        every_arm=True,
    ),
    Protocol(
        id="5c",
        preset=VIT,
        method=SOFTMAX,
        baseline=SOFTMAX,
        measure=measures.value_flip,
        direction="higher",
        gates=(VIT_GATE,),
        seeds=SEEDS_C,
        note=measures.value_flip_note,
        mde_planned=0.32,
        reread=measures.value_flip_pull,
        reread_reference="the flip's own pull (from the same seed's blocks whose verdict did not turn)",
    ),
)


def runs_before(preset_name: str) -> dict[str, str]:
    """What the claims runner (scripts/run_claims.sh) trains before a setting's method arms:
    ``pilot``, the study whose seed rule fixes its seeds, and ``long``, the 1.5x-epochs run of the
    gate on a baseline the setting trains itself ('' where it has none)."""
    gates = [g for p in PROTOCOLS if p.preset.name == preset_name for g in p.gates if g.arm in p.own_arms]
    return {
        "pilot": DEPTH_PILOT.name if preset_name == DEPTH.name else "",
        "long": gates[0].long.name if gates else "",
    }


def protocol(claim_id: str) -> Protocol:
    return next(p for p in PROTOCOLS if p.id == claim_id)


def reference_needed(cell: CellResult) -> bool:
    """Whether ``cell`` is the baseline of a gate whose floor is a reference model run on the
    cell's own data (``PlateauGate`` with ``floor`` None): ``cell_analysis`` measures it only then."""
    return any(
        gate.floor is None and (cell.norm, cell.label, cell.depth) == gate.arm and p.key(cell) == p.training
        for p in PROTOCOLS
        for gate in p.gates
    )


#: claim 4's seed rule (docs/studies.md, Deviations, 2026-11-25 10:37): grow to 2-13 if 4a's detectable
#: effect at alpha / 7 with seeds 2-9 exceeds this many pp
DEPTH_GROW_ABOVE = 5.0


def depth_seeds(cells: list[CellResult]) -> tuple[float, float, tuple[int, ...]]:
    """Claim 4's seed rule on the pilot ``depth-w32-pilot``'s cells (others among ``cells`` are
    ignored): ``(sigma, detectable, seeds)``. ``sigma`` is the SD of the last validation accuracy
    (pp; docs/registrations/second-protocol.md: the test split decides nothing, not even a seed
    count) pooled over the pilot's four arms (pre- and post-norm softmax at depths 8 and 48); a
    seed's 4a value (four arms) has SD ``2 sigma``; ``detectable`` is 4a's smallest detectable
    effect (power 0.8, the paired t-test at alpha / 7) with 8 seeds; above ``DEPTH_GROW_ABOVE`` pp
    the test has seeds 2-13, else 2-9. ValueError while a pilot cell has not completed. Run once,
    after the pilot::

        python -c "from oversmooth.claims.evidence import read_folders; from oversmooth.claims.protocol import \\
        depth_seeds; print(depth_seeds(read_folders(['results/depth-w32-pilot']).cells))"
    """
    key = training_key(DEPTH_PILOT.cells()[0].spec(), ("depth",))
    arms: dict[Key, list[float]] = {}
    for cell in cells:
        if training_key(cell.spec, ("depth",)) == key and cell.seed in DEPTH_PILOT.seeds and cell.label == "softmax":
            arms.setdefault((cell.norm, cell.label, cell.depth), []).append(
                val_score(cell) if cell.status == "completed" else None
            )
    planned = {(c.norm, c.variant.label, c.depth) for c in DEPTH_PILOT.cells()}
    if arms.keys() != planned or any(len(s) != len(DEPTH_PILOT.seeds) or None in s for s in arms.values()):
        raise ValueError(f"the pilot {DEPTH_PILOT.name} has not finished: every cell must complete")
    sigma = math.sqrt(statistics.fmean(statistics.variance(scores) for scores in arms.values()))
    family = len(FAMILIES[PRIMARY])
    detectable = min_detectable_effect(8, 2 * sigma, 0.05 / family)
    return sigma, detectable, tuple(range(2, 14 if detectable > DEPTH_GROW_ABOVE else 10))


#: claim 2b's seed rule (docs/studies.md, "Claims 2b and 4"; applied to austen-p3 since 2026-11-26):
#: the smallest of these seed counts whose detectable effect at alpha / 7 is below the paper's 0.017
#: nats, else the largest
LM_SEED_COUNTS = (8, 10, 12)
LM_PILOT_SEEDS = (0, 1, 2, 3)


def lm_seeds(cells: list[CellResult]) -> tuple[float, dict[int, float], tuple[int, ...]]:
    """Claim 2b's seed rule on its softmax pilot (``LM_PILOT_SEEDS`` of the LM setting; other cells
    are ignored): ``(sigma, detectable, seeds)``. ``sigma`` is the SD of the last validation NLL
    (nats) over the pilot's seeds; a pair's difference has SD ``sqrt(2) sigma``; ``detectable[n]``
    is 2b's smallest detectable effect (power 0.8, the paired t-test at alpha / 7) with n seeds.
    ValueError while a pilot cell has not completed. Run once, after the pilot::

        python -c "from oversmooth.claims.evidence import read_folders; from oversmooth.claims.protocol import \\
        lm_seeds; print(lm_seeds(read_folders(['results/austen-p3']).cells))"
    """
    question = protocol("2b")
    scores = {
        cell.seed: val_score(cell)
        for cell in cells
        if question.key(cell) == question.training
        and (cell.norm, cell.label, cell.depth) == question.baseline
        and cell.seed in LM_PILOT_SEEDS
        and cell.status == "completed"
    }
    if sorted(scores) != list(LM_PILOT_SEEDS):
        raise ValueError(f"the pilot of {question.preset.name} (softmax, seeds 0-3) has not finished")
    sigma = statistics.stdev(scores.values())
    alpha = 0.05 / len(FAMILIES[PRIMARY])
    detectable = {n: min_detectable_effect(n, math.sqrt(2) * sigma, alpha) for n in LM_SEED_COUNTS}
    bar = abs(STATEMENTS["2b"].paper_effect)
    count = next((n for n in LM_SEED_COUNTS if detectable[n] < bar), LM_SEED_COUNTS[-1])
    return sigma, detectable, tuple(range(count))
