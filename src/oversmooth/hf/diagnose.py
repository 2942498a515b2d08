"""Spectral diagnosis of a loaded model (DESIGN §4), using ``oversmooth.spectra`` for the maths.

Per block: eigenvalues of H_eff = diag(gamma) W_V W_O for the whole layer and per head, their
summary (share with positive real part, dominant eigenvalue, verdict) and LayerNorm sign
statistics. What is folded:

- pre-LN families (GPT-2, ViT, DeiT, Llama): gamma = the weight of the norm in front of
  attention (``ln_1`` / ``layernorm_before`` / ``input_layernorm``; RMSNorm for Llama) is folded.
- post-LN families (BERT, RoBERTa, DistilBERT): nothing precedes attention inside the block, so
  nothing is folded; the sign statistics describe the LayerNorm right after the attention add
  (``attention.output.LayerNorm`` / ``sa_layer_norm``), reported only.

With captured attention, ``predict`` adds the dominant mode of X <- X + A X H_eff for each given
sequence, A = the head-mean attention over its valid tokens (an approximation for multi-head
layers, where each head has its own A).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import torch
from torch import Tensor

from oversmooth.hf.families import Layout
from oversmooth.spectra import predict_dynamics, summarize_spectrum, value_output_eigenvalues
from oversmooth.threads import thread_map


@dataclass
class LayerSpectrum:
    """Block ``layer - 1``'s diagnosis (it makes stream state ``layer``); ``prediction`` by ``predict``."""

    layer: int
    eigenvalues: Tensor  # complex [d_v]
    head_eigenvalues: Tensor  # complex [H, d_head]
    summary: dict
    heads: list[dict]
    norm: dict
    prediction: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        pairs = lambda eig: [[round(float(z.real), 6), round(float(z.imag), 6)] for z in eig]  # noqa: E731
        return {"layer": self.layer, "summary": self.summary, "norm": self.norm,
                "prediction": self.prediction, "eigenvalues": pairs(self.eigenvalues),
                "heads": [{**head, "eigenvalues": pairs(eig)}
                          for head, eig in zip(self.heads, self.head_eigenvalues)]}


def head_value_weight(lay: Layout, layer: int) -> Tensor:
    """W_V ``[d, heads * d_head]``, kv-head columns repeated to the query heads (GQA)."""
    w_v = lay.value_weight(layer).detach()
    groups = lay.heads // lay.kv_heads
    return w_v.reshape(w_v.shape[0], lay.kv_heads, lay.head_dim).repeat_interleave(groups, dim=1).flatten(1)


def spectra(lay: Layout) -> list[LayerSpectrum]:
    """Diagnose every block of ``lay`` from its weights alone (blocks side by side on torch's threads)."""
    def diagnose(layer: int) -> LayerSpectrum:
        w_v, w_o = head_value_weight(lay, layer), lay.out_weight(layer).detach()
        folded = lay.module(layer, "pre_norm").weight.detach() if lay.family.pre_norm else None
        reported = folded if folded is not None else lay.module(layer, "mid_norm").weight.detach()
        eig = value_output_eigenvalues(w_v, w_o, folded)
        head_eig = value_output_eigenvalues(w_v, w_o, folded, heads=lay.heads)
        summary = summarize_spectrum(eig, reported).as_dict()
        heads = [summarize_spectrum(e, reported).as_dict() for e in head_eig]
        norm = {"folded": folded is not None,
                "which": lay.family.pre_norm or lay.family.mid_norm,
                "negative_share": float((reported < 0).double().mean()),
                "min": float(reported.min()), "max": float(reported.max())}
        return LayerSpectrum(layer + 1, eig, head_eig, summary, heads, norm)

    with torch.no_grad():
        return thread_map(diagnose, range(len(lay.blocks)))


def predict(layers: list[LayerSpectrum], patterns: list[Tensor], mask: Tensor) -> None:
    """Add the predicted dominant mode per block from ``patterns[l]: [B, H, n, n]`` and ``mask [B, n]``."""
    def predict_layer(spectrum: LayerSpectrum, pattern: Tensor) -> dict:
        found = []
        for b in range(pattern.shape[0]):
            valid = mask[b].nonzero().flatten()
            a = pattern[b][:, valid][:, :, valid].double().mean(dim=0)
            a = a / a.sum(dim=-1, keepdim=True)
            found.append(predict_dynamics(a, spectrum.eigenvalues))
        modes = Counter(p.mode for p in found)
        first = found[0]
        return {"mode": modes.most_common(1)[0][0], "mode_counts": dict(modes),
                "sequences": len(found), "first_sequence": first.as_dict(),
                "describe": first.describe()}

    with torch.no_grad():
        found = thread_map(lambda pair: predict_layer(*pair), list(zip(layers, patterns)))
    for spectrum, prediction in zip(layers, found):
        spectrum.prediction = prediction
