"""Reference models run in the same study (gate (c) of docs/registrations/second-protocol.md): the
floor a baseline must beat.

A language model: an interpolated bigram model on the study's own tokens: ``p(w | v) = a c(v, w) / c(v) + (1 - a)
p(w)``, with add-one unigram ``p(w)``, counted on the training blocks and scored on the
validation blocks (each block's next-token targets given the token before). ``a`` is the best of
a small grid *on validation*, which makes the floor stricter, never looser. Pure numpy on token
ids ``int [N, n + 1]``, as ``train.tasks.LanguageModelling`` holds them.

An image classifier: a multinomial logistic regression on the cell's own training images (pixels
as features, standardised with the training split's per-pixel mean and SD), scored by its
validation accuracy: the LogisticRegression baseline of Xiao, Rasul & Vollgraf 2017
(Fashion-MNIST, Table 3). It minimises the mean cross-entropy plus ``L2 / 2 * ||W||^2`` (the
bias is not penalised) with torch's L-BFGS in float64, for a fixed number of iterations. Its
loss is strictly convex, so the fit does not depend on a seed.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

WEIGHTS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
#: the logistic regression's penalty on its weights, per example, and its L-BFGS iterations
L2 = 0.01
ITERATIONS = 500


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


def _standardise(train: torch.Tensor, val: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Flatten ``[N, ...]`` to ``float64 [N, D]`` and standardise each feature by the training
    split's mean and SD (a constant feature is only centred)."""
    x, v = train.reshape(len(train), -1).double(), val.reshape(len(val), -1).double()
    mean, sd = x.mean(0), x.std(0)
    sd = torch.where(sd > 0, sd, torch.ones_like(sd))
    return (x - mean) / sd, (v - mean) / sd


def fit_logistic(
    x: torch.Tensor, y: torch.Tensor, classes: int, l2: float = L2, iterations: int = ITERATIONS
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(W [D, classes], b [classes])`` minimising ``mean CE(x W + b, y) + l2 / 2 ||W||^2`` over
    ``x float64 [N, D]``, ``y int [N]``, by L-BFGS (strong Wolfe line search) from zero."""
    weight = torch.zeros(x.shape[1], classes, dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(classes, dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.LBFGS(
        [weight, bias],
        lr=1,
        max_iter=iterations,
        tolerance_grad=1e-10,
        tolerance_change=1e-14,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def objective() -> torch.Tensor:
        optimiser.zero_grad()
        loss = F.cross_entropy(x @ weight + bias, y) + l2 / 2 * weight.square().sum()
        loss.backward()
        return loss

    optimiser.step(objective)
    return weight.detach(), bias.detach()


def logistic_accuracy(
    train: torch.Tensor,
    train_labels: torch.Tensor,
    val: torch.Tensor,
    val_labels: torch.Tensor,
    classes: int,
    l2: float = L2,
    iterations: int = ITERATIONS,
) -> float:
    """Validation accuracy (a share in [0, 1]) of the logistic regression fit on ``train [N, ...]``
    (images, any numeric dtype) with ``train_labels int [N]``, on ``val [M, ...]``.

    On ``depth-w32``'s data (the first 10 000 Fashion-MNIST training images, 784 pixels, 10
    classes; the 5 000 validation images) it scores 84.40 % in about 90 CPU-seconds (one thread;
    200 iterations: 84.34 % in 37), measured 2026-11-25 with ``torch.set_num_threads(1)``,
    ``make_task("fmnist", "vit", DataOptions(limit_train=10000))`` and this function on its
    ``splits`` and ``labels``."""
    x, v = _standardise(train, val)
    weight, bias = fit_logistic(x, train_labels.long(), classes, l2, iterations)
    return float(((v @ weight + bias).argmax(1) == val_labels.long()).double().mean())
