"""Linear CKA between the layers of one model, or of two models on the same inputs (Kornblith et
al. 2019, "Similarity of Neural Network Representations Revisited"):
``CKA(K, L) = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L))`` with ``K = X X^T``, ``L = Y Y^T`` over
examples.

HSIC is the unbiased estimator of Song et al. (2012), which stays near 0 for independent
representations where the biased ``tr(KHLH) / (n - 1)^2`` does not. It is taken per minibatch and
the three terms are averaged over minibatches before the ratio (Nguyen, Raghu & Kornblith 2021),
so memory holds one minibatch's Gram matrices, never all examples. Examples are the sequences'
mean counted tokens (``pooling="mean"``, the default) or every counted token (``"tokens"``);
padding never enters. The unbiased estimator needs at least 4 examples per minibatch; with so few
its self terms can fall below 0 (then CKA is NaN).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.metrics.tokens import masked_float64, valid_tokens
from oversmooth.utils.tensors import check_tensor

POOLINGS = ("mean", "tokens")


def examples(x: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = (), pooling: str = "mean") -> Tensor:
    """``x: [batch, tokens, features]`` -> float64 ``[examples, features]``: each sequence's mean
    counted token (``mean``), or every counted token (``tokens``)."""
    if pooling not in POOLINGS:
        raise UsageError(f"pooling {pooling!r} unknown; choose from {', '.join(POOLINGS)}")
    valid = valid_tokens(check_tensor(x, "states"), mask, exclude)
    if pooling == "tokens":
        return x[valid].to(torch.float64)
    counts = valid.sum(dim=1, keepdim=True)
    if not bool((counts > 0).all()):
        raise UsageError("a sequence has no counted token to pool; drop it or exclude fewer positions")
    return masked_float64(x, valid).sum(dim=1) / counts


def hsic_unbiased(k: Tensor, m: Tensor) -> Tensor:
    """Song et al. (2012)'s unbiased HSIC of two ``[n, n]`` Gram matrices ``k`` (their K) and ``m``
    (their L), n >= 4, with K~ and L~ the matrices with their diagonals set to 0:
    ``[tr(K~ L~) + 1'K~1 1'L~1 / ((n-1)(n-2)) - 2/(n-2) 1'K~L~1] / (n (n-3))``."""
    n = k.shape[-1]
    if n < 4:
        raise UsageError(f"the unbiased HSIC needs at least 4 examples per minibatch, got {n}")
    k = k - torch.diag_embed(k.diagonal())
    m = m - torch.diag_embed(m.diagonal())
    trace = (k * m).sum()
    cross = k.sum(dim=0) @ m.sum(dim=1)
    return (trace + k.sum() * m.sum() / ((n - 1) * (n - 2)) - 2 * cross / (n - 2)) / (n * (n - 3))


def hsic_biased(k: Tensor, m: Tensor) -> Tensor:
    """Gretton et al.'s biased ``tr(K H L H) / (n - 1)^2`` (K = ``k``, L = ``m``), H the centring
    matrix: for comparison."""
    n = k.shape[-1]
    h = torch.eye(n, dtype=k.dtype, device=k.device) - 1.0 / n
    return torch.trace(k @ h @ m @ h) / (n - 1) ** 2


class CKA:
    """Linear CKA of every layer pair (rows: the first model's layers, columns: the second's, or
    the first's again), accumulated over minibatches.

    >>> torch.manual_seed(0) and None
    >>> states = [torch.randn(8, 5, 6) for _ in range(2)]
    >>> cka = CKA()
    >>> cka.update(states)
    >>> [round(v, 12) for v in cka.result().diagonal().tolist()]
    [1.0, 1.0]
    """

    def __init__(self, pooling: str = "mean", unbiased: bool = True):
        if pooling not in POOLINGS:
            raise UsageError(f"pooling {pooling!r} unknown; choose from {', '.join(POOLINGS)}")
        self.pooling, self.hsic = pooling, hsic_unbiased if unbiased else hsic_biased
        self.cross: Tensor | None = None  # [layers_a, layers_b], summed over minibatches
        self.self_a: Tensor | None = None
        self.self_b: Tensor | None = None

    def update(
        self,
        states: Sequence[Tensor],
        other: Sequence[Tensor] | None = None,
        mask: Tensor | None = None,
        exclude: Sequence[int] = (),
    ) -> None:
        """One minibatch: per layer ``[batch, tokens, features]`` of the first model and (``other``)
        of the second on the same inputs; the feature sizes may differ, the examples may not."""
        grams_a = [self._gram(x, mask, exclude) for x in states]
        grams_b = grams_a if other is None else [self._gram(x, mask, exclude) for x in other]
        if grams_a and grams_b and grams_a[0].shape != grams_b[0].shape:
            raise UsageError(
                f"the two models give {grams_a[0].shape[0]} and {grams_b[0].shape[0]} examples for one batch; "
                "give them the same inputs"
            )
        cross = torch.stack([torch.stack([self.hsic(ka, kb) for kb in grams_b]) for ka in grams_a])
        self_a = torch.stack([self.hsic(k, k) for k in grams_a])
        self_b = self_a if other is None else torch.stack([self.hsic(k, k) for k in grams_b])
        if self.cross is None:
            self.cross, self.self_a, self.self_b = cross, self_a, self_b
        elif cross.shape != self.cross.shape:
            raise UsageError(
                f"this minibatch has {tuple(cross.shape)} layer pairs, the earlier ones {tuple(self.cross.shape)}"
            )
        else:
            self.cross, self.self_a, self.self_b = self.cross + cross, self.self_a + self_a, self.self_b + self_b

    def _gram(self, x: Tensor, mask: Tensor | None, exclude: Sequence[int]) -> Tensor:
        features = examples(x, mask, exclude, self.pooling)
        return features @ features.T

    def result(self) -> Tensor:
        """``[layers_a, layers_b]`` float64 CKA (the minibatch means of the three HSIC terms)."""
        if self.cross is None:
            raise UsageError("no minibatch given yet: call update() first")
        return self.cross / torch.sqrt(self.self_a[:, None] * self.self_b[None, :])
