"""A reference model run in the same study (DESIGN 9.3 (c)): the floor a language model must beat.

An interpolated bigram model on the study's own tokens: ``p(w | v) = a c(v, w) / c(v) + (1 - a)
p(w)``, with add-one unigram ``p(w)``, counted on the training blocks and scored on the
validation blocks (each block's next-token targets given the token before). ``a`` is the best of
a small grid *on validation*, which makes the floor stricter, never looser. Pure numpy on token
ids ``int [N, n + 1]``, as ``train.tasks.LanguageModelling`` holds them.
"""

from __future__ import annotations

import numpy as np

WEIGHTS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def _pairs(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return blocks[:, :-1].reshape(-1), blocks[:, 1:].reshape(-1)


def bigram_nll(train: np.ndarray, val: np.ndarray, vocab_size: int) -> tuple[float, float]:
    """``(nll, a)``: the mean validation NLL per token (nats) of the interpolated bigram model at
    its best weight ``a``.

    Two tokens that always alternate: the bigram part is certain, so at a = 0.95 the NLL is
    -log(0.95 + 0.05 * 1/2):

    >>> blocks = np.array([[0, 1, 0, 1, 0]] * 4)
    >>> nll, a = bigram_nll(blocks, blocks, 2)
    >>> a, round(nll, 4), round(float(-np.log(0.95 + 0.05 * 0.5)), 4)
    (0.95, 0.0253, 0.0253)
    """
    before, after = _pairs(np.asarray(train, dtype=np.int64))
    counts = np.zeros((vocab_size, vocab_size))
    np.add.at(counts, (before, after), 1.0)
    unigram = (np.bincount(after, minlength=vocab_size) + 1.0) / (after.size + vocab_size)
    context = counts.sum(1, keepdims=True)
    conditional = np.divide(counts, context, out=np.zeros_like(counts), where=context > 0)
    v_before, v_after = _pairs(np.asarray(val, dtype=np.int64))
    seen = conditional[v_before, v_after]
    scores = [(float(-np.log(a * seen + (1 - a) * unigram[v_after]).mean()), a) for a in WEIGHTS]
    return min(scores)
