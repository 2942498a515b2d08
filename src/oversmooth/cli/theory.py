"""``oversmooth theory [PRESET]``: simulate X <- X + A X H and check the spectral predictions."""

from __future__ import annotations

import argparse

from oversmooth.cli._arguments import add_force_flag, add_format_flag, add_progress_flag, add_threads_flag

CHOICES = ("all", "smoothing", "sharpening", "rotating", "lnflip", "escalation")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "theory",
        help="simulate the linear attention dynamics and compare with the theory",
        description="Iterate X <- X + A X H (Dovonon et al.) for a preset, predict the outcome "
        "from the eigenvalues 1 + lambda_A lambda_H, and compare with the simulated "
        "cos_sim / t_sim / rank measures; 'escalation' runs Yu & Zhang's t_sim "
        "escalation and de-escalation study. Writes CSVs and figures (PNG; --format: PDF, SVG) to --out.",
    )
    parser.add_argument("preset", nargs="?", default="all", choices=CHOICES, help="what to run (default: all)")
    parser.add_argument("--depth", type=int, default=64, help="layers (default 64)")
    parser.add_argument("--tokens", type=int, default=8, help="tokens n (default 8)")
    parser.add_argument("--dim", type=int, default=8, help="features d (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--sequences", type=int, default=4, help="independent starting X per case (default 4)")
    parser.add_argument(
        "--attention",
        choices=("fixed", "softmax"),
        default="fixed",
        help="a sampled fixed A, or data-dependent softmax(X M X^T / sqrt d)",
    )
    parser.add_argument("--out", default="theory-out", help="output folder (default theory-out)")
    add_format_flag(parser)
    add_force_flag(parser)
    add_progress_flag(parser)
    add_threads_flag(parser, 1, ": tiny matrices, where threads only add overhead on a shared CPU")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from oversmooth.errors import FieldError, UsageError
    from oversmooth.theory.experiment import Setup
    from oversmooth.theory.run import run_theory
    from oversmooth.utils.outputs import check_output_dir
    from oversmooth.utils.threads import set_threads

    check_output_dir(args.out, force=args.force)
    set_threads(args.threads)
    try:
        setup = Setup(
            depth=args.depth,
            tokens=args.tokens,
            dim=args.dim,
            seed=args.seed,
            sequences=args.sequences,
            attention=args.attention,
        )
        print(
            run_theory(
                args.preset, setup, args.out, progress=args.progress, formats=args.format, command=args.invocation
            )
        )
    except FieldError as error:  # the library names Setup's fields; name our flags
        raise UsageError(error.message(lambda field: "--" + field)) from None
    print(f"wrote {args.out}/")
    return 0
