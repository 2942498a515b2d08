"""The claims protocol, written before the runs: per trained claim, the primary measure, the cells
it compares, the seeds, the claimed direction and the gates (docs/studies.md has it as a table).

Each claim is one question: one setting (task, depth, width, training), its cells paired by
seed (``CellResult.training()`` equal: same init and data order, only the method differs). A
protocol names its setting by the study preset that trains it (a ``StudyConfig``), and its cells
by their ``(norm, label)`` arm, never by a study's name. The paired t-test, Holm's correction
across the report and the verdicts are ``oversmooth.study.stats``; ``oversmooth.study.claims``
registers each protocol as one claim and applies it to the cells.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from oversmooth.study import measures
from oversmooth.study.measures import Key, Measure, paired_score
from oversmooth.study.config import StudyConfig
from oversmooth.study.pilots import FailureFound
from oversmooth.study.presets import STUDY_PRESETS
from oversmooth.run_spec import training_key
from oversmooth.study.results import CellResult


@dataclass(frozen=True)
class QualityGate:
    """The baseline trained: means over its seeds' cells of ``arm`` (norm, label).

    ``min_accuracy`` (test, %), ``max_perplexity`` (test), ``max_last_gain`` (validation
    accuracy gained over the last epoch, pp), ``max_last_change`` (relative change of the
    validation loss over the last epoch, e.g. 0.01 = flat within 1 %).
    """

    arm: Key
    min_accuracy: float | None = None
    max_perplexity: float | None = None
    max_last_gain: float | None = None
    max_last_change: float | None = None

    def describe(self) -> str:
        parts = [f"{self.arm[1]} ({self.arm[0]}-norm)"]
        if self.min_accuracy is not None:
            parts.append(f"test accuracy >= {self.min_accuracy:g} %")
        if self.max_perplexity is not None:
            parts.append(f"test perplexity <= {self.max_perplexity:g}")
        if self.max_last_gain is not None:
            parts.append(f"< {self.max_last_gain:g} pp val accuracy gained in the last epoch")
        if self.max_last_change is not None:
            parts.append(f"val loss flat within {100 * self.max_last_change:g} % over the last epoch")
        return parts[0] + ": " + ", ".join(parts[1:])

    def failure(self, groups: Sequence[Mapping[Key, CellResult]], others: Sequence[CellResult] = ()) -> str | None:
        """Why the gate fails on these seeds' cells (``"undertrained: ..."``), or None. (``others``,
        the report's cells, are for gates that look beyond the baseline, like ``pilots.FailureFound``.)"""
        cells = [group[self.arm] for group in groups if self.arm in group]
        if not cells or any(c.status != "completed" or len(c.epochs) < 2 for c in cells):
            return f"undertrained: {self.arm[1]} ({self.arm[0]}-norm) did not complete 2+ epochs on every seed"
        score = statistics.fmean(paired_score(c) for c in cells)
        over = f" (mean of {len(cells)} seeds)" if len(cells) > 1 else ""
        if self.min_accuracy is not None and score < self.min_accuracy:
            return f"undertrained: {self.arm[1]} test accuracy {score:.2f} %{over} < {self.min_accuracy:g} %"
        if self.max_perplexity is not None and score > self.max_perplexity:
            return f"undertrained: {self.arm[1]} test perplexity {score:.1f}{over} > {self.max_perplexity:g}"
        last = lambda c, key: (c.epochs[-1]["val"][key], c.epochs[-2]["val"][key])  # noqa: E731
        if self.max_last_gain is not None:
            gain = statistics.fmean(100 * (a - b) for a, b in (last(c, "accuracy") for c in cells))
            if gain >= self.max_last_gain:
                return f"not plateaued: {self.arm[1]} gained {gain:.2f} pp val accuracy in its last epoch"
        if self.max_last_change is not None:
            change = statistics.fmean(abs(a - b) / b for a, b in (last(c, "loss") for c in cells))
            if change >= self.max_last_change:
                return f"not plateaued: {self.arm[1]} val loss moved {100 * change:.2f} % in its last epoch"
        return None


@dataclass(frozen=True)
class Protocol:
    """One trained claim ``id``: ``measure`` on the ``method`` and ``baseline`` arms of the cells
    trained as ``preset`` trains them (the method arm is one of the preset's; the baseline may come
    from another preset trained the same way), paired over ``seeds``; ``direction`` is the claimed
    sign of ``method - baseline``."""

    id: str
    statement: str            # as the paper states it
    paper: str                # the paper's own number
    preset: StudyConfig
    method: Key
    baseline: Key
    measure: Measure
    measure_text: str         # what the numbers are, with their unit
    direction: str            # "higher" | "lower"
    gates: tuple = ()         # QualityGate, pilots.FailureFound: describe(), failure(groups, cells)
    seeds: tuple[int, ...] = field(default=())
    every_arm: bool = False   # the measure reads every arm of a seed: the seed waits for all of them
    note: Callable[[list[Mapping[Key, CellResult]], Key], str] | None = None  # more to say, on the method arm

    def __post_init__(self) -> None:
        if not self.seeds:
            object.__setattr__(self, "seeds", self.preset.seeds)

    @property
    def training(self) -> tuple:
        """The preset's ``training_key``: the cells of this setting have it."""
        return training_key(self.preset.cells()[0].spec())

    @property
    def arms(self) -> frozenset[Key]:
        """The ``(norm, label)`` arms the measure may read: the preset's own, and the baseline."""
        return frozenset({(norm, v.label) for norm in self.preset.norms for v in self.preset.variants}
                         | {self.baseline})

    @property
    def needs(self) -> frozenset[Key]:
        """The arms a seed must have finished before it counts: all of them if the measure reads every arm."""
        return self.arms if self.every_arm else frozenset({self.method, self.baseline})


