"""One Transformer block: attention and MLP sub-layers, pre- or post-norm, with hook points.

Hook points (names as in TransformerLens; the one numbering: `oversmooth.activations`), in order:
``hook_resid_pre`` (block input), ``attn.hook_v``, ``attn.hook_pattern`` (manual path only),
``hook_attn_out`` (attention sub-layer output, after the output-site methods, before the add),
``hook_resid_mid`` (stream after the attention sub-layer; post-norm: after its LayerNorm),
``hook_mlp_out``, ``hook_resid_post`` (block output).
Pre-norm: ``resid_mid = resid_pre + attn_out`` with the stream-site methods (de-escalation at
``stream``) applied on top; post-norm: they act before the LayerNorm. A residual-site method
(LayerScale, ReZero, MV-split, DeepNorm) replaces the ``+`` of both branches; ``hook_attn_out`` and
``hook_mlp_out`` stay the branch outputs before it.
"""

from __future__ import annotations

from torch import Tensor, nn

from oversmooth.layers.attention import Attention, method_layers
from oversmooth.layers.hook_point import HookPoint
from oversmooth.layers.mlp import MLP
from oversmooth.layers.norm import signed_layer_norm
from oversmooth.layers.stack_config import StackConfig
from oversmooth.mitigations.base import LayerShape
from oversmooth.mitigations.registry import METHODS


class Block(nn.Module):
    """``forward(x [batch, tokens, width], v_first) -> (x, v)``; see ``Attention`` for ``v``."""

    def __init__(self, cfg: StackConfig, *, causal: bool = False):
        super().__init__()
        mit = cfg.mitigation
        self.pre_norm = cfg.norm == "pre"
        layers = method_layers(mit, LayerShape(cfg.width, cfg.heads, causal, cfg.depth), "block")
        norms = all(m.keeps_norms for m in layers.values())
        self.ln_attn = signed_layer_norm(cfg.width, cfg.ln_sign) if norms else nn.Identity()
        self.attn = Attention(cfg.width, cfg.heads, mitigation=mit, causal=causal, dropout=cfg.dropout)
        self.ln_mlp = signed_layer_norm(cfg.width, cfg.ln_sign) if norms else nn.Identity()
        self.mlp = MLP(cfg.width, cfg.mlp_hidden, cfg.dropout)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        for attribute, layer in layers.items():
            self.add_module(attribute, layer)
        self.outer = tuple(m for m in layers.values() if m.on_output)
        self.stream_methods = tuple(m for m in (*self.attn.methods, *layers.values()) if m.on_stream)
        self.methods = tuple(layers.values())
        # the method that owns the residual add (MitigationConfig allows one), in a tuple so that
        # it is not registered twice
        self.residual_add = tuple(
            layers[m.attribute] for m in METHODS.values() if m.site == "residual" and m.attribute in layers
        )
        self.hook_resid_pre = HookPoint()
        self.hook_attn_out = HookPoint()
        self.hook_resid_mid = HookPoint()
        self.hook_mlp_out = HookPoint()
        self.hook_resid_post = HookPoint()

    def forward(self, x: Tensor, v_first: Tensor | None = None) -> tuple[Tensor, Tensor]:
        x = self.hook_resid_pre(x)
        attn_out, v = self.attn(self.ln_attn(x) if self.pre_norm else x, v_first, *self.outer)
        attn_out = self.hook_attn_out(self.resid_dropout(attn_out))
        x = self.add(x, attn_out, 0)
        for method in self.stream_methods:
            x = method.stream(x)
        if self.pre_norm:
            x = self.hook_resid_mid(x)
            mlp_out = self.hook_mlp_out(self.mlp(self.ln_mlp(x)))
            return self.hook_resid_post(self.add(x, mlp_out, 1)), v
        x = self.hook_resid_mid(self.ln_attn(x))
        mlp_out = self.hook_mlp_out(self.mlp(x))
        return self.hook_resid_post(self.ln_mlp(self.add(x, mlp_out, 1))), v

    def add(self, x: Tensor, f: Tensor, branch: int) -> Tensor:
        """The residual add of branch ``branch`` (0: attention, 1: MLP), or its method's."""
        return self.residual_add[0].residual(x, f, branch) if self.residual_add else x + f

    def linears(self) -> dict[str, nn.Linear]:
        """The block's linear layers by role (``SiteLayer.reweight``); a replaced one is absent."""
        found = {
            "query": self.attn.query,
            "key": self.attn.key,
            "value": self.attn.value,
            "output": self.attn.output,
            "mlp_in": self.mlp.fc_in,
            "mlp_out": self.mlp.fc_out,
        }
        return {role: linear for role, linear in found.items() if linear is not None}

    def reweight(self) -> None:
        """Once, after the model drew its weights: each method's ``reweight`` (DeepNorm's beta,
        sigmaReparam's parametrisation), in the registry's order."""
        for method in self.methods:
            method.reweight(self.linears())
