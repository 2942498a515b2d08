"""NeuTRENO: V^(1) is passed undetached (gradient reaches layer 1's value weights through it),
and layer 1 itself computes exactly what the baseline does."""

import torch

from oversmooth.models import ViT, ViTConfig


def vit(methods, seed=0):
    torch.manual_seed(seed)
    return ViT(ViTConfig.preset("vit-cpu", depth=3, mitigation=methods))


def test_gradient_reaches_layer1_values_only_through_v_first():
    images = torch.randn(2, 1, 28, 28)
    grads = {}
    for methods in ("softmax", "neutreno"):
        model = vit(methods)
        with torch.no_grad():  # cut layer 1's own path: its attention output is 0
            model.blocks[0].attn.output.weight.zero_()
            model.blocks[0].attn.output.bias.zero_()
        model(images).square().sum().backward()
        grads[methods] = model.blocks[0].attn.value.weight.grad
    assert torch.count_nonzero(grads["softmax"]) == 0
    assert grads["neutreno"].abs().sum() > 1e-6


def test_layer1_unchanged_later_layers_changed():
    images = torch.randn(2, 1, 28, 28)
    base, neutreno = vit("softmax"), vit("neutreno")
    neutreno.load_state_dict(base.state_dict())
    names = ["blocks.0.hook_resid_post", "blocks.1.hook_resid_post"]
    _, want = base.run_with_cache(images, names)
    _, got = neutreno.run_with_cache(images, names)
    assert torch.equal(got[names[0]], want[names[0]])
    assert not torch.allclose(got[names[1]], want[names[1]], atol=1e-4)
