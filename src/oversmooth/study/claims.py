"""The claims of DESIGN §8, each checked on our cells or probes, with the rule that decided.

Each ``check_*`` returns ``Claim`` rows; a claim whose cells have not run says so (``not run``)
and names the study that tests it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable

from oversmooth.hf.quality import similarity_verdict
from oversmooth.study.compare import (HELD, INCONCLUSIVE, NOT_HELD, RULE, Comparison, compare, gain,
                                      gain_unit, pair_up, verdict)
from oversmooth.study.probes import Probes
from oversmooth.study.results import CellResult

NOT_RUN = "not run"
COST_LIMIT = 1.10  # "about the same time": within 10 %


@dataclass(frozen=True)
class Claim:
    number: str
    statement: str
    paper: str
    ours: str
    verdict: str
    rule: str


def _not_run(number: str, statement: str, paper: str, study: str) -> Claim:
    return Claim(number, statement, paper, f"no finished cells; run `oversmooth study {study}`", NOT_RUN, "")


def _depths(cells: list[CellResult]) -> dict[str, list[int]]:
    """Each study's depths, ascending."""
    found: dict[str, set[int]] = {}
    for cell in cells:
        found.setdefault(cell.study, set()).add(cell.depth)
    return {study: sorted(depths) for study, depths in found.items()}


def _is_deeper(depth: int, depths: list[int]) -> bool:
    """A deeper depth of a study: at least half its deepest, and not its shallowest."""
    return depth * 2 >= depths[-1] and depth > depths[0]


def _deep(cells: list[CellResult]) -> Callable[[CellResult], bool]:
    depths = _depths(cells)
    return lambda cell: _is_deeper(cell.depth, depths[cell.study])


def _final(cell: CellResult, metric: str) -> float:
    return cell.final_layers[-1][metric]


def _from_comparison(number: str, statement: str, paper: str, comparison: Comparison, study: str,
                     extra: str = "") -> Claim:
    if not comparison.n:
        return _not_run(number, statement, paper, study)
    return Claim(number, statement, paper, comparison.describe() + extra, verdict(comparison), RULE)


def check_probes(probes: Probes) -> list[Claim]:
    """Claims 1 (untrained NeuTRENO) and 5 (similarity need not rise; spectra and LN sign decide)."""
    claims = []
    for number, pair, paper in (
            ("1a", probes.random_init, "random-init DeiT-tiny, Fig. 6: NeuTRENO well below softmax from layer 2 on"),
            ("1b", probes.pretrained, "pretrained BERT-base, Fig. 7: lower in every layer, no fine-tuning")):
        base, neut = pair.mean("baseline"), pair.mean("neutreno")
        verdict, sentence = similarity_verdict(base, neut, pair.quality)
        claims.append(Claim(
            number, f"NeuTRENO (lam {pair.lam}) lowers per-layer token cos_sim without training ({pair.source})",
            paper, f"last layer {base[-1]:.3f} -> {neut[-1]:.3f}; {sentence}", verdict,
            "held if lower at every layer after block 1 (where NeuTRENO starts acting) and, for a pretrained "
            "model, its output stays within the quality budget (oversmooth.hf.quality.similarity_verdict)"))
    cos = probes.pretrained.mean("baseline")
    drops = [layer for layer in range(1, len(cos)) if cos[layer] < cos[layer - 1]]
    kinds = {v: probes.pretrained_verdicts.count(v) for v in sorted(set(probes.pretrained_verdicts))}
    claims.append(Claim(
        "5a", "token similarity does not always rise with depth, even in a pretrained model", "seed 000, Fig. 1",
        f"MiniLM cos_sim falls at layer(s) {drops or 'none'} ({', '.join(f'{cos[l - 1]:.3f} -> {cos[l]:.3f}' for l in drops)}); "
        f"W_V W_O sign verdicts per block: {kinds}",
        HELD if drops else NOT_HELD, "held if cos_sim falls between some pair of successive layers"))
    t = probes.theory
    smooth, sharp = t["smoothing: H eig in (0,1]"], t["sharpening: H eig in [-1,0)"]
    plus, minus = t["lnflip: pre-LN, gamma=+1"], t["lnflip: pre-LN, gamma=-1"]
    claims.append(Claim(
        "5b", "eigenvalues of W_V W_O decide: in (0, 1] tokens smooth, in [-1, 0) they sharpen", "seed 000, Thm. / Fig. 2",
        f"t_sim after 64 layers of X <- X + A X H: {smooth:.3f} (smoothing H) vs {sharp:.3f} (sharpening H)",
        HELD if smooth > 0.9 and sharp < 0.1 else NOT_HELD, "held if t_sim > 0.9 for smoothing H and < 0.1 for sharpening H"))
    claims.append(Claim(
        "5c", "the sign of the LayerNorm weights changes smoothing into sharpening", "seed 000, Sec. 5",
        f"pre-LN with the smoothing H: t_sim {plus:.3f} (gamma +1) vs {minus:.3f} (gamma -1)",
        HELD if plus > 0.9 and minus < 0.1 else NOT_HELD, "held if t_sim > 0.9 with gamma +1 and < 0.1 with gamma -1"))
    return claims


