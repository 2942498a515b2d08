"""Per-layer oversmoothing measures (definitions: the metric table of docs/metrics.md; the list of them:
``LAYER_MEASURES``, ``oversmooth.metrics.registry``), mask-aware, float64, batched.

Token measures take ``x: [batch, tokens, features]``, an optional boolean ``mask: [batch,
tokens]`` (True = real token) and ``exclude`` positions, and return ``[batch]`` float64.

>>> import torch
>>> from oversmooth.metrics import cos_sim, t_sim
>>> same = torch.ones(2, 6, 4)
>>> cos_sim(same).tolist(), t_sim(same).tolist()
([1.0, 1.0], [1.0, 1.0])
"""

from oversmooth.metrics.attention import (
    attention_entropy,
    attention_lambda2,
    attention_similarity,
    sink_mass,
    sink_rate,
)
from oversmooth.metrics.cka import CKA
from oversmooth.metrics.massive import cos_sim_outlier_free, first_token_norm, massive_location, massive_ratio
from oversmooth.metrics.rank import centred_residual, effective_rank, repr_entropy, stable_rank
from oversmooth.metrics.registry import (
    ATTENTION_METRICS,
    LAYER_MEASURES,
    METRICS,
    RANK_METRICS,
    SINK_METRICS,
    Measure,
    check_measures,
    measure_columns,
)
from oversmooth.metrics.similarity import angular_distance, anisotropy, block_influence, cos_sim, t_div, t_sim
from oversmooth.metrics.suite import measure, metric_table
from oversmooth.metrics.tokens import valid_tokens

__all__ = [
    "cos_sim",
    "t_sim",
    "t_div",
    "anisotropy",
    "block_influence",
    "angular_distance",
    "CKA",
    "sink_mass",
    "sink_rate",
    "massive_ratio",
    "massive_location",
    "first_token_norm",
    "repr_entropy",
    "cos_sim_outlier_free",
    "centred_residual",
    "effective_rank",
    "stable_rank",
    "attention_entropy",
    "attention_lambda2",
    "attention_similarity",
    "measure",
    "metric_table",
    "METRICS",
    "ATTENTION_METRICS",
    "RANK_METRICS",
    "SINK_METRICS",
    "LAYER_MEASURES",
    "Measure",
    "measure_columns",
    "check_measures",
    "valid_tokens",
]
