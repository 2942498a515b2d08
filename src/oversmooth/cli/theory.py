"""``oversmooth theory [PRESET]``: simulate X <- X + A X H and check the spectral predictions."""

from __future__ import annotations

import argparse
import csv

CHOICES = ("all", "smoothing", "sharpening", "rotating", "lnflip", "escalation")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "theory", help="simulate the linear attention dynamics and compare with the theory",
        description="Iterate X <- X + A X H (Dovonon et al.) for a preset, predict the outcome "
                    "from the eigenvalues 1 + lambda_A lambda_H, and compare with the simulated "
                    "cos_sim / t_sim / rank measures; 'escalation' runs Yu & Zhang's t_sim "
                    "escalation and de-escalation study. Writes CSVs and PNG plots to --out.")
    parser.add_argument("preset", nargs="?", default="all", choices=CHOICES,
                        help="what to run (default: all)")
    parser.add_argument("--depth", type=int, default=64, help="layers (default 64)")
    parser.add_argument("--tokens", type=int, default=8, help="tokens n (default 8)")
    parser.add_argument("--dim", type=int, default=8, help="features d (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--sequences", type=int, default=4,
                        help="independent starting X per case (default 4)")
    parser.add_argument("--attention", choices=("fixed", "softmax"), default="fixed",
                        help="a sampled fixed A, or data-dependent softmax(X M X^T / sqrt d)")
    parser.add_argument("--out", default="theory-out", help="output folder (default theory-out)")
    parser.set_defaults(run=run)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _write_csv(path, rows: list[dict]) -> None:
    from oversmooth.atomic import atomic_write

    with atomic_write(path) as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def run(args: argparse.Namespace) -> int:
    import torch

    from oversmooth.atomic import atomic_directory
    from oversmooth.outputs import check_output_dir
    from oversmooth.theory.experiment import Setup
    from oversmooth.theory.presets import PRESETS

    check_output_dir(args.out)

    torch.set_num_threads(1)  # tiny matrices: threads only add overhead on a shared CPU
    setup = Setup(depth=args.depth, tokens=args.tokens, dim=args.dim, seed=args.seed,
                  sequences=args.sequences, attention=args.attention)
    presets = PRESETS if args.preset == "all" else () if args.preset == "escalation" else (args.preset,)
    with atomic_directory(args.out) as out:
        if presets:
            _presets(setup, presets, out)
        if args.preset in ("all", "escalation"):
            _escalation(setup, out)
    print(f"wrote {args.out}/")
    return 0


def _presets(setup, names: tuple[str, ...], out) -> None:
    """Run the presets: one PNG each, predictions.csv, trajectories.csv, a printed table."""
    from tqdm import tqdm

    from oversmooth.theory.experiment import run_preset
    from oversmooth.theory.plots import plot_metrics_vs_depth

    summary, trajectories = [], []
    for name in tqdm(names, desc="theory presets"):
        results = run_preset(name, setup)
        plot_metrics_vs_depth({r.case.label: r.table for r in results},
                              f"{name}: X <- X + A X H ({setup.attention} A, n={setup.tokens}, "
                              f"d={setup.dim})", out / f"{name}.png")
        for r in results:
            summary.append(r.summary_row())
            trajectories += [{"preset": name, "case": r.case.label, **row} for row in r.table.rows]
    _write_csv(out / "predictions.csv", summary)
    _write_csv(out / "trajectories.csv", trajectories)
    print(_table([["preset", "case", "dominant mu", "sep", "predicted", "simulated",
                   "t_sim 0 -> L", "agree"]] + [[
        row["preset"], row["case"], f"{complex(row['dominant_mu_real'], row['dominant_mu_imag']):.3f}",
        f"{row['separation']:.3f}", row["predicted"], row["simulated"],
        f"{row['t_sim_first']:.3f} -> {row['t_sim_last']:.3f}",
        f"{row['agree']}/{row['sequences']} ({row['compared']})"] for row in summary]))


def _escalation(setup, out) -> None:
    """Yu & Zhang: t_sim curves with and without de-escalation, and rate vs |lambda_2|."""
    import torch

    from oversmooth.theory.escalation import escalation_curves, escalation_rates
    from oversmooth.theory.plots import plot_escalation_rates, plot_metrics_vs_depth

    generator = torch.Generator().manual_seed(setup.seed)
    curves = escalation_curves(setup.tokens, setup.dim, setup.depth, generator,
                               sequences=setup.sequences)
    plot_metrics_vs_depth(curves, f"Yu & Zhang: repeated attention, H = I (n={setup.tokens}, "
                          f"d={setup.dim}); tau = de-escalation", out / "escalation.png",
                          metrics=("t_sim", "cos_sim"))
    _write_csv(out / "escalation.csv",
               [{"variant": label, **row} for label, table in curves.items() for row in table.rows])
    marks = sorted({0, 1, setup.depth // 4, setup.depth // 2, setup.depth})
    print()
    print(_table([["variant", *(f"t_sim@{m}" for m in marks)]] + [
        [label, *(f"{table.column('t_sim')[m]:.3f}" for m in marks)] for label, table in curves.items()]))
    study = escalation_rates(setup.tokens, setup.dim, min(setup.depth, 48), generator)
    plot_escalation_rates(study, out / "escalation_rates.png")
    _write_csv(out / "escalation_rates.csv", [
        {"lambda2": float(study.lambda2[k]),
         **{f"{name}_measured": float(v[k]) for name, v in study.measured.items()},
         **{f"{name}_predicted": float(v[k]) for name, v in study.predicted.items()}}
        for k in range(study.lambda2.numel())])
    print()
    for name, predicted in study.predicted.items():
        measured = study.measured[name]
        ok = ~measured.isnan()
        error = ((measured[ok] - predicted[ok]).abs() / predicted[ok]).median()
        print(f"escalation rate, {name}: median relative error of the prediction "
              f"{float(error):.3f} over {int(ok.sum())} attention matrices "
              f"(|lambda_2| {float(study.lambda2.min()):.2f}..{float(study.lambda2.max()):.2f})")
