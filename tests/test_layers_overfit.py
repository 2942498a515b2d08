"""A tiny model of every method can fit one fixed batch: the loss falls by at least 90%."""

import pytest
import torch
import torch.nn.functional as F

from oversmooth.mitigations.registry import METHODS, trainable
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig

STEPS = 60
#: the methods that train in each of our models (an intervention trains in none; registers in the ViT only)
TRAINS_IN = {model: [name for name in trainable() if model in METHODS[name].models] for model in ("vit", "lm")}
TINY = dict(depth=2, width=32, heads=2, mlp_ratio=2.0)


def fit(model, inputs, loss_of) -> tuple[float, float]:
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(STEPS):
        loss = loss_of(model(inputs))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses[0], min(losses[-5:])


@pytest.mark.parametrize("method", ["softmax", *TRAINS_IN["vit"]])
def test_vit_overfits_one_batch(method):
    torch.manual_seed(0)
    norm = "post" if method == "deepnorm" else "pre"  # DeepNorm is post-LN only
    model = ViT(ViTConfig(image_size=8, patch_size=4, channels=1, num_classes=10, norm=norm, mitigation=method, **TINY))
    images, labels = torch.randn(16, 1, 8, 8), torch.randint(0, 10, (16,))
    first, last = fit(model, images, lambda logits: F.cross_entropy(logits, labels))
    assert last <= 0.1 * first, (first, last)


@pytest.mark.parametrize("method", ["softmax", *TRAINS_IN["lm"]])
def test_lm_overfits_one_batch(method):
    torch.manual_seed(0)
    norm = "post" if method == "deepnorm" else "pre"
    model = CausalLM(CausalLMConfig(vocab_size=16, context=12, norm=norm, mitigation=method, **TINY))
    tokens = torch.randint(0, 16, (8, 13))
    first, last = fit(
        model, tokens[:, :-1], lambda logits: F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
    )
    assert last <= 0.1 * first, (first, last)
