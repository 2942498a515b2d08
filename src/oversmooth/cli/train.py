"""``oversmooth train``: train our ViT or causal LM with any mitigation on a real data set."""

from __future__ import annotations

import argparse
from pathlib import Path

from oversmooth.cli._arguments import add_knob_flags, finite_float, knob_flags
from oversmooth.compile_rule import AUTO_MIN_STEPS, COMPILE_MODES
from oversmooth.errors import FieldError, UsageError
from oversmooth.mitigations.registry import METHODS
from oversmooth.run_spec import RunSpec, flag

#: flags that a run needs unless it comes from --spec FILE.
REQUIRED = ("task", "model", "epochs", "out")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train", help="train a ViT or causal LM with a mitigation method",
        description="Train our ViT (Fashion-MNIST) or causal LM (Jane Austen, your text) with any "
                    "mitigation. Works under `torchrun --nproc_per_node N` (DDP). Each flag is a field of "
                    "oversmooth.run_spec.RunSpec (--batch-size: batch_size). See docs/training.md.",
    )
    add_arguments(parser)
    parser.set_defaults(run=run_train)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every ``oversmooth train`` flag: one per ``RunSpec`` field, and ``--spec FILE``."""
    parser.add_argument("--spec", metavar="FILE",
                        help="run the spec saved in FILE (RunSpec.save, e.g. a study cell's spec.json); "
                             "takes no other flag")
    what = parser.add_argument_group("task and model")
    what.add_argument("--task", help="fmnist | austen | text:FILE[,FILE...] | synthetic (required)")
    what.add_argument("--model", help="vit | lm (required)")
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
    opt.add_argument("--epochs", type=int, help="(required)")
    opt.add_argument("--batch-size", type=int, default=128, help="global batch (split over DDP processes)")
    opt.add_argument("--lr", type=finite_float, default=1e-3)
    opt.add_argument("--weight-decay", type=finite_float, default=0.05)
    opt.add_argument("--warmup", type=finite_float, default=0.05, help="warm-up share of all steps")
    opt.add_argument("--grad-clip", type=finite_float, default=1.0)
    opt.add_argument("--seed", type=int, default=0)
    run = parser.add_argument_group("run")
    run.add_argument("--out", help="run folder: checkpoint, metrics.jsonl, results.json, model/ (required)")
    run.add_argument("--resume", choices=("auto", "never"), default="never",
                     help="auto: continue the run in --out if there is one")
    run.add_argument("--checkpoint-every", type=int, default=0, help="also checkpoint every K steps")
    run.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    run.add_argument("--no-bf16", action="store_true", help="GPU: train in float32, not bf16 autocast")
    run.add_argument("--compile", nargs="?", const="on", default="auto", choices=COMPILE_MODES,
                     help="torch.compile the model: on (also a bare --compile), off, or auto (default): on only "
                          "where benchmarks/bench_throughput.py measured it faster, a ViT of at least "
                          f"{AUTO_MIN_STEPS} steps on a CPU. If it cannot compile, one line says so and the run "
                          "trains eagerly")
    run.add_argument("--threads", type=int, help="CPU threads for torch (default: torch's choice)")
    run.add_argument("--probe-size", type=int, default=32, help="validation examples for layer metrics")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--tensorboard", action="store_true",
                     help="also log every epoch's scores and per-layer similarity to OUT/tensorboard")


def run_spec(args: argparse.Namespace) -> RunSpec:
    """The run the flags describe (or the saved ``--spec FILE``)."""
    given = [name for name, value in vars(args).items()
             if name in _DEFAULTS and name != "spec" and value != _DEFAULTS[name]]
    if args.spec is not None:
        if given:
            raise UsageError(f"--spec {args.spec} takes no other flag, got {', '.join(map(flag, given))}; "
                             "edit the file instead")
        return RunSpec.load(args.spec)
    missing = [flag(name) for name in REQUIRED if getattr(args, name) is None]
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)}")
    knobs = knob_flags(args, "train")
    fields = {name: getattr(args, name) for name in RunSpec.__dataclass_fields__ if hasattr(args, name)}
    return RunSpec(**{**fields, "knobs": knobs, "bf16": not args.no_bf16, "progress": not args.no_progress})


def run_train(args: argparse.Namespace) -> int:
    from oversmooth.train.run import run

    try:
        spec = run_spec(args)
        results = run(spec)
    except FieldError as error:  # the library names fields; name our flags
        raise UsageError(error.message(flag)) from None
    if results is not None:
        print(_final_line(results, Path(spec.out)))
    return 0


def _final_line(results: dict, out: Path) -> str:
    if results["status"] != "completed":
        return f"{results['status']}: {results.get('diverged', '')}; see {out / 'results.json'}"
    scores = "  ".join(f"test_{k} {v:.4f}" for k, v in results["test"].items())
    return f"done in {results['wall_seconds']:.1f} s  {scores}  ({out / 'results.json'})"


def _defaults() -> dict:
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return vars(parser.parse_args([]))


_DEFAULTS = _defaults()
