"""Measurements on a trained cell: stage changes add up to the stream, the LayerNorm flip negates
the attention sublayer, the verdicts of spectral models follow their spectra."""

import json

import pytest
import torch
from reference_metrics import t_sim as t_sim_reference

from oversmooth.claims.cell_analysis import analyze_cell, flip_attention_norms, measure_model
from oversmooth.cli import main
from oversmooth.models import ViT, ViTConfig


def vit(norm="pre", **mitigation):
    torch.manual_seed(0)
    return ViT(ViTConfig.preset("vit-cpu", depth=3, width=32, heads=4, norm=norm, mitigation=mitigation)).eval()


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_stage_changes_add_up_to_the_change_of_the_stream(norm):
    model, images = vit(norm), torch.randn(6, 1, 28, 28)
    found = measure_model(model, images)
    _, cache = model.run_with_cache(images)
    states = [cache["blocks.0.hook_resid_pre"], *(cache[f"blocks.{b}.hook_resid_post"] for b in range(3))]
    reference = [
        sum(t_sim_reference(seq) for seq in s.double().numpy()) / len(s) for s in states
    ]  # mean over sequences
    assert found["stream"]["t_sim"] == pytest.approx(reference, rel=1e-5)
    for block in found["blocks"]:
        stages = [k for k in block if k not in ("layer", "verdict")]
        assert stages == (["attention", "mlp"] if norm == "pre" else ["attention", "attn_norm", "mlp", "mlp_norm"])
        total = sum(block[stage]["t_sim_change"] for stage in stages)
        layer = block["layer"]
        assert total == pytest.approx(found["stream"]["t_sim"][layer] - found["stream"]["t_sim"][layer - 1], abs=1e-6)


def test_flipping_the_norm_weights_negates_the_attention_sublayer_without_biases():
    model = vit()
    with torch.no_grad():
        for name, tensor in model.named_parameters():
            if name.endswith("bias") and ("ln_attn" in name or ".attn." in name):
                tensor.zero_()
    flipped = flip_attention_norms(model)
    x = torch.randn(2, 50, 32)
    block, other = model.blocks[1], flipped.blocks[1]
    assert torch.allclose(other.attn(other.ln_attn(x))[0], -block.attn(block.ln_attn(x))[0], atol=1e-6)
    assert torch.equal(model.blocks[0].ln_attn.weight, torch.ones(32))  # the original is untouched


@pytest.mark.parametrize("mode, verdict", [("smooth", "smoothing"), ("sharpen", "sharpening")])
def test_spectral_models_get_the_verdict_of_their_spectrum(mode, verdict):
    # H = +-s I with s > 0 small: c = |1 +- s|; the other modes grow like |1 +- s lambda^A_i|, |lambda^A_i| < 1
    found = measure_model(vit(methods=("spectral",), spectral=mode), torch.randn(4, 1, 28, 28))
    assert [b["verdict"]["verdict"] for b in found["blocks"]] == [verdict] * 3


def test_a_trained_cell_gets_its_analysis_file(tmp_path):
    out = tmp_path / "cell"
    assert (
        main(
            [
                *(
                    "train --task synthetic --model vit --depth 2 --width 16 --heads 2 --epochs 1 --batch-size "
                    "32 --no-progress --out"
                ).split(),
                str(out),
            ]
        )
        == 0
    )
    analysis = analyze_cell(out)
    assert json.loads((out / "analysis.json").read_text()) == json.loads(json.dumps(analysis))
    assert len(analysis["stream"]["cos_sim"]) == 3 and len(analysis["blocks"]) == 2
    assert analysis["probe"]["examples"] == 64 and 0 <= analysis["ln_flip"]["val"]["accuracy"] <= 1
    assert analysis["ln_flip"]["val_unflipped"] == json.loads((out / "results.json").read_text())["val"]


def test_a_folder_without_a_finished_run_is_a_one_line_error(tmp_path, capsys):
    from oversmooth.claims.cell_analysis import main as analysis_main

    assert analysis_main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is no finished cell" in err and not (tmp_path / "analysis.json").exists()


