"""``adapt(config) -> AdaptResult``: every arm of one adaptation, each a run of the train loop.

Folder ``config.out``:
- ``adapt_config.json``: the config (a later call on the folder must give the same settings);
- ``arms/<arm>/``: the train loop's files for that arm (``metrics.jsonl``, ``results.json``, and
  ``checkpoint.pt`` while the arm runs: it is deleted once the arm's model is saved),
  ``start.json`` (held-out scores and layer metrics before any step), ``memory.json`` (the peak
  memory of the session that trained it: ``utils.memory.PeakMemory``) and ``model/`` (the adapted
  model; a pretrained model's patch is recorded in its config; a distillation control's, which
  took no step, refers to its source instead of copying it: ``hf.model_reference``, which ``hf.load``
  follows; ``ARM_RECORDS`` are the files that let a rerun return a finished arm without its model);
- ``frontier.json``, with ``knobs="frontier"``: analyze's sweep the knobs were read off
  (``oversmooth.adapt.frontier_knobs``), run before the first arm;
- ``adapt.json``, ``adapt.csv``, ``adapt.png``, ``report.md`` (``oversmooth.adapt.report``).

The arms (``oversmooth.adapt.arms``): the control, then each method's, named by method and knobs.
They run one after the other, control first; each is resumable on its own, so a killed call
rerun with the same config continues where it stopped and ends bit-identical; a finished one
returns the stored result without training. ``adapt_arms`` trains only some of them (each arm
seeds itself), so several processes can share one adaptation's arms.

``ramp`` N > 0: a patched arm trains with its knobs brought in linearly over the first N steps
(``oversmooth.adapt.ramp``; the train loop's ``at_step``), its start scored at the full knobs.

A distillation control arm takes no step (lr 0): it is its own teacher, so its objective is at its
minimum (0) from the start, and what AdamW would do there (steps on rounding noise, which Adam
scales up to the size of the lr, and weight decay) is no effect of training on the objective.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from oversmooth.adapt import frontier_knobs
from oversmooth.adapt.arms import Arm, methods_of, plan_arms
from oversmooth.adapt.config import FRONTIER, AdaptConfig, setting
from oversmooth.adapt.result import AdaptResult, ArmResult
from oversmooth.errors import FieldError, UsageError
from oversmooth.mitigations import registry
from oversmooth.train.checkpoint import FILENAME, rng_state, set_rng_state
from oversmooth.train.distributed import Distributed, setup_distributed
from oversmooth.train.evaluation import evaluate, layer_metrics, validation_probe
from oversmooth.train.loop import METRICS_FILE, RESULTS_FILE, TrainConfig, train
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.memory import PeakMemory
from oversmooth.utils.outputs import check_output_dir, holds_files
from oversmooth.utils.provenance import Provenance

CONFIG_FILE, RESULT_FILE, START_FILE, MEMORY_FILE = "adapt_config.json", "adapt.json", "start.json", "memory.json"
#: a finished arm's records, without its weights: copied with ``CONFIG_FILE`` into a new ``out``, they
#: let a rerun return that arm's result without training it (its ``model/`` is then not written)
ARM_RECORDS = (RESULTS_FILE, METRICS_FILE, START_FILE, MEMORY_FILE)


def open_source(config: AdaptConfig):
    """The thing adapted: a model ``oversmooth train`` saved (``train.saved_run``), else a pretrained model."""
    from oversmooth.adapt.train_run import TrainRunSource, is_unfinished_train_run
    from oversmooth.train.saved_run import saved_run

    saved = saved_run(config.model)  # a train run, its model/, an adaptation arm of one
    if saved is not None:
        return TrainRunSource(config, saved)
    if is_unfinished_train_run(config.model):
        raise UsageError(
            f"{config.model} holds an `oversmooth train` run that has not finished (no results.json "
            "and model/ yet); finish it first (oversmooth train --resume auto)"
        )
    from oversmooth.adapt.pretrained import PretrainedSource

    return PretrainedSource(config)


def check_out(config: AdaptConfig) -> Path:
    """``out`` must be writable and hold no other adaptation (nothing is created here)."""
    try:
        out = check_output_dir(config.out, "out")
    except UsageError as error:
        raise FieldError.leading("out", str(error)) from None
    stored = out / CONFIG_FILE
    if stored.is_file():
        try:
            other = AdaptConfig.from_dict(json.loads(stored.read_text()))
        except (ValueError, TypeError, UsageError):
            raise FieldError("{out} {got} holds a damaged %s; choose another {out}" % CONFIG_FILE, got=out) from None
        if setting(other) != setting(config):
            changed = sorted(k for k, v in setting(config).items() if setting(other).get(k) != v)
            raise FieldError(
                "{out} {got} holds another adaptation (it differs in %s); choose another {out}, or rerun "
                "with that adaptation's settings to resume it" % ", ".join("{%s}" % k for k in changed),
                got=out,
            )
    elif holds_files(out):
        raise FieldError("{out} {got} is a folder with other files in it; choose a new or empty {out}", got=out)
    return out


def adapt(config: AdaptConfig, command: str | None = None) -> AdaptResult:
    """Run (or resume, or return) the adaptation ``config`` describes; see the module docstring.
    ``command``: the command line that asked for it, for its provenance (None: the Python API).

    Every refusal (a ``UsageError`` naming the problem and the fix) comes before anything is
    written, but an arm's that another process is training (``adapt_arms``): its lock refuses it
    when its turn comes."""
    source, out = _opened(config)
    if (out / RESULT_FILE).is_file():
        return AdaptResult.from_dict(json.loads((out / RESULT_FILE).read_text()))
    command = command or f"oversmooth.adapt.adapt(AdaptConfig(...)) from Python, the settings in {CONFIG_FILE}"
    run = _Prepared.of(config, source, out, command)
    arms = {arm.name: run.arm(arm) for arm in run.plan}
    result = AdaptResult(
        config=run.config.to_dict(),
        source=source.description,
        objective=source.objective,
        arms=arms,
        data=sizes(run.task),
        methods=run.notes,
        frontier=run.choices,
        provenance=run.provenance,
    )
    from oversmooth.adapt.report import write_outputs

    write_outputs(result, out)
    with atomic_write(out / RESULT_FILE) as handle:
        json.dump(result.to_dict(), handle, indent=2)
    return result


def adapt_arms(config: AdaptConfig, names: str | tuple[str, ...], command: str | None = None) -> dict[str, ArmResult]:
    """Train (or resume, or return) only the arms ``names`` (one name, or several) of the
    adaptation ``config`` describes, in the adaptation's order, then stop: no ``adapt.json``. Each
    arm seeds itself, so processes given other arms and the same ``out`` train an adaptation's arms
    side by side, each bit-identical to the arm ``adapt`` would train (at the same ``threads``);
    ``adapt`` then returns them and trains any left. An unknown name is refused before anything is
    written; an arm another process is training, by that arm's lock (``train.run_lock``), after this
    call's earlier arms."""
    names = (names,) if isinstance(names, str) else tuple(names)
    if not names:
        raise UsageError("name at least one arm to train (adapt trains them all)")
    source, out = _opened(config)
    command = command or f"oversmooth.adapt.adapt_arms(AdaptConfig(...), {names!r}) from Python"
    run = _Prepared.of(config, source, out, command, names)
    return {arm.name: run.arm(arm) for arm in run.plan if arm.name in names}


