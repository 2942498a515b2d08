"""Sublayer attribution on tiny random models, against stage states recomputed by hand from the
model's own submodules and its ``output_hidden_states``."""

import pytest
import torch
from hf_tiny import TINY_FAMILIES, tiny_inputs, tiny_model

from oversmooth.analyze.sublayers import StageChange, block_totals, sublayer_changes
from oversmooth.hf import layout
from oversmooth.metrics import cos_sim, t_sim

TOL = 1e-6
ATOL = 1e-5
FIELDS = ("cos_sim_before", "cos_sim_after", "cos_sim_change", "t_sim_before", "t_sim_after", "t_sim_change")
STAGES = {"pre": ["attention", "mlp"], "post": ["attention", "attn_norm", "mlp", "mlp_norm"]}
ATTENTION = {
    "bert": ("encoder.layer", "attention.output.dense"),
    "gpt2": ("h", "attn"),
    "llama": ("layers", "self_attn"),
}  # blocks, and the module whose output is attn_out


def _means(state, mask, exclude):
    """(cos_sim, t_sim) of ``state [B, n, d]``, each a mean over the defined sequences."""
    return tuple(torch.nanmean(metric(state, mask, exclude)).item() for metric in (cos_sim, t_sim))


def _attention_outputs(model, kind, inputs):
    """The blocks, each block's attention sublayer output (before the residual add) read with
    plain forward hooks, and the model's own ``output_hidden_states``."""
    blocks_path, attention_path = ATTENTION[kind]
    blocks = model.get_submodule(blocks_path)
    outs = []

    def keep(module, args, out):
        outs.append(out[0] if isinstance(out, tuple) else out)

    handles = [block.get_submodule(attention_path).register_forward_hook(keep) for block in blocks]
    try:
        with torch.no_grad():
            hidden = model(**inputs, output_hidden_states=True).hidden_states
    finally:
        for handle in handles:
            handle.remove()
    return blocks, outs, hidden


@torch.no_grad()
def _reference(model, kind, inputs):
    """``[(layer, stage, state after it)]`` in stream order and the embedding state, by hand."""
    blocks, attn_outs, hidden = _attention_outputs(model, kind, inputs)
    stages = []
    for i, (block, attn) in enumerate(zip(blocks, attn_outs)):
        mid = hidden[i] + attn
        if kind == "bert":
            normed = block.attention.output.LayerNorm(mid)
            summed = normed + block.output.dense(block.intermediate(normed))
            post = block.output.LayerNorm(summed)
            stages += [
                (i + 1, "attention", mid),
                (i + 1, "attn_norm", normed),
                (i + 1, "mlp", summed),
                (i + 1, "mlp_norm", post),
            ]
        else:
            norm = block.ln_2 if kind == "gpt2" else block.post_attention_layernorm
            post = mid + block.mlp(norm(mid))
            stages += [(i + 1, "attention", mid), (i + 1, "mlp", post)]
        if i + 1 < len(blocks) or kind == "bert":  # the model's own state l (GPT-2, Llama: last after ln)
            torch.testing.assert_close(post, hidden[i + 1], atol=ATOL, rtol=0)
    if kind != "bert":
        final = (model.ln_f if kind == "gpt2" else model.norm)(post)
        torch.testing.assert_close(final, hidden[-1], atol=ATOL, rtol=0)
        stages.append((len(blocks), "final_norm", final))
    return hidden[0], stages


@pytest.mark.parametrize("exclude", [(), (0,)])
@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_rows_are_the_metrics_of_hand_computed_stage_states(kind, exclude):
    model, inputs = tiny_model(kind), tiny_inputs(kind)
    embedded, stages = _reference(model, kind, inputs)
    rows = sublayer_changes(model, inputs, exclude=exclude)
    assert [(r.layer, r.stage) for r in rows] == [(layer, stage) for layer, stage, _ in stages]
    mask = inputs["attention_mask"].bool()
    before = _means(embedded, mask, exclude)
    for row, (_, _, state) in zip(rows, stages):
        after = _means(state, mask, exclude)
        assert (row.cos_sim_before, row.t_sim_before) == pytest.approx(before, abs=TOL)
        assert (row.cos_sim_after, row.t_sim_after) == pytest.approx(after, abs=TOL)
        assert (row.cos_sim_change, row.t_sim_change) == pytest.approx(
            (after[0] - before[0], after[1] - before[1]), abs=TOL
        )
        before = after


