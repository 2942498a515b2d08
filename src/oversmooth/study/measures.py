"""The primary measure of each trained claim: one ``(method, baseline)`` pair of numbers per seed.

A measure reads the cells of one seed of one setting (``cells``: ``(norm, label) -> CellResult``,
every method trained with the same settings and seed) and returns the two numbers the paired
t-test compares, or None when a cell it needs has not produced them yet. ``arms`` are the
protocol's ``(method, baseline)`` keys into ``cells``.
"""

from __future__ import annotations

import math
import statistics
from typing import Callable, Mapping

from oversmooth.study.results import CellResult

Key = tuple[str, str]  # (norm, label)
Measure = Callable[[Mapping[Key, CellResult], tuple[Key, Key]], "tuple[float, float] | None"]
COST_LIMIT = 1.10  # "about what softmax costs": at most 10 % more time per example


def paired_score(cell: CellResult) -> float | None:
    """Test accuracy in percent or test perplexity. A diverged cell keeps the validation score of
    its last good epoch, or chance (10 classes: 10 %; an LM: perplexity = vocabulary size) when it
    diverged in its first epoch: a model that cannot be trained counts as what it reached."""
    if cell.status == "diverged" and not cell.epochs:
        config = cell.results["description"]["model_config"]
        return 100 / config["num_classes"] if cell.model == "vit" else float(config["vocab_size"])
    if cell.status not in ("completed", "diverged"):
        return None
    return 100 * cell.score if cell.score_name == "accuracy" else cell.score


def score(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """Test score (accuracy in %, or perplexity) of the method and of the baseline."""
    method, baseline = (paired_score(cells[arm]) for arm in arms)
    return None if method is None or baseline is None else (method, baseline)


def log_time_vs_limit(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """``log`` of training seconds per example of the method, and of the baseline's times
    ``COST_LIMIT``: the method is below that (direction lower) when it costs < 1.10x the baseline."""
    speeds = [cells[arm].examples_per_second for arm in arms]
    if None in speeds:
        return None
    return -math.log(speeds[0]), -math.log(speeds[1]) + math.log(COST_LIMIT)


def last_vs_peak(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """Stream ``cos_sim`` after the last block, and its largest value after any earlier block
    (``analysis.json``; lower: similarity falls before the end)."""
    analysis = cells[arms[0]].analysis
    if analysis is None:
        return None
    cos = analysis["stream"]["cos_sim"][1:]
    return cos[-1], max(cos[:-1])


def _agreement(analyses: list[dict]) -> tuple[float, float] | None:
    """Share of attention sublayers whose verdict (smoothing / sharpening; mixed left out) matches
    the sign of the measured ``t_sim`` change across them, and the share expected by chance from
    the two marginals: ``p q + (1 - p)(1 - q)``."""
    pairs = [(block["verdict"]["verdict"] == "smoothing", block["attention"]["t_sim_change"] > 0)
             for analysis in analyses for block in analysis["blocks"] if block["verdict"]["verdict"] != "mixed"]
    if not pairs:
        return None
    p = statistics.fmean(v for v, _ in pairs)
    q = statistics.fmean(m for _, m in pairs)
    return statistics.fmean(v == m for v, m in pairs), p * q + (1 - p) * (1 - q)


def verdict_agreement(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """``_agreement`` over every block of every cell of this seed (the protocol, ``every_arm``,
    hands over all of its preset's arms once they have finished; all must be measured)."""
    analyses = [cell.analysis for cell in cells.values()]
    return None if None in analyses else _agreement(analyses)


def ln_flip_attention(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """Mean over blocks of the ``t_sim`` change across the attention sublayer with every
    pre-attention LayerNorm weight negated, and without (the same trained model)."""
    analysis = cells[arms[0]].analysis
    if analysis is None or "ln_flip" not in analysis:
        return None
    mean = lambda blocks: statistics.fmean(b["attention"]["t_sim_change"] for b in blocks)  # noqa: E731
    return mean(analysis["ln_flip"]["blocks"]), mean(analysis["blocks"])


def ln_flip_quality(groups: list[Mapping[Key, CellResult]], arm: Key) -> str:
    """What the sign flip did to the model's job: validation accuracy flipped vs as trained."""
    found = [g[arm].analysis["ln_flip"] for g in groups if arm in g and g[arm].analysis and "ln_flip" in g[arm].analysis]
    if not found:
        return ""
    flipped = statistics.fmean(100 * f["val"]["accuracy"] for f in found)
    trained = statistics.fmean(100 * f["val_unflipped"]["accuracy"] for f in found)
    return f"validation accuracy with the flip {flipped:.1f} % vs {trained:.1f} % as trained"
