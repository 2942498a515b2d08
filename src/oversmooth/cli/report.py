"""``oversmooth report DIR [DIR ...]``: the claims report of one or more study folders."""

from __future__ import annotations

import argparse
import shlex

from oversmooth.cli._arguments import add_force_flag

TITLE = "oversmooth study report"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write report.md + PNGs for study folders: scores vs depth, similarity, claims",
        description="Report on the cells of one or more `oversmooth study` folders (or their archives under "
        "results/), finished or not: per study the scores with the seed spread, per-layer cos_sim and "
        "t_sim at the end of training and the training curves; and the claims table, decided under "
        "the protocol of docs/studies.md (paired t-test per claim, Holm across the report, gates on the "
        "baseline: held / contradicted / inconclusive / not tested). Claims that need no training "
        "(NeuTRENO on an untrained DeiT-tiny and on the pretrained MiniLM, MiniLM's similarity per "
        "sublayer) are measured here in about a minute.",
    )
    parser.add_argument(
        "dirs",
        nargs="+",
        metavar="DIR",
        help="study folder(s) made by `oversmooth study`, or archives results/<study>; also "
        "results/fmnist-p7-adapt (claim 8's adaptations) and results/claim3 (cost rounds)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="where report.md and the PNGs go (default: the first DIR; in a DIR, its report is replaced)",
    )
    add_force_flag(parser)
    parser.add_argument(
        "--no-probes",
        action="store_true",
        help="skip the claims that need no training (no MiniLM, no untrained DeiT-tiny) unless their archive "
        "(results/probes, from python -m oversmooth.study.probes) is among DIRS",
    )
    parser.add_argument("--title", default=TITLE, help="the report's heading")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from oversmooth.outputs import check_output_dir
    from oversmooth.study.folders import read_folders
    from oversmooth.study.report import render_report

    out = Path(args.out or args.dirs[0])
    own = any(out.resolve() == Path(folder).resolve() for folder in args.dirs)  # a study's folder holds its report
    check_output_dir(out, force=None if own else args.force)
    found = read_folders(args.dirs)
    probes = found.probes  # archived probes (results/probes) are read, not run again
    if probes is None and not args.no_probes:
        import torch
        from transformers.utils import logging as hf_logging

        from oversmooth.study.probes import run_probes

        torch.set_num_threads(1)
        hf_logging.disable_progress_bar()
        probes = run_probes()
    words = [
        "oversmooth",
        "report",
        *args.dirs,
        *(["--out", args.out] if args.out else []),
        *(["--no-probes"] if args.no_probes else []),
        *(["--title", args.title] if args.title != TITLE else []),
    ]
    report = render_report(
        found.cells,
        probes,
        found.commands,
        args.title,
        command=shlex.join(words),
        adapted=found.adapted,
        benchmark=found.benchmark,
    )
    report.write(out)
    claims = report.claims
    width = max((len(c.id) for c in claims), default=1)
    for claim in claims:
        print(f"{claim.id:>{width}}  {claim.verdict:<13} {claim.statement}")
    print(f"wrote {out / 'report.md'} ({len(found.cells)} cells)")
    return 0
