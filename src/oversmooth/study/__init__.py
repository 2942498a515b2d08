"""Side-by-side studies: grids of training runs, their results, and the claims report.

Knows training (``oversmooth train`` runs), our models and the Hugging Face analysis; the CLI
(``oversmooth study``, ``oversmooth report``) only wires it together.
"""

from oversmooth.study.config import Cell, StudyConfig, Variant
from oversmooth.study.presets import STUDY_PRESETS, study_preset
from oversmooth.study.runner import CellOutcome, run_study, worker_spec

__all__ = ["Cell", "CellOutcome", "STUDY_PRESETS", "StudyConfig", "Variant", "run_study", "study_preset",
           "worker_spec"]
