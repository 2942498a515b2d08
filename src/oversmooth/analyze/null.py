"""The nulls: what a model gives for free. (a) What the architecture gives with no training: the
same measures on a few random initialisations of the same architecture, same inputs and
positions, summarised per layer as a mean (``<m>_null``) and a spread over inits
(``<m>_null_sd``); a measured value's excess is its distance above that mean (``<m>_excess``).
(b) What the trained model gives without the inputs' order: the same model on the same inputs
with each sequence's counted tokens (an image's patches) shuffled, a few shuffles
(``<m>_shuffled``, ``<m>_shuffled_sd``). Similarity that survives shuffling comes from the
tokens' identities and the model, not from the sequence's structure.

>>> import pandas as pd
>>> inits = [pd.DataFrame({"layer": [0, 1], "cos_sim": c}) for c in ([0.1, 0.3], [0.3, 0.5])]
>>> null = null_table(inits, ("cos_sim",))
>>> null.round(3).to_dict("list")
{'layer': [0, 1], 'cos_sim_null': [0.2, 0.4], 'cos_sim_null_sd': [0.141, 0.141]}
>>> round(float(excess_columns({"layer": 1, "cos_sim": 0.7}, null.iloc[1], None, ("cos_sim",))["cos_sim_excess"]), 3)
0.3
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd
import torch
from torch import Tensor, nn

from oversmooth.metrics.tokens import valid_tokens

SHUFFLE_SEED = 0  # the generator of the shuffled-order null


def random_init(model: nn.Module, seed: int) -> nn.Module:
    """A model of ``model``'s architecture and config with weights drawn afresh (``torch.manual_seed
    (seed)``; its own init: transformers' for theirs, ``init_weights`` for ours), on its device and
    dtype, in eval mode."""
    torch.manual_seed(seed)
    parameter = next(model.parameters())
    config = model.config if hasattr(model, "config") else model.cfg  # transformers' / our models'
    return type(model)(config).to(device=parameter.device, dtype=parameter.dtype).eval()


def null_table(tables: Sequence[pd.DataFrame], metrics: Sequence[str], name: str = "null") -> pd.DataFrame:
    """Per layer of the ``metric_table``s of several inits (or shuffles): each metric's mean
    (``<m>_<name>``) and spread (``<m>_<name>_sd``, sample std; NaN for one). ``attrs["inits"]``:
    how many."""
    grouped = pd.concat(tables).groupby("layer")[list(metrics)]
    mean, spread = grouped.mean(), grouped.std(ddof=1)
    out = pd.DataFrame({"layer": mean.index})
    for metric in metrics:
        out[f"{metric}_{name}"] = mean[metric].to_numpy()
        out[f"{metric}_{name}_sd"] = spread[metric].to_numpy()
    out.attrs["inits"] = len(tables)
    return out


def shuffled_tokens(
    input_ids: Tensor, mask: Tensor | None, exclude: Sequence[int], generator, keep_ids: Sequence[int] = ()
) -> Tensor:
    """``input_ids [B, n]`` with each sequence's counted tokens (real, not in ``exclude``, not one
    of ``keep_ids``: special tokens) in a random order; padding, the excluded positions (a sink)
    and the kept tokens ([CLS], [SEP]) stay where they are."""
    counted = valid_tokens(input_ids.unsqueeze(-1), None if mask is None else mask.bool(), exclude)
    counted &= ~torch.isin(input_ids, torch.tensor(list(keep_ids), dtype=input_ids.dtype))
    out = input_ids.clone()
    for row in range(out.shape[0]):
        where = counted[row].nonzero().squeeze(1)
        out[row, where] = input_ids[row, where[torch.randperm(len(where), generator=generator)]]
    return out


def shuffled_patches(images: Tensor, patch: int, generator) -> Tensor:
    """``images [B, C, H, W]`` with each image's ``patch`` x ``patch`` tiles in a random order
    (the tokens a patch-embedding ViT makes of them, shuffled)."""
    batch, channels, height, width = images.shape
    rows, cols = height // patch, width // patch
    tiles = images[:, :, : rows * patch, : cols * patch].reshape(batch, channels, rows, patch, cols, patch)
    tiles = tiles.permute(0, 2, 4, 1, 3, 5).reshape(batch, rows * cols, channels, patch, patch)
    order = torch.stack([torch.randperm(rows * cols, generator=generator) for _ in range(batch)])
    tiles = tiles[torch.arange(batch)[:, None], order]
    out = images.clone()
    out[:, :, : rows * patch, : cols * patch] = (
        tiles.reshape(batch, rows, cols, channels, patch, patch)
        .permute(0, 3, 1, 4, 2, 5)
        .reshape(batch, channels, rows * patch, cols * patch)
    )
    return out


def measure_shuffled(
    shuffles: int,
    shuffle: Callable[[torch.Generator], object],
    table_of: Callable[[object], pd.DataFrame],
    metrics: Sequence[str],
) -> pd.DataFrame:
    """``null_table`` (name ``shuffled``) of ``table_of(shuffle(generator))`` over ``shuffles``
    shuffles drawn from one generator seeded ``SHUFFLE_SEED`` (the global RNG is not touched)."""
    generator = torch.Generator().manual_seed(SHUFFLE_SEED)
    return null_table([table_of(shuffle(generator)) for _ in range(shuffles)], metrics, name="shuffled")


def null_seeds(inits: int) -> dict[str, object]:
    """The seeds of ``inits`` random inits and as many shuffles (none without them), by what they seed.

    >>> null_seeds(3), null_seeds(0)
    ({'random inits': '0-2', 'shuffled orders': 0}, {})
    """
    return {"random inits": f"0-{inits - 1}", "shuffled orders": SHUFFLE_SEED} if inits else {}


def measure_null(
    model: nn.Module, inits: int, table_of: Callable[[nn.Module], pd.DataFrame], metrics: Sequence[str]
) -> pd.DataFrame:
    """``null_table`` of ``table_of(random_init(model, seed))`` for seeds 0 .. inits-1; the global
    RNGs are restored afterwards (the caller's randomness is not moved)."""
    tables = []
    with torch.random.fork_rng():  # CPU and CUDA generators restored on the way out
        for seed in range(inits):
            fresh = random_init(model, seed)
            tables.append(table_of(fresh))
            del fresh
    return null_table(tables, metrics)


def by_layer(table: pd.DataFrame | None) -> dict[int, dict]:
    """A null table's rows keyed by layer ({} without one)."""
    return {} if table is None else {int(r["layer"]): r for r in table.to_dict("records")}


def excess_columns(
    row: Mapping, null_row: Mapping | None, shuffled_row: Mapping | None, metrics: Sequence[str]
) -> dict[str, float]:
    """For one layer: each metric's null mean, spread and the row's excess over the mean; the
    shuffled-order mean and spread beside them (each where given)."""
    out = {}
    for m in metrics:
        if null_row is not None:
            out.update({f"{m}_null": null_row[f"{m}_null"], f"{m}_null_sd": null_row[f"{m}_null_sd"]})
            out[f"{m}_excess"] = row[m] - null_row[f"{m}_null"]
        if shuffled_row is not None:
            out.update(
                {f"{m}_shuffled": shuffled_row[f"{m}_shuffled"], f"{m}_shuffled_sd": shuffled_row[f"{m}_shuffled_sd"]}
            )
    return out
