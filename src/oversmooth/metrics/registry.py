"""Every per-layer measure, by name: the one place that lists them (as ``mitigations/registry.py``
lists the methods).

Each entry is a ``Measure`` record: its kind (``stream``: residual-stream states ``[batch, tokens,
features]``; ``attention``: maps ``[batch, heads, n, n]``), the function computing it (shapes in
its docstring), what it measures and is blind to, and its paper. The suite (``measure``), the
columns of ``analyze``'s tables, CSV files, plots and report, ``analyze.watch`` and the docs test
(the metric table of docs/metrics.md) all read it. Order matters: it is the order of the columns.

Adding a measure is one function (in ``similarity.py``, ``rank.py``, ``massive.py`` or
``attention.py``) and one entry here; a naive reference in ``tests/reference_metrics.py`` and a row
in docs/metrics.md.

The sink measures (``sink=True``: massive activations, the first token's norm, the representation
entropy, cos_sim without the outliers) are stream measures taken on request: they are not in
``measure``'s default set ``METRICS`` (what training records each epoch), and ``analyze`` takes them
on its attention sample of the unpatched model, beside the attention measures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from oversmooth.errors import UsageError, did_you_mean
from oversmooth.metrics.attention import (
    attention_entropy,
    attention_lambda2,
    attention_similarity,
    sink_mass,
    sink_rate,
)
from oversmooth.metrics.massive import cos_sim_outlier_free, first_token_norm, massive_ratio
from oversmooth.metrics.rank import centred_residual, effective_rank, rank_measures, repr_entropy, stable_rank
from oversmooth.metrics.similarity import anisotropy, block_influence, cos_sim, similarity_measures, t_div, t_sim

Kind = Literal["stream", "attention"]


@dataclass(frozen=True)
class Measure:
    """One per-layer measure: what it takes and computes, what it cannot see, where it comes from.

    ``compute(x, mask, exclude) -> [batch]`` float64, ``x`` one layer's states or attention maps,
    ``mask [batch, tokens]`` (True = real token), ``exclude`` the positions left out; with ``pair``,
    ``compute(before, after, mask, exclude)`` of the layer before and this one. ``together``, where
    measures share their costly part: ``together(x, mask, exclude) -> {name: [batch]}`` computes
    every measure naming it in one pass, the same values each one's ``compute`` gives."""

    name: str  # its column in every table
    kind: Kind
    compute: Callable[..., Tensor]
    about: str  # one line: what it measures
    blind_to: str  # what it cannot see
    paper: str
    pair: bool = False  # compares each layer with the one before it: NaN at layer 0
    eigensolve: bool = False  # a full eigensolve per sequence: analyze takes it over the first rank_sequences
    eigenvalues: bool = False  # takes the caller's ``counted_eigenvalues`` of the layer when it has them
    sink: bool = False  # a stream measure of the sink, on request only (module docstring): not in METRICS
    log: bool = False  # spans decades: plotted on a log axis
    together: Callable[..., dict[str, Tensor]] | None = None  # one pass for the measures naming it

    def at(
        self,
        layers: Sequence[Tensor],
        layer: int,
        mask: Tensor | None,
        exclude: Sequence[int],
        eigenvalues: Sequence[Tensor] | None = None,
    ) -> Tensor:
        """The measure at ``layer`` of ``layers`` (one tensor per layer), ``[batch]``."""
        if self.pair:
            if layer == 0:
                return torch.full((layers[0].shape[0],), math.nan, dtype=torch.float64)
            return self.compute(layers[layer - 1], layers[layer], mask, exclude)
        if self.eigenvalues:
            return self.compute(layers[layer], mask, exclude, eigenvalues=eigenvalues)
        return self.compute(layers[layer], mask, exclude)


DIRECTIONS = "directions only: a shared offset and a growing norm look alike"
YU_ZHANG = 'Yu & Zhang 2023, "Why classic Transformers are shallow"'
NEUTRENO = "NeuTRENO (Nguyen, Nguyen & Baraniuk, NeurIPS 2023)"
SINKS_VALLEYS = 'Queipo-de-Llano et al. 2025, "Attention Sinks and Compression Valleys ...", arXiv 2510.06477'

