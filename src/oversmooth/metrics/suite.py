"""The metric suite: every measure at every layer, as one tidy layer x metric table (the measures:
``oversmooth.metrics.registry``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.metrics.registry import ATTENTION_METRICS, METRICS, check_measures, layer_values, measure_columns
from oversmooth.metrics.tokens import check_counted, check_finite
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.json_files import finite, json_text
from oversmooth.utils.tensors import check_tensor
from oversmooth.utils.threads import thread_map


def metric_table(
    rows: Sequence[dict[str, float]],
    metrics: Sequence[str],
    *,
    hook: str = "resid_post",
    exclude: Sequence[int] = (),
    sequences: int = 0,
    notes: dict[str, str] | None = None,
) -> pd.DataFrame:
    """The table ``measure`` returns: one row per layer, columns ``layer``, then ``<metric>`` (mean over
    sequences) and ``<metric>_std``; ``attrs`` holds ``metrics``, ``hook`` (where the states were
    taken), ``exclude`` (the positions left out), ``sequences`` and ``notes``."""
    table = pd.DataFrame(list(rows), columns=["layer", *measure_columns(metrics)])
    table.attrs.update(
        metrics=tuple(metrics), hook=hook, exclude=tuple(exclude), sequences=sequences, notes=dict(notes or {})
    )
    return table


def json_records(table: pd.DataFrame) -> list[dict]:
    """The rows as dicts of Python numbers, NaN (undefined, e.g. no previous layer) as None: strict JSON."""
    return finite(table.to_dict("records"))


def table_json(table: pd.DataFrame) -> str:
    """JSON text: ``hook``, ``exclude``, ``sequences``, ``metrics``, ``notes`` and ``rows``."""
    a = table.attrs
    return json_text(
        {
            "hook": a["hook"],
            "exclude": list(a["exclude"]),
            "sequences": a["sequences"],
            "metrics": list(a["metrics"]),
            "notes": a["notes"],
            "rows": json_records(table),
        },
        indent=2,
    )


def write_csv(table: pd.DataFrame, path) -> None:
    """Write the table as CSV, atomically (CRLF lines, NaN as ``nan``, as ``csv.DictWriter`` does)."""
    with atomic_write(path) as handle:
        table.to_csv(handle, index=False, lineterminator="\r\n", na_rep="nan")


def format_table(table: pd.DataFrame) -> str:
    """The means to 4 decimals, then a line on the hook, the sequences and the excluded positions."""
    a = table.attrs
    text = table[["layer", *a["metrics"]]].to_string(index=False, float_format="{:.4f}".format)
    excluded = f", positions {list(a['exclude'])} excluded" if a["exclude"] else ""
    return f"{text}\n(hook {a['hook']}; mean over {a['sequences']} sequences{excluded})"


def _stats(values: Tensor) -> tuple[float, float]:
    """Mean and population std over sequences, ignoring undefined (NaN) sequences."""
    finite = values[~values.isnan()]
    if finite.numel() == 0:
        return math.nan, math.nan
    return finite.mean().item(), finite.std(correction=0).item()


def summary(values: dict[str, Tensor]) -> dict[str, float]:
    """``{name: mean, name_std: std}`` over sequences of each ``values[name]: [batch]`` (a row of
    ``metric_table`` without its layer), undefined (NaN) sequences skipped."""
    row: dict[str, float] = {}
    for name, per_sequence in values.items():
        row[name], row[f"{name}_std"] = _stats(per_sequence)
    return row


def measure(
    hidden_states: Sequence[Tensor] | Tensor,
    mask: Tensor | None = None,
    attentions: Sequence[Tensor] | None = None,
    exclude: Sequence[int] = (),
    hook: str = "resid_post",
    metrics: Sequence[str] = METRICS,
    attention_eigenvalues: Sequence[Sequence[Tensor]] | None = None,
) -> pd.DataFrame:
    """Every metric at every layer, as a ``metric_table``.

    ``hidden_states``: per layer ``[batch, tokens, features]`` (or one ``[layers, batch, tokens,
    features]`` tensor); the block measures (block influence) compare each layer with the one
    before it (NaN at layer 0); ``attentions``: optional per layer ``[batch, heads, tokens,
    tokens]``, which adds attention entropy, |lambda_2|, the similarity to the previous layer's map
    and the sink mass and sink rate on the first token (``metrics`` may add ``SINK_METRICS``, the
    sink's stream measures, taken on request only);
    ``attention_eigenvalues``: per layer, their ``counted_eigenvalues`` if the caller has them.
    UsageError on a sequence with no token counted (``check_counted``).
    Layers are measured side by side on torch's threads (``oversmooth.utils.threads.thread_map``).

    >>> import torch
    >>> states = [torch.randn(2, 5, 8) for _ in range(3)]
    >>> table = measure(states, metrics=("cos_sim", "t_sim"))
    >>> len(table["t_sim"]), table.attrs["metrics"]
    (3, ('cos_sim', 't_sim'))
    """
    metrics = check_measures(metrics)
    if attentions is not None and len(attentions) != len(hidden_states):
        raise UsageError(f"{len(attentions)} attention maps for {len(hidden_states)} layers of states")
    for layer, states in enumerate(hidden_states):
        check_finite(check_tensor(states, f"layer {layer} states"), f"layer {layer} states")
        if attentions is not None:
            check_finite(attentions[layer], f"layer {layer} attention maps")
    if len(hidden_states):
        check_counted(hidden_states[0], mask, exclude)
    names = tuple(metrics) + (ATTENTION_METRICS if attentions is not None else ())

    def row(layer: int) -> dict[str, float]:
        values = layer_values(metrics, hidden_states, layer, mask, exclude)
        if attentions is not None:
            eigenvalues = None if attention_eigenvalues is None else attention_eigenvalues[layer]
            values.update(layer_values(ATTENTION_METRICS, attentions, layer, mask, exclude, eigenvalues))
        return {"layer": layer, **summary(values)}

    rows = thread_map(row, range(len(hidden_states)))
    sequences = hidden_states[0].shape[0] if len(hidden_states) else 0
    return metric_table(rows, names, hook=hook, exclude=exclude, sequences=sequences)
