"""Run a ``RunSpec``: check it, load the data, build the model, train, save the model.

``run(spec)`` is what ``oversmooth train`` (and each study cell, through ``--spec``) does. Every
refusal is a ``UsageError`` raised before anything is written; those about one field are
``FieldError`` naming it, so the CLI can name its flag instead.
"""

from __future__ import annotations

from pathlib import Path

import torch

from oversmooth.data.text_source import PREFIX, parse_text
from oversmooth.errors import FieldError, UsageError
from oversmooth.train.compile_rule import should_compile
from oversmooth.train.distributed import Distributed, setup_distributed, teardown_distributed
from oversmooth.train.evaluation import validation_probe
from oversmooth.train.loop import NOT_EMPTY, TrainConfig, epoch_steps, train
from oversmooth.train.run_spec import RunSpec
from oversmooth.train.task_factory import DataOptions, make_task, task_model_kind
from oversmooth.train.tasks import SupervisedTask
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.memory import check_memory
from oversmooth.utils.outputs import check_output_dir, holds_files
from oversmooth.utils.plotting import figure_formats
from oversmooth.utils.provenance import Provenance

DEFAULT_SHAPE_PRESET = {"vit": "vit-cpu", "lm": "lm-cpu"}


def model_config(spec: RunSpec, **geometry):
    """The model config from the preset, the shape fields and the method; ``geometry`` comes from
    the task (image size and classes, or vocabulary and context). Raises UsageError early."""
    from oversmooth.layers import MitigationConfig
    from oversmooth.models import CausalLMConfig, ViTConfig

    shape = {
        k: getattr(spec, k)
        for k in ("depth", "width", "heads", "mlp_ratio", "norm", "ln_sign", "dropout")
        if getattr(spec, k) is not None
    }
    shape["mitigation"] = MitigationConfig.parse(spec.method, causal=spec.model == "lm", **spec.knobs)
    family = ViTConfig if spec.model == "vit" else CausalLMConfig
    return family.preset(spec.preset or DEFAULT_SHAPE_PRESET[spec.model], **shape, **geometry)


def check_run(spec: RunSpec):
    """Everything about ``spec`` that can be checked without its data: fields, task and model,
    a writable ``out`` (not created) that holds no files unless resumed, method and shape, memory.
    Returns the model config without the task's geometry."""
    spec.check()
    task_model_kind(spec.task, spec.model)
    if spec.out is None:
        raise FieldError("{out} is missing: give the run folder")
    try:
        check_output_dir(spec.out, "out")
    except UsageError as error:
        raise FieldError.leading("out", str(error)) from None
    if spec.resume != "auto" and holds_files(spec.out):
        raise FieldError(NOT_EMPTY, path=spec.out)
    if spec.tensorboard:
        from oversmooth.train.tensorboard import summary_writer_class

        summary_writer_class()
    shape = model_config(spec)
    try:  # float32 weights, their gradients and AdamW's two moments: 16 bytes a weight
        check_memory(16 * shape.block_parameters, f"a {shape.depth} x {shape.width} model", "")
    except UsageError as error:
        raise FieldError("{needs}; lower {depth} or {width}", needs=str(error).rstrip("; ")) from None
    return shape


def data_options(spec: RunSpec) -> DataOptions:
    return DataOptions(
        spec.data_dir,
        spec.val_size,
        spec.augment,
        spec.label_smoothing,
        spec.seq_len,
        spec.vocab_size,
        spec.passage_chars,
        spec.limit_train,
        spec.text_column,
    )