def test_the_value_flip_and_its_sham_are_layernorm_with_a_shifted_gamma_on_the_value_path_only():
    """Claim 5c's flip (gamma -> -gamma) and the third protocol's sham (gamma plus a random shift
    of the same norm): the hooked values equal the value projection of F.layer_norm with the
    shifted weight (an independent computation), and the attention maps do not move."""
    import torch.nn.functional as F

    from oversmooth.claims.cell_analysis import gamma_shifted_values, value_flip

    model, images = vit(), torch.randn(4, 1, 28, 28)
    with torch.no_grad():
        for block in model.blocks:  # a bias, so the flip's offset 2 (beta W_V + b_V) is not zero
            block.ln_attn.bias.normal_()
    block, names = model.blocks[1], ["blocks.1.hook_resid_pre", "blocks.1.attn.hook_v", "blocks.1.attn.hook_pattern"]
    _, cache = model.run_with_cache(images, names=names)
    x, ln = cache["blocks.1.hook_resid_pre"], block.ln_attn
    gamma = ln.weight.detach()
    for delta in (-2 * gamma, torch.randn(gamma.shape)):
        with torch.no_grad(), gamma_shifted_values(block, delta):
            _, shifted = model.run_with_cache(images, names=names)
        by_hand = block.attn._split(block.attn.value(F.layer_norm(x, x.shape[-1:], gamma + delta, ln.bias, ln.eps)))
        assert torch.allclose(shifted["blocks.1.attn.hook_v"], by_hand, atol=1e-5)
        assert torch.equal(shifted["blocks.1.attn.hook_pattern"], cache["blocks.1.attn.hook_pattern"])
    _, sample = model.run_with_cache(images, names=[f"blocks.{b}.attn.hook_pattern" for b in range(3)])
    rows = value_flip(model, images, sample.layer_stack("pattern"), seed=3)
    assert [r["layer"] for r in rows] == [1, 2, 3]
    assert all(r["t_sim_change"] != pytest.approx(r["t_sim_change_trained"]) for r in rows)
    assert all(r["t_sim_change_sham"] != pytest.approx(r["t_sim_change_trained"]) for r in rows)
    assert rows == value_flip(model, images, sample.layer_stack("pattern"), seed=3)  # the sham is seeded


def test_only_the_baselines_of_a_reference_floor_pay_for_the_reference_model():
    """Gate (c)'s reference model is measured on the cells whose gate reads it: depth-w32's
    pre-norm softmax at depth 48 (its pilot's too: same setting), austen-p3's softmax; not
    fmnist-p7 (a cited floor), not the long runs, not the other arms, not austen-p2 (no longer
    read by a claim)."""
    from oversmooth.claims.presets import CLAIMS_PRESETS
    from oversmooth.claims.protocol import reference_needed
    from oversmooth.study.results import CellResult

    def needed(preset):
        cells = [
            CellResult(
                preset,
                c.name,
                c.model,
                c.task,
                c.norm,
                c.depth,
                c.variant.label,
                c.variant.method,
                {},
                c.seed,
                "completed",
                [],
                None,
                c.spec(),
            )
            for c in CLAIMS_PRESETS[preset].cells()
        ]
        return {(c.norm, c.label, c.depth) for c in cells if reference_needed(c)}, len(cells)

    assert needed("depth-w32") == ({("pre", "softmax", 48)}, 48)
    assert needed("depth-w32-pilot") == ({("pre", "softmax", 48)}, 8)
    assert needed("austen-p3") == ({("pre", "softmax", 8)}, 16)
    presets = ("fmnist-p7", "fmnist-p7-spectral", "depth-w32-long", "austen-p3-long", "depth-p7-pilot", "austen-p2")
    for preset in presets:
        assert needed(preset)[0] == set(), preset


def test_the_5c_retest_counts_sign_turns_under_the_flip_and_under_the_sham():
    """Per seed, the share of blocks whose measured t_sim change changes sign: three hand-made blocks,
    the flip turning two (+ to -, - to +), the sham one; None before the sham was measured."""
    from oversmooth.claims.measures import sign_flips_vs_sham
    from oversmooth.study.results import CellResult

    def cell(blocks):
        fields = dict(study="s", name="c", model="vit", task="fmnist", norm="pre", depth=3, label="softmax")
        return CellResult(
            **fields,
            method="softmax",
            knobs={},
            seed=0,
            status="completed",
            epochs=[],
            results=None,
            analysis={"value_flip": blocks},
        )

    key = ("pre", "softmax", 3)
    blocks = [
        {"t_sim_change_trained": 0.2, "t_sim_change": -0.1, "t_sim_change_sham": 0.1},
        {"t_sim_change_trained": -0.2, "t_sim_change": 0.3, "t_sim_change_sham": -0.1},
        {"t_sim_change_trained": 0.2, "t_sim_change": 0.1, "t_sim_change_sham": -0.05},
    ]
    assert sign_flips_vs_sham({key: cell(blocks)}, (key, key)) == pytest.approx((2 / 3, 1 / 3))
    old = [{k: v for k, v in b.items() if k != "t_sim_change_sham"} for b in blocks]
    assert sign_flips_vs_sham({key: cell(old)}, (key, key)) is None
