"""Yu & Zhang: token-similarity (t_sim) escalation under repeated attention, and de-escalation.

Pure token mixing (H = I), the layer variants of ``simulate``:

- ``attention``: X <- A X. t_div = 1 - t_sim decays like |lambda_2(A)|^(2l): predicted rate
  (per layer, of -ln t_div) 2 ln(1 / |lambda_2|).
- ``residual``: X <- X + A X, i.e. (I + A) X: predicted rate 2 ln(2 / max_{i>=2} |1 + lambda_i|).
- ``post-LN``: X <- LN(X + A X): measured only.

Both predictions are ``-2 ln(separation)`` of ``oversmooth.spectra.predict_dynamics`` with
lambda_H = 1. Each variant also runs with de-escalation (``tau`` > 0) on the attention output.
The measured rate is the least-squares slope of -ln t_div over the layers where
t_div > ``floor`` (float64 leaves about 1e-16 of t_div resolvable).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd
import torch
from torch import Tensor

from oversmooth.metrics import attention_lambda2, measure, t_div
from oversmooth.spectra import predict_dynamics
from oversmooth.theory.sampling import random_attention
from oversmooth.theory.simulate import LayerConfig, simulate

VARIANTS = {
    "attention": LayerConfig(residual=False),
    "residual": LayerConfig(),
    "post-LN": LayerConfig(norm="post"),
}
LINEAR_VARIANTS = ("attention", "residual")
RATE_DRAWS = 48  # attention matrices of the rate study


def escalation_curves(
    tokens: int,
    dim: int,
    depth: int,
    generator: torch.Generator,
    *,
    sequences: int = 4,
    temperature: float = 2.0,
    taus: tuple[float, ...] = (0.0, 0.5, 1.0),
) -> dict[str, pd.DataFrame]:
    """Metric tables for every variant x tau on one sampled A, keyed ``"<variant>, tau=<tau>"``."""
    attention = random_attention(tokens, generator, temperature=temperature)[0]
    x0 = torch.randn(sequences, tokens, dim, generator=generator, dtype=torch.float64)
    identity = torch.eye(dim, dtype=torch.float64)
    return {
        f"{name}, tau={tau:g}": measure(
            simulate(x0, identity, depth, replace(config, tau=tau), attention=attention).states, hook="theory"
        )
        for name, config in VARIANTS.items()
        for tau in taus
    }


def fitted_rate(t_div_curve: Tensor, floor: float = 1e-12) -> Tensor:
    """Slope of ``-ln t_div`` per layer, ``t_div_curve: [layers, B] -> [B]``, fitted over the
    layers (after layer 0) where t_div > floor; NaN with fewer than 3 such layers."""
    rates = []
    for curve in t_div_curve.T:
        layers = torch.arange(curve.numel(), dtype=torch.float64)
        keep = (curve > floor) & (layers > 0)
        if int(keep.sum()) < 3:
            rates.append(math.nan)
            continue
        x, y = layers[keep], -curve[keep].log()
        x = x - x.mean()
        rates.append(float((x * (y - y.mean())).sum() / (x * x).sum()))
    return torch.tensor(rates, dtype=torch.float64)


@dataclass
class RateStudy:
    """Per sampled A (``[K]``): |lambda_2|, and per variant the measured and predicted rates."""

    lambda2: Tensor
    measured: dict[str, Tensor]
    predicted: dict[str, Tensor]  # linear variants only


def escalation_rates(
    tokens: int,
    dim: int,
    depth: int,
    generator: torch.Generator,
    *,
    draws: int = RATE_DRAWS,
    temperatures: tuple[float, float] = (0.3, 6.0),
) -> RateStudy:
    """Escalation rate against |lambda_2(A)| over ``draws`` attention matrices whose logit
    temperature is spread log-uniformly over ``temperatures``."""
    low, high = (math.log(t) for t in temperatures)
    temperature = torch.exp(torch.linspace(low, high, draws, dtype=torch.float64))
    attention = random_attention(tokens, generator, batch=draws, temperature=temperature)
    x0 = torch.randn(draws, tokens, dim, generator=generator, dtype=torch.float64)
    identity = torch.eye(dim, dtype=torch.float64)
    measured, predicted = {}, {}
    for name, config in VARIANTS.items():
        states = simulate(x0, identity, depth, config, attention=attention).states
        measured[name] = fitted_rate(torch.stack([t_div(x) for x in states]))
        if name in LINEAR_VARIANTS:
            predicted[name] = torch.tensor(
                [
                    -2 * math.log(max(predict_dynamics(a, torch.ones(1), residual=config.residual).separation, 1e-300))
                    for a in attention
                ],
                dtype=torch.float64,
            )
    return RateStudy(attention_lambda2(attention[:, None]), measured, predicted)
