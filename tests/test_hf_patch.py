"""patch / unpatch: bad requests (the per-family checks against naive references are in
test_hf_families.py)."""

import pytest
import torch
from hf_tiny import tiny_inputs

from oversmooth.errors import UsageError
from oversmooth.hf.patch import DEFAULT_KNOBS, METHODS, patch, unpatch
from oversmooth.mitigations.registry import METHODS as REGISTRY


def test_patch_with_a_head_model_and_bad_requests():
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    model = BertForMaskedLM(
        BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48, vocab_size=50)
    ).eval()
    inputs = tiny_inputs("bert")
    with torch.no_grad():
        base = model(**inputs).logits
        patch(model, "neutreno", lam=0.6)
        assert not torch.allclose(model(**inputs).logits, base)
    with pytest.raises(UsageError, match="already patched"):
        patch(model, "featscale")
    unpatch(model)
    unpatched_hooks = hook_ids(model)
    with pytest.raises(UsageError, match="unknown method"):
        patch(model, "magic")
    with pytest.raises(UsageError, match="takes lam"):
        patch(model, "neutreno", tau=1.0)
    with pytest.raises(UsageError, match="lambda"):
        patch(model, "neutreno", lam=-1.0)
    with pytest.raises(UsageError, match="omega must be one number or 4"):
        patch(model, "attnscale", omega=[1.0, 2.0])
    with torch.no_grad():  # the failed patches left no hook behind: the model is the original
        assert torch.equal(model(**inputs).logits, base)
    assert hook_ids(model) == unpatched_hooks  # (transformers keeps hooks of its own for output_*)


@pytest.mark.parametrize("method", METHODS)
def test_every_listed_method_patches_at_its_defaults_and_unpatches(method):
    """Each name in ``METHODS`` is a working patch: at ``DEFAULT_KNOBS`` (all non-zero) it changes
    the model's output (or, a patch declared the identity at its defaults, leaves it bit for bit),
    and ``unpatch`` gives back the unpatched output bit for bit."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = BertModel(
        BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48, vocab_size=50)
    ).eval()
    inputs = tiny_inputs("bert")
    assert all(value != 0 for value in DEFAULT_KNOBS[method].values())
    with torch.no_grad():
        base = model(**inputs).last_hidden_state
        patch(model, method)
        patched = model(**inputs).last_hidden_state
        unpatch(model)
        if REGISTRY[method].patch_is_identity:
            assert torch.equal(patched, base)
        else:
            assert (patched - base).abs().max() > 1e-6  # float32 rounding alone stays below ~1e-7 here
        assert torch.equal(model(**inputs).last_hidden_state, base)


def hook_ids(model) -> set:
    """Every forward (pre-)hook on the model, by module name and hook id."""
    return {
        (name, kind, key)
        for name, module in model.named_modules()
        for kind, hooks in (("post", module._forward_hooks), ("pre", module._forward_pre_hooks))
        for key in hooks
    }
