"""Every method in the causal LM: changing tokens after t leaves the logits up to t unchanged."""

import pytest
import torch

from oversmooth.layers import METHOD_FORMULAS, Block, MitigationConfig, StackConfig
from oversmooth.mitigations.registry import METHODS as REGISTRY
from oversmooth.mitigations.registry import split_methods
from oversmooth.models import CausalLM, CausalLMConfig

SPECS = [
    *((m, "attn_out") for m in METHOD_FORMULAS),
    ("deescalate", "stream"),
    ("neutreno+featscale+attnscale+deescalate+value_residual", "stream"),
]
#: every spec in each norm placement where all its methods are defined (DeepNorm: post only)
CASES = [
    (spec, placement, norm)
    for spec, placement in SPECS
    for norm in ("pre", "post")
    if all(norm in REGISTRY[m].norms for m in split_methods(spec))
]
T = 5
#: learned scales that start at 0 (the method then does nothing yet): set non-zero for the check
SCALES = ("omega", "s_dc", "s_hc", "alpha")


def leaks(run, x, changed):
    """True if the output at positions <= T moves when positions > T change."""
    return not torch.allclose(run(x)[:, : T + 1], run(changed)[:, : T + 1], atol=1e-6)


def make_scales_nonzero(model):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if any(part in SCALES for part in name.split(".")):
                p.uniform_(0.5, 1.0)


@pytest.mark.parametrize("spec, placement, norm", CASES)
def test_lm_is_causal(spec, placement, norm):
    mitigation = MitigationConfig.parse(spec, **({"deescalate_at": placement} if "deescalate" in spec else {}))
    lm = CausalLM(CausalLMConfig.preset("lm-cpu", depth=3, norm=norm, mitigation=mitigation)).eval()
    make_scales_nonzero(lm)
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 256, (2, 12), generator=g)
    changed = tokens.clone()
    changed[:, T + 1 :] = torch.randint(0, 256, (2, 12 - T - 1), generator=g)
    assert not leaks(lm, tokens, changed)
    with lm.materialized_attention():
        assert not leaks(lm, tokens, changed)


@pytest.mark.parametrize("spec", ["deescalate", "featscale", "attnscale", "mv_split"])
def test_the_leak_check_catches_a_non_causal_block(spec):
    """Control: the same check flags the non-causal (full-mean) form of each method."""
    cfg = StackConfig(depth=1, width=16, heads=2, mitigation=spec)
    causal_block = Block(cfg, causal=True).eval()
    leaky_block = Block(cfg, causal=True).eval()
    leaky_block.load_state_dict(causal_block.state_dict())
    for module in leaky_block.modules():
        if hasattr(module, "causal") and module is not leaky_block.attn:
            module.causal = False  # the mitigation's mean, not the attention mask
    make_scales_nonzero(causal_block)
    make_scales_nonzero(leaky_block)
    x = torch.randn(1, 10, 16)
    changed = x.clone()
    changed[:, T + 1 :] = torch.randn(1, 10 - T - 1, 16)
    assert not leaks(lambda z: causal_block(z)[0], x, changed)
    assert leaks(lambda z: leaky_block(z)[0], x, changed)
