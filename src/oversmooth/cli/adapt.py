"""``oversmooth adapt [MODEL]``: patch a mitigation into a model, fine-tune it briefly beside an
unpatched control arm, and report how much of the damage came back (``oversmooth.adapt``)."""

from __future__ import annotations

import argparse
import itertools

from oversmooth.cli._arguments import finite_float
from oversmooth.errors import UsageError
from oversmooth.train.run_spec import literal


def _values(text: str) -> tuple:
    """``"0.2,0.6,1.0"`` -> ``(0.2, 0.6, 1.0)``: one patched arm per value."""
    values = tuple(literal(v.strip()) for v in text.split(",") if v.strip())
    if not values:
        raise argparse.ArgumentTypeError(f"expected a value or a comma-separated list, got {text!r}")
    return values


def _knob_flags() -> dict[str, tuple[str, str]]:
    from oversmooth.mitigations.registry import knob_owners

    return {**knob_owners("train"), **knob_owners("patch")}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "adapt",
        help="patch a mitigation in, fine-tune briefly beside a control, report what came back",
        description="Patch a mitigation into a model (any MODEL analyze takes, or an `oversmooth train` run "
        "folder), fine-tune it briefly with a label-free objective, and run the same steps "
        "without the patch as a control. Writes adapt.json, adapt.csv, adapt.png, report.md "
        "and each arm's adapted model. Resumable: rerun the same command. See docs/adapt.md.",
    )
    parser.add_argument(
        "model",
        nargs="?",
        default=None,
        metavar="MODEL",
        help="a Hugging Face folder, a .gguf file, an installed model package, or an "
        "`oversmooth train` run folder (default: the bundled all-MiniLM-L6-v2)",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (required)")
    parser.add_argument("--method", default="neutreno", help="the mitigation to patch in (default neutreno)")
    knobs = parser.add_argument_group(
        "knobs",
        "one patched arm per value: --lam 0.2,0.6,1.0 makes three (several knobs with lists: every combination)",
    )
    for flag, (method, _) in _knob_flags().items():
        knobs.add_argument(
            f"--{flag.replace('_', '-')}", dest=f"knob_{flag}", type=_values, metavar="V[,V...]", help=f"{method} knob"
        )
    parser.add_argument("--objective", default="auto", help="auto (default) | task | causal_lm | masked_lm | distill")
    parser.add_argument(
        "--text", default="austen", help="pretrained text models: austen (default) | sample | text:FILE[,FILE...]"
    )
    opt = parser.add_argument_group("schedule")
    opt.add_argument("--steps", type=int, default=200, help="optimiser steps per arm (default 200)")
    opt.add_argument("--batch-size", type=int, help="default: 8, or the train run's")
    opt.add_argument("--seq-len", type=int, default=128, help="pretrained text models: tokens per sequence")
    opt.add_argument(
        "--lr", type=finite_float, help="peak lr (default 1e-4 whole model, 1e-3 LoRA, a tenth of a train run's)"
    )
    opt.add_argument("--warmup", type=finite_float, default=0.1, help="warm-up share of the steps (default 0.1)")
    opt.add_argument("--weight-decay", type=finite_float)
    opt.add_argument("--grad-clip", type=finite_float)
    opt.add_argument("--seed", type=int, default=0)
    opt.add_argument("--record-every", type=int, help="steps between held-out evaluations (default steps/8)")
    opt.add_argument(
        "--eval-sequences", type=int, default=64, help="pretrained models: held-out sequences per split (default 64)"
    )
    run = parser.add_argument_group("run")
    run.add_argument("--lora", type=int, default=0, metavar="RANK", help="LoRA rank through peft (0: whole model)")
    run.add_argument("--device", default="auto", help="auto | cpu | cuda")
    run.add_argument("--dtype", default="float32", help="float32 | bfloat16")
    run.add_argument("--gradient-checkpointing", action="store_true", help="families that support it")
    run.add_argument("--threads", type=int, help="CPU threads for torch")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(run=run_adapt)


def knob_arms(args: argparse.Namespace) -> tuple[dict, ...]:
    """The patched arms the knob flags ask for: every combination of the given values."""
    owners = _knob_flags()
    given = {flag: getattr(args, f"knob_{flag}") for flag in owners if getattr(args, f"knob_{flag}") is not None}
    for flag in given:
        if owners[flag][0] != args.method:
            raise UsageError(
                f"--{flag.replace('_', '-')} sets {owners[flag][0]}, not --method {args.method}; "
                "drop it or change --method"
            )
    fields = [owners[flag][1] for flag in given]
    return tuple(dict(zip(fields, combo)) for combo in itertools.product(*given.values())) or ({},)


def config_of(args: argparse.Namespace):
    from oversmooth.adapt import AdaptConfig

    return AdaptConfig(
        model=args.model,
        out=args.out,
        method=args.method,
        knobs=knob_arms(args),
        objective=args.objective,
        text=args.text,
        steps=args.steps,
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        lr=args.lr,
        warmup=args.warmup,
        weight_decay=args.weight_decay,
        grad_clip=args.grad_clip,
        seed=args.seed,
        record_every=args.record_every,
        eval_sequences=args.eval_sequences,
        lora=args.lora,
        device=args.device,
        dtype=args.dtype,
        gradient_checkpointing=args.gradient_checkpointing,
        threads=args.threads,
        progress=not args.no_progress,
    )


def run_adapt(args: argparse.Namespace) -> int:
    from oversmooth.adapt import adapt
    from oversmooth.adapt.verdict import judge

    result = adapt(config_of(args))
    for arm in result.patched:
        print(judge(result, arm).words())
    print(f"wrote {args.out}/: adapt.json, adapt.csv, adapt.png, report.md, arms/<arm>/model")
    return 0
