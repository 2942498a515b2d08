"""The null of a trained cell's last-layer cos_sim: each arm of the named study presets at random
initialisation (``oversmooth.study.null.measure_arm_nulls``), written to
``RESULTS/<preset>/null.json``. docs/registrations/fourth-step.md: every trained claim's row reports
its baseline's last-layer cos_sim beside this value.

    PYTHONPATH=src .venv/bin/python scripts/random_init_null.py fmnist-p7 austen-p3 depth-w32
"""

from __future__ import annotations

import argparse
import shlex

import torch

from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.study.null import write_null
from oversmooth.study.presets import study_preset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="+", help="the claims protocol's study presets whose arms to measure")
    parser.add_argument("--inits", type=int, default=3, help="random initialisations per arm (default 3)")
    parser.add_argument("--results", default="results", help="where the presets' archives are (default results)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name in args.presets:
        command = ["python", "scripts/random_init_null.py", name, "--inits", str(args.inits), "--results", args.results]
        path = write_null(study_preset(name, CLAIMS_PRESETS), args.results, args.inits, shlex.join(command))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