LAYER_MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure(
            "cos_sim",
            "stream",
            cos_sim,
            "mean cosine over distinct pairs of a sequence's tokens",
            DIRECTIONS,
            f"{NEUTRENO}, App. G",
            together=similarity_measures,
        ),
        Measure(
            "t_sim",
            "stream",
            t_sim,
            "the share of energy in the mean token, in [0, 1]",
            "the mean token's direction: only its energy counts",
            f"{YU_ZHANG}; Wang et al., ICLR 2022 (the DC share)",
            together=similarity_measures,
        ),
        Measure(
            "t_div",
            "stream",
            t_div,
            "1 - t_sim: the high-frequency share of the energy",
            "the mean token's direction: only its energy counts",
            YU_ZHANG,
            together=similarity_measures,
        ),
        Measure(
            "anisotropy",
            "stream",
            anisotropy,
            "mean cosine between a sequence's tokens and every token of the other sequences",
            f"{DIRECTIONS}; NaN with fewer than 2 sequences",
            "Ethayarajh, EMNLP 2019",
            together=similarity_measures,
        ),
        Measure(
            "centred_residual",
            "stream",
            centred_residual,
            "|X - 1 xbar^T| / |X| in Dong et al.'s composite norm: an upper bound on their rank-collapse residual",
            "how many directions the spread around the mean spans",
            "Dong, Cordonnier & Loukas, ICML 2021",
        ),
        Measure(
            "effective_rank",
            "stream",
            effective_rank,
            "exp of the entropy of the centred tokens' normalised singular values",
            "the spread's size: a tiny spread over many directions reads as high",
            "Roy & Vetterli, EUSIPCO 2007",
            eigensolve=True,
            together=rank_measures,
        ),
        Measure(
            "stable_rank",
            "stream",
            stable_rank,
            "|X|_F^2 / |X|_2^2 of the raw tokens",
            "all but the top direction's share: a large mean token holds it near 1",
            "Rudelson & Vershynin, J. ACM 2007",
            eigensolve=True,
            together=rank_measures,
        ),
        Measure(
            "block_influence",
            "stream",
            block_influence,
            "1 - mean cosine of each token before and after the block",
            "whether tokens move together: each token's turn counts alone",
            "ShortGPT (Men et al. 2024, arXiv 2403.03853)",
            pair=True,
        ),
        Measure(
            "massive_ratio",
            "stream",
            massive_ratio,
            "largest |h| over the real tokens' entries / their median |h| (massive: > 1000x and |h| > 100)",
            "where the largest entry sits (massive_location) and every entry but it and the median",
            'Sun et al. 2024, "Massive Activations in Large Language Models", arXiv 2402.17762',
            sink=True,
            log=True,
        ),
        Measure(
            "first_token_norm",
            "stream",
            first_token_norm,
            "|h_first| / the median |h_t| over the real tokens (the first token's massive norm)",
            "every direction, and every token's norm but the first's and the median's",
            f"{SINKS_VALLEYS} (the BOS norm)",
            sink=True,
            log=True,
        ),
        Measure(
            "repr_entropy",
            "stream",
            repr_entropy,
            "von Neumann entropy (nats) of the uncentred token Gram matrix K / tr K over the real tokens",
            "which tokens hold the energy: one huge-norm token and tokens collapsed together read alike",
            f"{SINKS_VALLEYS} (the compression valley)",
            eigensolve=True,
            sink=True,
        ),
        Measure(
            "cos_sim_outlier_free",
            "stream",
            cos_sim_outlier_free,
            "cos_sim without the first token and the massive channels (max |h| > 100x the median |h|)",
            f"what the removed channels carry; {DIRECTIONS}",
            'Timkey & van Schijndel, EMNLP 2021, "All Bark and No Bite" (rogue dimensions)',
            sink=True,
        ),
        Measure(
            "attn_entropy",
            "attention",
            attention_entropy,
            "mean over queries of the entropy of their attention (nats), heads averaged",
            "which keys the weight falls on: only how spread it is",
            "Zhai et al., ICML 2023 (attention entropy collapse)",
        ),
        Measure(
            "attn_lambda2",
            "attention",
            attention_lambda2,
            "|lambda_2| of the counted block of A, rows renormalised (the spectral gap is 1 - |lambda_2|)",
            "every mode but the slowest, and the transients of a non-normal map",
            YU_ZHANG,
            eigenvalues=True,
        ),
        Measure(
            "attn_similarity",
            "attention",
            attention_similarity,
            "cosine between this layer's and the previous layer's attention maps, per head",
            "how much either map mixes: only whether the two attend alike",
            f"{NEUTRENO}, App. G.2",
            pair=True,
        ),
        Measure(
            "sink_mass",
            "attention",
            sink_mass,
            "the attention share on the first token, mean over counted queries and heads",
            "every key but the first",
            "StreamingLLM (Xiao et al., ICLR 2024)",
        ),
        Measure(
            "sink_rate",
            "attention",
            sink_rate,
            "the share of heads whose mean attention on the first token, over counted queries, is >= 0.3",
            "how far a head's mass is from 0.3, and every key but the first",
            'Gu et al., ICLR 2025, "When Attention Sink Emerges in Language Models", arXiv 2410.10781',
        ),
    )
}


