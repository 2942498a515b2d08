"""Measures taken layer by layer, as a forward pass makes each state, which is then let go.

``LayerwiseMeasures`` is a ``capture`` sink: the states named in ``metrics_of`` are measured as
they arrive (the measures registry's ``layer_values``, float64; each state checked once, by hook
name), as many side by side as torch has threads (``thread_map``: small eigensolves run on one
thread each), and only the numbers are kept; call ``finish()`` after the forward pass for the last
ones. Peak memory is that of a bare forward plus a few states and their measures, where keeping
the states would cost one ``[batch, tokens, d]`` tensor per layer and hook. The block measures
(block influence) of a ``stream`` state compare it with the stream state before it, kept until
the next one arrives.

The rank measures (``RANK_METRICS``: an eigensolve per sequence, the costliest part) take a copy of
their ``rank_sequences`` and run on a background thread beside the forward pass, in the cycles a
forward on one core leaves idle (``benchmarks/bench_analyze.py``); at most ``_QUEUED`` copies wait.
The same function on the same values: the same bits as measured in the hook.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import pandas as pd
import torch
from torch import Tensor

from oversmooth.metrics import LAYER_MEASURES, RANK_METRICS, metric_table
from oversmooth.metrics.registry import layer_values
from oversmooth.metrics.suite import summary
from oversmooth.metrics.tokens import check_counted, check_finite
from oversmooth.utils.threads import single_thread, thread_map

_QUEUED = 2  # copies of states waiting for their rank measures; the hook waits beyond that


@dataclass
class LayerwiseMeasures:
    """``metrics_of``: hook name -> the metrics to take of that state; ``mask [B, n]`` (None: every
    token valid); ``rank_sequences``: the rank measures (a full eigensolve per sequence) on the
    first k sequences only (None: all). ``rows``: hook name -> ``{metric: mean, metric_std: std}``."""

    metrics_of: dict[str, tuple[str, ...]]
    mask: Tensor | None
    exclude: tuple[int, ...] = ()
    rank_sequences: int | None = None
    stream: tuple[str, ...] = ()  # the stream's hook names in layer order (for the block measures)
    rows: dict[str, dict[str, float]] = field(default_factory=dict)
    sequences: int = 0
    tokens: int = 0
    _pending: list[tuple[str, Tensor]] = field(default_factory=list, repr=False)
    _blocks: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    _stream_state: Tensor | None = field(default=None, repr=False)
    _ranks: dict[str, Future] = field(default_factory=dict, repr=False)
    _background: ThreadPoolExecutor | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if any(m in RANK_METRICS for metrics in self.metrics_of.values() for m in metrics):
            self._background = ThreadPoolExecutor(1, thread_name_prefix="oversmooth-ranks")

    def __call__(self, name: str, state: Tensor) -> None:
        """The sink: queue ``state [B, n, d]`` if ``name`` is wanted; measure the queue once it holds
        one state per thread. A stream state's block measures are taken at once (O(tokens d))."""
        if name in self.metrics_of:
            self.sequences, self.tokens = state.shape[0], state.shape[1]
            blocks = [m for m in self.metrics_of[name] if LAYER_MEASURES[m].pair]
            if name in self.stream and blocks:
                before, self._stream_state = self._stream_state, state
                if before is not None:
                    self._blocks[name] = self._row([before, state], self.mask, blocks)
            self._pending.append((name, state))
            if len(self._pending) >= torch.get_num_threads():
                self._measure_pending()

    def finish(self) -> None:
        """After the forward pass: measure the queued states, wait for the rank measures, let all go."""
        self._measure_pending()
        ranks, self._ranks = self._ranks, {}
        for name, future in ranks.items():
            self.rows[name].update(future.result())
        if self._background is not None:
            self._background.shutdown()

    def _measure_pending(self) -> None:
        pending, self._pending = self._pending, []
        for name, row in zip([name for name, _ in pending], thread_map(self._measure, pending)):
            self.rows[name] = {**row, **self._blocks.pop(name, {})}

    def _row(self, states: Sequence[Tensor], mask: Tensor | None, metrics: Sequence[str]) -> dict[str, float]:
        """``metrics`` of the last of ``states`` (the block measures: against the one before it) as
        ``{metric: mean, metric_std: std}``, on one thread as ``measure`` takes them."""
        with single_thread():
            return summary(layer_values(metrics, states, len(states) - 1, mask, self.exclude))

    def _measure(self, item: tuple[str, Tensor]) -> dict[str, float]:
        """The row of one state; its rank measures are queued on the background thread."""
        name, state = item
        check_finite(state, f"{name} states")
        check_counted(state, self.mask, self.exclude)
        metrics = self.metrics_of[name]
        ranks = [m for m in metrics if m in RANK_METRICS]
        if ranks:
            self._queue_ranks(name, state, ranks)
        return self._row([state], self.mask, [m for m in metrics if m not in RANK_METRICS])

    def _queue_ranks(self, name: str, state: Tensor, ranks: list[str]) -> None:
        """Measure ``ranks`` of a copy of the first ``rank_sequences`` of ``state`` on the background thread."""
        waiting = [future for future in self._ranks.values() if not future.done()]
        if len(waiting) >= _QUEUED:
            waiting[0].result()
        sample = slice(self.rank_sequences)
        mask = None if self.mask is None else self.mask[sample]
        self._ranks[name] = self._background.submit(self._row, [state[sample].clone()], mask, ranks)

    def table(self, names: Sequence[str], metrics: tuple[str, ...]) -> pd.DataFrame:
        """The rows of ``names`` as layers 0, 1, ... of one ``metric_table`` (with the rank-sample note)."""
        rows = [{**self.rows[name], "layer": layer} for layer, name in enumerate(names)]
        sample, ranks = self.rank_sequences, [m for m in RANK_METRICS if m in metrics]
        notes = (
            {"rank_sequences": f"{', '.join(ranks)}: first {sample} of {self.sequences} sequences"}
            if sample is not None and sample < self.sequences and ranks
            else {}
        )
        return metric_table(rows, metrics, exclude=self.exclude, sequences=self.sequences, notes=notes)
