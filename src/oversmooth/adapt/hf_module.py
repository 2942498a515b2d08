"""A pretrained Hugging Face model as the train loop sees a model: ``forward(ids) -> tensor`` and
``run_with_cache(ids) -> (out, cache)`` (the per-layer similarity of each record)."""

from __future__ import annotations

from torch import Tensor, nn

from oversmooth.hf.capture import capture


class HFModule(nn.Module):
    """``forward(ids [B, n])``: the logits ``[B, n, V]`` of a model with an LM head, else the last
    hidden state ``[B, n, d]``. ``model`` is what trains (a ``peft`` model under LoRA); ``base``
    the transformers model inside it, where patches and capture hooks sit. Causal models leave the
    first token (an attention sink) out of the similarity measures, as ``analyze`` does.
    ``dropout=False`` keeps the wrapped model in eval mode while it trains (distillation: the
    student matches a deterministic teacher, so dropout only adds noise to the target)."""

    def __init__(self, model: nn.Module, base: nn.Module, logits: bool, causal: bool, dropout: bool = True):
        super().__init__()
        self.model = model
        self.__dict__["base"] = base  # not a second registration of the same weights
        self.logits, self.causal, self.dropout = logits, causal, dropout

    def train(self, mode: bool = True) -> HFModule:
        super().train(mode)
        if not self.dropout:
            self.model.eval()
        return self

    def forward(self, ids: Tensor) -> Tensor:
        out = self.model(input_ids=ids)
        return out.logits if self.logits else out.last_hidden_state

    def run_with_cache(self, ids: Tensor):
        outputs, cache = capture(self.base, {"input_ids": ids}, hooks=("resid_pre", "resid_post"))
        if self.causal:
            cache = type(cache)({k: v[:, 1:] for k, v in cache.tensors.items()}, cache.depth, cache.mask[:, 1:])
        return outputs, cache
