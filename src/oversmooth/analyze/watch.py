"""Per-layer similarity measured while a model trains, in anyone's training loop.

``watch(model, probe, every=100, out=DIR)`` measures the residual stream of a fixed probe batch
every ``every`` optimiser steps: ``cos_sim``, ``anisotropy``, ``block_influence`` and
``effective_rank`` per layer (``WATCHED``), the numbers ``analyze`` reports for the same weights
and inputs (same measures, same stream, same positions left out: a causal LM's first token). Each
record is appended to ``DIR/similarity.csv`` (``step, layer, <metric>, <metric>_std``) and, with
``tensorboard=True``, logged as ``similarity/<metric>/layer<l>`` under ``DIR/tensorboard``.

The model is measured in eval mode under ``no_grad`` and put back as it was; the probe never
touches the optimiser or the RNG. Steps are counted by a hook on ``optimizer.step`` when the
optimiser is given, else by calling ``step()`` after each of yours.

>>> import torch
>>> from transformers import BertConfig, BertModel
>>> model = BertModel(BertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
...                              intermediate_size=32, vocab_size=40))
>>> probe = {"input_ids": torch.randint(0, 40, (2, 6), generator=torch.Generator().manual_seed(0))}
>>> with watch(model, probe, every=2) as w:
...     for _ in range(4):
...         w.step()  # after your optimiser step
>>> [step for step, _ in w.records], list(w.records[-1][1]["layer"])
([2, 4], [0, 1, 2])
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch
from torch import Tensor, nn

from oversmooth.activations import stream_names
from oversmooth.analyze.settings import default_exclude
from oversmooth.errors import UsageError
from oversmooth.hf import capture, check_model_inputs, layout
from oversmooth.metrics import check_measures, measure, measure_columns

#: what a watch measures at each layer of the stream
WATCHED = check_measures(("cos_sim", "anisotropy", "block_influence", "effective_rank"))
CSV_NAME = "similarity.csv"


def stream_of(model: nn.Module, probe) -> tuple[list[Tensor], Tensor | None, tuple[int, ...]]:
    """The residual stream of ``model`` on ``probe`` (layer 0 = embeddings, i = after block i),
    its token mask and the positions ``analyze`` leaves out: a Hugging Face model (``probe``: its
    input dict) or one of ours (``run_with_cache``; ``probe``: the input tensor)."""
    if hasattr(model, "run_with_cache"):
        _, cache = model.run_with_cache(probe, names=stream_names(len(model.blocks)))
        return cache.stream(), None, ()
    if not isinstance(probe, Mapping):
        raise UsageError(
            f"the probe for a Hugging Face model is its input dict (input_ids, attention_mask, ...), "
            f"got a {type(probe).__name__}"
        )
    check_model_inputs(probe, "probe")  # a list where a tensor is meant: one line naming it
    lay = layout(model)  # UsageError naming the model when no family matches
    _, cache = capture(model, dict(probe), hooks=("resid_pre", "resid_post"))
    return cache.stream(), cache.mask, default_exclude(lay.family.causal)


def _on_device(probe, model: nn.Module):
    """The probe's tensors on the model's device."""
    device = next(model.parameters()).device
    if isinstance(probe, Mapping):
        return {k: v.to(device) if isinstance(v, Tensor) else v for k, v in probe.items()}
    return probe.to(device) if isinstance(probe, Tensor) else probe


def measure_stream(model: nn.Module, probe) -> pd.DataFrame:
    """``WATCHED`` per layer of ``model`` on ``probe``, in eval mode without gradients (the
    model's mode is restored)."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            stream, mask, exclude = stream_of(model, _on_device(probe, model))
    finally:
        model.train(was_training)
    if stream[0].shape[0] < 2:
        raise UsageError("the probe batch holds one sequence; anisotropy compares sequences: give at least 2")
    return measure(stream, mask, exclude=exclude, metrics=WATCHED)


@dataclass
class Watch:
    """What ``watch`` returns: ``step()`` after each optimiser step (unless it counts them itself),
    ``records``: ``(step, table)`` for each measurement."""

    model: nn.Module
    probe: object
    every: int
    out: Path | None = None
    tensorboard: bool = False
    optimizer: torch.optim.Optimizer | None = None
    steps: int = 0
    records: list[tuple[int, pd.DataFrame]] = field(default_factory=list)
    _writer: object = field(default=None, repr=False)
    _hook: object = field(default=None, repr=False)

    def __enter__(self) -> Watch:
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            if self.tensorboard:
                from torch.utils.tensorboard import SummaryWriter

                self._writer = SummaryWriter(str(self.out / "tensorboard"))
        if self.optimizer is not None:
            self._hook = self.optimizer.register_step_post_hook(lambda *_: self.step())
        return self

    def __exit__(self, *exc) -> None:
        if self._hook is not None:
            self._hook.remove()
        if self._writer is not None:
            self._writer.close()

    def step(self) -> None:
        """Count one optimiser step; measure on every ``every``-th."""
        self.steps += 1
        if self.steps % self.every == 0:
            self.record(self.steps)

    def record(self, step: int) -> pd.DataFrame:
        """Measure now and log it as ``step``."""
        table = measure_stream(self.model, self.probe)
        self.records.append((step, table))
        if self.out is not None:
            self._append_csv(step, table)
        if self._writer is not None:
            for row in table.to_dict("records"):
                for metric in WATCHED:
                    if not math.isnan(row[metric]):
                        self._writer.add_scalar(f"similarity/{metric}/layer{int(row['layer']):02d}", row[metric], step)
            self._writer.flush()
        return table

    def _append_csv(self, step: int, table: pd.DataFrame) -> None:
        path = self.out / CSV_NAME
        header = ["step", "layer", *measure_columns(WATCHED)]
        new = not path.exists()
        with open(path, "a", newline="") as handle:
            writer = csv.DictWriter(handle, header)
            if new:
                writer.writeheader()
            for row in table.to_dict("records"):
                writer.writerow({"step": step, **{c: row[c] for c in header[1:]}})


def check_every(every) -> None:
    """UsageError unless ``every`` is a whole number of steps >= 1."""
    if not isinstance(every, int) or isinstance(every, bool) or every < 1:
        raise UsageError(f"every must be a whole number of steps >= 1, got {every!r}")


def watch(
    model: nn.Module,
    probe,
    every: int = 100,
    out: str | Path | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    tensorboard: bool = False,
) -> Watch:
    """A context manager measuring ``model``'s per-layer similarity on ``probe`` every ``every``
    optimiser steps (see the module docstring). Checks everything, and measures the probe once,
    before it returns: a bad model, probe or interval fails here, before any training."""
    check_every(every)
    if tensorboard and out is None:
        raise UsageError("tensorboard=True needs out, the folder its logs go to")
    measure_stream(model, probe)  # a model no family matches, a bad probe: refused now
    return Watch(model, probe, every, None if out is None else Path(out), tensorboard, optimizer)
