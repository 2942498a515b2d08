"""``oversmooth train``: train our ViT or causal LM with any mitigation on a real data set."""

from __future__ import annotations

import argparse
from pathlib import Path

from oversmooth.atomic import atomic_write
from oversmooth.cli._arguments import add_knob_flags, finite_float, knob_flags
from oversmooth.errors import UsageError
from oversmooth.memory import check_memory
from oversmooth.mitigations.registry import METHODS
from oversmooth.outputs import check_output_dir

PRESETS = {"vit": "vit-cpu", "lm": "lm-cpu"}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train", help="train a ViT or causal LM with a mitigation method",
        description="Train our ViT (Fashion-MNIST) or causal LM (Jane Austen, your text) with any "
                    "mitigation. Works under `torchrun --nproc_per_node N` (DDP). See docs/training.md.",
    )
    add_arguments(parser)
    parser.set_defaults(run=run_train)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every ``oversmooth train`` flag (``oversmooth study`` parses each cell with them too)."""
    what = parser.add_argument_group("task and model")
    what.add_argument("--task", required=True, help="fmnist | austen | text:FILE[,FILE...] | synthetic")
    what.add_argument("--model", required=True, help="vit | lm")
    what.add_argument("--preset", help="model preset (default vit-cpu / lm-cpu)")
    what.add_argument("--depth", type=int)
    what.add_argument("--width", type=int)
    what.add_argument("--heads", type=int)
    what.add_argument("--mlp-ratio", type=finite_float)
    what.add_argument("--norm", help="pre | post")
    what.add_argument("--ln-sign", help="LayerNorm weight sign option (see oversmooth.layers.norm)")
    what.add_argument("--dropout", type=finite_float)
    what.add_argument("--patch-size", type=int, help="ViT patch size (must divide the image size)")
    method = parser.add_argument_group("mitigation")
    method.add_argument("--method", default="softmax", help=f"softmax | {' | '.join(METHODS)} ('+' combines)")
    add_knob_flags(method, "train")
    data = parser.add_argument_group("data")
    data.add_argument("--data-dir", help="Fashion-MNIST IDX folder, or the unpacked janeaustenr package")
    data.add_argument("--val-size", type=int, default=5000, help="fmnist validation images (default 5000)")
    data.add_argument("--augment", action="store_true", help="fmnist: random shifts and flips")
    data.add_argument("--label-smoothing", type=finite_float, default=0.1)
    data.add_argument("--seq-len", type=int, default=64, help="text: tokens per sequence (default 64)")
    data.add_argument("--vocab-size", type=int, default=4096, help="text: BPE vocabulary (default 4096)")
    data.add_argument("--passage-chars", type=int, default=8000, help="text: characters per document")
    data.add_argument("--limit-train", type=int, help="use only the first N training examples")
    opt = parser.add_argument_group("optimisation")
    opt.add_argument("--epochs", type=int, required=True)
    opt.add_argument("--batch-size", type=int, default=128, help="global batch (split over DDP processes)")
    opt.add_argument("--lr", type=finite_float, default=1e-3)
    opt.add_argument("--weight-decay", type=finite_float, default=0.05)
    opt.add_argument("--warmup", type=finite_float, default=0.05, help="warm-up share of all steps")
    opt.add_argument("--grad-clip", type=finite_float, default=1.0)
    opt.add_argument("--seed", type=int, default=0)
    run = parser.add_argument_group("run")
    run.add_argument("--out", required=True, help="run folder: checkpoint, metrics.jsonl, results.json, model/")
    run.add_argument("--resume", choices=("auto", "never"), default="never",
                     help="auto: continue the run in --out if there is one")
    run.add_argument("--checkpoint-every", type=int, default=0, help="also checkpoint every K steps")
    run.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    run.add_argument("--no-bf16", action="store_true", help="GPU: train in float32, not bf16 autocast")
    run.add_argument("--compile", action="store_true",
                     help="torch.compile the model (CPU or GPU; if it cannot compile, one line says so "
                          "and the run trains eagerly)")
    run.add_argument("--threads", type=int, help="CPU threads for torch (default: torch's choice)")
    run.add_argument("--probe-size", type=int, default=32, help="validation examples for layer metrics")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--tensorboard", action="store_true",
                     help="also log every epoch's scores and per-layer similarity to OUT/tensorboard")


def check_args(args: argparse.Namespace) -> None:
    """Range checks of the parsed flags and a writable ``--out`` (created only when training
    starts). Raises UsageError."""
    from oversmooth.train.task_factory import task_model_kind

    task_model_kind(args.task, args.model)
    for name in ("epochs", "batch_size", "seq_len", "val_size", "passage_chars", "probe_size"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    for name in ("checkpoint_every", "weight_decay"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    for name in ("lr", "grad_clip"):
        if not getattr(args, name) > 0:
            raise UsageError(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    for name in ("warmup", "label_smoothing"):
        if not 0 <= getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must lie in [0, 1), got {getattr(args, name)}")
    if args.tensorboard:
        from oversmooth.train.tensorboard import summary_writer_class
        summary_writer_class()
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be at least 1, got {args.threads}")
    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise UsageError(f"--data-dir {args.data_dir} is not a folder; point it at your copy of the data")
    check_output_dir(args.out)


def model_config(args: argparse.Namespace, **geometry):
    """The model config from the preset, the shape flags and the method; ``geometry`` comes from
    the task (image size and classes, or vocabulary and context). Raises UsageError early."""
    from oversmooth.layers import MitigationConfig
    from oversmooth.models import CausalLMConfig, ViTConfig

    knobs = knob_flags(args, "train")
    shape = {k: getattr(args, k) for k in ("depth", "width", "heads", "mlp_ratio", "norm", "ln_sign", "dropout")
             if getattr(args, k) is not None}
    shape["mitigation"] = MitigationConfig.parse(args.method, causal=args.model == "lm", **knobs)
    family = ViTConfig if args.model == "vit" else CausalLMConfig
    return family.preset(args.preset or PRESETS[args.model], **shape, **geometry)


def _geometry(args: argparse.Namespace, task) -> dict:
    if args.model == "lm":
        return {"vocab_size": task.vocab_size, "context": task.seq_len}
    patch = {"patch_size": args.patch_size} if args.patch_size else {}
    return {"image_size": task.image_size[0], "channels": 1, "num_classes": task.classes, **patch}


def run_train(args: argparse.Namespace) -> int:
    check_args(args)
    shape = model_config(args)  # bad depth, heads or method: fail before loading any data
    # float32 weights, their gradients and AdamW's two moments: 16 bytes a weight
    check_memory(16 * shape.block_parameters, f"a {shape.depth} x {shape.width} model",
                 "lower --depth or --width")
    import torch

    from oversmooth.models import CausalLM, ViT, save_model
    from oversmooth.train import TrainConfig, setup_distributed, teardown_distributed, train
    from oversmooth.train.task_factory import DataOptions, make_task

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda but no CUDA device is visible; use --device auto or cpu")
    env = setup_distributed(args.device)
    try:
        options = DataOptions(args.data_dir, args.val_size, args.augment, args.label_smoothing, args.seq_len,
                              args.vocab_size, args.passage_chars, args.limit_train)
        if not env.is_main:  # the main process trains and caches the tokenizer first
            env.barrier()
        task, tokenizer = make_task(args.task, args.model, options)
        if env.is_main:
            env.barrier()
        cfg = model_config(args, **_geometry(args, task))
        torch.manual_seed(args.seed)
        model = (ViT if args.model == "vit" else CausalLM)(cfg)
        config = TrainConfig(
            epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, weight_decay=args.weight_decay,
            warmup_fraction=args.warmup, grad_clip=args.grad_clip, seed=args.seed,
            checkpoint_every=args.checkpoint_every, probe_size=args.probe_size,
            bf16=not args.no_bf16, compile=args.compile, progress=not args.no_progress,
            tensorboard=args.tensorboard,
        )
        description = {"task": args.task, "model": args.model, "model_config": cfg.to_dict(),
                       "data": {**vars(options), "data_dir": None}, "method": cfg.mitigation.name}
        out = Path(args.out)
        results = train(model, task, config, out, env, resume=args.resume == "auto", description=description)
        if env.is_main:
            if results["status"] == "completed":
                save_model(model, out / "model")
            if tokenizer is not None:
                with atomic_write(out / "tokenizer.json") as handle:
                    handle.write(tokenizer.to_str())
            print(_final_line(results, out))
    finally:
        teardown_distributed()
    return 0


def _final_line(results: dict, out: Path) -> str:
    if results["status"] != "completed":
        return f"{results['status']}: {results.get('diverged', '')}; see {out / 'results.json'}"
    scores = "  ".join(f"test_{k} {v:.4f}" for k, v in results["test"].items())
    return f"done in {results['wall_seconds']:.1f} s  {scores}  ({out / 'results.json'})"
