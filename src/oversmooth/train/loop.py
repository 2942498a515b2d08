"""The training loop: generic over an ``nn.Module`` and a task; resumable bit for bit; DDP-aware.

Files in ``out_dir``: ``checkpoint.pt`` (latest, atomic), ``metrics.jsonl`` (one record per
epoch, rewritten atomically after the checkpoint it belongs to), ``results.json`` (written once
at the end, atomically), ``.lock`` (held while a run writes: a second run on the same folder is
refused, ``oversmooth.train.run_lock``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oversmooth.errors import FieldError
from oversmooth.train.checkpoint import FILENAME, load_checkpoint, rng_state, save_checkpoint, set_rng_state
from oversmooth.train.compiled import CompiledForward
from oversmooth.train.distributed import Distributed
from oversmooth.train.evaluation import autocast, evaluate, layer_metrics, validation_probe
from oversmooth.train.optim import build_optimizer
from oversmooth.train.run_lock import run_lock
from oversmooth.train.tasks import SupervisedTask
from oversmooth.train.tensorboard import log_epoch, open_writer
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.json_files import read_table
from oversmooth.utils.provenance import Provenance

METRICS_FILE, RESULTS_FILE = "metrics.jsonl", "results.json"
#: a run folder that holds files (a run, or others) is refused without resume: ``oversmooth.utils.outputs``'s rule
NOT_EMPTY = "{out} {path} already holds files; pass {resume} auto to continue the run in it, or choose another {out}"
# may change when a run is resumed (compile changes float rounding only, not what is learned)
_NOT_SETTINGS = {"checkpoint_every", "progress", "tensorboard", "compile", "label"}


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings. ``batch_size`` is global: split evenly over DDP processes."""

    epochs: int
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_fraction: float = 0.05
    grad_clip: float = 1.0  # largest gradient norm; 0: no clipping (the norm is still checked)
    seed: int = 0
    checkpoint_every: int = 0  # steps between mid-epoch checkpoints; 0: at epoch ends only
    eval_batch_size: int = 256
    probe_size: int = 32  # validation examples whose per-layer metrics are recorded each epoch
    bf16: bool = True  # autocast to bfloat16 (CUDA only)
    compile: bool = False  # torch.compile the training forward (CPU or GPU; eager if it cannot)
    progress: bool = True
    tensorboard: bool = False  # also log each epoch's record to out_dir/tensorboard
    max_steps: int | None = None  # stop after this many optimiser steps (the schedule spans them); None: all epochs
    record_every: int = 0  # steps between records (val scores, layer metrics, checkpoint); 0: at epoch ends
    label: str = ""  # what the progress bar and each record's line name first (an adaptation's arm)

    def total_steps(self, steps_per_epoch: int) -> int:
        """Optimiser steps of the whole run: ``max_steps``, or every step of ``epochs``."""
        return self.max_steps if self.max_steps is not None else steps_per_epoch * self.epochs

    def settings(self) -> dict:
        """What the run learns, as stored in its description: every field but those that may change
        on resume; ``max_steps`` and ``record_every`` only when set (runs that never set them keep
        the description they always had, so they still resume)."""
        unset = {"max_steps": None, "record_every": 0}
        return {k: v for k, v in asdict(self).items() if k not in _NOT_SETTINGS and not (k in unset and v == unset[k])}


def _seed(*parts: Any) -> int:
    """A 63-bit seed that is a pure function of ``parts``."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big") >> 1


def epoch_order(seed: int, epoch: int, size: int) -> torch.Tensor:
    """The training examples' order in ``epoch``: depends on (seed, epoch) only."""
    return torch.randperm(size, generator=torch.Generator().manual_seed(_seed(seed, "order", epoch)))


def _settings_only(description: dict | None) -> dict | None:
    """A stored description without the keys that may change on resume (older runs kept
    ``compile`` among their settings)."""
    if not description or not isinstance(description.get("train"), dict):
        return description
    return {**description, "train": {k: v for k, v in description["train"].items() if k not in _NOT_SETTINGS}}


