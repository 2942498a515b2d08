"""``SimilarityCallback``: per-layer similarity of a fixed probe batch, measured every ``every``
optimiser steps of a ``transformers.Trainer`` run (``oversmooth.analyze.watch``: the same numbers
``oversmooth analyze`` gives for the checkpoint saved at that step).

>>> from oversmooth.integrations.trainer_callback import SimilarityCallback
>>> SimilarityCallback({"input_ids": None}, every=0)
Traceback (most recent call last):
...
oversmooth.errors.UsageError: every must be a whole number of steps >= 1, got 0

Use it as ``Trainer(..., callbacks=[SimilarityCallback(probe, every=100)])``: the records go to
``<output_dir>/similarity/similarity.csv`` (and TensorBoard with ``tensorboard=True``), and stay
in ``callback.watch.records``.
"""

from __future__ import annotations

from pathlib import Path

from transformers import TrainerCallback

from oversmooth.analyze.watch import Watch, check_every, watch


class SimilarityCallback(TrainerCallback):
    """``probe``: the model's input dict for a few (>= 2) sequences; ``out``: where the CSV goes
    (default ``<output_dir>/similarity``)."""

    def __init__(self, probe, every: int = 100, out: str | Path | None = None, tensorboard: bool = False):
        check_every(every)
        self.probe, self.every, self.out, self.tensorboard = probe, every, out, tensorboard
        self.watch: Watch | None = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        out = Path(args.output_dir) / "similarity" if self.out is None else Path(self.out)
        self.watch = watch(model, self.probe, self.every, out, tensorboard=self.tensorboard).__enter__()

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if self.watch is not None and state.global_step % self.every == 0:
            self.watch.record(state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        if self.watch is not None:
            self.watch.__exit__(None, None, None)
