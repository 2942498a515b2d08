"""``oversmooth adapt [MODEL]``: patch a mitigation into a model, fine-tune it briefly beside an
unpatched control arm, and report how much of the damage came back (``oversmooth.adapt``)."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys

from oversmooth.adapt.config import FRONTIER, MAIN, RUN, AdaptConfig
from oversmooth.cli._arguments import add_field
from oversmooth.errors import FieldError, UsageError
from oversmooth.train.run_spec import field_kinds, flag, literal

#: ``oversmooth adapt``'s presentation of some fields: the positional, the required, the metavars.
_POSITIONAL, _REQUIRED, _METAVARS = (
    "model",
    ("out",),
    {
        "model": "MODEL",
        "out": "DIR",
        "lora": "RANK",
        "ramp": "N",
        "frontier_from": "FILE",
    },
)


def _values(text: str) -> tuple:
    """``"0.2,0.6,1.0"`` -> ``(0.2, 0.6, 1.0)``: one patched arm per value."""
    values = tuple(literal(v.strip()) for v in text.split(",") if v.strip())
    if not values:
        raise argparse.ArgumentTypeError(f"expected a value or a comma-separated list, got {text!r}")
    return values


def _names(text: str) -> tuple[str, ...]:
    """``"control,neutreno-lam0.4"`` -> ``("control", "neutreno-lam0.4")``."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise argparse.ArgumentTypeError(f"expected an arm's name or a comma-separated list, got {text!r}")
    return names


def _knob_flags() -> dict[str, tuple[str, str]]:
    from oversmooth.mitigations.registry import knob_owners

    return {**knob_owners("train"), **knob_owners("patch")}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "adapt",
        help="patch a mitigation in, fine-tune briefly beside a control, report what came back",
        description="Patch a mitigation into a model (any MODEL analyze takes, or an `oversmooth train` run "
        "folder), fine-tune it briefly with a label-free objective, and run the same steps "
        "without the patch as a control. Writes adapt.json, adapt.csv, adapt.png (--format: more), report.md "
        "and each arm's adapted model. Resumable: rerun the same command. See docs/adapt.md.",
    )
    groups = {MAIN: parser}
    for f in dataclasses.fields(AdaptConfig):
        name = f.metadata["group"]
        if name not in groups:
            groups[name] = parser.add_argument_group(name, f.metadata["help"] if f.name == "knobs" else None)
        if f.name == "knobs":
            groups[name].add_argument(
                "--knobs",
                dest="knobs",
                choices=(FRONTIER,),
                help="each method's knob from the quality frontier of `oversmooth analyze --sweep` on the same model "
                "and text: its largest swept value within analyze's quality budget (no arm for a method with none); "
                "pretrained models, instead of the knob flags",
            )
            for knob, (method, _) in _knob_flags().items():
                groups[name].add_argument(
                    flag(knob), dest=f"knob_{knob}", type=_values, metavar="V[,V...]", help=f"{method} knob"
                )
        else:
            where = {"positional": f.name == _POSITIONAL, "required": f.name in _REQUIRED}
            where |= {"default": None} if f.name in _REQUIRED else {}  # None until given: config_of names it
            add_field(groups[name], f, field_kinds(AdaptConfig)[f.name], metavar=_METAVARS.get(f.name), **where)
    groups[RUN].add_argument(
        "--arm",
        type=_names,
        metavar="NAME[,NAME...]",
        help="train only these arms (control, neutreno-lam0.4, ...: as adapt.json names them) and stop, writing no "
        "adapt.json: processes given other arms and the same --out train them side by side, each as the whole "
        "command would; the command without --arm then writes adapt.json (training any arm left)",
    )
    parser.set_defaults(run=run_adapt)


def _named(name: str) -> str:
    """How a message names field (or knob) ``name``: its flag (``--batch-size``), ``MODEL``, ``knobs``."""
    return {_POSITIONAL: _METAVARS[_POSITIONAL]}.get(name, flag(name))


def knob_arms(args: argparse.Namespace) -> tuple[dict, ...] | dict[str, tuple[dict, ...]] | str:
    """The patched arms the knob flags ask for: per method, every combination of its given values
    (one method: a tuple of settings; several: a dict method -> settings); ``--knobs frontier``:
    ``"frontier"``."""
    owners = _knob_flags()
    given = {knob: getattr(args, f"knob_{knob}") for knob in owners if getattr(args, f"knob_{knob}") is not None}
    if args.knobs == FRONTIER and given:
        raise UsageError(f"{flag(next(iter(given)))} and --knobs {FRONTIER} both set knobs; give one of them")
    if args.knobs == FRONTIER:
        return FRONTIER
    names = AdaptConfig(method=args.method).method_names()
    for knob in given:
        if names is not None and owners[knob][0] not in names:
            fix = "change --method" if len(names) == 1 else f"add {owners[knob][0]} to --method"
            raise UsageError(f"{flag(knob)} sets {owners[knob][0]}, not --method {args.method}; drop it or {fix}")
    arms = {}
    for method in dict.fromkeys(owners[knob][0] for knob in given):
        values = {owners[knob][1]: v for knob, v in given.items() if owners[knob][0] == method}
        arms[method] = tuple(dict(zip(values, combo)) for combo in itertools.product(*values.values()))
    if names is not None and len(names) == 1:
        return arms.get(names[0], ({},))
    return arms or ({},)


def config_of(args: argparse.Namespace) -> AdaptConfig:
    missing = [flag(name) for name in _REQUIRED if getattr(args, name) is None]
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)}")
    fields = {f.name: getattr(args, f.name) for f in dataclasses.fields(AdaptConfig) if f.name != "knobs"}
    return AdaptConfig(**fields, knobs=knob_arms(args))


def run_adapt(args: argparse.Namespace) -> int:
    from transformers.utils import logging as hf_logging

    from oversmooth.adapt import adapt, adapt_arms
    from oversmooth.adapt.report import figures
    from oversmooth.adapt.tradeoff import verdict_words
    from oversmooth.adapt.verdict import judge, small_sample

    hf_logging.disable_progress_bar()  # one progress bar: ours (a refusal: one line)
    try:
        if args.arm:
            ended = adapt_arms(config_of(args), args.arm, args.invocation)
            arms = ", ".join(f"{name} ({arm.status})" for name, arm in ended.items())
            print(
                f"ended {arms} in {args.out}/arms/; the command without --arm writes adapt.json "
                "(it returns ended arms and trains any left)"
            )
            return 0
        result = adapt(config_of(args), args.invocation)
    except FieldError as error:  # the library names fields and knobs; name our flags
        raise UsageError(error.message(_named)) from None
    for arm in result.patched:
        print(judge(result, arm).words())
    print(verdict_words(result))
    warning = small_sample(result)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    kept = "frontier.json, " if result.frontier else ""
    written = ", ".join(figures(result))
    print(f"wrote {args.out}/: adapt.json, {kept}adapt.csv, {written}, report.md, arms/<arm>/model")
    return 0