def train_config(spec: RunSpec, task: SupervisedTask, device: torch.device) -> TrainConfig:
    """The loop's settings; compile mode ``auto`` decided by ``compile_rule`` for this task's steps."""
    steps = spec.epochs * (task.size("train") // spec.batch_size)
    return TrainConfig(
        epochs=spec.epochs,
        batch_size=spec.batch_size,
        lr=spec.lr,
        weight_decay=spec.weight_decay,
        warmup_fraction=spec.warmup,
        grad_clip=spec.grad_clip,
        seed=spec.seed,
        checkpoint_every=spec.checkpoint_every,
        probe_size=spec.probe_size,
        bf16=spec.bf16,
        compile=should_compile(spec.compile, spec.model, steps, device.type),
        progress=spec.progress,
        tensorboard=spec.tensorboard,
    )


def run(spec: RunSpec) -> dict | None:
    """Train the run ``spec`` describes into ``spec.out`` (``oversmooth.train.loop`` for its files)
    and save the model (``out/model``) and a text task's tokenizer (``out/tokenizer.json``).
    Returns the results dict on the main process, None on the others (DDP)."""
    check_run(spec)  # bad fields, depth, heads or method: fail before loading any data
    if spec.threads is not None:
        torch.set_num_threads(spec.threads)
    if spec.device == "cuda" and not torch.cuda.is_available():
        raise FieldError("{device} is cuda but no CUDA device is visible; make it auto or cpu")
    env = setup_distributed(spec.device)
    try:
        results = _run(spec, env)
        env.barrier()  # no process leaves the group while another (the main one, saving) still works in it
        return results
    finally:
        teardown_distributed()


def _run(spec: RunSpec, env: Distributed) -> dict | None:
    from oversmooth.models import save_model
    from oversmooth.train.plots import write_run_plots

    options = data_options(spec)
    if not env.is_main:  # the main process trains and caches the tokenizer first
        env.barrier()
    task, tokenizer = make_task(spec.task, spec.model, options)
    if env.is_main:
        env.barrier()
    model = build_model(spec, task)
    description = {
        "task": spec.task,
        "model": spec.model,
        "model_config": model.cfg.to_dict(),
        "data": options.described(),
        "method": model.cfg.mitigation.name,
    }
    out = Path(spec.out)
    provenance = Provenance.gather(spec.command(), env.device, {"seed": spec.seed}, data_identity(spec.task, task, out))
    results = train(
        model,
        task,
        train_config(spec, task, env.device),
        out,
        env,
        resume=spec.resume == "auto",
        description=description,
        provenance=provenance,
    )
    if not env.is_main:
        return None
    if results["status"] == "completed":
        save_model(model, out / "model")
    inputs = "images" if spec.model == "vit" else f"sequences x {spec.seq_len} tokens"
    probe = f"the first {min(spec.probe_size, task.size('val'))} validation {inputs}"
    title = f"{spec.model} {model.cfg.mitigation.name}, {spec.task} ({out.name})"
    write_run_plots(out, title, probe, figure_formats(spec.format))
    if tokenizer is not None:
        with atomic_write(out / "tokenizer.json") as handle:
            handle.write(tokenizer.to_str())
    return results


def shown_task(task_name: str, out: str | Path) -> str:
    """Task ``task_name`` as a report in folder ``out`` names it: ``text:...`` with its files
    relative to ``out`` (``TextSource.shown``), any other as it is."""
    return parse_text(task_name).shown(out) if task_name.startswith(PREFIX) else task_name


def data_identity(task_name: str, task: SupervisedTask, out: str | Path) -> dict[str, str]:
    """What a run in folder ``out`` trains on: its task ``task_name`` (``shown_task``) and the
    sha256 of ``task``'s data as the model sees it (``SupervisedTask.digest``)."""
    return {"task": shown_task(task_name, out), "data sha256": task.digest()}


def build_model(spec: RunSpec, task: SupervisedTask) -> torch.nn.Module:
    """The model ``spec`` trains on ``task``, initialised from its seed. Refused (FieldError) before
    anything is written when it does not fit the task's data (a patch size that does not divide
    the images, a batch larger than the training split) or overflows before training."""
    from oversmooth.models import CausalLM, ViT

    cfg = model_config(spec, **_geometry(spec, task))
    epoch_steps(task, spec.batch_size)
    torch.manual_seed(spec.seed)
    model = (ViT if spec.model == "vit" else CausalLM)(cfg)
    check_initial_outputs(model, task, spec)
    return model


def check_initial_outputs(model: torch.nn.Module, task: SupervisedTask, spec: RunSpec) -> None:
    """The freshly built model on a few validation examples: outputs holding NaN or Inf before any
    training step come from the settings (a knob far out of scale), not from training, so they are
    refused (FieldError naming the method and its knobs) instead of recorded as a divergence."""
    inputs = validation_probe(task, 4)  # overflow shows on any example
    with torch.no_grad():
        finite = bool(torch.isfinite(model.eval()(inputs)).all())
    model.train()
    if not finite:
        knobs = "".join(" {%s} {value_%s}" % (k, k) for k in spec.knobs)
        raise FieldError(
            "with {method} {name}%s the freshly built model's outputs hold NaN or Inf before any "
            "training step: the knobs overflow its states; bring them closer to their defaults" % knobs,
            name=spec.method,
            **{f"value_{k}": v for k, v in spec.knobs.items()},
        )


def _geometry(spec: RunSpec, task) -> dict:
    if spec.model == "lm":
        return {"vocab_size": task.vocab_size, "context": task.seq_len}
    patch = {"patch_size": spec.patch_size} if spec.patch_size else {}
    return {"image_size": task.image_size[0], "channels": 1, "num_classes": task.classes, **patch}