def names(kind: Kind) -> tuple[str, ...]:
    """The measures of ``kind``, in column order."""
    return tuple(name for name, m in LAYER_MEASURES.items() if m.kind == kind)


#: the stream measures (``measure``'s default), the stream measures of the sink (on request) and the
#: attention measures, in column order
METRICS = tuple(name for name in names("stream") if not LAYER_MEASURES[name].sink)
SINK_METRICS = tuple(name for name in names("stream") if LAYER_MEASURES[name].sink)
ATTENTION_METRICS = names("attention")
#: the measures that need a full eigensolve per sequence, O(n d min(n, d))
RANK_METRICS = tuple(name for name, m in LAYER_MEASURES.items() if m.eigensolve)


def check_measures(chosen: Sequence[str], kind: Kind = "stream") -> tuple[str, ...]:
    """``chosen`` as a tuple, each checked to be a measure of ``kind``; UsageError naming the choices."""
    for name in chosen:
        if name not in LAYER_MEASURES or LAYER_MEASURES[name].kind != kind:
            known = names(kind)
            raise UsageError(f"unknown metric {name!r}{did_you_mean(name, known)}; choose from {', '.join(known)}")
    return tuple(chosen)


def measure_columns(chosen: Sequence[str]) -> list[str]:
    """The table columns of the measures ``chosen``: each one's mean over sequences, then its std.

    >>> measure_columns(("cos_sim", "t_sim"))
    ['cos_sim', 'cos_sim_std', 't_sim', 't_sim_std']
    """
    return [c for name in chosen for c in (name, f"{name}_std")]


def layer_values(
    chosen: Sequence[str],
    layers: Sequence[Tensor],
    layer: int,
    mask: Tensor | None,
    exclude: Sequence[int],
    eigenvalues: Sequence[Tensor] | None = None,
) -> dict[str, Tensor]:
    """Each measure named in ``chosen`` at ``layer`` of ``layers``, ``{name: [batch]}``; measures
    that share a ``together`` pass are computed by it, once, when more than one is chosen."""
    values: dict[str, Tensor] = {}
    for name in chosen:
        shared = LAYER_MEASURES[name].together
        if name in values:
            continue
        if shared is not None and sum(LAYER_MEASURES[other].together is shared for other in chosen) > 1:
            values.update(shared(layers[layer], mask, exclude))
        else:
            values[name] = LAYER_MEASURES[name].at(layers, layer, mask, exclude, eigenvalues)
    return {name: values[name] for name in chosen}
