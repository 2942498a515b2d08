"""``oversmooth claims [DIR ...]``: the claims report of the claims protocol's archives."""

from __future__ import annotations

import argparse

from oversmooth.cli._arguments import add_report_arguments, add_threads_flag, report_command, report_folder
from oversmooth.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "claims",
        help="decide the source papers' claims on the protocol's archives: report.md + claims.json + PNGs",
        description="Decide the claims of the source papers under the protocol of docs/studies.md (paired t-test "
        "or TOST per claim, Holm within its family, gates on the baseline: held / contradicted / inconclusive / "
        "not tested) on the protocol's archives under results/ (all of them by default) or study folders, and "
        "write the claims report: one row per claim first, then the tables by family, each claim's reason, gate "
        "and command, the effects plot and each study's section. `make results` writes docs/results with it. "
        "Claims that need no training (NeuTRENO on an untrained DeiT-tiny and on the pretrained MiniLM, MiniLM's "
        "similarity per sublayer) are measured here in about a minute unless their archive is among DIRS. For a "
        "report on your own study's cells, without the claims: `oversmooth report`.",
    )
    add_report_arguments(
        parser,
        "the claims protocol's archives (results/<study>, results/fmnist-p7-adapt for claim 8's adaptations, "
        "results/claim3 for claim 3's cost rounds, results/probes), or study folders made by `oversmooth study` "
        "(default: every archive of the protocol under results/; --out is then needed)",
        nargs="*",
    )
    parser.add_argument(
        "--no-probes",
        action="store_true",
        help="skip the claims that need no training (no MiniLM, no untrained DeiT-tiny) unless their archive "
        "(results/probes, from python -m oversmooth.claims.probes) is among DIRS",
    )
    add_threads_flag(parser, 1, ": the probes measure small models on a shared CPU")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from oversmooth.claims.evidence import PROTOCOL_ARCHIVES, protocol_archives, read_folders
    from oversmooth.claims.report import TITLE, render_claims

    if not args.dirs:  # the protocol's archives, named in the command the report records
        args.dirs = [str(folder) for folder in protocol_archives()]
        if not args.dirs:
            raise UsageError(
                "no DIR given, and results/ holds none of the claims protocol's archives (results/"
                f"{PROTOCOL_ARCHIVES[0]}, ...); run from the repository's root, or name the folders to read"
            )
        if args.out is None:
            raise UsageError("no DIR given: pass --out (the report is not written among the archives under results/)")
    out = report_folder(args)
    found = read_folders(args.dirs)
    probes = found.probes  # archived probes (results/probes) are read, not run again
    if probes is None and not args.no_probes:
        from transformers.utils import logging as hf_logging

        from oversmooth.claims.probes import run_probes
        from oversmooth.utils.threads import set_threads

        set_threads(args.threads)
        hf_logging.disable_progress_bar()
        probes = run_probes()
    claims, report = render_claims(
        found.cells,
        probes,
        found.commands,
        args.title or TITLE,
        command=report_command(args, *(["--no-probes"] if args.no_probes else [])),
        adapted=found.adapted,
        benchmark=found.benchmark,
        third_protocol=found.third_protocol,
        fair_adapted=found.fair_adapted,
        budget=found.budget,
        sinks_root=found.sinks_root,
        formats=args.format,
    )
    report.write(out)
    width = max((len(c.id) for c in claims), default=1)
    for claim in claims:
        print(f"{claim.id:>{width}}  {claim.verdict:<13} {claim.statement}")
    print(f"wrote {out / 'report.md'} ({len(found.cells)} cells)")
    return 0
