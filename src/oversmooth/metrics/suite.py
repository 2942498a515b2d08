"""The metric suite: every measure at every layer, as one tidy layer x metric table."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch
from torch import Tensor

from oversmooth.atomic import atomic_write
from oversmooth.errors import UsageError
from oversmooth.metrics.attention import attention_entropy, attention_lambda2, attention_similarity
from oversmooth.metrics.rank import effective_rank, centred_residual, rank_measures, stable_rank
from oversmooth.metrics.similarity import cos_sim, t_div, t_sim
from oversmooth.metrics.tokens import check_finite
from oversmooth.threads import thread_map

STATE_METRICS: dict[str, Callable[..., Tensor]] = {
    "cos_sim": cos_sim,
    "t_sim": t_sim,
    "t_div": t_div,
    "centred_residual": centred_residual,
    "effective_rank": effective_rank,
    "stable_rank": stable_rank,
}
RANK_METRICS = ("effective_rank", "stable_rank")  # full spectra, O(n d min(n, d)); computed together
ATTENTION_METRICS = ("attn_entropy", "attn_lambda2", "attn_similarity")
METRICS = tuple(STATE_METRICS)


@dataclass
class MetricTable:
    """One row per layer: ``layer``, then ``<metric>`` (mean over sequences) and ``<metric>_std``.

    ``hook`` names where the states were taken, ``exclude`` the positions left out.
    """

    rows: list[dict[str, float]]
    metrics: tuple[str, ...]
    hook: str = "resid_post"
    exclude: tuple[int, ...] = ()
    sequences: int = 0
    notes: dict[str, str] = field(default_factory=dict)

    def column(self, name: str) -> list[float]:
        """One metric's mean at every layer."""
        if name not in self.metrics:
            raise UsageError(f"no metric {name!r} in this table; it has {', '.join(self.metrics)}")
        return [row[name] for row in self.rows]

    def to_dict(self) -> dict:
        return {"hook": self.hook, "exclude": list(self.exclude), "sequences": self.sequences,
                "metrics": list(self.metrics), "notes": self.notes, "rows": self.rows}

    def to_json(self) -> str:
        """JSON text; NaN (undefined, e.g. no previous layer) is written as null."""
        clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
                 for row in self.rows]
        return json.dumps({**self.to_dict(), "rows": clean}, indent=2)

    def to_csv_text(self) -> str:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(self.rows[0]) if self.rows else ["layer"])
        writer.writeheader()
        writer.writerows(self.rows)
        return buffer.getvalue()

    def to_csv(self, path) -> None:
        """Write the table as CSV, atomically."""
        with atomic_write(path) as handle:
            handle.write(self.to_csv_text())

    def __str__(self) -> str:
        header = ["layer", *self.metrics]
        lines = [[str(int(row["layer"])), *(f"{row[m]:.4f}" for m in self.metrics)] for row in self.rows]
        widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
        out = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
        out += ["  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines]
        excluded = f", positions {list(self.exclude)} excluded" if self.exclude else ""
        out.append(f"(hook {self.hook}; mean over {self.sequences} sequences{excluded})")
        return "\n".join(out)


def _stats(values: Tensor) -> tuple[float, float]:
    """Mean and population std over sequences, ignoring undefined (NaN) sequences."""
    finite = values[~values.isnan()]
    if finite.numel() == 0:
        return math.nan, math.nan
    return finite.mean().item(), finite.std(correction=0).item()


def measure(hidden_states: Sequence[Tensor] | Tensor, mask: Tensor | None = None,
            attentions: Sequence[Tensor] | None = None, exclude: Sequence[int] = (),
            hook: str = "resid_post", metrics: Sequence[str] = METRICS) -> MetricTable:
    """Every metric at every layer.

    ``hidden_states``: per layer ``[batch, tokens, features]`` (or one ``[layers, batch, tokens,
    features]`` tensor); ``attentions``: optional per layer ``[batch, heads, tokens, tokens]``,
    which adds attention entropy, |lambda_2| and the similarity to the previous layer's map.
    Layers are measured side by side on torch's threads (``oversmooth.threads.thread_map``).

    >>> states = [torch.randn(2, 5, 8) for _ in range(3)]
    >>> table = measure(states, metrics=("cos_sim", "t_sim"))
    >>> len(table.column("t_sim")), table.metrics
    (3, ('cos_sim', 't_sim'))
    """
    unknown = [m for m in metrics if m not in STATE_METRICS]
    if unknown:
        raise UsageError(f"unknown metric {unknown[0]!r}; choose from {', '.join(METRICS)}")
    if attentions is not None and len(attentions) != len(hidden_states):
        raise UsageError(f"{len(attentions)} attention maps for {len(hidden_states)} layers of states")
    for layer, states in enumerate(hidden_states):
        if states.dim() != 3:
            raise UsageError(f"layer {layer} states have shape {tuple(states.shape)}; "
                             "expected [batch, tokens, features]")
        check_finite(states, f"layer {layer} states")
        if attentions is not None:
            check_finite(attentions[layer], f"layer {layer} attention maps")
    names = tuple(metrics) + (ATTENTION_METRICS if attentions is not None else ())

    def row(layer: int) -> dict[str, float]:
        states = hidden_states[layer]
        values = (dict(zip(RANK_METRICS, rank_measures(states, mask, exclude)))
                  if set(RANK_METRICS) <= set(metrics) else {})
        values.update({name: STATE_METRICS[name](states, mask, exclude) for name in metrics if name not in values})
        if attentions is not None:
            attn = attentions[layer]
            values["attn_entropy"] = attention_entropy(attn, mask, exclude)
            values["attn_lambda2"] = attention_lambda2(attn, mask, exclude)
            values["attn_similarity"] = (
                attention_similarity(attentions[layer - 1], attn, mask, exclude) if layer > 0
                else torch.full((attn.shape[0],), math.nan, dtype=torch.float64))
        out: dict[str, float] = {"layer": layer}
        for name in names:
            out[name], out[f"{name}_std"] = _stats(values[name])
        return out

    rows = thread_map(row, range(len(hidden_states)))
    sequences = hidden_states[0].shape[0] if len(hidden_states) else 0
    return MetricTable(rows, names, hook, tuple(exclude), sequences)
