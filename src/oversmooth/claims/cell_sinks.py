"""The attention sink and the massive activations of a trained causal LM cell, for claims S3 and S4
(docs/registrations/sinks.md): Gu et al. (ICLR 2025, arXiv 2410.10781), a sink emerges with
training; Zuhri et al. (arXiv 2504.20966), not under softpick; Qiu et al. (NeurIPS 2025, arXiv
2505.06708), gated attention lowers the first-token share and the largest activation.

On the probe ``inputs: [batch, n]`` (every attention map), one record:

- ``sink_rate``: per block, the share of heads whose mean attention on the first token over
  queries 2 ... n is at least 0.3 (``metrics.sink_rate``); ``sink_rate_model``, their mean (Gu et
  al.'s metric: the share of all heads);
- ``first_token_share``: per block, the mean attention on the first token over heads and the same
  queries (``metrics.sink_mass``); ``first_token_share_model``, their mean;
- ``massive_ratio``: per state l = 0 ... L (after block l), max |h| / median |h| of the stream,
  averaged over sequences; ``massive_ratio_max`` over l >= 1;
- ``cos_sim_last``: the last state's cos_sim with the first token left out.
"""

from __future__ import annotations

import torch

from oversmooth.activations import hook_name
from oversmooth.metrics import cos_sim, massive_ratio, sink_mass, sink_rate

FIRST = (0,)  # the first query sees only the first token: left out, as the registration says


def _mean(values: torch.Tensor) -> float:
    return float(values.double().mean())


@torch.no_grad()
def sink_record(model, inputs: torch.Tensor) -> dict:
    """S3/S4's measures of ``model`` (a causal ``oversmooth.models.CausalLM``) on ``inputs [batch, n]``."""
    depth = model.cfg.depth
    patterns = [hook_name(b, "pattern") for b in range(depth)]
    states = [hook_name(0, "resid_pre")] + [hook_name(b, "resid_post") for b in range(depth)]
    _, cache = model.run_with_cache(inputs, names=patterns + states)
    rates = [_mean(sink_rate(cache[name], exclude=FIRST)) for name in patterns]
    shares = [_mean(sink_mass(cache[name], exclude=FIRST)) for name in patterns]
    ratios = [_mean(massive_ratio(cache[name])) for name in states]
    return {
        "sink_rate": rates,
        "sink_rate_model": sum(rates) / depth,
        "first_token_share": shares,
        "first_token_share_model": sum(shares) / depth,
        "massive_ratio": ratios,
        "massive_ratio_max": max(ratios[1:]),
        "cos_sim_last": _mean(cos_sim(cache[states[-1]], exclude=FIRST)),
    }
