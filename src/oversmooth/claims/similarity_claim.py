"""The rule of NeuTRENO's claim that a mitigation lowers token similarity with no training
(Nguyen et al. 2023, App. G.3 on an untrained model, G.9 on a pretrained one): claims 1a and 1b
of the claims report (``claims.registry``, ``decide_no_training``).
"""

from __future__ import annotations

import math

from oversmooth.analyze import Quality


def similarity_verdict(base: list[float], patched: list[float], quality: Quality | None) -> tuple[str, str]:
    """The one rule for "a mitigation lowers token similarity with no training" (NeuTRENO App. G.3/G.9).

    ``base`` / ``patched``: per-layer similarity, layer 0 = embeddings. Held only when the
    patched model is lower at every layer after the first block (where NeuTRENO starts acting)
    *and* stays within the quality budget (``quality=None``: an untrained model, which has no job
    to keep, judged on similarity alone). Returns ``(verdict, sentence)``, the sentence saying
    what happened, e.g. ``'similarity lower, model broken (perplexity x70,000): not held'``.

    >>> from oversmooth.analyze import QualityRow
    >>> ok = Quality((QualityRow("neutreno", "lam=0.6", "output_cosine", 0.99, 1.0, None, True),))
    >>> similarity_verdict([0.1, 0.2, 0.3], [0.1, 0.2, 0.25], ok)
    ('held', 'held: similarity lower at every layer after block 1, output cosine 0.99 within budget')
    """
    later = range(2, len(base))
    if not later:
        return "not tested", "not tested: the model has one block, and NeuTRENO acts from the second on"
    if any(math.isnan(values[layer]) for values in (base, patched) for layer in later):
        return "not tested", "not tested: similarity is undefined (no counted tokens) at some layer"
    lower = sum(patched[layer] < base[layer] for layer in later)
    if lower < len(later):
        return "did not hold", f"did not hold: similarity lower at {lower} of {len(later)} layers after block 1"
    if quality is None:
        return "held", "held: similarity lower at every layer after block 1 (untrained model: no quality to keep)"
    if not quality.within_budget:
        return "model broken", f"similarity lower, model broken ({quality.headline()}): not held"
    return "held", f"held: similarity lower at every layer after block 1, {quality.headline()} within budget"
