"""Measures taken layer by layer, as a forward pass makes each state, which is then let go.

``LayerwiseMeasures`` is a ``capture`` sink: the states named in ``metrics_of`` are measured as
they arrive (``oversmooth.metrics.measure``, float64), as many side by side as torch has threads
(``thread_map``: small eigensolves run on one thread each), and only the numbers are kept; call
``finish()`` after the forward pass for the last ones. Peak memory is that of a bare forward plus
a few states and their measures, where keeping the states would cost one ``[batch, tokens, d]``
tensor per layer and hook. The block measures (block influence) of a ``stream`` state compare it
with the stream state before it, kept until the next one arrives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd
import torch
from torch import Tensor

from oversmooth.metrics import LAYER_MEASURES, RANK_METRICS, measure, metric_table
from oversmooth.metrics.tokens import check_finite
from oversmooth.utils.threads import thread_map


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

    def __call__(self, name: str, state: Tensor) -> None:
        """The sink: queue ``state [B, n, d]`` if ``name`` is wanted; measure the queue once it holds
        one state per thread. A stream state's block measures are taken at once (O(tokens d))."""
        if name in self.metrics_of:
            self.sequences, self.tokens = state.shape[0], state.shape[1]
            blocks = [m for m in self.metrics_of[name] if LAYER_MEASURES[m].pair]
            if name in self.stream and blocks:
                before, self._stream_state = self._stream_state, state
                if before is not None:
                    states = [before, state]
                    self._blocks[name] = measure(states, self.mask, exclude=self.exclude, metrics=blocks).to_dict(
                        "records"
                    )[1]
            self._pending.append((name, state))
            if len(self._pending) >= torch.get_num_threads():
                self.finish()

    def finish(self) -> None:
        """Measure the queued states and let them go."""
        pending, self._pending = self._pending, []
        for name, row in zip([name for name, _ in pending], thread_map(self._measure, pending)):
            self.rows[name] = {**row, **{k: v for k, v in self._blocks.pop(name, {}).items() if k != "layer"}}

    def _measure(self, item: tuple[str, Tensor]) -> dict[str, float]:
        name, state = item
        check_finite(state, f"{name} states")  # named by hook (``measure`` sees one state: "layer 0")
        metrics, sample = self.metrics_of[name], self.rank_sequences
        ranks = [m for m in metrics if m in RANK_METRICS]

        def row(state: Tensor, mask: Tensor | None, metrics: Sequence[str]) -> dict[str, float]:
            return measure([state], mask, exclude=self.exclude, metrics=metrics).to_dict("records")[0]

        if not ranks or sample is None or sample >= state.shape[0]:
            return row(state, self.mask, metrics)
        mask = None if self.mask is None else self.mask[:sample]
        return {
            **row(state, self.mask, [m for m in metrics if m not in RANK_METRICS]),
            **row(state[:sample], mask, ranks),
        }

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
