"""Training: the run description (``run_spec.RunSpec``), tasks, AdamW + warmup-cosine, atomic
checkpoints with exact resume, DDP.

Knows nothing of the command line: ``oversmooth.train.run.run(spec)`` wires data, models and the
loop together for a ``oversmooth.train.run_spec.RunSpec``; ``oversmooth train`` maps its flags to one.
The names below import torch on first use only, so that ``run_spec`` (read by ``--help``) stays torch-free.
"""

from oversmooth.utils.lazy import lazy_exports

_LAZY = {
    "load_checkpoint": "checkpoint",
    "save_checkpoint": "checkpoint",
    "Distributed": "distributed",
    "setup_distributed": "distributed",
    "teardown_distributed": "distributed",
    "evaluate": "evaluation",
    "layer_metrics": "evaluation",
    "METRICS_FILE": "loop",
    "RESULTS_FILE": "loop",
    "TrainConfig": "loop",
    "epoch_order": "loop",
    "train": "loop",
    "build_optimizer": "optim",
    "parameter_groups": "optim",
    "warmup_cosine": "optim",
    "ImageClassification": "tasks",
    "LanguageModelling": "tasks",
    "SupervisedTask": "tasks",
}
__all__ = list(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY)
