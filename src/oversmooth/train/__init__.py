"""Training: the run description (``run_spec.RunSpec``), tasks, AdamW + warmup-cosine, atomic
checkpoints with exact resume, DDP.

Knows nothing of the command line: ``oversmooth.train.run.run(spec)`` wires data, models and the
loop together for a ``oversmooth.train.run_spec.RunSpec``; ``oversmooth train`` maps its flags to one.
The names below import torch on first use only, so that ``run_spec`` (read by ``--help``) stays torch-free.
"""

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


def __getattr__(name: str):
    """``from oversmooth.train import train`` imports ``oversmooth.train.loop`` (and torch) then."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"oversmooth.train.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'oversmooth.train' has no attribute {name!r}")
