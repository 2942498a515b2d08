"""A Vision Transformer: patch embedding, CLS token, learned positions, blocks, final norm, head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from oversmooth.errors import FieldError, UsageError
from oversmooth.layers import StackConfig, signed_layer_norm
from oversmooth.layers.attention import method_layers
from oversmooth.layers.config_fields import check_positive_ints
from oversmooth.mitigations.base import LayerShape, SiteLayer
from oversmooth.mitigations.registry import check_model
from oversmooth.models.hooked import HookedTransformer


@dataclass
class ViTConfig(StackConfig):
    """A ``StackConfig`` plus the image geometry and the number of classes.

    >>> cfg = ViTConfig.preset("deit-tiny", mitigation="neutreno")
    >>> cfg.depth, cfg.width, cfg.heads, cfg.tokens, cfg.mitigation.lam
    (12, 192, 3, 197, 0.6)
    """

    image_size: int = 28
    patch_size: int = 4
    channels: int = 1
    num_classes: int = 10

    SHAPE_PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "deit-tiny": dict(
            depth=12, width=192, heads=3, mlp_ratio=4.0, image_size=224, patch_size=16, channels=3, num_classes=1000
        ),
        "deit-small": dict(
            depth=12, width=384, heads=6, mlp_ratio=4.0, image_size=224, patch_size=16, channels=3, num_classes=1000
        ),
        # Fashion-MNIST on a CPU: 7 x 7 patches of 4 x 4 pixels + CLS = 50 tokens.
        "vit-cpu": dict(
            depth=6, width=64, heads=4, mlp_ratio=2.0, image_size=28, patch_size=4, channels=1, num_classes=10
        ),
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        check_model(self.mitigation.methods, "vit")
        check_positive_ints(self, "image_size", "patch_size", "channels", "num_classes")
        if self.image_size % self.patch_size:
            raise FieldError(
                "{patch_size} ({got}) must divide the image size ({size}); pick {patch_size} from {fits}",
                got=self.patch_size,
                size=self.image_size,
                fits=[p for p in range(1, self.image_size + 1) if self.image_size % p == 0],
            )

    @property
    def tokens(self) -> int:
        """Sequence length: patches + CLS."""
        return (self.image_size // self.patch_size) ** 2 + 1


class ViT(HookedTransformer):
    """``ViT(cfg)(images [batch, channels, H, W]) -> logits [batch, num_classes]`` (CLS pooling).

    Token 0 of every hooked activation is CLS; with registers, the last k tokens are theirs (the
    blocks read them, the head and the measures do not). Post-norm stacks end in their last
    block's LayerNorm, so the final norm is only added for pre-norm.
    """

    family = "vit"

    def __init__(self, cfg: ViTConfig):
        super().__init__(cfg, causal=False)
        layers = method_layers(cfg.mitigation, LayerShape(cfg.width, cfg.heads, False, cfg.depth), "model")
        for attribute, layer in layers.items():
            self.add_module(attribute, layer)
        self.token_methods: tuple[SiteLayer, ...] = tuple(layers.values())
        self.patch_embed = nn.Conv2d(cfg.channels, cfg.width, cfg.patch_size, stride=cfg.patch_size)
        self.cls_token = nn.Parameter(torch.zeros(cfg.width))
        self.pos_embed = nn.Parameter(torch.zeros(cfg.tokens, cfg.width))
        self.embed_dropout = nn.Dropout(cfg.dropout)
        self.final_norm = signed_layer_norm(cfg.width) if cfg.norm == "pre" else nn.Identity()
        self.head = nn.Linear(cfg.width, cfg.num_classes)
        self.init_weights()

    def embed(self, images: Tensor) -> Tensor:
        """``[batch, channels, H, W] -> [batch, tokens, width]`` (CLS first, positions added)."""
        cfg = self.cfg
        expected = (cfg.channels, cfg.image_size, cfg.image_size)
        if images.dim() != 4 or tuple(images.shape[1:]) != expected:
            raise UsageError(
                f"ViT expects images [batch, {', '.join(map(str, expected))}], got "
                f"{list(images.shape)}; build the config with matching image_size/channels"
            )
        patches = self.patch_embed(images).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(patches.shape[0], 1, -1)
        return self.embed_dropout(torch.cat([cls, patches], dim=1) + self.pos_embed)

    def extend(self, x: Tensor) -> Tensor:
        """The sequence the blocks read: the embeddings ``[batch, tokens, width]``, then the tokens
        a method appends (registers)."""
        for method in self.token_methods:
            x = method.extend(x)
        return x

    def forward(self, images: Tensor) -> Tensor:
        x = self.run_blocks(self.extend(self.embed(images)))[:, : self.cfg.tokens]  # registers dropped
        return self.head(self.final_norm(x)[:, 0])

    @property
    def extra_tokens(self) -> int:
        """How many tokens the methods append (registers: k)."""
        return self.extend(self.pos_embed[None, :0]).shape[1]

    def counted_tokens(self, batch: int) -> Tensor | None:
        """Every token but the registers, or None without them."""
        if not self.extra_tokens:
            return None
        tokens = torch.arange(self.cfg.tokens + self.extra_tokens, device=self.pos_embed.device)
        return (tokens < self.cfg.tokens).expand(batch, -1)
