"""Side-by-side studies: grids of training runs, their executors and cells, their results, paired
statistics and the study report.

Knows training (``oversmooth train`` runs); the CLI (``oversmooth study``, ``oversmooth report``)
only wires it together. The source papers' claims are built on it in ``oversmooth.claims``, which
it never imports.

The names below are imported on first use, so a cell's job process (``oversmooth.study.cell_job``,
which starts its own train process) does not pay for torch.
"""

from oversmooth.utils.lazy import lazy_exports

_WHERE = {
    "Cell": "config",
    "StudyConfig": "config",
    "Variant": "config",
    "STUDY_PRESETS": "presets",
    "study_preset": "presets",
    "CellOutcome": "runner",
    "run_study": "runner",
    "worker_spec": "runner",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_exports(__name__, _WHERE)
