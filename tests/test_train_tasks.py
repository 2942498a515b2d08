"""Tasks, data order, the optimiser's parameter groups and schedule, evaluation: against naive references."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from oversmooth.data import synthetic_images, synthetic_tokens
from oversmooth.models import ViT, ViTConfig
from oversmooth.train import (
    Distributed,
    ImageClassification,
    LanguageModelling,
    epoch_order,
    evaluate,
    parameter_groups,
    warmup_cosine,
)


def image_task(augment=False):
    splits = {k: (torch.from_numpy(s.images), torch.from_numpy(s.labels)) for k, s in synthetic_images().items()}
    return ImageClassification(splits, classes=4, augment=augment)


def test_image_batches_are_normalised_with_training_statistics():
    task = image_task()
    raw = task.splits["train"].double() / 255
    inputs, labels = task.batch("train", torch.arange(len(raw)))
    assert inputs.shape == (len(raw), 1, 8, 8)
    assert abs(inputs.double().mean().item()) < 1e-5 and abs(inputs.double().std().item() - 1) < 1e-4
    np.testing.assert_array_equal(labels.numpy(), synthetic_images()["train"].labels)


def test_augmentation_is_a_shift_and_maybe_a_flip_of_each_image():
    task = image_task(augment=True)
    index = torch.arange(24)
    augmented = task._augment(task.splits["train"][index], torch.Generator().manual_seed(0))
    padded = np.pad(task.splits["train"][index].numpy(), ((0, 0), (2, 2), (2, 2)))
    seen = set()
    for i, image in enumerate(augmented.numpy()):
        matches = [
            (dy, dx, flip)
            for dy in range(5)
            for dx in range(5)
            for flip in (False, True)
            if np.array_equal(
                image, padded[i, dy : dy + 8, dx : dx + 8][:, ::-1] if flip else padded[i, dy : dy + 8, dx : dx + 8]
            )
        ]
        assert matches, f"image {i} is not a shifted/flipped copy"
        seen.update(matches)
    assert len(seen) > 5  # the draws vary
    again = task._augment(task.splits["train"][index], torch.Generator().manual_seed(0))
    assert torch.equal(again, augmented)


def test_only_the_training_split_is_augmented():
    plain, augmented = image_task(), image_task(augment=True)
    index = torch.arange(16)
    for split in ("val", "test"):
        assert torch.equal(
            plain.batch(split, index)[0], augmented.batch(split, index, torch.Generator().manual_seed(1))[0]
        )
    assert not torch.equal(
        plain.batch("train", index)[0], augmented.batch("train", index, torch.Generator().manual_seed(1))[0]
    )


def test_language_model_batches_shift_targets_by_one():
    blocks = {k: torch.from_numpy(v) for k, v in synthetic_tokens(seq_len=8).items()}
    task = LanguageModelling(blocks, vocab_size=16)
    inputs, targets = task.batch("val", torch.tensor([3, 5]))
    assert torch.equal(inputs, blocks["val"][[3, 5], :8]) and torch.equal(targets, blocks["val"][[3, 5], 1:])
    assert task.seq_len == 8
    scores = task.summarize(torch.tensor([20.0, 3.0, 10.0], dtype=torch.float64))
    assert scores == {"loss": 2.0, "accuracy": 0.3, "perplexity": pytest.approx(math.exp(2.0))}


def test_epoch_order_is_a_seeded_permutation():
    order = epoch_order(seed=1, epoch=0, size=50)
    assert sorted(order.tolist()) == list(range(50))
    assert torch.equal(order, epoch_order(1, 0, 50))
    assert not torch.equal(order, epoch_order(1, 1, 50)) and not torch.equal(order, epoch_order(2, 0, 50))


def test_evaluate_matches_a_full_batch_numpy_computation():
    task = image_task()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 4))
    scores = evaluate(model, task, "val", batch_size=7, env=Distributed())
    inputs, labels = task.batch("val", torch.arange(task.size("val")))
    logits = model(inputs).detach().double().numpy()
    log_probs = (
        logits
        - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True))
        - logits.max(1, keepdims=True)
    )
    expected_loss = -log_probs[np.arange(len(labels)), labels.numpy()].mean()
    assert scores["loss"] == pytest.approx(expected_loss, rel=1e-5)
    assert scores["accuracy"] == pytest.approx((logits.argmax(1) == labels.numpy()).mean())


def test_no_weight_decay_on_parameters_with_fewer_than_two_dims():
    model = ViT(ViTConfig.preset("vit-cpu", depth=2, mitigation="featscale+attnscale"))
    decay, no_decay = parameter_groups(model, weight_decay=0.1)
    names = {id(p): n for n, p in model.named_parameters()}
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.ndim >= 2 for p in decay["params"]) and all(p.ndim < 2 for p in no_decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))
    no_decay_names = {names[id(p)] for p in no_decay["params"]}
    assert any("norm" in n for n in no_decay_names) and any("bias" in n for n in no_decay_names)
    assert not any(n.endswith("patch_embed.weight") for n in no_decay_names)


def test_warmup_cosine_matches_the_closed_form():
    warmup, total = 10, 110
    for step in (0, 4, 9):
        assert warmup_cosine(step, warmup, total) == pytest.approx((step + 1) / warmup)
    for step in (10, 35, 60, 109, 110):
        expected = 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))
        assert warmup_cosine(step, warmup, total) == pytest.approx(expected)
    assert warmup_cosine(60, warmup, total) == pytest.approx(0.5)


def test_image_loss_uses_label_smoothing():
    task = image_task()
    logits, targets = torch.randn(6, 4), torch.tensor([0, 1, 2, 3, 0, 1])
    smoothed = -(F.log_softmax(logits, -1) * (0.9 * F.one_hot(targets, 4) + 0.1 / 4)).sum(-1).mean()
    assert task.loss(logits, targets).item() == pytest.approx(smoothed.item(), rel=1e-6)
