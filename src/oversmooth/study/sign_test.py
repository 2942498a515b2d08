"""The exact sign test on paired differences, with its Clopper-Pearson interval.

For a measure that is all-or-nothing per seed (claim 4: does a model leave chance at all), a
t-test on 0/1 differences is a poor model; the sign test is exact. Of the ``k`` seeds whose
difference is not 0, ``k_plus`` go the claimed way; under "no effect" ``k_plus ~ Binomial(k, 1/2)``.
The two-sided p doubles the smaller tail (capped at 1), and the Clopper-Pearson interval of the
share ``k_plus / k`` is its inversion: it excludes 1/2 exactly when that p is below alpha.
Pure maths: nothing here knows cells or reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from scipy import stats


@dataclass(frozen=True)
class SignTest:
    """``k`` nonzero paired differences, ``k_plus`` of them in the claimed ``direction``."""

    n: int           # pairs, zeros included
    k: int
    k_plus: int
    p: float         # two-sided exact p (1 with k == 0: nothing observed)
    direction: str

    @property
    def share(self) -> float:
        """The share of the nonzero differences that go the claimed way (NaN with k == 0)."""
        return self.k_plus / self.k if self.k else math.nan

    def interval(self, confidence: float) -> tuple[float, float]:
        """Clopper-Pearson interval of ``share`` at ``confidence``; (0, 1) with k == 0."""
        if self.k == 0:
            return 0.0, 1.0
        tail = (1 - confidence) / 2
        low = 0.0 if self.k_plus == 0 else float(stats.beta.ppf(tail, self.k_plus, self.k - self.k_plus + 1))
        high = 1.0 if self.k_plus == self.k else float(stats.beta.isf(tail, self.k_plus + 1, self.k - self.k_plus))
        return low, high


def sign_test(method: Sequence[float], baseline: Sequence[float], direction: str) -> SignTest:
    """Exact sign test of ``method[i] - baseline[i]`` (paired) in ``direction`` ("higher"/"lower").

    Nine of ten seeds higher, one tie: p = 2 * P(Binomial(9, 1/2) >= 9) = 2 / 512:

    >>> test = sign_test([1.0] * 9 + [0.0], [0.0] * 10, "higher")
    >>> test.k, test.k_plus, round(test.p, 6)
    (9, 9, 0.003906)
    """
    if direction not in ("higher", "lower"):
        raise ValueError(f'direction must be "higher" or "lower", got {direction!r}')
    if len(method) != len(baseline):
        raise ValueError(f"method and baseline must be paired, got {len(method)} and {len(baseline)} values")
    signs = [(m > b) - (m < b) for m, b in zip(method, baseline)]
    k = sum(s != 0 for s in signs)
    k_plus = sum(s == (1 if direction == "higher" else -1) for s in signs)
    p = 1.0 if k == 0 else min(1.0, 2 * min(float(stats.binom.cdf(k_plus, k, 0.5)),
                                            float(stats.binom.sf(k_plus - 1, k, 0.5))))
    return SignTest(len(signs), k, k_plus, p, direction)


def fewest_unanimous(alpha: float, limit: int = 64) -> int:
    """The fewest nonzero differences, all one way, that the two-sided sign test rejects at
    ``alpha``: the design needs at least this many seeds to differ (``2 * 2**-k < alpha``).

    >>> fewest_unanimous(0.05), fewest_unanimous(0.05 / 7)
    (6, 9)
    """
    return next(k for k in range(1, limit + 1) if 2 * 0.5 ** k < alpha)