def _opened(config: AdaptConfig) -> tuple[object, Path]:
    """``config`` checked, its model opened and its ``out`` checked (nothing written)."""
    config.check()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise UsageError("adapt runs in one process (its arms run one after the other); start it without torchrun")
    if config.device == "cuda" and not torch.cuda.is_available():
        raise FieldError("{device} is cuda but no CUDA device is visible; make it auto or cpu")
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    source = open_source(config)
    return source, check_out(config)


@dataclass(frozen=True)
class _Prepared:
    """An adaptation ready to train its arms: its config with the source's defaults filled in, its
    data, arms, knob notes and frontier choices, device and provenance; ``out`` holds its config."""

    config: AdaptConfig
    source: object
    out: Path
    task: object
    plan: list[Arm]
    notes: dict[str, str]
    choices: dict | None
    env: Distributed
    provenance: Provenance

    @classmethod
    def of(cls, given: AdaptConfig, source, out: Path, command: str, names: tuple[str, ...] = ()) -> _Prepared:
        """The refusals first (data too short, unknown arm ``names``, overflowing knobs), then the
        first writes: ``out``'s config and frontier choices."""
        config = replace(given, **{k: v for k, v in source.defaults.items() if getattr(given, k) is None})
        task = source.task()  # the data's own refusals (too little text for a sequence) come before any write
        if task.size("train") < config.batch_size:
            raise FieldError(
                "{batch_size} {got} exceeds the {size} training examples; lower it or give more data",
                got=config.batch_size,
                size=task.size("train"),
            )
        methods, left_out = methods_of(config, source)
        choices = _frontier(config, source, methods, out) if config.knobs == FRONTIER else None
        plan, notes = plan_arms(config, source, methods, left_out, choices)
        unknown = [name for name in names if name not in {arm.name for arm in plan}]
        if unknown:
            raise UsageError(
                f"no arm {unknown[0]} in this adaptation; its arms are {', '.join(arm.name for arm in plan)}"
            )
        check_overflow(source, task, plan)
        out.mkdir(parents=True, exist_ok=True)
        if not (out / CONFIG_FILE).is_file():
            given.save(out / CONFIG_FILE)  # as given: a rerun compares its own settings with these
        if choices is not None and not (out / frontier_knobs.FILE).is_file():
            with atomic_write(out / frontier_knobs.FILE) as handle:
                json.dump(choices, handle, indent=2)
        env = setup_distributed(config.device)
        provenance = Provenance.gather(
            command, env.device, {"seed": config.seed}, {**source.identity, "data sha256": task.digest()}
        )
        return cls(config, source, out, task, plan, notes, choices, env, provenance)

    def arm(self, arm: Arm) -> ArmResult:
        """Train (or resume, or return) ``arm`` in ``out/arms/<name>``."""
        return _run_arm(
            self.config, self.source, self.task, self.env, self.out / "arms" / arm.name, arm, self.provenance
        )


