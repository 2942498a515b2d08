"""Argument types shared by several subcommands (a helper module: it registers no subcommand)."""

from __future__ import annotations

import argparse
import dataclasses
import math
import shlex
from pathlib import Path

from oversmooth.errors import UsageError
from oversmooth.train.run_spec import flag
from oversmooth.utils.outputs import check_output_dir, signed_by
from oversmooth.utils.plotting import DEFAULT_FORMATS, FORMATS, figure_formats


def finite_float(text: str) -> float:
    """A float that is a real number: ``nan`` and ``inf`` are refused with one line.

    >>> finite_float("1e-3"), finite_float("-2")
    (0.001, -2.0)
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def threads(text: str) -> int:
    """A count of CPU threads: a whole number >= 1.

    >>> threads("2")
    2
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of threads >= 1, got {text!r}")
    return value


def add_threads_flag(parser, default: int | None = None, why: str = "") -> None:
    """``--threads N``: torch's CPU threads while the command computes (``utils.threads.set_threads``);
    ``default`` None: torch's choice; ``why``: the reason for another default."""
    shown = "torch's choice" if default is None else f"{default}{why}"
    parser.add_argument(
        "--threads", type=threads, default=default, metavar="N", help=f"CPU threads for torch (default {shown})"
    )


def positions(text: str) -> tuple[int, ...]:
    """``"0"`` or ``"0,-1"`` -> token positions; ``"none"`` -> ``()``.

    >>> positions("0,-1"), positions("none")
    ((0, -1), ())
    """
    if text.strip() == "none":
        return ()
    try:
        return tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"positions must be integers like 0 or 0,-1 (or none), got {text!r}") from None


def add_knob_flags(group, scope: str) -> None:
    """One ``--flag`` per mitigation knob that applies in ``scope`` ("train" / "patch"), declared
    by the registry (name, help, default); unset flags stay None, so the method's default applies."""
    from oversmooth.mitigations.registry import METHODS

    for m in METHODS.values():
        for f in m.fields(scope):
            meta, flag = f.metadata, m.flag(f.name)
            default = f"default {f.default!r}" + (
                f", {meta['causal']!r} for the causal LM" if meta["causal"] is not None else ""
            )
            text = f"{m.name}: {meta['help']} ({default})"
            if isinstance(f.default, bool):
                group.add_argument(
                    f"--{flag.replace('_', '-')}", dest=flag, action="store_true", default=None, help=text
                )
            else:
                kind = str if isinstance(f.default, str) else int if isinstance(f.default, int) else finite_float
                group.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=kind, help=text)


def knob_flags(args: argparse.Namespace, scope: str) -> dict[str, object]:
    """The knob flags that were given: global knob name -> value."""
    from oversmooth.mitigations.registry import knob_owners

    return {flag: getattr(args, flag) for flag in knob_owners(scope) if getattr(args, flag, None) is not None}


def add_field(
    group, f: dataclasses.Field, kind: type, *, required: bool = False, positional: bool = False, **options
) -> None:
    """The argument of a config dataclass's field ``f`` (``RunSpec``, ``AdaptConfig``) of type
    ``kind``, from its default and ``metadata["help"]``: a switch for a bool (``--no-FIELD`` for
    one on by default), else a value (``metadata["bare"]``: the value of the flag given alone);
    ``positional``: the field's own name, optional. ``required`` only marks the help: the caller
    says what is missing (a saved spec may stand in). ``options``: more of ``add_argument``'s."""
    text = " ".join(part for part in (f.metadata["help"], "(required)" if required else "") if part)
    if kind is bool:
        name = flag(f.name) if f.default is False else flag("no_" + f.name)
        group.add_argument(name, dest=f.name, action="store_true" if f.default is False else "store_false", help=text)
        return
    default = None if f.default is dataclasses.MISSING else f.default  # required: None until given
    options = {"type": finite_float if kind is float else kind, "default": default, "help": text or None, **options}
    if "bare" in f.metadata:
        options.update(nargs="?", const=f.metadata["bare"])
    if positional:
        group.add_argument(f.name, nargs="?", **options)
    else:
        group.add_argument(flag(f.name), **options)


#: the help of every ``--format`` flag (``oversmooth train``'s and ``adapt``'s come from their config field)
FORMAT_HELP = (
    f"the formats every figure is written in, comma-separated: {', '.join(FORMATS)} "
    f"(default {','.join(DEFAULT_FORMATS)}; PNGs at 200 dpi)"
)


def add_format_flag(parser) -> None:
    """``--format png,pdf,svg``: the formats of the figures (``args.format``, a tuple); an unknown
    one is refused by argparse with one line."""
    parser.add_argument("--format", type=_formats, default=DEFAULT_FORMATS, metavar="LIST", help=FORMAT_HELP)


def _formats(text: str) -> tuple[str, ...]:
    try:
        return figure_formats(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_progress_flag(parser) -> None:
    """``--no-progress``: no progress bar (``args.progress`` False), for logs and scripts."""
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def add_force_flag(parser) -> None:
    """``--force``: write into an ``--out`` that already holds files (``oversmooth.utils.outputs``: else refused)."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="write into an --out that already holds files: files named as this command's outputs are "
        "replaced (those not written again removed, whoever wrote them), other files kept",
    )


def add_report_arguments(parser, folders: str, nargs: str = "+") -> None:
    """DIR ..., ``--out``, ``--format``, ``--force`` and ``--title`` of a report on folders (``folders`` says which;
    ``nargs`` "*": the command has folders of its own to read where none is given)."""
    parser.add_argument("dirs", nargs=nargs, metavar="DIR", help=folders)
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="where report.md and the figures go (default: the first DIR; in a DIR, the report this command wrote "
        "there is replaced, another's only with --force)",
    )
    add_format_flag(parser)
    add_force_flag(parser)
    parser.add_argument("--title", help="the report's heading")


def report_folder(args: argparse.Namespace) -> Path:
    """Where the report of ``args.dirs`` goes (``--out``, default the first DIR), checked by
    ``outputs.check_output_dir``: a folder among DIRS holds its own report, rewritten without
    ``--force``, unless its ``report.md`` was not written by this command (``outputs.signed_by``:
    ``analyze``'s, ``claims``' beside ``report``'s, the user's own), which is never replaced unasked."""
    out = Path(args.out or args.dirs[0])
    own = any(out.resolve() == Path(folder).resolve() for folder in args.dirs)
    program = f"oversmooth {args.command}"
    if own and not args.force and (out / "report.md").is_file() and not signed_by(out / "report.md", program):
        raise UsageError(
            f"{out / 'report.md'} was not written by `{program}`; give --out DIR to write the report elsewhere, "
            "or pass --force to replace it"
        )
    check_output_dir(out, force=None if own else args.force)
    return out


def report_command(args: argparse.Namespace, *switches: str) -> str:
    """The command line that writes this report again: DIRS, ``--out``, ``--format`` (when not the
    default), the ``switches`` given and ``--title``."""
    words = [
        "oversmooth",
        args.command,
        *args.dirs,
        *(["--out", args.out] if args.out else []),
        *(["--format", ",".join(args.format)] if args.format != DEFAULT_FORMATS else []),
        *switches,
        *(["--title", args.title] if args.title else []),
    ]
    return shlex.join(words)
