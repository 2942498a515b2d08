"""Measures taken layer by layer, as a forward pass makes each state, which is then let go.

``LayerwiseMeasures`` is a ``capture`` sink: each state named in ``metrics_of`` is measured the
moment it arrives (``oversmooth.metrics.measure`` on that one state, float64) and only the numbers
are kept. Peak memory is that of a bare forward plus one state's measures, where keeping the states
would cost one ``[batch, tokens, d]`` tensor per layer and hook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from torch import Tensor

from oversmooth.metrics import MetricTable, measure
from oversmooth.metrics.suite import RANK_METRICS


@dataclass
class LayerwiseMeasures:
    """``metrics_of``: hook name -> the metrics to take of that state; ``mask [B, n]`` (None: every
    token valid); ``rank_sequences``: the rank measures (a full eigensolve per sequence) on the
    first k sequences only (None: all). ``rows``: hook name -> ``{metric: mean, metric_std: std}``."""

    metrics_of: dict[str, tuple[str, ...]]
    mask: Tensor | None
    exclude: tuple[int, ...] = ()
    rank_sequences: int | None = None
    rows: dict[str, dict[str, float]] = field(default_factory=dict)
    sequences: int = 0
    tokens: int = 0

    def __call__(self, name: str, state: Tensor) -> None:
        """The sink: measure ``state [B, n, d]`` if ``name`` is wanted, keep the numbers only."""
        metrics = self.metrics_of.get(name)
        if metrics is None:
            return
        self.sequences, self.tokens = state.shape[0], state.shape[1]
        sample = self.rank_sequences
        ranks = [m for m in metrics if m in RANK_METRICS]
        if not ranks or sample is None or sample >= state.shape[0]:
            self.rows[name] = measure([state], self.mask, exclude=self.exclude, metrics=metrics).rows[0]
            return
        row = measure([state], self.mask, exclude=self.exclude,
                      metrics=[m for m in metrics if m not in RANK_METRICS]).rows[0]
        mask = None if self.mask is None else self.mask[:sample]
        row.update(measure([state[:sample]], mask, exclude=self.exclude, metrics=ranks).rows[0])
        self.rows[name] = row

    def table(self, names: Sequence[str], metrics: tuple[str, ...]) -> MetricTable:
        """The rows of ``names`` as layers 0, 1, ... of one table (with the rank-sample note)."""
        rows = [{**self.rows[name], "layer": layer} for layer, name in enumerate(names)]
        table = MetricTable(rows, metrics, exclude=tuple(self.exclude), sequences=self.sequences)
        sample = self.rank_sequences
        if sample is not None and sample < self.sequences and any(m in RANK_METRICS for m in metrics):
            table.notes["rank_sequences"] = (f"{', '.join(RANK_METRICS)}: first {sample} of "
                                             f"{self.sequences} sequences")
        return table