def _frontier(config: AdaptConfig, source, methods: tuple[str, ...], out: Path) -> dict:
    """``knobs="frontier"``: the choices kept in ``out`` (the sweep ran before this adaptation's
    first arm), else those of ``frontier_from``, else the sweep run now
    (``oversmooth.adapt.frontier_knobs``)."""
    path = out / frontier_knobs.FILE
    if path.is_file():
        return json.loads(path.read_text())
    if config.frontier_from is not None:
        return frontier_knobs.reused(config.frontier_from, config, methods)
    return frontier_knobs.frontier(config, source.loaded, methods)


def check_overflow(source, task, plan: list[Arm]) -> None:
    """Each patched arm on a few validation examples: NaN or Inf in its outputs or stream states,
    where the unpatched model's are finite, come from its knobs (far out of scale), so they are
    refused (``FieldError`` naming the knobs and their defaults) before anything is written."""
    with torch.no_grad():  # a distillation batch runs the teacher
        inputs = validation_probe(task, 4)  # overflow shows on any example
    for arm in plan[1:]:
        if _finite(source.arm(arm.method, arm.knobs), inputs):
            continue
        if not _finite(source.arm(None), inputs):
            raise UsageError(
                "the model's outputs or states hold NaN or Inf before any step, unpatched too; check its weights"
            )
        names = {registry.method(arm.method).flag(k): k for k in arm.given}  # flag -> knob field
        fix = "bring the knobs closer to their defaults (%s)" % ", ".join("{%s} {default_%s}" % (n, n) for n in names)
        raise FieldError(
            "with {method} {method_name}%s this model's states overflow (NaN or Inf before any step; "
            "unpatched they are finite); %s"
            % ("".join(" {%s} {value_%s}" % (n, n) for n in names), fix if names else "choose another {method}"),
            method_name=arm.method,
            **{f"value_{n}": arm.given[k] for n, k in names.items()},
            **{f"default_{n}": source.knob_defaults(arm.method)[k] for n, k in names.items()},
        )


def _finite(model: torch.nn.Module, inputs: torch.Tensor) -> bool:
    """Whether ``model``'s outputs and stream states on ``inputs`` are all finite."""
    model.eval()
    inputs = inputs.to(next(model.parameters()).device)
    with torch.no_grad():
        outputs, (_, cache) = model(inputs), model.run_with_cache(inputs)
    return all(bool(torch.isfinite(t).all()) for t in (outputs, *cache.stream()))


def sizes(task) -> dict[str, dict[str, int]]:
    """Per split, the examples the arms train or are scored on, and for text the tokens they hold
    (examples x tokens per example)."""
    seq_len = getattr(task, "seq_len", None)  # image tasks have none
    return {
        split: {"examples": task.size(split), **({"tokens": task.size(split) * seq_len} if seq_len else {})}
        for split in ("train", "val", "test")
    }


