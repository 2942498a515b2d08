"""``oversmooth report DIR [DIR ...]``: the report on the cells of one or more study folders."""

from __future__ import annotations

import argparse

from oversmooth.cli._arguments import add_report_arguments, report_command, report_folder


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write report.md + PNGs on your study folders: scores by seed, paired differences, curves, similarity",
        description="Report on the cells of one or more `oversmooth study` folders, finished or not: per study "
        "the test scores with their seed spread (per method and depth), each method's difference from the "
        "softmax baseline of the same norm and depth paired by seed (mean, 95 % t interval, n), the training "
        "curves, the per-layer cos_sim and t_sim at the end of training, and scores vs depth where the study has "
        "several. It decides no claim of the source papers: `oversmooth claims` does, on the claims protocol's "
        "archives under results/.",
    )
    add_report_arguments(parser, "study folder(s) made by `oversmooth study` (or their archives under --results)")
    parser.add_argument("--no-probes", nargs=0, action=_ClaimsFlag, help=argparse.SUPPRESS)
    parser.set_defaults(run=run)


class _ClaimsFlag(argparse.Action):
    """A flag of `oversmooth claims` given to `oversmooth report`: refused with one line pointing there."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        parser.error(
            f"{option_string} is a flag of `oversmooth claims`, the report that decides the source papers' claims; "
            "`oversmooth report` runs no probe: leave it out"
        )


def run(args: argparse.Namespace) -> int:
    from oversmooth.study.report import TITLE, cells_read, render_report
    from oversmooth.study.results import read_studies
    from oversmooth.utils.provenance import Provenance

    out = report_folder(args)
    cells, commands = read_studies(args.dirs)
    command = report_command(args)
    provenance = Provenance.gather(command, data=cells_read(cells))
    report = render_report(
        cells, commands, args.title or TITLE, command=command, provenance=provenance, formats=args.format
    )
    report.write(out)
    print(f"wrote {out / 'report.md'} ({len(cells)} cells)")
    return 0
