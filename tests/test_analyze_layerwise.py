"""Measures taken layer by layer as the forward makes each state equal measures of the kept states,
and the states are not kept."""

import pytest
import torch
from hf_tiny import tiny_inputs, tiny_model

from oversmooth.analyze.analysis import AnalysisSettings, _stream_table
from oversmooth.analyze.layerwise import LayerwiseMeasures
from oversmooth.hf.capture import capture
from oversmooth.metrics import METRICS, measure


@pytest.mark.parametrize("kind", ["bert", "gpt2", "phi", "albert", "vit"])
@pytest.mark.parametrize("rank_sequences", [None, 1])
def test_layerwise_rows_equal_measures_of_kept_states(kind, rank_sequences):
    model, inputs = tiny_model(kind), tiny_inputs(kind)
    settings = AnalysisSettings(methods=(), exclude=(0,), rank_sequences=rank_sequences)
    table, _, _, tokens = _stream_table(model, inputs, settings)
    _, cache = capture(model, inputs, hooks=("resid_pre", "resid_post"))
    stream = cache.stream()
    expected = measure(stream, cache.mask, exclude=(0,))
    if rank_sequences:  # the ranks of the first sequence alone
        ranks = measure(
            [s[:1] for s in stream], cache.mask[:1], exclude=(0,), metrics=("effective_rank", "stable_rank")
        )
        expected = expected.assign(**ranks.drop(columns="layer"))
    assert tokens == stream[0].shape[1] and table.attrs["sequences"] == 2
    assert table["layer"].tolist() == list(range(len(stream)))
    for metric in METRICS:
        assert table[metric].tolist() == pytest.approx(expected[metric].tolist(), rel=1e-12, abs=1e-12, nan_ok=True), (
            metric
        )
    assert ("rank_sequences" in table.attrs["notes"]) == bool(rank_sequences)


def test_a_sink_keeps_nothing_and_sees_every_state_once():
    model, inputs = tiny_model("llama"), tiny_inputs("llama")
    seen = []
    _, cache = capture(
        model,
        inputs,
        hooks=("resid_pre", "resid_mid", "resid_post"),
        sink=lambda name, tensor: seen.append((name, tuple(tensor.shape))),
    )
    assert cache.tensors == {}
    assert [name for name, _ in seen] == [
        f"blocks.{layer}.hook_{hook}" for layer in range(2) for hook in ("resid_pre", "resid_mid", "resid_post")
    ]
    assert {shape for _, shape in seen} == {(2, 7, 32)}


def test_measures_queue_one_state_per_thread_and_finish_the_rest():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        measures = LayerwiseMeasures({f"s{i}": ("t_sim",) for i in range(3)}, None)
        for i in range(3):
            measures(f"s{i}", torch.ones(1, 3, 2))
        assert sorted(measures.rows) == ["s0", "s1"] and len(measures._pending) == 1
        measures.finish()
    finally:
        torch.set_num_threads(threads)
    assert sorted(measures.rows) == ["s0", "s1", "s2"] and measures.rows["s2"]["t_sim"] == 1.0


def test_rank_measures_on_the_background_thread_read_a_copy_of_the_state():
    """The ranks run beside the forward pass: a model that writes into a state after its hook fired
    must not change them, and at most a few copies wait."""
    torch.manual_seed(0)
    states = [torch.randn(3, 5, 4) for _ in range(4)]
    expected = [
        {
            **measure([s[:2].clone()], None, metrics=("effective_rank", "stable_rank")).to_dict("records")[0],
            **measure([s.clone()], None, metrics=("t_sim",)).to_dict("records")[0],
        }
        for s in states
    ]
    measures = LayerwiseMeasures({f"s{i}": ("t_sim", "effective_rank", "stable_rank") for i in range(4)}, None, (), 2)
    for i, state in enumerate(states):
        measures(f"s{i}", state)
        assert sum(not future.done() for future in measures._ranks.values()) <= 2
        state.mul_(0.0)  # what an in-place op of the model would do
    measures.finish()
    for i, row in enumerate(expected):
        for metric in ("t_sim", "effective_rank", "stable_rank"):  # t_sim: in the hook, before the zeroing
            assert measures.rows[f"s{i}"][metric] == row[metric], metric
