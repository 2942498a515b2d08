"""What a patched model still does for its job, beside the similarity it changes.

Lower token similarity is good news only while the model works, so every patched forward pass
is also scored on the model's task, on the same passages:

- causal LM (``*ForCausalLM`` / ``*LMHeadModel``): next-token ``nll`` (nats per predicted token,
  padding left out) and ``perplexity = exp(nll)``, from the logits of the analysed forward.
- masked LM (``*ForMaskedLM``): ``masked_nll`` and ``masked_perplexity`` on a copy of the
  passages with 15 % of the ordinary tokens replaced by the mask token (fixed seed, the same
  positions for every method); one extra forward per method.
- classifier (``*For...Classification``): ``top1_agreement`` with the unpatched model's argmax,
  and ``kl`` = KL(unpatched || patched) of the class distributions, mean over inputs (nats).
- encoder without a head: ``output_cosine``, the cosine between the unpatched and patched
  outputs (``last_hidden_state`` mean-pooled over valid tokens, as a sentence encoder pools),
  mean over inputs.

``Budget`` (``oversmooth.analyze.settings``) says how much of that may be lost (default: perplexity
at most 1.05x the unpatched model's, KL at most 0.05 nats, agreement and cosine at least 0.95); a
patched method is within budget only when every measure of its task is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from oversmooth.analyze.settings import Budget
from oversmooth.errors import UsageError
from oversmooth.hf import Task, check_model_inputs, task_of

MASK_RATE = 0.15
MASK_SEED = 0


@dataclass(frozen=True)
class QualityRow:
    """One measure of one method at one setting (a row of ``quality.csv``)."""

    method: str
    setting: str
    measure: str
    value: float
    baseline: float
    ratio: float | None  # value / baseline for losses and perplexities, else None
    within_budget: bool


@dataclass(frozen=True)
class Quality:
    """Every measure of one method at one setting."""

    rows: tuple[QualityRow, ...]

    @property
    def within_budget(self) -> bool:
        return all(row.within_budget for row in self.rows)

    @property
    def primary(self) -> QualityRow:
        """The measure plots and headlines use: the perplexity, or the first measure."""
        return next((r for r in self.rows if r.measure.endswith("perplexity")), self.rows[0])

    def headline(self) -> str:
        """What happened to the model in a few words, e.g. ``'perplexity x70,000'``."""
        failing = [r for r in self.rows if not r.within_budget]
        worst = self.primary if not failing or self.primary in failing else failing[0]
        name = worst.measure.replace("_", " ")
        if worst.ratio is not None and worst.measure.endswith("perplexity"):
            return f"{name} x{ratio_text(worst.ratio)}"
        return f"{name} {worst.value:.3g}"


def ratio_text(ratio: float) -> str:
    """``1.031``, ``52.4``, ``70,000``: three decimals near 1, whole numbers when huge."""
    return f"{ratio:,.0f}" if ratio >= 100 else f"{ratio:.3f}" if ratio < 10 else f"{ratio:.1f}"


def quality_seeds(task: str) -> dict[str, int]:
    """The seeds scoring a model's ``task`` takes, by what they seed: a masked LM's masked tokens."""
    return {"masked tokens": MASK_SEED} if task == "masked_lm" else {}


def mask_tokens(
    inputs: Mapping[str, Tensor],
    mask_token_id: int,
    special_ids: set[int],
    rate: float = MASK_RATE,
    seed: int = MASK_SEED,
) -> tuple[dict[str, Tensor], Tensor]:
    """A copy of ``inputs`` with ``rate`` of each sequence's ordinary tokens masked, and the labels.

    Ordinary = valid (``attention_mask``) and not a special token; at least one per sequence is
    masked. Returns ``(inputs, labels [B, n])`` with labels -100 where nothing was masked.

    >>> ids = torch.tensor([[101, 5, 6, 7, 8, 9, 10, 102]])
    >>> masked, labels = mask_tokens({"input_ids": ids, "attention_mask": torch.ones_like(ids)}, 103, {101, 102})
    >>> int((labels != -100).sum()), masked["input_ids"][labels != -100].tolist()
    (1, [103])
    """
    check_model_inputs(inputs)
    ids = inputs["input_ids"]
    valid = inputs.get("attention_mask", torch.ones_like(ids)).bool()
    ordinary = valid & ~torch.isin(ids, torch.tensor(sorted(special_ids), dtype=ids.dtype, device=ids.device))
    generator = torch.Generator().manual_seed(seed)
    chosen = torch.zeros_like(ordinary)
    for b in range(ids.shape[0]):
        positions = ordinary[b].nonzero().flatten()
        if positions.numel():
            count = max(1, round(rate * positions.numel()))
            chosen[b, positions[torch.randperm(positions.numel(), generator=generator)[:count]]] = True
    if not chosen.any():
        raise UsageError("the text has no ordinary tokens to mask; pass more text")
    labels = torch.where(chosen, ids, -100)
    return {**inputs, "input_ids": torch.where(chosen, mask_token_id, ids)}, labels


def _token_nll(logits: Tensor, labels: Tensor) -> float:
    """Mean negative log-likelihood (float64) of ``labels [B, n]`` (-100 = skip) under ``logits [B, n, V]``,
    one sequence at a time (a float64 copy of all logits would double a large vocabulary's memory)."""
    total, count = 0.0, 0
    for row_logits, row_labels in zip(logits, labels):
        keep = row_labels != -100
        log_probs = torch.log_softmax(row_logits[keep].double(), dim=-1)
        total -= float(log_probs.gather(-1, row_labels[keep][:, None]).sum())
        count += int(keep.sum())
    return total / count


def _pooled(hidden: Tensor, mask: Tensor | None) -> Tensor:
    """Mean over valid tokens, ``[B, n, d] -> [B, d]`` (float64)."""
    weights = (torch.ones(hidden.shape[:2], device=hidden.device) if mask is None else mask).double()
    return (weights[..., None] * hidden.double()).sum(1) / weights.sum(1, keepdim=True).clamp_min(1)


@dataclass
class QualityProbe:
    """Scores forward passes on the model's task; built once per analysis, before any patch.

    ``observe`` keeps what a later comparison needs from one (patched or not) forward;
    ``judge`` turns a method's observation and the unpatched one into ``Quality``.
    """

    task: Task
    inputs: Mapping[str, Tensor]
    masked: tuple[dict[str, Tensor], Tensor] | None = None  # masked-LM inputs and labels

    @classmethod
    def for_model(cls, model: nn.Module, inputs: Mapping[str, Tensor], tokenizer=None) -> QualityProbe:
        task = task_of(model)
        if task != "masked_lm":
            return cls(task, inputs)
        if tokenizer is None or tokenizer.mask_token_id is None:
            raise UsageError(
                f"{type(model).__name__} is a masked LM but its tokenizer has no mask token; "
                "save the model's own tokenizer beside it"
            )
        return cls(task, inputs, mask_tokens(inputs, tokenizer.mask_token_id, set(tokenizer.all_special_ids)))

    @torch.no_grad()
    def observe(self, model: nn.Module, outputs) -> dict[str, Tensor | float]:
        """What this forward (``outputs`` of ``model(**inputs)``) says about the task."""
        if self.task == "causal_lm":
            ids, mask = self.inputs["input_ids"], self.inputs.get("attention_mask")
            labels = ids[:, 1:] if mask is None else torch.where(mask[:, 1:].bool(), ids[:, 1:], -100)
            return {"nll": _token_nll(outputs.logits[:, :-1], labels)}
        if self.task == "masked_lm":
            masked, labels = self.masked
            return {"masked_nll": _token_nll(model(**masked).logits, labels)}
        if self.task == "classifier":
            return {"logits": outputs.logits.double()}
        return {"pooled": _pooled(outputs.last_hidden_state, self.inputs.get("attention_mask"))}

    def judge(self, method: str, setting: str, seen: dict, base: dict, budget: Budget) -> Quality:
        """``seen`` (a method's observation) against ``base`` (the unpatched one)."""
        row = lambda measure, value, baseline, ratio, ok: QualityRow(  # noqa: E731
            method, setting, measure, value, baseline, ratio, bool(ok)
        )
        if self.task in ("causal_lm", "masked_lm"):
            prefix = "masked_" if self.task == "masked_lm" else ""
            nll, nll_base = seen[f"{prefix}nll"], base[f"{prefix}nll"]
            ok = nll - nll_base <= math.log(budget.perplexity)
            ppl, ppl_base = _exp(nll), _exp(nll_base)
            return Quality(
                (
                    row(f"{prefix}nll", nll, nll_base, nll / nll_base, ok),
                    row(f"{prefix}perplexity", ppl, ppl_base, ppl / ppl_base, ok),
                )
            )
        if self.task == "classifier":
            log_p, log_q = torch.log_softmax(base["logits"], -1), torch.log_softmax(seen["logits"], -1)
            agreement = float((log_p.argmax(-1) == log_q.argmax(-1)).double().mean())
            kl = float((log_p.exp() * (log_p - log_q)).sum(-1).mean())
            return Quality(
                (
                    row("top1_agreement", agreement, 1.0, None, agreement >= budget.agreement),
                    row("kl", kl, 0.0, None, kl <= budget.kl),
                )
            )
        cosine = float(torch.cosine_similarity(seen["pooled"], base["pooled"], dim=-1).mean())
        return Quality((row("output_cosine", cosine, 1.0, None, cosine >= budget.cosine),))


def _exp(nll: float) -> float:
    return math.exp(nll) if nll < 700 else math.inf
