"""sigmaReparam (Zhai et al., ICML 2023, "Stabilizing Transformer Training by Preventing Attention
Entropy Collapse"): every linear weight is used divided by its spectral norm, times a learned scale.

``W_hat = (gamma / sigma(W)) W`` for each linear layer of a block (W_Q, W_K, W_V, W_O and the
MLP's two), with ``sigma(W) = v^T W u`` from one power-iteration step per forward pass: ``v =
normalize(W u)``, ``u = normalize(W^T v)`` under no_grad, the new ``u`` kept (a buffer) only in
training; the gradient reaches W through sigma. ``u`` starts at W's top right singular vector and
``gamma`` (one scalar per layer) at the sigma this step computes, so the model starts exactly as the
weights it was built with (the official ``SNLinear``, apple/ml-sigma-reparam, ``vision/layers.py``,
starts gamma at the SVD's top singular value: the same number to rounding). Biases are kept as they are. The
official vision models also reparametrise the patch embedding and drop every LayerNorm; we keep
the block's norms and the embeddings, so it composes with either norm placement.

Not Dovonon et al.'s ``spectral``: that one fixes the *eigenvalues* of the product W_V W_O to a
sign range (it decides smoothing vs sharpening); sigmaReparam bounds each matrix's largest
*singular value* by a learned scale (it bounds attention logits and update sizes) and says
nothing about signs.

Patched into a pretrained model, every linear map of every block (``nn.Linear``, and GPT-2's
``Conv1D`` whose weight is stored transposed: sigma is the same) gets the same parametrisation;
gamma = sigma(W) keeps the model as it was, and ``adapt`` trains gamma with the weights. Saving
folds ``gamma / sigma(W) W`` into the plain weight (``undo(keep=True)``), and loading re-patches
it with gamma = sigma of that weight: the same function.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils import parametrize

from oversmooth.mitigations.base import LayerShape, Patcher, PatchTarget, SiteLayer
from oversmooth.mitigations.registry import SigmaReparamKnobs


class SpectralScale(nn.Module):
    """The parametrization ``W -> (gamma / sigma(W)) W`` of one weight ``[out, in]``."""

    def __init__(self, weight: Tensor):
        super().__init__()
        with torch.no_grad():
            top = torch.linalg.svd(weight.double(), full_matrices=False).Vh[0]
            self.register_buffer("u", top.to(weight.dtype))  # [in]
            self.gamma = nn.Parameter(self.sigma(weight, keep=False))

    def sigma(self, weight: Tensor, keep: bool) -> Tensor:
        """0-d ``v^T W u`` after one power-iteration step from ``u`` (the new ``u`` kept if ``keep``);
        the first step from a given ``u`` gives the same sigma whether it keeps it or not."""
        with torch.no_grad():
            v = F.normalize(weight @ self.u, dim=0)
            u = F.normalize(weight.T @ v, dim=0)
            if keep:
                self.u.copy_(u)
        return v @ weight @ u

    def forward(self, weight: Tensor) -> Tensor:
        return weight * (self.gamma / self.sigma(weight, keep=self.training))


class SigmaReparam(SiteLayer):
    """Holds nothing itself: ``reweight`` parametrises the block's linear weights (``SpectralScale``)."""

    def reweight(self, linears: dict[str, nn.Linear]) -> None:
        for linear in linears.values():
            # unsafe: skips the trial call, which would already take a (training) power step
            parametrize.register_parametrization(linear, "weight", SpectralScale(linear.weight), unsafe=True)


def layer(knobs: SigmaReparamKnobs, shape: LayerShape) -> SigmaReparam:
    return SigmaReparam()


def patch_edit(knobs: SigmaReparamKnobs, target: PatchTarget):
    """Parametrise one linear map's weight; returns ``undo(keep)``."""

    def edit(linear: nn.Module):
        parametrize.register_parametrization(linear, "weight", SpectralScale(linear.weight), unsafe=True)
        return lambda keep: parametrize.remove_parametrizations(linear, "weight", leave_parametrized=keep)

    return edit


PATCHER = Patcher("weights", patch_edit)
