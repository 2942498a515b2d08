"""Label-free objectives for a pretrained model, as ``SupervisedTask``s the train loop runs:
batches of token blocks, a training loss, and held-out scores summed over a split.

- ``CausalLM``: the train package's ``LanguageModelling`` (next-token cross-entropy; perplexity).
- ``MaskedLM``: 15 % of each block's ordinary tokens replaced by the mask token (fresh positions
  each training step, drawn from the loop's per-step generator; fixed positions for val / test),
  cross-entropy on them; ``masked_nll``, ``masked_perplexity``.
- ``DistillStates`` (models without an LM head, e.g. MiniLM): toward the unpatched model's token
  states ``[B, n, d]``: loss = mean over tokens of ``1 - cos(student, teacher)``; held-out
  ``output_cosine`` is analyze's quality measure, the cosine of the mean-pooled outputs, mean over
  sequences.
- ``DistillLogits`` (models with an LM head): toward the unpatched model's token distributions
  (next-token for a causal LM): loss = mean over tokens of ``KL(teacher || student)``; held out
  also ``top1_agreement``.

The teacher (a frozen, unpatched copy) runs inside ``batch``: its outputs are the targets.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from oversmooth.analyze import mask_tokens
from oversmooth.train.tasks import LanguageModelling, SupervisedTask

CausalLM = LanguageModelling


class _Blocks(SupervisedTask):
    """Token blocks ``int64 [N, n]`` per split; inputs are the blocks themselves."""

    kind = "tokens"

    def __init__(self, splits: dict[str, Tensor]):
        self.splits = splits
        self.seq_len = splits["train"].shape[1]


class MaskedLM(_Blocks):
    def __init__(self, splits: dict[str, Tensor], mask_token_id: int, special_ids: set[int], seed: int = 0):
        super().__init__(splits)
        self.mask_token_id, self.special_ids = mask_token_id, special_ids
        self.fixed = {name: self._mask(blocks, seed) for name, blocks in splits.items() if name != "train"}

    def _mask(self, blocks: Tensor, seed: int) -> tuple[Tensor, Tensor]:
        masked, labels = mask_tokens({"input_ids": blocks}, self.mask_token_id, self.special_ids, seed=seed)
        return masked["input_ids"], labels

    def batch(self, split, index, generator=None):
        if split != "train":
            inputs, labels = self.fixed[split]
            return inputs[index], labels[index]
        seed = int(torch.randint(2**62, (1,), generator=generator))
        return self._mask(self.splits[split][index], seed)

    def loss(self, logits, targets):
        return F.cross_entropy(logits.flatten(0, -2).float(), targets.flatten(), ignore_index=-100)

    def score(self, logits, targets):
        logits, targets = logits.flatten(0, -2).float(), targets.flatten()
        keep = targets != -100
        nll = F.cross_entropy(logits[keep], targets[keep], reduction="sum")
        correct = (logits[keep].argmax(-1) == targets[keep]).sum()
        return torch.stack([nll.double(), correct.double(), keep.sum().double()])

    def summarize(self, sums):
        nll, correct, count = sums.tolist()
        return {
            "masked_nll": nll / count,
            "masked_perplexity": math.exp(min(nll / count, 700.0)),
            "accuracy": correct / count,
        }


class _Distill(_Blocks):
    def __init__(self, splits: dict[str, Tensor], teacher: nn.Module):
        super().__init__(splits)
        self.teacher = teacher.eval().requires_grad_(False)

    @torch.no_grad()
    def batch(self, split, index, generator=None):
        inputs = self.splits[split][index]
        device = next(self.teacher.parameters()).device
        return inputs, self.teacher(inputs.to(device)).float()


class DistillStates(_Distill):
    def loss(self, states, targets):
        return (1 - F.cosine_similarity(states.float(), targets, dim=-1)).mean()

    def score(self, states, targets):
        states = states.float()
        per_sequence = (1 - F.cosine_similarity(states, targets, dim=-1)).mean(-1)
        pooled = F.cosine_similarity(states.mean(1).double(), targets.mean(1).double(), dim=-1)
        return torch.stack([per_sequence.double().sum(), pooled.sum(), torch.tensor(float(len(states)))])

    def summarize(self, sums):
        loss, cosine, count = sums.tolist()
        return {"loss": loss / count, "output_cosine": cosine / count}


class DistillLogits(_Distill):
    def loss(self, logits, targets):
        return _kl(targets, logits.float()).mean()

    def score(self, logits, targets):
        logits = logits.float()
        agree = (logits.argmax(-1) == targets.argmax(-1)).sum()
        return torch.stack(
            [
                _kl(targets, logits).double().sum(),
                agree.double(),
                torch.tensor(float(targets.shape[0] * targets.shape[1])),
            ]
        )

    def summarize(self, sums):
        kl, agree, count = sums.tolist()
        return {"kl": kl / count, "top1_agreement": agree / count}


def _kl(teacher_logits: Tensor, student_logits: Tensor) -> Tensor:
    """``KL(teacher || student)`` per token, ``[B, n, V] -> [B, n]`` (nats)."""
    log_p = torch.log_softmax(teacher_logits, -1)
    return (log_p.exp() * (log_p - torch.log_softmax(student_logits, -1))).sum(-1)
