"""Timing on a shared, noisy machine: interleaved rounds, and paired ratios with a bootstrap CI.

Every round runs every contender once, in an order rotated from round to round, so slow phases
of the machine (other jobs, frequency changes) hit all contenders alike; the first rounds are
warm-up and discarded. The clock is wall time by default; ``time.thread_time`` (the CPU time of
the calling thread) leaves out the time slices other jobs take, which is what the cost of a
single-threaded CPU step is (torch with one thread runs its kernels and the backward pass on the
calling thread). A ratio is taken within each round (paired), and the median of those
per-round ratios is reported with a percentile-bootstrap confidence interval over the rounds.

>>> times = {"a": [1.0, 2.0, 1.0, 1.0], "b": [1.1, 2.2, 1.1, 1.1]}
>>> str(ratio(times, "b", "a"))
'1.100 [1.100, 1.100]'
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(frozen=True)
class Ratio:
    """Median of per-round ratios and its bootstrap confidence interval (``level``)."""

    median: float
    low: float
    high: float
    rounds: int
    level: float = 0.95

    def __str__(self) -> str:
        return f"{self.median:.3f} [{self.low:.3f}, {self.high:.3f}]"


def interleaved_rounds(contenders: dict[str, Callable[[], object]], rounds: int, warmup: int = 1,
                       number: int = 1, sync: Callable[[], None] = lambda: None,
                       progress: Callable[[int], None] = lambda done: None,
                       clock: Callable[[], float] = time.perf_counter) -> dict[str, list[float]]:
    """Seconds per call of each contender in each of ``rounds`` kept rounds (``warmup`` more are
    run first and dropped). A measurement is ``number`` calls in a row, divided by ``number``;
    ``sync`` runs before each clock read (e.g. ``torch.cuda.synchronize``)."""
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(warmup + rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            sync()
            start = clock()
            for _ in range(number):
                contenders[name]()
            sync()
            if r >= warmup:
                times[name].append((clock() - start) / number)
        progress(r + 1)
    return times


def ratio(times: dict[str, list[float]], name: str, baseline: str, resamples: int = 4000,
          level: float = 0.95, seed: int = 0) -> Ratio:
    """``times[name] / times[baseline]``: the median over rounds of the per-round ratio, with a
    percentile bootstrap CI (rounds resampled with replacement, ``seed`` fixed)."""
    per_round = torch.tensor(times[name], dtype=torch.float64) / torch.tensor(times[baseline], dtype=torch.float64)
    n = len(per_round)
    picks = torch.randint(0, n, (resamples, n), generator=torch.Generator().manual_seed(seed))
    medians = per_round[picks].quantile(0.5, dim=1)
    tail = (1 - level) / 2
    low, high = medians.quantile(torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return Ratio(statistics.median(per_round.tolist()), low, high, n, level)


def median_seconds(times: dict[str, list[float]], name: str) -> float:
    return statistics.median(times[name])