def train_config(config: AdaptConfig, steps_per_epoch: int) -> TrainConfig:
    return TrainConfig(
        epochs=math.ceil(config.steps / steps_per_epoch),
        batch_size=config.batch_size,
        lr=config.lr,
        weight_decay=config.weight_decay,
        warmup_fraction=config.warmup,
        grad_clip=config.grad_clip,
        seed=config.seed,
        checkpoint_every=config.every,
        eval_batch_size=4 * config.batch_size,
        probe_size=min(32, config.eval_sequences),
        bf16=config.dtype == "bfloat16",
        compile=False,
        progress=config.progress,
        max_steps=config.steps,
        record_every=config.every,
    )


def _run_arm(config: AdaptConfig, source, task, env, folder: Path, arm: Arm, provenance: Provenance) -> ArmResult:
    """One arm: its start scores, then the train loop (resumed if it was cut), then its model (not
    where the weights are gone: ``ARM_RECORDS``); the checkpoint of a completed arm is deleted once
    its model is saved (a diverged arm keeps its last good one). Its peak memory is watched from
    before its model is built to its end."""
    spe = task.size("train") // config.batch_size
    method, knobs = arm.method, arm.knobs
    trained_before = (folder / RESULTS_FILE).is_file()
    weights_kept = not trained_before or (folder / FILENAME).is_file()  # not where only ARM_RECORDS were copied
    watch = PeakMemory(env.device)
    torch.manual_seed(config.seed)
    model = source.arm(method, knobs).to(env.device)
    folder.mkdir(parents=True, exist_ok=True)
    cfg = replace(train_config(config, spe), label=arm.name)  # its progress lines name the arm
    unchanged = method is None and source.objective == "distill"  # a control at its minimum: no step (module docstring)
    if unchanged:
        cfg = replace(cfg, lr=0.0)
    start = _start(model, task, cfg, env, folder)
    description = {
        "adapt": setting(config),
        "source": source.description,
        "arm": arm.name,
        "method": method or source.description.get("method", "unpatched"),
        "knobs": knobs,
    }
    ramp = source.ramp(model, method, knobs) if method and config.ramp else None  # from the start, not at it
    torch.manual_seed(config.seed)
    results = train(
        model, task, cfg, folder, env, resume=True, description=description, at_step=ramp, provenance=provenance
    )
    if results["status"] == "completed":
        if not (folder / "model").is_dir() and (unchanged or weights_kept):
            source.refer(folder / "model") if unchanged else source.save(model, folder / "model", method, knobs)
        (folder / FILENAME).unlink(missing_ok=True)  # resume needs it only while the arm runs
    records = [json.loads(line) for line in (folder / METRICS_FILE).read_text().splitlines() if line]
    memory = _memory(folder, None if trained_before else watch.read())
    return ArmResult.of(
        arm.name, description["method"], knobs, start, records, results, ramp and ramp.evaluated, cfg.batch_size, memory
    )


def _memory(folder: Path, reading: dict | None) -> dict | None:
    """The arm's peak memory: ``reading``, kept in ``memory.json``, from a session that trained it;
    else (``reading`` None: it had finished before this call) the one kept, or None, then kept
    (a call cut between the arm's results and this file: the arm's ``ARM_RECORDS`` are complete)."""
    path = folder / MEMORY_FILE
    if reading is None and path.is_file():
        return json.loads(path.read_text())
    with atomic_write(path) as handle:
        json.dump(reading, handle, indent=2)
    return reading


def _start(model, task, cfg: TrainConfig, env, folder: Path) -> dict:
    """Held-out scores and layer metrics of the arm's model before any step (kept in
    ``start.json``; the RNG is left as it was)."""
    path = folder / START_FILE
    if path.is_file():
        return json.loads(path.read_text())
    saved = rng_state()
    probe = validation_probe(task, cfg.probe_size).to(env.device)
    start = {
        "step": 0,
        "val": evaluate(model, task, "val", cfg.eval_batch_size, env),
        "layers": layer_metrics(model, probe),
    }
    set_rng_state(saved)
    with atomic_write(path) as handle:
        json.dump(start, handle, indent=2)
    return start
