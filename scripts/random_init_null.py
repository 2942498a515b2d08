"""The null of a trained cell's last-layer cos_sim: the same architecture at random initialisation.

For each (norm, depth, method) arm of the named study presets, the model of its first cell is
built under seeds 0 .. N-1 (our init, as ``oversmooth train`` draws it) and measured on the
validation probe a trained cell records (its first ``probe_size`` validation examples), exactly
as training measures it (``train.evaluation.layer_metrics``). DESIGN 9.8: every trained claim's
row reports its baseline's last-layer cos_sim beside this value.

    PYTHONPATH=src .venv/bin/python scripts/random_init_null.py depth-w32-d96-pilot regime-pilot
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

import torch

from oversmooth.study.presets import study_preset
from oversmooth.train.evaluation import layer_metrics
from oversmooth.train.run import build_model, data_options
from oversmooth.train.task_factory import make_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="+", help="study presets whose arms to measure")
    parser.add_argument("--inits", type=int, default=3, help="random initialisations per arm (default 3)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name in args.presets:
        seen = set()
        for cell in study_preset(name).cells():
            arm = (cell.task, cell.norm, cell.depth, cell.variant.label)
            if arm in seen:
                continue
            seen.add(arm)
            spec = cell.spec()
            task, _ = make_task(spec.task, spec.model, data_options(spec))
            probe = task.batch("val", torch.arange(min(spec.probe_size, task.size("val"))))[0]
            values = []
            for seed in range(args.inits):  # build_model draws the init from the spec's seed
                model = build_model(dataclasses.replace(spec, seed=seed), task)
                values.append(layer_metrics(model, probe)[-1]["cos_sim"])
            spread = statistics.stdev(values) if len(values) > 1 else float("nan")
            print(
                f"{name} {cell.norm}-norm depth {cell.depth} {cell.variant.label}: random-init last-layer "
                f"cos_sim {statistics.fmean(values):.3f} ± {spread:.3f} ({args.inits} inits)"
            )


if __name__ == "__main__":
    main()
