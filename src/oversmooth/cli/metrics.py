"""``oversmooth metrics FILE``: the per-layer metric table of captured hidden states."""

from __future__ import annotations

import argparse

from oversmooth.cli._arguments import positions


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "metrics",
        help="oversmoothing measures of captured hidden states, per layer",
        description="Print the per-layer metric table of hidden states stored in FILE "
        "(.pt/.npy/.npz/.safetensors: a [layers, batch, tokens, features] tensor, "
        "or a dict of per-layer [batch, tokens, features] tensors + optional 'mask').",
    )
    parser.add_argument("file", help="the hidden states file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--out", metavar="CSV", help="also write the table to this CSV file")
    parser.add_argument(
        "--exclude",
        type=positions,
        default=(),
        metavar="POS",
        help="token positions to leave out, e.g. 0 for CLS (comma-separated)",
    )
    parser.add_argument("--metrics", default=None, metavar="NAMES", help="comma-separated subset (default: all)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from oversmooth.metrics.files import load_hidden_states
    from oversmooth.metrics.suite import METRICS, format_table, measure, table_json, write_csv
    from oversmooth.utils.outputs import check_output_file

    if args.out:
        check_output_file(args.out)
    states, mask = load_hidden_states(args.file)
    names = tuple(args.metrics.split(",")) if args.metrics else METRICS
    table = measure(states, mask, exclude=args.exclude, hook=f"file {args.file}", metrics=names)
    print(table_json(table) if args.json else format_table(table))
    if args.out:
        write_csv(table, args.out)
    return 0