FMNIST, AUSTEN, FEATSCALE, POSTNORM = (STUDY_PRESETS[name] for name in
                                      ("fmnist-vit", "austen-lm", "fmnist-featscale", "postnorm-deesc"))
PRE_SOFTMAX, PRE_NEUTRENO = ("pre", "softmax"), ("pre", "neutreno")
POST_SOFTMAX, POST_DEESCALATE = ("post", "softmax"), ("post", "deescalate")
#: Fashion-MNIST ViT gate: the softmax baseline trained (>= 89 %) and plateaued (< 0.2 pp in its last epoch).
FMNIST_GATE = QualityGate(PRE_SOFTMAX, min_accuracy=89.0, max_last_gain=0.2)
#: Jane Austen LM gate: the softmax baseline well past the unigram plateau (perplexity ~660) and flat.
AUSTEN_GATE = QualityGate(PRE_SOFTMAX, max_perplexity=120.0, max_last_change=0.01)
#: claim 4's comparison stands on the pilot that found post-norm failing at depth 96 (postnorm-pilot-2).
POSTNORM_FAILS = FailureFound(96)
#: ... and on a pre-norm reference that learned (chance is 10 %). Claim 4 is about training at all:
#: its runs are the pilot's 156 steps, so there is no plateau to ask for.
POSTNORM_REFERENCE = QualityGate(PRE_SOFTMAX, min_accuracy=25.0)

PROTOCOLS: tuple[Protocol, ...] = (
    Protocol("2a", "trained NeuTRENO beats softmax at equal config (image classification)",
             "DeiT-tiny ImageNet top-1 72.17 -> 73.01 (+0.84 pp; Nguyen et al. 2023, Table 1)",
             FMNIST, PRE_NEUTRENO, PRE_SOFTMAX, measures.score, "test accuracy, pp", "higher", (FMNIST_GATE,)),
    Protocol("2b", "trained NeuTRENO beats softmax at equal config (language modelling)",
             "WikiText-103 test PPL 34.29 -> 33.70 (-0.59; Nguyen et al. 2023, Table 2)",
             AUSTEN, PRE_NEUTRENO, PRE_SOFTMAX, measures.score, "test perplexity", "lower", (AUSTEN_GATE,)),
    Protocol("3", "NeuTRENO costs about what softmax costs (here: < 1.10x the time per training example)",
             "FLOPs, memory and time ratios vs softmax about 1 (Nguyen et al. 2023, App. G.4)",
             FMNIST, PRE_NEUTRENO, PRE_SOFTMAX, measures.log_time_vs_limit,
             "log seconds per training example, baseline + log 1.10", "lower"),
    Protocol("4a", "post-norm Transformers fail as depth grows (token similarity escalates)",
             "Yu & Zhang 2023: post-norm fails to train deep; 'preliminary', small-scale experiments",
             POSTNORM, POST_SOFTMAX, PRE_SOFTMAX, measures.score,
             "test accuracy after 156 steps at depth 96, pp (post-norm - pre-norm softmax)", "lower",
             (POSTNORM_FAILS, POSTNORM_REFERENCE)),
    Protocol("4b", "de-escalation lets post-norm Transformers go deeper",
             "Yu & Zhang 2023: de-escalated post-norm trains where plain post-norm fails",
             POSTNORM, POST_DEESCALATE, POST_SOFTMAX, measures.score,
             "test accuracy after 156 steps at depth 96, pp (post-norm de-escalation, tau 1 - post-norm softmax)",
             "higher", (POSTNORM_FAILS,)),
    Protocol("5a", "token similarity need not grow with depth: it falls before the last layer",
             "Dovonon et al. 2025, Fig. 1: similarity falls in the last layers of pretrained ViTs",
             FMNIST, PRE_SOFTMAX, PRE_SOFTMAX, measures.last_vs_peak,
             "stream cos_sim after the last block vs its peak after an earlier block", "lower", (FMNIST_GATE,)),
    Protocol("5b", "the eigenvalues of W_V W_O with those of A decide whether a layer smooths",
             "Dovonon et al. 2025, Sec. 4 (a statement about the simplified layer X + A X H)",
             FMNIST, PRE_SOFTMAX, PRE_SOFTMAX, measures.verdict_agreement,
             "share of attention sublayers (every method's, 8 blocks each) whose dynamics verdict matches the "
             "sign of their measured t_sim change, vs the share expected by chance", "higher", (FMNIST_GATE,),
             every_arm=True),
    Protocol("5c", "the sign of the LayerNorm weights can change smoothing into sharpening",
             "Dovonon et al. 2025, Sec. 5 (pre-LN: the effective map is diag(gamma) W_V W_O)",
             FMNIST, PRE_SOFTMAX, PRE_SOFTMAX, measures.ln_flip_attention,
             "mean t_sim change across the attention sublayers with the pre-attention LayerNorm weights "
             "negated vs as trained", "lower", (FMNIST_GATE,), note=measures.ln_flip_quality),
    Protocol("6", "smoothing can improve image classification (vs sharpening, at matched initial scale)",
             "Dovonon et al., arXiv v2 (the TMLR version states no direction)",
             FMNIST, ("pre", "smooth"), ("pre", "sharpen"), measures.score, "test accuracy, pp", "higher",
             (FMNIST_GATE,)),
    Protocol("7", "FeatScale improves a ViT (modestly)",
             "DeiT-tiny 72.17 -> 72.35 (+0.18 pp); DeiT-small 79.97 -> 79.96 in Nguyen et al.'s reproduction "
             "(Table 7)", FEATSCALE, ("pre", "featscale"), PRE_SOFTMAX, measures.score,
             "test accuracy, pp", "higher", (FMNIST_GATE,)),
)

