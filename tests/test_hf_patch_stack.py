"""Stacked patches on a pretrained model (``patch(model, "neutreno+featscale")``): the combinations
``train`` allows, decided by the registry (``patch_stack``), and the stacked forward equal to the
papers' formulas applied by hand on a tiny BERT."""

import pytest
import torch
import transformers as tf
from hf_tiny import CONFIGS, perturb

from oversmooth.errors import UsageError
from oversmooth.hf import patched
from oversmooth.layers import MitigationConfig
from oversmooth.mitigations.registry import patch_stack

LAM, S_DC, S_HC = 0.4, -0.3, 0.2


@pytest.fixture(scope="module")
def bert():
    torch.manual_seed(0)
    return perturb(tf.AutoModel.from_config(CONFIGS["bert"](), attn_implementation="eager").eval())


@pytest.fixture(scope="module")
def ids():
    return torch.randint(4, 40, (2, 9), generator=torch.Generator().manual_seed(1))


def by_hand(model, ids, lam: float, s_dc: float, s_hc: float) -> torch.Tensor:
    """The last hidden state with NeuTRENO (Nguyen et al. 2023, eq. 9: ``A V + lam (V1 - V)`` on
    the per-head context of every block after the first) and FeatScale (Wang et al. 2022, eq. 7:
    ``Z + s_dc DC + s_hc HC`` on the attention output before the residual add) written out here
    with plain hooks on BERT's own modules, no padding (every token valid)."""
    values, handles = {}, []
    for index, layer in enumerate(model.encoder.layer):

        def keep(module, args, out, index=index):
            values[index] = out  # [B, n, heads * d_head]: heads side by side, so per head alike

        def fidelity(module, args, index=index):
            return (args[0] + lam * (values[0] - values[index]),) if index else None

        def scale(module, args, z):
            dc = z.mean(dim=1, keepdim=True)
            return z + s_dc * dc + s_hc * (z - dc)

        handles += [
            layer.attention.self.value.register_forward_hook(keep),
            layer.attention.output.dense.register_forward_pre_hook(fidelity),
            layer.attention.output.dense.register_forward_hook(scale),
        ]
    try:
        with torch.no_grad():
            return model(input_ids=ids).last_hidden_state
    finally:
        for handle in handles:
            handle.remove()


def hidden(model, ids, method: str, **knobs) -> torch.Tensor:
    with patched(model, method, **knobs), torch.no_grad():
        return model(input_ids=ids).last_hidden_state


def test_a_stacked_patch_is_both_formulas_by_hand(bert, ids):
    stacked = hidden(bert, ids, "neutreno+featscale", lam=LAM, s_dc=S_DC, s_hc=S_HC)
    torch.testing.assert_close(stacked, by_hand(bert, ids, LAM, S_DC, S_HC), rtol=1e-5, atol=1e-5)
    # each method alone is not the stack: both edits act
    for single, knobs in (("neutreno", {"lam": LAM}), ("featscale", {"s_dc": S_DC, "s_hc": S_HC})):
        assert not torch.allclose(stacked, hidden(bert, ids, single, **knobs), atol=1e-3)
    # the order written does not matter: methods act in the registry's order, as in training
    torch.testing.assert_close(hidden(bert, ids, "featscale+neutreno", lam=LAM, s_dc=S_DC, s_hc=S_HC), stacked)


def test_knobs_per_method_in_a_stack_and_a_bare_knob_that_fits_two(bert, ids):
    per_method = hidden(bert, ids, "deescalate+contranorm", knobs={"deescalate": {"tau": 0.5}})
    with pytest.raises(UsageError, match="tau=0.5 fits deescalate and contranorm"):
        hidden(bert, ids, "deescalate+contranorm", tau=0.5)
    # contranorm's tau by its global name (its CLI flag), de-escalation's at its default
    global_name = hidden(bert, ids, "deescalate+contranorm", contranorm_tau=1.0, knobs={"deescalate": {"tau": 0.5}})
    torch.testing.assert_close(per_method, global_name)
    assert not torch.allclose(per_method, hidden(bert, ids, "deescalate+contranorm"), atol=1e-3)


@pytest.mark.parametrize(
    "spec, why",
    [
        ("symmetric+neutreno", "cannot be patched into a pretrained model"),
        ("neutreno+neutreno", "listed twice"),
        ("layerscale+rezero", "cannot be patched"),
        ("neutreno+magic", "unknown method 'magic'"),
    ],
)
def test_the_registry_refuses_the_stacks_it_refuses_in_training(spec, why):
    with pytest.raises(UsageError, match=why):
        patch_stack(spec)


def test_every_patchable_pair_train_allows_patches_too():
    """One rule: a pair of patchable methods stacks when ``MitigationConfig`` (train) takes it."""
    from oversmooth.mitigations.registry import patchable

    for a in patchable():
        for b in patchable():
            if a >= b:
                continue
            try:
                MitigationConfig(f"{a}+{b}")
            except UsageError:
                with pytest.raises(UsageError):
                    patch_stack(f"{a}+{b}")
            else:
                assert set(patch_stack(f"{a}+{b}")) == {a, b}


def test_analyze_methods_takes_a_stack_and_its_knob_flags(tmp_path, capsys):
    import csv

    from hf_tiny import WORDS, save_tiny

    from oversmooth.cli import main

    folder, out = save_tiny("bert", tmp_path / "bert"), tmp_path / "out"
    argv = ["analyze", str(folder), "--text", " ".join(WORDS * 4), "--methods", "neutreno+featscale", "--lam", "0.2"]
    fast = ["--max-sequences", "2", "--max-length", "16", "--attention-sequences", "0", "--no-progress"]
    assert main([*argv, *fast, "--out", str(out)]) == 0, capsys.readouterr().err
    rows = {row["method"]: row for row in csv.DictReader((out / "quality.csv").open())}
    assert rows["neutreno+featscale"]["setting"] == "lam=0.2,s_dc=-0.5,s_hc=0.5"
    assert "cos:neutreno+featscale" in capsys.readouterr().out