@pytest.mark.parametrize("kind", TINY_FAMILIES)
def test_stages_chain_from_the_embeddings_to_the_last_state(kind):
    model, inputs = tiny_model(kind), tiny_inputs(kind)
    family, layers = layout(model).family, len(layout(model).blocks)
    rows = sublayer_changes(model, inputs)
    with torch.no_grad():
        out = model(**inputs, output_hidden_states=True)
    mask = inputs.get("attention_mask")
    mask = None if mask is None else mask.bool()
    final = ["final_norm"] if family.final_norm else []
    assert [r.stage for r in rows] == STAGES[family.norm_placement] * layers + final
    assert [r.layer for r in rows] == [l for l in range(1, layers + 1) for _ in STAGES[family.norm_placement]] + [
        layers
    ] * len(final)
    for row, following in zip(rows, rows[1:]):
        assert (row.cos_sim_after, row.t_sim_after) == (following.cos_sim_before, following.t_sim_before)
    for row in rows:
        assert row.cos_sim_change == row.cos_sim_after - row.cos_sim_before
        assert row.t_sim_change == row.t_sim_after - row.t_sim_before
    assert (rows[0].cos_sim_before, rows[0].t_sim_before) == pytest.approx(
        _means(out.hidden_states[0], mask, ()), abs=TOL
    )
    last_block = rows[-1 - len(final)]
    if family.hidden_states_last != "after final norm":  # BERT family, ViT, DeiT: the last block's output
        assert (last_block.cos_sim_after, last_block.t_sim_after) == pytest.approx(
            _means(out.hidden_states[-1], mask, ()), abs=TOL
        )
    assert (rows[-1].cos_sim_after, rows[-1].t_sim_after) == pytest.approx(
        _means(out.last_hidden_state, mask, ()), abs=TOL
    )


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_padding_does_not_change_a_sequence(kind):
    model, inputs = tiny_model(kind), tiny_inputs(kind)  # sequence 1: 5 tokens, right-padded to 7
    batch = sublayer_changes(model, inputs)
    first = sublayer_changes(model, {k: v[:1] for k, v in inputs.items()})
    second = sublayer_changes(model, {k: v[1:, :5] for k, v in inputs.items()})
    assert len(batch) == len(first) == len(second)
    for both, a, b in zip(batch, first, second):
        for name in FIELDS:
            assert getattr(both, name) == pytest.approx((getattr(a, name) + getattr(b, name)) / 2, abs=TOL)


def test_block_totals_sum_the_stages_of_each_kind():
    rows = sublayer_changes(tiny_model("bert"), tiny_inputs("bert"))
    totals = block_totals(rows)
    kinds = ("attention", "mlp", "norm")
    assert [(t.layer, t.kind) for t in totals] == [(layer, kind) for layer in (1, 2) for kind in kinds]
    for total in totals:
        stages = [r for r in rows if r.layer == total.layer and r.kind == total.kind]
        assert total.t_sim_change == pytest.approx(sum(r.t_sim_change for r in stages), abs=1e-12)
        assert total.cos_sim_change == pytest.approx(sum(r.cos_sim_change for r in stages), abs=1e-12)
    assert sum(t.t_sim_change for t in totals) == pytest.approx(rows[-1].t_sim_after - rows[0].t_sim_before, abs=1e-12)
    norm = [t for t in totals if t.kind == "norm"][0]
    assert norm.t_sim_change == pytest.approx(rows[1].t_sim_change + rows[3].t_sim_change, abs=1e-12)


def test_final_norm_counts_as_norm_of_the_last_block():
    rows = [
        StageChange(1, "attention", 0.1, 0.3, 0.2, 0.1, 0.4, 0.3),
        StageChange(1, "mlp", 0.3, 0.2, -0.1, 0.4, 0.3, -0.1),
        StageChange(1, "final_norm", 0.2, 0.2, 0.0, 0.3, 0.1, -0.2),
    ]
    totals = block_totals(rows)
    assert [(t.layer, t.kind, t.t_sim_change) for t in totals] == [
        (1, "attention", 0.3),
        (1, "mlp", -0.1),
        (1, "norm", -0.2),
    ]
