"""Spectral diagnosis of a loaded model (Dovonon et al. 2025), using ``oversmooth.spectra`` for the maths.

Per block: eigenvalues of H_eff = diag(gamma) W_V W_O for the whole layer and per head, their
weight-only summary (share with positive real part, dominant eigenvalue, ``sign_verdict``) and
LayerNorm sign statistics. What is folded:

- pre-LN and parallel blocks: gamma = the gain of the norm in front of attention
  (``Family.pre_norm``: ``ln_1``, ``input_layernorm``, ``layernorm_before``, ...) is folded. The
  gain is read from what the norm does (``norm_gain``), so Gemma's ``1 + weight`` is folded right.
- post-LN blocks (BERT, RoBERTa, DistilBERT, ...): nothing precedes attention inside the block,
  so nothing is folded; the sign statistics describe the norm right after the attention add
  (``Family.mid_norm``), reported only.

With captured attention, ``add_dynamics`` adds the layer's verdict
(``oversmooth.spectra.dynamics_verdict``): per sequence, each head's own attention map over the
valid tokens (rows renormalised) against that head's H_eff eigenvalues; over the sequences, the
most common verdict (``mixed`` when two verdicts tie for most common).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from oversmooth.hf import Layout
from oversmooth.spectra import TOLERANCE, dynamics_verdict, summarize_spectrum, value_output_eigenvalues
from oversmooth.utils.threads import thread_map


@dataclass
class LayerSpectrum:
    """Block ``layer - 1``'s diagnosis (it makes stream state ``layer``); ``dynamics`` by
    ``add_dynamics`` (None without an attention sample)."""

    layer: int
    eigenvalues: Tensor  # complex [d_v]
    head_eigenvalues: Tensor  # complex [H, d_head]
    summary: dict
    heads: list[dict]
    norm: dict
    dynamics: dict | None = None

    def to_dict(self) -> dict:
        pairs = lambda eig: [[round(float(z.real), 6), round(float(z.imag), 6)] for z in eig]  # noqa: E731
        return {
            "layer": self.layer,
            "summary": self.summary,
            "norm": self.norm,
            "dynamics": self.dynamics,
            "eigenvalues": pairs(self.eigenvalues),
            "heads": [{**head, "eigenvalues": pairs(eig)} for head, eig in zip(self.heads, self.head_eigenvalues)],
        }


def norm_gain(norm: nn.Module, size: int) -> Tensor:
    """The per-channel gain gamma ``[size]`` (float64) of a LayerNorm- or RMSNorm-like ``norm``,
    read from what it does: ``(N(u) - N(-u)) / 2u`` for a zero-mean, unit-RMS ``u`` of alternating
    signs, so any bias cancels (odd sizes read the last channel from a second, rolled ``u``). Its
    ``weight`` (or ``1 + weight``, as in Gemma's RMSNorm) is returned exactly when the measured gain
    agrees with it to the norm's precision; otherwise the measured gain."""
    u = torch.ones(size, dtype=torch.float64)
    u[1::2] = -1
    if size % 2:
        u[-1] = 0
    u = u * (size / u.count_nonzero()) ** 0.5
    weight = next(norm.parameters())
    gains = []
    for probe in (u, u.roll(1)):
        # forward, not __call__: no hook of a capture running beside us (on another thread) fires
        out = norm.forward(torch.stack([probe, -probe]).to(weight.device, weight.dtype)).double().cpu()
        gains.append((out[0] - out[1]) / (2 * probe).where(probe != 0, torch.ones_like(probe)))
    measured = torch.where(u != 0, gains[0], gains[1])
    stored = getattr(norm, "weight", None)
    tolerance = 1e-4 if torch.finfo(weight.dtype).bits >= 32 else 3e-2
    stored = None if stored is None else stored.detach().double().cpu()
    for candidate in () if stored is None else (stored, 1 + stored):
        if candidate.shape == measured.shape and torch.allclose(measured, candidate, rtol=tolerance, atol=tolerance):
            return candidate
    return measured


def head_value_weight(lay: Layout, layer: int) -> Tensor:
    """W_V ``[d, heads * d_head]``, kv-head columns repeated to the query heads (GQA)."""
    w_v = lay.value_weight(layer).detach()
    groups = lay.heads // lay.kv_heads
    return w_v.reshape(w_v.shape[0], lay.kv_heads, lay.head_dim).repeat_interleave(groups, dim=1).flatten(1)


def spectra(lay: Layout) -> list[LayerSpectrum]:
    """Diagnose every block of ``lay`` from its weights alone (blocks side by side on torch's threads)."""

    def diagnose(layer: int) -> LayerSpectrum:
        w_v, w_o = head_value_weight(lay, layer), lay.out_weight(layer).detach()
        folded = norm_gain(lay.module(layer, "pre_norm"), lay.hidden) if lay.family.pre_norm else None
        reported = folded if folded is not None else norm_gain(lay.module(layer, "mid_norm"), lay.hidden)
        eig = value_output_eigenvalues(w_v, w_o, folded)
        head_eig = value_output_eigenvalues(w_v, w_o, folded, heads=lay.heads)
        summary = summarize_spectrum(eig, reported).as_dict()
        heads = [summarize_spectrum(e, reported).as_dict() for e in head_eig]
        norm = {
            "folded": folded is not None,
            "which": lay.family.pre_norm or lay.family.mid_norm,
            "negative_share": float((reported < 0).double().mean()),
            "min": float(reported.min()),
            "max": float(reported.max()),
        }
        return LayerSpectrum(layer + 1, eig, head_eig, summary, heads, norm)

    with torch.no_grad():
        return thread_map(diagnose, range(len(lay.blocks)))


def add_dynamics(layers: list[LayerSpectrum], eigenvalues: list[list[Tensor]], tolerance: float = TOLERANCE) -> None:
    """Set ``dynamics`` of every block from ``eigenvalues[l][b]: [H, n_b]``, the eigenvalues of each
    head's attention map of sequence ``b`` over its valid tokens, rows renormalised
    (``oversmooth.metrics.attention.counted_eigenvalues`` of the pattern and the valid-token mask).

    ``dynamics``: ``verdict`` (most common over the B sequences, ``mixed`` on a tie),
    ``verdict_counts`` (per-sequence layer verdicts), ``c`` (constant-mode growth, the same for
    every sequence), ``o`` (``[B]`` other-mode growth per sequence), ``head_verdict_counts``
    (over heads x sequences), ``heads`` (per head: ``c``, ``o [B]``, ``verdicts [B]``),
    ``sequences``, ``tolerance``.
    """
    for spectrum, per_sequence in zip(layers, eigenvalues):
        found = [dynamics_verdict(lambda_a, spectrum.head_eigenvalues, tolerance) for lambda_a in per_sequence]
        ranked = Counter(v.verdict for v in found).most_common()
        tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        spectrum.dynamics = {
            "verdict": "mixed" if tied else ranked[0][0],
            "verdict_counts": dict(ranked),
            "c": found[0].c,
            "o": [v.o for v in found],
            "head_verdict_counts": dict(Counter(h for v in found for h in v.head_verdicts)),
            "heads": [
                {
                    "c": found[0].head_c[h],
                    "o": [v.head_o[h] for v in found],
                    "verdicts": [v.head_verdicts[h] for v in found],
                }
                for h in range(len(found[0].head_c))
            ],
            "sequences": len(found),
            "tolerance": tolerance,
        }
