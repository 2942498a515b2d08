"""patch / unpatch: bad requests (the per-family checks against naive references are in
test_hf_families.py)."""

import pytest
import torch
from hf_tiny import tiny_inputs

from oversmooth.errors import UsageError
from oversmooth.hf.patch import DEFAULT_KNOBS, PATCHABLE, patch, unpatch
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


@pytest.mark.parametrize("method", PATCHABLE)
def test_every_listed_method_patches_at_its_defaults_and_unpatches(method):
    """Each name in ``PATCHABLE`` is a working patch: at ``DEFAULT_KNOBS`` (all non-zero) it changes
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


def test_one_rule_for_default_knobs_a_causal_lms_where_the_registry_has_one(tmp_path):
    """NeuTRENO's lambda defaults to the paper's LM value (0.4, Nguyen et al. 2023, Table 2) for a
    causal LM and to its ViT value (0.6) otherwise, alike in ``patch``, ``analyze`` and ``adapt``:
    the default patch computes what the patch with that lambda given computes."""
    from hf_tiny import save_tiny, tiny_model

    from oversmooth.adapt import AdaptConfig
    from oversmooth.adapt.pretrained import PretrainedSource
    from oversmooth.analyze import AnalysisSettings, run_analysis
    from oversmooth.hf import patched

    for kind, lam, other in (("llama", 0.4, 0.6), ("bert", 0.6, 0.4)):
        model, inputs = tiny_model(kind), tiny_inputs(kind)

        def hidden(model=model, inputs=inputs, **knobs):
            with patched(model, "neutreno", **knobs), torch.no_grad():
                return model(**inputs).last_hidden_state

        assert torch.equal(hidden(), hidden(lam=lam)) and not torch.allclose(hidden(), hidden(lam=other)), kind
        analysis = run_analysis(model, inputs, AnalysisSettings(methods=("neutreno",), attention_sequences=0))
        assert analysis.knobs["neutreno"]["neutreno"]["lam"] == lam, kind
    folder = save_tiny("llama", tmp_path / "llama")
    source = PretrainedSource(AdaptConfig(model=str(folder), text="sample", seq_len=16))
    assert source.knob_defaults("neutreno")["lam"] == 0.4
