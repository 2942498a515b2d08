"""What our ViT and causal LM share: the block stack, weight init, and activation capture."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator

import torch
from torch import Tensor, nn

from oversmooth.activations import ActivationCache
from oversmooth.errors import UsageError
from oversmooth.layers import Attention, Block, HookPoint, SpectralValueOutput, StackConfig
from oversmooth.mitigations.base import SiteLayer

INIT_STD = 0.02


def named_generator(seed: int, name: str) -> torch.Generator:
    """A CPU generator seeded by a pure function of ``(seed, name)``."""
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "big") >> 1)


class HookedTransformer(nn.Module):
    """A stack of ``Block``s under ``self.blocks``; subclasses add embeddings and a head.

    Hook names: ``blocks.{l}.hook_resid_pre|hook_attn_out|hook_resid_mid|hook_mlp_out|
    hook_resid_post``, ``blocks.{l}.attn.hook_v`` ``[batch, heads, tokens, d_head]`` and
    ``blocks.{l}.attn.hook_pattern`` ``[batch, heads, tokens, tokens]`` (manual attention path);
    ``run_with_cache`` returns them as the toolkit's one ``oversmooth.activations.ActivationCache``
    (its docstring has the layer numbering).
    """

    family: str  # the name ``save_model`` writes, ``load_model`` reads

    def __init__(self, cfg: StackConfig, *, causal: bool):
        super().__init__()
        self.cfg = cfg
        self.blocks = nn.ModuleList(Block(cfg, causal=causal) for _ in range(cfg.depth))

    def run_blocks(self, x: Tensor) -> Tensor:
        """Run every block; layer 1's value tensor is handed to all later layers."""
        v_first = None
        for block in self.blocks:
            x, v = block(x, v_first)
            if v_first is None:
                v_first = v
        return x

    def counted_tokens(self, batch: int) -> Tensor | None:
        """``[batch, tokens]`` bool: the tokens of the stream the measures count (``run_with_cache``'s
        mask); None: every one."""
        return None

    def init_weights(self) -> None:
        """Linear/conv/embedding weights and the model's own tensors (positions, CLS; a method's
        ``SiteLayer.drawn``, registers) ~ N(0, 0.02),
        biases 0, spectral maps at the baseline's scale; norms and mitigations keep theirs; then
        each block's methods rescale or reparametrise what was drawn (``Block.reweight``: DeepNorm,
        sigmaReparam). Called once, by the constructor.

        Each tensor is drawn from its own generator, seeded by torch's seed
        (``torch.initial_seed()``, set by ``torch.manual_seed``) and the tensor's name. So two
        models built under one seed share the init of every tensor they both have, whatever
        else one of them adds (a spectral map instead of ``value``/``output``, FeatScale's
        scales): runs of different methods at one seed are paired.
        """
        seed = torch.initial_seed()
        for name, module in self.named_modules():
            if isinstance(module, (nn.Linear, nn.Conv2d, nn.Embedding)):
                nn.init.normal_(module.weight, std=INIT_STD, generator=named_generator(seed, f"{name}.weight"))
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, SpectralValueOutput):
                module.reset_parameters(INIT_STD, named_generator(seed, name))
            elif isinstance(module, SiteLayer):
                for drawn in module.drawn:
                    path = f"{name}.{drawn}"
                    nn.init.normal_(getattr(module, drawn), std=INIT_STD, generator=named_generator(seed, path))
        for name, tensor in self.named_parameters(recurse=False):
            nn.init.normal_(tensor, std=INIT_STD, generator=named_generator(seed, name))
        for block in self.blocks:
            block.reweight()

    def hook_names(self) -> list[str]:
        return [name for name, module in self.named_modules() if isinstance(module, HookPoint)]

    @contextlib.contextmanager
    def materialized_attention(self, on: bool = True) -> Iterator[None]:
        """Within the block, attention builds A explicitly (``on``) or uses the fused kernel."""
        attentions = [m for m in self.modules() if isinstance(m, Attention)]
        before = [m.materialize for m in attentions]
        try:
            for m in attentions:
                m.materialize = on
            yield
        finally:
            for m, state in zip(attentions, before):
                m.materialize = state

    def run_with_cache(
        self, x: Tensor, names: Iterable[str] | None = None, detach: bool = True
    ) -> tuple[Tensor, ActivationCache]:
        """``(self(x), cache)`` with the activation at every hook in ``names`` (default: all).

        Asking for any ``hook_pattern`` switches attention to the manual path for this call.
        Capture never changes the output beyond float rounding of fused vs manual attention.
        The cache's mask is ``counted_tokens``: None (every token of ``x`` counts), or a ViT's
        tokens without its registers.

        >>> from oversmooth.models import CausalLM, CausalLMConfig
        >>> model = CausalLM(CausalLMConfig.preset("lm-cpu", depth=2)).eval()
        >>> _, cache = model.run_with_cache(torch.zeros(1, 5, dtype=torch.long))
        >>> len(cache.stream()), tuple(cache["blocks.1.hook_resid_post"].shape)
        (3, (1, 5, 64))
        """
        points = {name: m for name, m in self.named_modules() if isinstance(m, HookPoint)}
        wanted = list(points) if names is None else list(names)
        unknown = [name for name in wanted if name not in points]
        if unknown:
            raise UsageError(
                f"unknown hook name(s) {', '.join(unknown[:3])}; see model.hook_names(), "
                f"e.g. {', '.join(list(points)[:3])}"
            )
        store: dict[str, Tensor] = {}

        def keep(name: str):
            def hook(_module, _inputs, output):
                store[name] = output.detach() if detach else output

            return hook

        handles = [points[name].register_forward_hook(keep(name)) for name in wanted]
        needs_pattern = any(name.endswith("hook_pattern") for name in wanted)
        try:
            with self.materialized_attention(needs_pattern) if needs_pattern else contextlib.nullcontext():
                output = self(x)
        finally:
            for handle in handles:
                handle.remove()
        tensors = {name: store[name] for name in wanted if name in store}
        return output, ActivationCache(tensors, depth=len(self.blocks), mask=self.counted_tokens(len(output)))
