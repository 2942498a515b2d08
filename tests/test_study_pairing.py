"""Runs of different methods at one seed are paired: the tensors they share start equal, and they
see the same training examples in the same order with the same augmentation."""

import pytest
import torch

from oversmooth.data import synthetic_images
from oversmooth.models import CausalLM, CausalLMConfig, ViT, ViTConfig
from oversmooth.train import ImageClassification, TrainConfig, train

METHODS = [
    dict(methods=()),
    dict(methods=("neutreno",)),
    dict(methods=("featscale",)),
    dict(methods=("attnscale",)),
    dict(methods=("deescalate",)),
    dict(methods=("spectral",), spectral="sharpen"),
    dict(methods=("spectral",), spectral="smooth"),
]


def vit(seed, norm="pre", **mitigation):
    torch.manual_seed(seed)
    return ViT(ViTConfig.preset("vit-cpu", depth=3, width=32, heads=4, norm=norm, mitigation=mitigation))


@pytest.mark.parametrize("mitigation", METHODS[1:], ids=lambda m: "+".join(m["methods"]) + m.get("spectral", ""))
def test_tensors_both_models_have_start_equal_at_one_seed(mitigation):
    base, other = vit(5).state_dict(), vit(5, **mitigation).state_dict()
    shared = base.keys() & other.keys()
    # what every method shares: embeddings, positions, CLS, queries, keys, MLPs, norms, head
    assert {
        "patch_embed.weight",
        "pos_embed",
        "cls_token",
        "head.weight",
        "blocks.2.attn.query.weight",
        "blocks.2.attn.key.weight",
        "blocks.2.mlp.fc_in.weight",
    } <= shared
    for name in shared:
        assert torch.equal(base[name], other[name]), name
    assert ("blocks.0.attn.value.weight" in shared) == (mitigation["methods"] != ("spectral",))


def test_post_norm_shares_the_init_too_and_another_seed_does_not():
    pre, post, other_seed = vit(5).state_dict(), vit(5, norm="post").state_dict(), vit(6).state_dict()
    for name in pre.keys() & post.keys():
        assert torch.equal(pre[name], post[name]), name
    assert not torch.equal(pre["blocks.1.attn.query.weight"], other_seed["blocks.1.attn.query.weight"])
    assert not torch.equal(pre["blocks.1.attn.query.weight"], pre["blocks.1.attn.key.weight"])


def test_language_models_share_their_init_across_methods():
    def lm(**mitigation):
        torch.manual_seed(2)
        return CausalLM(
            CausalLMConfig.preset("lm-cpu", depth=2, width=32, vocab_size=40, context=8, mitigation=mitigation)
        ).state_dict()

    base, spectral = lm(), lm(methods=("spectral",), spectral="smooth")
    assert "token_embed.weight" in base.keys() & spectral.keys()
    for name in base.keys() & spectral.keys():
        assert torch.equal(base[name], spectral[name]), name


class RecordingTask(ImageClassification):
    """Synthetic images with augmentation; remembers every training batch it hands out."""

    def __init__(self):
        splits = {k: (torch.from_numpy(s.images), torch.from_numpy(s.labels)) for k, s in synthetic_images().items()}
        super().__init__(splits, classes=4, augment=True)
        self.seen = []

    def batch(self, split, index, generator=None):
        inputs, targets = super().batch(split, index, generator)
        if split == "train":
            self.seen.append((index.clone(), inputs.clone()))
        return inputs, targets


def batches(tmp_path, name, seed, **mitigation):
    torch.manual_seed(seed)
    model = ViT(
        ViTConfig.preset(
            "vit-cpu", depth=2, width=16, heads=2, image_size=8, patch_size=4, num_classes=4, mitigation=mitigation
        )
    )
    task = RecordingTask()
    train(model, task, TrainConfig(epochs=2, batch_size=64, seed=seed, progress=False, probe_size=4), tmp_path / name)
    return task.seen


def test_methods_at_one_seed_see_the_same_augmented_batches_in_the_same_order(tmp_path):
    softmax = batches(tmp_path, "softmax", 3)
    assert len(softmax) == 2 * 256 // 64
    for name, mitigation in (
        ("neutreno", dict(methods=("neutreno",))),
        ("sharpen", dict(methods=("spectral",), spectral="sharpen")),
    ):
        other = batches(tmp_path, name, 3, **mitigation)
        assert len(other) == len(softmax)
        for (index_a, inputs_a), (index_b, inputs_b) in zip(softmax, other):
            assert torch.equal(index_a, index_b) and torch.equal(inputs_a, inputs_b), name
    reseeded = batches(tmp_path, "seed4", 4)
    assert not torch.equal(softmax[0][0], reseeded[0][0])
    # augmented: not the stored images themselves
    plain = RecordingTask()
    plain.augment = False
    assert not torch.equal(softmax[0][1], plain.batch("train", softmax[0][0])[0])