def _lambda_claim(cells: list[CellResult]) -> Claim:
    number, statement = "2c", "NeuTRENO's lambda has a sweet spot: too small or too large hurts"
    paper = "ADE20K mIoU 35.72 (softmax); 34.94 at the smallest lambda, 37.54 best, 26.25 at the largest (Table 13)"
    swept = [c for c in cells if c.method == "neutreno" and c.label.startswith("lam=")]
    if not swept:
        return _not_run(number, statement, paper, "lambda-sweep")
    study = swept[0].study
    pool = [c for c in cells if c.study == study and c.score is not None]
    lam = {c.label: (0.0 if c.method == "softmax" else float(c.knobs["lam"])) for c in pool if c.label in
           {s.label for s in swept} | {"softmax"}}
    order = sorted(lam, key=lam.get)
    means = {label: statistics.fmean(c.score for c in pool if c.label == label) for label in order}
    best = (max if pool[0].higher_is_better else min)(order, key=means.get)
    scale = 100 if pool[0].score_name == "accuracy" else 1
    ours = f"{pool[0].score_name}: " + ", ".join(f"lam {lam[label]:g} {means[label] * scale:.4g}" for label in order)
    ends = [compare(pool, best, end) for end in (order[0], order[-1]) if end != best]
    if best in (order[0], order[-1]):
        result = NOT_HELD
    else:
        result = HELD if all(verdict(c) == HELD for c in ends) else INCONCLUSIVE
    return Claim(number, statement, paper, f"{ours} (mean over seeds; lam 0 = softmax); best lam {lam[best]:g}",
                 result, "held if the best lambda is inside the sweep and beats both ends by > 2 SE (paired over "
                         "seeds); did not hold if the best is an end of the sweep")


def _cost_claim(cells: list[CellResult]) -> Claim:
    number, statement = "3", "NeuTRENO costs about what softmax costs"
    paper = "FLOPs, memory and time ratios vs DeiT about 1 (G.4)"
    pairs = [(a, b) for a, b in pair_up(cells, lambda c: c.label == "neutreno", lambda c: c.label == "softmax")
             if a.examples_per_second and b.examples_per_second]
    if not pairs:
        return _not_run(number, statement, paper, "depth-vit")
    ratios = [b.examples_per_second / a.examples_per_second for a, b in pairs]
    median = statistics.median(ratios)
    return Claim(number, statement, paper,
                 f"training time per example, NeuTRENO / softmax: median {median:.3f} over {len(ratios)} paired cells "
                 f"(range {min(ratios):.2f}-{max(ratios):.2f}; cells shared the CPU, see docs/methods.md for a "
                 "side-by-side benchmark)",
                 HELD if median <= COST_LIMIT else NOT_HELD, f"held if the median time ratio <= {COST_LIMIT}")


