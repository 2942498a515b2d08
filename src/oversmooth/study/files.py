"""The file names of a study folder and of a cell (``oversmooth train`` writes some of them)."""

CELLS_DIR = "cells"  # DIR/cells/<cell>/
STUDY_FILE = "study.json"  # DIR/study.json: the grid and the command that ran it
CELL_FILE = "cell.json"  # what the cell is and its RunSpec
SPEC_FILE = "spec.json"  # the RunSpec its train process runs (oversmooth train --spec)
LOG_FILE = "train.log"  # the train process's output
LOCK_FILE = ".lock"  # held while a process trains the cell
# Named again here (oversmooth.train.METRICS_FILE / RESULTS_FILE) so that `oversmooth --help`
# does not import torch; a test keeps the two in step.
METRICS_FILE = "metrics.jsonl"
CHECKPOINT_FILE = "checkpoint.pt"  # oversmooth.train.checkpoint.FILENAME
RESULTS_FILE = "results.json"
RESULTS_FIELDS = {"status": str}  # what every reader of a results.json needs (oversmooth.utils.json_files)
MODEL_DIR = "model"  # the trained weights (completed runs)
ANALYSIS_FILE = "analysis.json"  # measurements on the trained model (oversmooth.claims.cell_analysis)
NULL_FILE = "null.json"  # results/<study>/: its arms at random init (oversmooth.study.null)
