"""What is learned: batches, the training loss and evaluation scores of one data set.

A task holds every split in memory as tensors and builds a batch from example indices, so the
training loop only deals in indices: that is what makes data order resumable and shardable.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from oversmooth.utils.provenance import digest


class SupervisedTask:
    """Shared scoring: cross-entropy and top-1 accuracy over every (logit row, target) pair."""

    kind: str
    splits: dict[str, torch.Tensor]

    def size(self, split: str) -> int:
        return len(self.splits[split])

    def digest(self) -> str:
        """sha256 of every split's examples (and labels), split by split: the identity of the data
        as the model sees it (``utils.provenance.digest``)."""
        labels = getattr(self, "labels", {})
        tensors = [(self.splits[name], labels.get(name)) for name in sorted(self.splits)]
        return digest(tensor for pair in tensors for tensor in pair if tensor is not None)

    def batch(
        self, split: str, index: torch.Tensor, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and targets of examples ``index`` (``generator`` drives augmentation, if any)."""
        raise NotImplementedError

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean training loss of a batch."""
        return F.cross_entropy(logits.flatten(0, -2).float(), targets.flatten())

    def score(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """``float64 [3]``: summed cross-entropy, number correct, number of predictions."""
        logits, targets = logits.flatten(0, -2).float(), targets.flatten()
        loss = F.cross_entropy(logits, targets, reduction="sum")
        correct = (logits.argmax(-1) == targets).sum()
        return torch.stack([loss.double(), correct.double(), torch.tensor(targets.numel(), dtype=torch.float64)])

    def summarize(self, sums: torch.Tensor) -> dict[str, float]:
        loss, correct, count = sums.tolist()
        return {"loss": loss / count, "accuracy": correct / count}


class ImageClassification(SupervisedTask):
    """Grey-scale images ``uint8 [N, H, W]`` with labels; inputs ``float [B, 1, H, W]`` normalised.

    Normalisation uses the training split's pixel mean and std. Optional light augmentation:
    a random shift of up to ``shift`` pixels (zero padding) and a random horizontal flip.
    """

    kind = "image"

    def __init__(
        self,
        splits: dict[str, tuple[torch.Tensor, torch.Tensor]],
        classes: int,
        label_smoothing: float = 0.1,
        augment: bool = False,
        shift: int = 2,
    ):
        self.splits = {name: images for name, (images, _) in splits.items()}
        self.labels = {name: labels for name, (_, labels) in splits.items()}
        self.classes, self.label_smoothing, self.augment, self.shift = classes, label_smoothing, augment, shift
        train = self.splits["train"].double() / 255
        self.mean, self.std = train.mean().item(), train.std().item()
        self.image_size = tuple(self.splits["train"].shape[1:])

    def batch(self, split, index, generator=None):
        images = self.splits[split][index]
        if split == "train" and self.augment:
            images = self._augment(images, generator)
        inputs = (images.float() / 255 - self.mean) / self.std
        return inputs.unsqueeze(1), self.labels[split][index]

    def _augment(self, images: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        count, height, width = images.shape
        s = self.shift
        padded = F.pad(images, (s, s, s, s))
        dy, dx = torch.randint(0, 2 * s + 1, (2, count), generator=generator).unbind()
        flip = torch.rand(count, generator=generator) < 0.5
        rows = dy[:, None] + torch.arange(height)
        cols = dx[:, None] + torch.arange(width)
        cols = torch.where(flip[:, None], cols.flip(-1), cols)
        return padded[torch.arange(count)[:, None, None], rows[:, :, None], cols[:, None, :]]

    def loss(self, logits, targets):
        return F.cross_entropy(logits.float(), targets, label_smoothing=self.label_smoothing)


class LanguageModelling(SupervisedTask):
    """Next-token prediction on blocks ``int64 [N, n + 1]``: inputs ``[:, :-1]``, targets ``[:, 1:]``."""

    kind = "lm"

    def __init__(self, splits: dict[str, torch.Tensor], vocab_size: int):
        self.splits, self.vocab_size = splits, vocab_size
        self.seq_len = splits["train"].shape[1] - 1

    def batch(self, split, index, generator=None):
        block = self.splits[split][index]
        return block[:, :-1], block[:, 1:]

    def summarize(self, sums):
        scores = super().summarize(sums)
        scores["perplexity"] = math.exp(min(scores["loss"], 700.0))
        return scores
