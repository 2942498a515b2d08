"""Timing on a shared, noisy machine: interleaved rounds, and paired ratios with a bootstrap CI.

Every round runs every contender once, in an order shuffled afresh each round (seeded), so slow
phases of the machine (other jobs, frequency changes) hit all contenders alike and no contender
always follows the same one (whose data it would find in the cache); the first rounds are
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

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Estimate:
    """A median over rounds and its bootstrap confidence interval (``level``)."""

    median: float
    low: float
    high: float
    rounds: int
    level: float = 0.95

    def __str__(self) -> str:
        return self.format(".3f")

    def format(self, spec: str) -> str:
        return f"{self.median:{spec}} [{self.low:{spec}}, {self.high:{spec}}]"

    def scaled(self, factor: float) -> Estimate:
        return Estimate(self.median * factor, self.low * factor, self.high * factor, self.rounds, self.level)


def allow_compiled_models(count: int) -> None:
    """Let one process hold ``count`` ``torch.compile``d models that share a ``forward``.

    Dynamo guards every model instance separately on the same code object and, past its
    recompile limit (8), silently runs the rest eagerly: a benchmark would then time eager steps
    as "compiled". Raise the limit to ``count`` and make reaching it an error instead.
    """
    config = torch._dynamo.config
    config.recompile_limit = max(config.recompile_limit, count)
    config.fail_on_recompile_limit_hit = True


def step_clock(device: str = "cpu") -> tuple[Callable[[], float], str]:
    """The clock for single-process work and its name: the calling thread's CPU time when torch
    runs on one CPU thread (other jobs' time slices left out), wall time otherwise."""
    if device == "cpu" and torch.get_num_threads() == 1:
        return time.thread_time, "thread CPU time"
    return time.perf_counter, "wall"


def interleaved_rounds(
    contenders: dict[str, Callable[[], object]],
    rounds: int,
    warmup: int = 1,
    number: int = 1,
    sync: Callable[[], None] = lambda: None,
    progress: Callable[[int], None] = lambda done: None,
    clock: Callable[[], float] = time.perf_counter,
    seed: int = 0,
) -> dict[str, list[float]]:
    """Seconds per call of each contender in each of ``rounds`` kept rounds (``warmup`` more are
    run first and dropped), contenders in a shuffled order (``seed``) in each round. A measurement
    is ``number`` calls in a row, divided by ``number``;
    ``sync`` runs before each clock read (e.g. ``torch.cuda.synchronize``)."""
    names = list(contenders)
    order = random.Random(seed)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(warmup + rounds):
        order.shuffle(names)
        for name in names:
            sync()
            start = clock()
            for _ in range(number):
                contenders[name]()
            sync()
            if r >= warmup:
                times[name].append((clock() - start) / number)
        progress(r + 1)
    return times


def bootstrap_median(values: list[float], resamples: int = 4000, level: float = 0.95, seed: int = 0) -> Estimate:
    """The median of ``values`` (one per round) with a percentile bootstrap CI (rounds resampled
    with replacement, ``seed`` fixed)."""
    per_round = torch.tensor(values, dtype=torch.float64)
    n = len(per_round)
    picks = torch.randint(0, n, (resamples, n), generator=torch.Generator().manual_seed(seed))
    medians = per_round[picks].quantile(0.5, dim=1)
    tail = (1 - level) / 2
    low, high = medians.quantile(torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return Estimate(statistics.median(values), low, high, n, level)


def ratio(times: dict[str, list[float]], name: str, baseline: str, **bootstrap) -> Estimate:
    """``times[name] / times[baseline]``: the median over rounds of the per-round (paired) ratio,
    with its bootstrap CI (``bootstrap``: ``resamples``, ``level``, ``seed``)."""
    return bootstrap_median([a / b for a, b in zip(times[name], times[baseline])], **bootstrap)


def median_seconds(times: dict[str, list[float]], name: str) -> float:
    return statistics.median(times[name])
