"""``oversmooth train``: train our ViT or causal LM with any mitigation on a real data set."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from oversmooth.cli._arguments import add_field, add_knob_flags, knob_flags
from oversmooth.errors import FieldError, UsageError
from oversmooth.train.run_spec import CHOICES, GROUPS, REQUIRED, RunSpec, field_kinds, flag


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a ViT or causal LM with a mitigation method",
        description="Train our ViT (Fashion-MNIST) or causal LM (Jane Austen, your text) with any "
        "mitigation. Works under `torchrun --nproc_per_node N` (DDP). Each flag is a field of "
        "oversmooth.train.run_spec.RunSpec (--batch-size: batch_size). See docs/training.md.",
    )
    add_arguments(parser)
    parser.set_defaults(run=run_train)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every ``oversmooth train`` flag: one per ``RunSpec`` field, generated from the field (its
    type, default, help and group), one per training knob of the registry, and ``--spec FILE``."""
    parser.add_argument(
        "--spec",
        metavar="FILE",
        help="run the spec saved in FILE (RunSpec.save, e.g. a study cell's spec.json); takes no other flag",
    )
    for name in GROUPS:
        group = parser.add_argument_group(name)
        for f in dataclasses.fields(RunSpec):
            if f.metadata["group"] == name and f.name == "knobs":
                add_knob_flags(group, "train")
            elif f.metadata["group"] == name:
                choices = {"choices": CHOICES[f.name]} if f.name in CHOICES else {}
                add_field(group, f, field_kinds()[f.name], required=f.name in REQUIRED, **choices)


def run_spec(args: argparse.Namespace) -> RunSpec:
    """The run the flags describe (or the saved ``--spec FILE``)."""
    given = [
        name for name, value in vars(args).items() if name in _DEFAULTS and name != "spec" and value != _DEFAULTS[name]
    ]
    if args.spec is not None:
        if given:
            raise UsageError(
                f"--spec {args.spec} takes no other flag, got {', '.join(_FLAGS[g] for g in given)}; "
                "edit the file instead"
            )
        return RunSpec.load(args.spec)
    missing = [flag(name) for name in REQUIRED if getattr(args, name) is None]
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)}")
    fields = {f.name: getattr(args, f.name) for f in dataclasses.fields(RunSpec) if f.name != "knobs"}
    return RunSpec(**fields, knobs=knob_flags(args, "train"))


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
    from oversmooth.train.plots import epoch_records, last_cos_sim

    scores = "  ".join(f"test_{k} {v:.4f}" for k, v in results["test"].items())
    cos_sim = last_cos_sim(epoch_records(out / "metrics.jsonl"))
    similarity = "" if cos_sim is None else f"  last-layer cos_sim {cos_sim:.3f} (probe)"
    return f"done in {results['wall_seconds']:.1f} s  {scores}{similarity}  ({out / 'results.json'})"


def _defaults() -> tuple[dict, dict]:
    """Each flag's default and its name (``bf16`` -> ``--no-bf16``), by destination."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return vars(parser.parse_args([])), {action.dest: action.option_strings[0] for action in parser._actions}


_DEFAULTS, _FLAGS = _defaults()
