"""The primary measure of each trained claim: one ``(method, baseline)`` pair of numbers per seed.

A measure reads the cells of one seed of one setting (``cells``: ``(norm, label, depth) ->
CellResult``, every arm trained alike but for its method, norm or depth) and returns the two
numbers whose difference the claim's test judges, or None while a cell it needs has not produced
them. ``arms`` are the protocol's ``(method, baseline)`` keys into ``cells``.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping

from oversmooth.study.results import CellResult, chance_score, paired_score

Key = tuple[str, str, int]  # (norm, label, depth)
Measure = Callable[[Mapping[Key, CellResult], tuple[Key, Key]], "tuple[float, float] | None"]


def score(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """Test score (accuracy in %, or NLL per token) of the method and of the baseline."""
    method, baseline = (paired_score(cells[arm]) for arm in arms)
    return None if method is None or baseline is None else (method, baseline)


def val_score(cell: CellResult, epoch: int = -1) -> float:
    """Validation accuracy in % (ViT) or NLL per token in nats (LM) at ``epoch`` (index into the records)."""
    val = cell.epochs[epoch]["val"]
    return 100 * val["accuracy"] if cell.model == "vit" else val["loss"]


def final_val(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """Validation score after the last epoch (``val_score``) of the method and of the baseline: the
    fourth step's fresh tests decide on validation, the test split reported beside it. A diverged
    cell keeps its last evaluation's score, or chance (``chance_score``) when it diverged before its
    first, as ``paired_score`` counts it on test."""
    scores = [last_val(cells[arm]) for arm in arms]
    return None if None in scores else (scores[0], scores[1])


def last_val(cell: CellResult) -> float | None:
    """``cell``'s validation score after its last epoch (``final_val``'s rule for a diverged cell);
    None while it has not finished."""
    if cell.status == "diverged" and not cell.epochs:
        return chance_score(cell)
    return None if cell.results is None or not cell.epochs else val_score(cell)


def depth_deficit(pair: Measure) -> Measure:
    """Claim 4a (docs/claims.md: an interaction with depth) on the numbers of ``pair`` (``score``:
    test accuracy; ``final_val``: validation accuracy): post-norm's deficit to pre-norm, ``pre -
    post`` in pp, at the deeper depth (``arms[0]``, a post-norm key) and at the shallower
    (``arms[1]``); their difference is the claim's per-seed value."""

    def deficit(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
        deficits = []
        for norm, label, depth in arms:
            found = pair(cells, (("pre", label, depth), (norm, label, depth)))
            if found is None:
                return None
            deficits.append(found[0] - found[1])
        return deficits[0], deficits[1]

    return deficit


#: claim 4a as the second protocol registered it, on test accuracy
deficit_by_depth = depth_deficit(score)
#: claim 4a where post-norm fails (docs/registrations/fourth-step.md, section 1), on validation accuracy
val_deficit_by_depth = depth_deficit(final_val)


def verdict_vs_majority(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """Claim 5b over every attention sublayer of every cell of this seed (models whose spectra
    differ): the share whose dynamics verdict (smoothing / sharpening; ``mixed`` left out)
    matches the sign of the measured ``t_sim`` change across it, and the share that always
    guessing the majority sign gets on the same sublayers."""
    analyses = [cell.analysis for cell in cells.values()]
    if None in analyses:
        return None
    pairs = [
        (block["verdict"]["verdict"] == "smoothing", block["attention"]["t_sim_change"] > 0)
        for analysis in analyses
        for block in analysis["blocks"]
        if block["verdict"]["verdict"] != "mixed"
    ]
    if not pairs:
        return None
    rising = statistics.fmean(measured for _, measured in pairs)
    return statistics.fmean(v == m for v, m in pairs), max(rising, 1 - rising)


def value_flip(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """Claim 5c as registered (docs/registrations/second-protocol.md: does a block's measured change
    flip with its verdict?): over the blocks whose dynamics verdict the value-path flip of their
    pre-attention gamma turns (smoothing <-> sharpening), the share whose measured ``t_sim`` change
    across the attention sublayer moves the way the new verdict says (up towards smoothing, down
    towards sharpening), against 1/2."""
    found = _flip_shares(cells, arms)
    return None if found is None else (found[0], 0.5)


def value_flip_pull(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """Claim 5c against the reference chosen after its data (docs/studies.md, Deviations,
    2026-11-26 07:27): ``value_flip``'s share, against the share a verdict unrelated to the change
    would get: with ``p``, the share of this seed's blocks whose verdict did not turn that the flip
    moves up, ``p`` for a turn to smoothing and ``1 - p`` for a turn to sharpening (the flip's own
    pull). None for a seed without such a block."""
    found = _flip_shares(cells, arms)
    return None if found is None or found[1] is None else (found[0], found[1])


def _flip_shares(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float | None] | None:
    """``(share moved as the new verdict says, the flip's own pull)`` of 5c; the pull is None
    without a block whose verdict did not turn; None without a turned block."""
    analysis = cells[arms[0]].analysis
    if analysis is None or "value_flip" not in analysis:
        return None
    blocks = analysis["value_flip"]
    turned = [b for b in blocks if {b["verdict"], b["verdict_trained"]} == {"smoothing", "sharpening"}]
    kept = [b for b in blocks if b["verdict"] == b["verdict_trained"]]
    if not turned:
        return None
    share = statistics.fmean(_moved_up(b) == (b["verdict"] == "smoothing") for b in turned)
    if not kept:
        return share, None
    rising = statistics.fmean(_moved_up(b) for b in kept)
    return share, statistics.fmean(rising if b["verdict"] == "smoothing" else 1 - rising for b in turned)


def sign_flips_vs_sham(cells: Mapping[Key, CellResult], arms: tuple[Key, Key]) -> tuple[float, float] | None:
    """Claim 5c's re-test (the third protocol: the measure docs/claims.md states): over this seed's
    blocks, the share whose measured ``t_sim`` change across the attention sublayer changes sign
    under the value-path flip of gamma, and the share under a sham shift of gamma of the same size;
    None before the cell's analysis measured the sham."""
    analysis = cells[arms[0]].analysis
    blocks = (analysis or {}).get("value_flip") or []
    if not blocks or "t_sim_change_sham" not in blocks[0]:
        return None

    def flipped(key: str) -> float:
        return statistics.fmean((b[key] > 0) != (b["t_sim_change_trained"] > 0) for b in blocks)

    return flipped("t_sim_change"), flipped("t_sim_change_sham")


def _moved_up(block: Mapping) -> bool:
    """Did the value-path flip raise the block's measured ``t_sim`` change?"""
    return block["t_sim_change"] > block["t_sim_change_trained"]


def value_flip_note(groups: list[Mapping[Key, CellResult]], arm: Key) -> str:
    """How many blocks' verdict and measured sign the value-path flip turned, over the seeds."""
    flips = [
        b
        for g in groups
        if arm in g and g[arm].analysis and "value_flip" in g[arm].analysis
        for b in g[arm].analysis["value_flip"]
    ]
    if not flips:
        return ""
    turns = Counter(f"{b['verdict_trained']} to {b['verdict']}" for b in flips if b["verdict"] != b["verdict_trained"])
    signs = sum((b["t_sim_change"] > 0) != (b["t_sim_change_trained"] > 0) for b in flips)
    kinds = f" ({', '.join(f'{n} {turn}' for turn, n in turns.most_common())})" if turns else ""
    return (
        f"over {len(flips)} blocks, the flip turned the verdict of {turns.total()}{kinds} and the sign of the "
        f"measured t_sim change of {signs}"
    )


def arm_beside(arm: Key) -> Callable[[list[Mapping[Key, CellResult]], Key], str]:
    """A note on another ``arm`` reported beside a claim, not tested (claim 6: spectral ``free``):
    its mean test score over the seeds whose pairs finished."""

    def note(groups: list[Mapping[Key, CellResult]], method: Key) -> str:
        scores = [score for g in groups if arm in g and (score := paired_score(g[arm])) is not None]
        if not scores:
            return ""
        seeds = f"{len(scores)} seed" + ("s" if len(scores) > 1 else "")
        return f"{arm[1]} beside (not tested): mean test score {statistics.fmean(scores):.4g} over {seeds}"

    return note
