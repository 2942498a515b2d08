"""The registry is the one list of per-layer measures: the docs table, the suite's columns and each
measure's values agree with it."""

import math
import re
from pathlib import Path

import pytest
import torch

from oversmooth.errors import UsageError
from oversmooth.metrics import (
    ATTENTION_METRICS,
    LAYER_MEASURES,
    METRICS,
    RANK_METRICS,
    SINK_METRICS,
    check_measures,
    measure,
)

DOCS = Path(__file__).parent.parent / "docs" / "metrics.md"
SHAPES = {"stream": "[batch, tokens, features]", "attention": "[batch, heads, n, n]"}


def docs_table() -> list[str]:
    """The measures named in the first column of docs/metrics.md's metric table, in order."""
    table = DOCS.read_text().split("| metric | definition")[1].split("\n\n")[0]
    return re.findall(r"^\| `(\w+)` \|", table, flags=re.M)


def test_docs_table_lists_exactly_the_registry_in_its_order():
    assert docs_table() == list(LAYER_MEASURES)


def test_kinds_split_the_registry_and_keep_its_order():
    assert (*METRICS, *SINK_METRICS, *ATTENTION_METRICS) == tuple(LAYER_MEASURES)
    assert {m.kind for m in LAYER_MEASURES.values()} == set(SHAPES)
    assert RANK_METRICS == ("effective_rank", "stable_rank", "repr_entropy")
    assert all(LAYER_MEASURES[name].kind == "stream" for name in SINK_METRICS)


def test_measure_s_default_set_is_what_training_records():
    """The sink measures are on request: ``measure``'s default (each epoch's layer rows) is as before them."""
    assert METRICS == (
        "cos_sim",
        "t_sim",
        "t_div",
        "anisotropy",
        "centred_residual",
        "effective_rank",
        "stable_rank",
        "block_influence",
    )


@pytest.mark.parametrize("name", LAYER_MEASURES)
def test_every_record_says_what_it_computes_on_which_shapes(name):
    m = LAYER_MEASURES[name]
    assert m.name == name and m.about and m.blind_to and m.paper
    doc = " ".join(m.compute.__doc__.split())
    assert SHAPES[m.kind] in doc and "[batch]" in doc, name


def test_the_suite_takes_each_measure_from_its_record_bit_for_bit():
    g = torch.Generator().manual_seed(0)
    states = [torch.randn(3, 6, 5, generator=g, dtype=torch.float64) for _ in range(3)]
    attentions = [torch.softmax(torch.randn(3, 2, 6, 6, generator=g, dtype=torch.float64), -1) for _ in range(3)]
    mask = torch.ones(3, 6, dtype=torch.bool)
    mask[2, 4:] = False
    table = measure(states, mask, attentions=attentions, exclude=(0,), metrics=METRICS + SINK_METRICS)
    assert table.attrs["metrics"] == METRICS + SINK_METRICS + ATTENTION_METRICS
    for name, m in LAYER_MEASURES.items():
        layers = states if m.kind == "stream" else attentions
        for layer in range(3):
            if m.pair and layer == 0:
                assert math.isnan(table[name][0]), name
                continue
            args = (layers[layer - 1], layers[layer]) if m.pair else (layers[layer],)
            want = m.compute(*args, mask, (0,))
            assert table[name][layer] == want.mean().item(), (name, layer)  # bit for bit
            assert table[f"{name}_std"][layer] == want.std(correction=0).item(), (name, layer)


def test_check_measures_names_the_choices_of_the_kind():
    assert check_measures(("t_sim", "cos_sim")) == ("t_sim", "cos_sim")
    with pytest.raises(UsageError, match=r"unknown metric 'cos_simm' \(did you mean 'cos_sim'\?\); choose from"):
        check_measures(("cos_simm",))
    with pytest.raises(UsageError, match="unknown metric 'sink_mass'"):
        measure([torch.randn(2, 4, 3)], metrics=("sink_mass",))  # an attention measure needs the maps
    assert check_measures(("sink_mass",), "attention") == ("sink_mass",)