def _post_norm_claims(cells: list[CellResult]) -> list[Claim]:
    statement_a = "post-norm Transformers degrade as depth grows: their gap to pre-norm widens with depth"
    statement_b = "de-escalation lets deep post-norm models train, approaching pre-norm"
    paper = "seed 002: post-norm fails to train deep; de-escalated post-norm trains"
    vit = [c for c in cells if c.model == "vit" and c.study != "lambda-sweep"]
    if not {"pre", "post"} <= {c.norm for c in vit if c.label == "softmax"}:
        return [_not_run("4a", statement_a, paper, "depth-vit"), _not_run("4b", statement_b, paper, "depth-vit")]
    deep, depths = _deep(vit), _depths(vit)
    across_norms = lambda c: (c.study, c.task, c.depth, c.seed)  # noqa: E731
    gaps = {across_norms(a): gain(a, b) for a, b in pair_up(
        vit, lambda c: c.label == "softmax" and c.norm == "pre", lambda c: c.label == "softmax" and c.norm == "post",
        match=across_norms)}
    widening = Comparison("at the deeper depths", "at the shallowest", tuple(
        gap - gaps[(study, task, depths[study][0], seed)] for (study, task, depth, seed), gap in sorted(gaps.items())
        if _is_deeper(depth, depths[study]) and (study, task, depths[study][0], seed) in gaps), gain_unit(vit),
        measure="pre-minus-post gap")
    by_depth = {}
    for (_, _, depth, _), gap in gaps.items():
        by_depth.setdefault(depth, []).append(gap)
    t_sims = sorted((c.depth, _final(c, "t_sim")) for c in vit if c.label == "softmax" and c.norm == "post"
                    and c.final_layers)
    escalation = (f"; post-norm softmax last-layer t_sim {t_sims[0][1]:.3f} at depth {t_sims[0][0]} vs "
                  f"{t_sims[-1][1]:.3f} at depth {t_sims[-1][0]}") if t_sims else ""
    a = _from_comparison(
        "4a", statement_a, paper, widening, "depth-vit",
        " (pre- minus post-norm softmax, mean over seeds by depth: "
        + ", ".join(f"d{d} {statistics.fmean(v):+.3g}" for d, v in sorted(by_depth.items())) + ")" + escalation)
    rescue = compare(vit, "deescalate", "softmax", lambda c: c.norm == "post" and deep(c))
    pre_pairs = pair_up(vit, lambda c: c.label == "softmax" and c.norm == "pre" and deep(c),
                        lambda c: c.label == "deescalate" and c.norm == "post" and deep(c), match=across_norms)
    gap = Comparison("pre-norm softmax", "post-norm de-escalation", tuple(gain(x, y) for x, y in pre_pairs),
                     gain_unit(vit))
    b = _from_comparison("4b", statement_b, paper, rescue, "depth-vit",
                         f" (post-norm, deeper depths); remaining gap to pre-norm softmax: {gap.describe()}")
    return [a, b]


def check_cells(cells: list[CellResult]) -> list[Claim]:
    """Claims 2, 3, 4, 6, 7 (and the trained half of 5) from the finished or partial cells."""
    vit = [c for c in cells if c.model == "vit" and c.study != "lambda-sweep"]
    lm = [c for c in cells if c.model == "lm"]
    deep = _deep(vit)
    return [
        _from_comparison("2a", "trained NeuTRENO beats softmax (ViT, pre-norm)",
                         "DeiT-tiny ImageNet top-1 72.17 -> 73.01", compare(vit, "neutreno", "softmax",
                                                                            lambda c: c.norm == "pre"), "depth-vit"),
        _from_comparison("2b", "trained NeuTRENO beats softmax (causal LM, lower perplexity)",
                         "WikiText-103 test PPL 34.29 -> 33.70", compare(lm, "neutreno", "softmax"), "lm-austen"),
        _lambda_claim(cells),
        _cost_claim(vit + lm),
        *_post_norm_claims(cells),
        _from_comparison("5d", "trained with sharpening spectra, tokens end less alike than with smoothing ones",
                         "seed 000: the sign of the W_V W_O spectrum sets smoothing vs sharpening",
                         compare(vit, "smooth", "sharpen", lambda c: bool(c.final_layers),
                                 value=lambda a, b: _final(a, "t_sim") - _final(b, "t_sim"),
                                 measure="last-layer t_sim"), "depth-vit"),
        _from_comparison("6", "smoothing-parameterised ViTs beat sharpening ones",
                         "seed 000 v2: smoothing > sharpening on image classification",
                         compare(vit, "smooth", "sharpen"), "depth-vit"),
        _from_comparison("7", "FeatScale improves deep ViTs (modestly)", "DeiT-tiny 72.17 -> 72.35",
                         compare(vit, "featscale", "softmax", deep), "depth-vit", " at the deeper depths"),
    ]
