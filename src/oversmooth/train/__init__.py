"""Training: tasks, AdamW + warmup-cosine, atomic checkpoints with exact resume, DDP.

Knows nothing of the command line: ``oversmooth.train.run.run(spec)`` wires data, models and the
loop together for a ``oversmooth.run_spec.RunSpec``; ``oversmooth train`` maps its flags to one.
"""

from oversmooth.train.checkpoint import load_checkpoint, save_checkpoint
from oversmooth.train.distributed import Distributed, setup_distributed, teardown_distributed
from oversmooth.train.evaluation import evaluate, layer_metrics
from oversmooth.train.loop import METRICS_FILE, RESULTS_FILE, TrainConfig, epoch_order, train
from oversmooth.train.optim import build_optimizer, parameter_groups, warmup_cosine
from oversmooth.train.tasks import ImageClassification, LanguageModelling, SupervisedTask

__all__ = [
    "load_checkpoint", "save_checkpoint", "Distributed", "setup_distributed", "teardown_distributed",
    "evaluate", "layer_metrics", "METRICS_FILE", "RESULTS_FILE", "TrainConfig", "epoch_order", "train",
    "build_optimizer", "parameter_groups", "warmup_cosine", "ImageClassification", "LanguageModelling",
    "SupervisedTask",
]
