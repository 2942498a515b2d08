"""A GPT-style causal language model with tied input/output embeddings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from oversmooth.errors import UsageError
from oversmooth.layers import StackConfig, signed_layer_norm
from oversmooth.layers.config_fields import check_positive_ints
from oversmooth.mitigations.registry import check_model
from oversmooth.models.hooked import HookedTransformer


@dataclass
class CausalLMConfig(StackConfig):
    """A ``StackConfig`` plus vocabulary size and context length.

    >>> cfg = CausalLMConfig.preset("neutreno-lm", vocab_size=1000)
    >>> cfg.depth, cfg.width, cfg.norm, cfg.context
    (16, 128, 'post', 256)
    """

    vocab_size: int = 256
    context: int = 64

    SHAPE_PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        # The WikiText-103 LM of the NeuTRENO paper (Schlag et al.'s small setting); paper lam = 0.4.
        "neutreno-lm": dict(depth=16, width=128, heads=8, mlp_ratio=16.0, norm="post", context=256, vocab_size=256),
        "lm-cpu": dict(depth=4, width=64, heads=4, mlp_ratio=4.0, norm="pre", context=64, vocab_size=256),
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        check_model(self.mitigation.methods, "lm")
        check_positive_ints(self, "vocab_size", "context")


class CausalLM(HookedTransformer):
    """``CausalLM(cfg)(tokens [batch, n]) -> logits [batch, n, vocab_size]``, n <= context.

    Every method runs in its causal form (prefix means), so logits at t never see tokens > t.
    """

    family = "causal_lm"

    def __init__(self, cfg: CausalLMConfig):
        super().__init__(cfg, causal=True)
        self.token_embed = nn.Embedding(cfg.vocab_size, cfg.width)
        self.pos_embed = nn.Parameter(torch.zeros(cfg.context, cfg.width))
        self.embed_dropout = nn.Dropout(cfg.dropout)
        self.final_norm = signed_layer_norm(cfg.width) if cfg.norm == "pre" else nn.Identity()
        self.init_weights()

    def embed(self, tokens: Tensor) -> Tensor:
        """``[batch, n] -> [batch, n, width]``."""
        if tokens.dim() != 2 or tokens.dtype not in (torch.int64, torch.int32):
            raise UsageError(f"CausalLM expects integer tokens [batch, n], got {tokens.dtype} {list(tokens.shape)}")
        if tokens.shape[1] > self.cfg.context:
            raise UsageError(
                f"sequence of {tokens.shape[1]} tokens exceeds context {self.cfg.context}; cut it or raise context"
            )
        return self.embed_dropout(self.token_embed(tokens) + self.pos_embed[: tokens.shape[1]])

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.final_norm(self.run_blocks(self.embed(tokens)))
        return x @ self.token_embed.weight.T