def _differences(stored: Any, now: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """``(path, stored value, value now)`` of each leaf where two descriptions differ; tables
    are compared key by key (``train.epochs``), anything else as a whole."""
    if not (isinstance(stored, dict) and isinstance(now, dict)):
        return [] if stored == now else [(path, stored, now)]
    return [
        difference
        for key in [*stored, *(k for k in now if k not in stored)]
        for difference in _differences(stored.get(key), now.get(key), f"{path}.{key}" if path else key)
    ]


def _changed(out_dir: Path, stored: dict | None, now: dict, shown: int = 4) -> FieldError:
    """The refusal to resume the run in ``out_dir`` with other settings: each setting that differs
    (a run field or knob by name, so a CLI names its flag; else its path in the description),
    with its value in the run and now."""
    from oversmooth.mitigations.registry import knob_owners
    from oversmooth.train.run_spec import RunSpec

    names = {f.name for f in dataclasses.fields(RunSpec)} | set(knob_owners())
    parts, values, seen = [], {}, set()
    differences = sorted(_differences(stored, now), key=lambda d: d[0].startswith("model_config."))
    for path, old, new in differences:  # the settings given before what the model derived from them
        key = path.rpartition(".")[2]
        if key in seen:  # e.g. data.vocab_size and model_config.vocab_size: one is enough
            continue
        seen.add(key)
        values.update({f"old{len(parts)}": old, f"new{len(parts)}": new})
        name = "{%s}" % key if key in names else path or "description"
        parts.append(name + " {old%d}, now {new%d}" % (len(parts), len(parts)))
    more = f"; {len(parts) - shown} more" if len(parts) > shown else ""
    return FieldError(
        "{out} {path} holds a run with different settings (" + "; ".join(parts[:shown]) + more + "); "
        "give the same ones to resume it, or another {out}",
        path=out_dir,
        **values,
    )


def _write_records(out_dir: Path, records: list[dict]) -> None:
    with atomic_write(out_dir / METRICS_FILE) as handle:
        handle.writelines(json.dumps(record) + "\n" for record in records)


def _write_results(out_dir: Path, results: dict) -> None:
    with atomic_write(out_dir / RESULTS_FILE) as handle:
        json.dump(results, handle, indent=2)


def epoch_steps(task: SupervisedTask, batch_size: int) -> int:
    """Optimiser steps per epoch; FieldError when ``batch_size`` exceeds the training examples."""
    steps = task.size("train") // batch_size
    if steps < 1:
        raise FieldError(
            "{batch_size} {got} exceeds the {count} training examples; lower it",
            got=batch_size,
            count=task.size("train"),
        )
    return steps


def train(
    model: nn.Module,
    task: SupervisedTask,
    config: TrainConfig,
    out_dir: str | Path,
    env: Distributed = Distributed(),
    resume: bool = False,
    description: dict | None = None,
    at_step: Callable[[int], None] | None = None,
    provenance: Provenance | None = None,
) -> dict:
    """Train ``model`` on ``task``; return (and write) the results dict.

    ``description``: JSON-able facts about the run (model, task, method...) stored in the
    checkpoint and results; resuming with a different description is refused. ``provenance``:
    where the results come from (``utils.provenance``), recorded in them as the session that
    finished the run has it.
    ``at_step(step)``: called each time the run stands at ``step`` optimiser steps done: once
    before this session's first step (after a resume: at the step resumed), then after every
    step, before that step's record and checkpoint. It may change what the model computes (a
    schedule of its own, e.g. ``adapt --ramp``), not its parameters; a resumed run calls it again
    at the step it resumes from, so a pure function of ``step`` resumes bit for bit.
    A non-finite loss or gradient stops the run with ``status: "diverged"`` and leaves the last
    good checkpoint in place. A run whose ``results.json`` exists is not trained again on resume:
    ``model`` gets the weights of its final checkpoint and its results are returned (with other
    settings it is refused).
    """
    out_dir = Path(out_dir)
    steps_per_epoch = epoch_steps(task, config.batch_size)
    if config.batch_size % env.world_size:
        raise FieldError(
            "{batch_size} {got} does not split over {count} processes; make it a multiple",
            got=config.batch_size,
            count=env.world_size,
        )
    if config.max_steps is not None and config.max_steps < 1:
        raise FieldError("{max_steps} must be at least 1, got {got}", got=config.max_steps)
    if config.record_every < 0:
        raise FieldError("{record_every} must be >= 0, got {got}", got=config.record_every)
    description = {**(description or {}), "train": config.settings()}
    found = set(out_dir.iterdir()) if out_dir.is_dir() else None  # what was there before this run
    locked = False  # a run refused by another's lock leaves that run's files alone
    try:
        with run_lock(out_dir) if env.is_main else contextlib.nullcontext():
            locked = True
            finished = _finished(model, out_dir, description) if resume else None
            if finished is not None:
                return finished
            run = _Run(model, task, config, out_dir, env, description, steps_per_epoch, at_step, provenance)
            return run.train(resume)
    except BaseException:  # Ctrl-C, a kill, an error: before a checkpoint, leave the folder as found
        if env.is_main and locked:
            _forget_unsaved(out_dir, found)
        raise


def _forget_unsaved(out_dir: Path, found: set[Path] | None) -> None:
    """Remove what a run that stopped before its first checkpoint wrote into ``out_dir`` (its lock
    file, empty ``metrics.jsonl``, TensorBoard folder), and the folder if the run made it, so the
    same command starts the run again; ``found``: the folder's entries before the run (None: none).
    A run with a checkpoint or results keeps everything: it resumes."""
    if not out_dir.is_dir() or (out_dir / FILENAME).is_file() or (out_dir / RESULTS_FILE).is_file():
        return
    for path in set(out_dir.iterdir()) - (found or set()):
        with contextlib.suppress(OSError):
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    if found is None:
        with contextlib.suppress(OSError):
            out_dir.rmdir()


def _finished(model: nn.Module, out_dir: Path, description: dict) -> dict | None:
    """The results of the finished run of ``description`` in ``out_dir`` (``model`` gets its trained,
    or last good, weights), or None where none finished; a finished run of other settings is refused
    (``_changed``), never trained over."""
    if not (out_dir / RESULTS_FILE).is_file():
        return None
    results = read_table(out_dir / RESULTS_FILE, {"status": str}, f"delete {out_dir} to train the run again")
    stored = _settings_only(results.get("description"))
    if stored != description:
        raise _changed(out_dir, stored, description)
    if (out_dir / FILENAME).is_file():
        model.load_state_dict(load_checkpoint(out_dir / FILENAME)["model"])
    return results


class _Run:
    """One training session of a run: its optimiser, where it stands (``step``, ``records``, the
    running ``epoch_loss`` = [sum of step losses, steps]) and its timing, in the order ``train``
    takes its steps: restore, then epochs, then results."""

    def __init__(
        self,
        model: nn.Module,
        task: SupervisedTask,
        config: TrainConfig,
        out_dir: Path,
        env: Distributed,
        description: dict,
        steps_per_epoch: int,
        at_step: Callable[[int], None] | None = None,
        provenance: Provenance | None = None,
    ):
        self.model, self.task, self.config, self.out_dir, self.env = model, task, config, out_dir, env
        self.description, self.steps_per_epoch, self.provenance = description, steps_per_epoch, provenance
        self.at_step = at_step or (lambda step: None)
        self.total_steps = total_steps = config.total_steps(steps_per_epoch)
        model.to(env.device)
        self.optimizer, self.scheduler = build_optimizer(
            model, config.lr, config.weight_decay, round(config.warmup_fraction * total_steps), total_steps
        )
        self.step, self.records, self.elapsed = 0, [], 0.0
        self.epoch_loss = torch.zeros(2, dtype=torch.float64)
        self.started, self.session_steps, self.step_seconds = time.perf_counter(), 0, 0.0

    def train(self, resume: bool) -> dict:
        self.restore(resume)
        self.at_step(self.step)
        if self.env.is_main:
            _write_records(self.out_dir, self.records)
        forward = self.model
        if self.env.enabled:
            use_cuda = self.env.device.type == "cuda"
            forward = nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.env.device.index] if use_cuda else None
            )
        runner = CompiledForward(forward, self.config.compile, quiet=not self.env.is_main)
        probe_inputs = validation_probe(self.task, self.config.probe_size).to(self.env.device)
        writer = open_writer(self.out_dir) if self.config.tensorboard and self.env.is_main else None
        self.started = time.perf_counter()
        diverged = None
        self.model.train()
        epochs = -(-self.total_steps // self.steps_per_epoch)
        # a checkpoint at the last step was taken after its record: nothing is left to do
        start = self.step // self.steps_per_epoch if self.step < self.total_steps else epochs
        for epoch in range(start, epochs):
            diverged = self.train_epoch(epoch, runner, probe_inputs, writer)
            if diverged:
                break
            if not self.config.record_every:
                self.end_epoch(epoch, probe_inputs, writer)
        if writer is not None:
            writer.close()
        return self.finish(diverged, runner.compiled)

    def restore(self, resume: bool) -> None:
        """Continue from the checkpoint in ``out_dir``, if there is one (refused without ``resume``
        or with other settings)."""
        path = self.out_dir / FILENAME
        if not path.is_file():
            return
        if not resume:
            raise FieldError(NOT_EMPTY, path=self.out_dir)
        state = load_checkpoint(path)
        stored = _settings_only(state["description"])
        if stored != self.description:
            raise _changed(self.out_dir, stored, self.description)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"])
        self.step, self.records, self.elapsed = state["step"], state["records"], state["elapsed"]
        self.epoch_loss = state["epoch_loss"]
        if self.env.is_main:
            print(
                f"resuming {self.out_dir} at step {self.step} (epoch {self.step // self.steps_per_epoch + 1})",
                file=sys.stderr,
            )

    def checkpoint(self) -> None:
        if self.env.is_main:
            save_checkpoint(
                self.out_dir / FILENAME,
                {
                    "model": self.model.state_dict(),
                    "optimizer": self.optimizer.state_dict(),
                    "scheduler": self.scheduler.state_dict(),
                    "rng": rng_state(),
                    "step": self.step,
                    "records": self.records,
                    "epoch_loss": self.epoch_loss,
                    "description": self.description,
                    "elapsed": self.elapsed + time.perf_counter() - self.started,
                },
            )
        self.env.barrier()

    def train_epoch(self, epoch: int, runner: CompiledForward, probe_inputs: torch.Tensor, writer) -> str | None:
        """The optimiser steps left in ``epoch`` (up to the run's last step), recording every
        ``record_every`` steps when set; returns why the run diverged, or None."""
        config = self.config
        order = epoch_order(config.seed, epoch, self.task.size("train"))
        first = self.step - epoch * self.steps_per_epoch
        last = min(self.steps_per_epoch, self.total_steps - epoch * self.steps_per_epoch)
        bar = _progress(config, self.env, epoch, last, first)
        try:
            for position in range(first, last):
                step_started = time.perf_counter()
                inputs, targets = training_batch(self.task, order, epoch, position, config, self.env)
                mean_loss, diverged = optimizer_step(
                    runner, self.model, self.task, inputs, targets, self.optimizer, config, self.env
                )
                if diverged:
                    return f"{diverged} at step {self.step + 1}"
                self.scheduler.step()
                self.step += 1
                self.at_step(self.step)
                self.session_steps += 1
                self.epoch_loss += torch.tensor([mean_loss, 1.0], dtype=torch.float64)
                self.step_seconds += time.perf_counter() - step_started
                if bar is not None:
                    rate = self.session_steps * config.batch_size / self.step_seconds
                    tokens = {"tok_s": f"{rate * inputs.shape[1]:.0f}"} if not inputs.is_floating_point() else {}
                    bar.set_postfix(loss=f"{mean_loss:.4f}", ex_s=f"{rate:.0f}", **tokens, refresh=False)
                    bar.update()
                if config.record_every and (self.step % config.record_every == 0 or self.step == self.total_steps):
                    self.end_epoch(epoch, probe_inputs, writer)
                elif config.checkpoint_every and self.step % config.checkpoint_every == 0 and position + 1 < last:
                    self.checkpoint()
        finally:
            if bar is not None:
                bar.close()
        return None

    def end_epoch(self, epoch: int, probe_inputs: torch.Tensor, writer) -> None:
        """Score the epoch (or the steps since the last record, with ``record_every``), checkpoint,
        then record it (``metrics.jsonl``, stderr, tensorboard)."""
        config, env = self.config, self.env
        record = {
            "epoch": epoch + 1,
            "step": self.step,
            "lr": self.scheduler.get_last_lr()[0],
            "train_loss": (self.epoch_loss[0] / self.epoch_loss[1]).item(),
            "val": evaluate(self.model, self.task, "val", config.eval_batch_size, env, config.bf16),
        }
        if env.is_main and hasattr(self.model, "run_with_cache"):
            record["layers"] = layer_metrics(self.model, probe_inputs)
        self.records.append(record)
        self.epoch_loss = torch.zeros(2, dtype=torch.float64)
        self.checkpoint()  # first: a crash in between leaves metrics.jsonl behind its checkpoint, never ahead
        if env.is_main:
            _write_records(self.out_dir, self.records)
            print(_summary(record, -(-self.total_steps // self.steps_per_epoch), config.label), file=sys.stderr)
            if writer is not None:
                log_epoch(writer, record)

    def finish(self, diverged: str | None, compiled: bool) -> dict:
        """The results dict, written to ``results.json`` by the main process."""
        config, env = self.config, self.env
        seconds = time.perf_counter() - self.started
        results = {
            "status": "diverged" if diverged else "completed",
            "epochs": len(self.records),
            "steps": self.step,
            "val": self.records[-1]["val"] if self.records else None,
            "test": None
            if diverged
            else evaluate(self.model, self.task, "test", config.eval_batch_size, env, config.bf16),
            "wall_seconds": self.elapsed + seconds,
            "train_examples_per_second": (
                self.session_steps * config.batch_size / self.step_seconds if self.session_steps else None
            ),
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "compiled": compiled,
            "device": str(env.device),
            "world_size": env.world_size,
            "description": self.description,
        }
        if self.provenance is not None:
            results["provenance"] = self.provenance.to_json()
        if diverged:
            results["diverged"] = diverged
            if env.is_main:
                path = self.out_dir / FILENAME
                kept = f"the last good checkpoint ({path}) is kept" if path.is_file() else "no checkpoint was reached"
                print(
                    f"diverged: {diverged}; stopping, {kept}; results.json records status 'diverged'", file=sys.stderr
                )
        if env.is_main:
            _write_results(self.out_dir, results)
        env.barrier()
        return results


def training_batch(
    task: SupervisedTask, order: torch.Tensor, epoch: int, position: int, config: TrainConfig, env: Distributed
) -> tuple[torch.Tensor, torch.Tensor]:
    """This process's share of batch ``position`` of ``epoch`` (``order``: ``epoch_order``), on its
    device; augmentation is seeded by (seed, epoch, position), so it is the same on resume."""
    rows = order[position * config.batch_size : (position + 1) * config.batch_size]
    generator = torch.Generator().manual_seed(_seed(config.seed, "augment", epoch, position))
    inputs, targets = task.batch("train", rows, generator)
    local_batch = config.batch_size // env.world_size
    local = slice(env.rank * local_batch, (env.rank + 1) * local_batch)
    return inputs[local].to(env.device), targets[local].to(env.device)


def optimizer_step(
    runner: CompiledForward,
    model: nn.Module,
    task: SupervisedTask,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    optimizer: torch.optim.Optimizer,
    config: TrainConfig,
    env: Distributed,
) -> tuple[float, str | None]:
    """Forward, backward, clip, AdamW step. Returns the loss averaged over processes, and why
    the step was refused (a non-finite loss or gradient norm: every process agrees) or None."""

    def forward_backward(forward: nn.Module) -> tuple[float, str | None]:
        with autocast(env.device, config.bf16):
            loss = task.loss(forward(inputs), targets)
        mean_loss = env.all_reduce_sum(loss.detach().double().cpu()).item() / env.world_size
        if not math.isfinite(mean_loss):
            return mean_loss, f"loss became {mean_loss}"
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        return mean_loss, None

    mean_loss, refused = runner.run(forward_backward)
    if refused:
        return mean_loss, refused
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip or math.inf).item()
    if not math.isfinite(grad_norm):
        return mean_loss, f"gradient norm became {grad_norm}"
    optimizer.step()
    return mean_loss, None


def _progress(config: TrainConfig, env: Distributed, epoch: int, total: int, initial: int):
    if not (config.progress and env.is_main):
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        initial=initial,
        desc=_labelled(config.label, f"epoch {epoch + 1}/{config.epochs}"),
        unit="step",
        leave=False,
        mininterval=1.0,
    )


def _summary(record: dict, epochs: int, label: str = "") -> str:
    scores = "  ".join(f"val_{k} {v:.4f}" for k, v in record["val"].items())
    line = f"epoch {record['epoch']}/{epochs}  step {record['step']}  train_loss {record['train_loss']:.4f}  {scores}"
    return _labelled(label, line)


def _labelled(label: str, text: str) -> str:
    """``text`` named by the run's ``TrainConfig.label`` first (an adaptation's arm), if it has one."""
    return f"{label}  {text}" if label else text
