"""``oversmooth.analyze`` takes knobs per method, refuses a bare knob that fits several listed
methods (naming them), records each row's knobs in its table, and shows its real signature and
docstring however the package was imported."""

import inspect
import subprocess
import sys

import pytest
import torch
from hf_tiny import WORDS, save_tiny

import oversmooth
from oversmooth.errors import UsageError
from oversmooth.metrics import cos_sim

TEXT = " ".join(WORDS * 4)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return oversmooth.load(str(save_tiny("bert", tmp_path_factory.mktemp("bert") / "bert")), 2, 16)


def last_cos_sim_by_hand(model, method: str, **knobs) -> float:
    """The last layer's mean cos_sim with ``method`` patched in at ``knobs``, the states captured
    with transformers' own ``output_hidden_states``."""
    batch = model.tokenizer(TEXT, truncation=True, max_length=16, return_overflowing_tokens=True)["input_ids"][:2]
    inputs = model.tokenizer.pad({"input_ids": batch}, return_tensors="pt")
    with oversmooth.patched(model.model, method, **knobs), torch.no_grad():
        states = model.model(**inputs, output_hidden_states=True).hidden_states
    return float(cos_sim(states[-1].double(), inputs["attention_mask"].bool()).mean())


def test_knobs_per_method_reach_their_method_and_the_table_records_them(model):
    table = oversmooth.analyze(
        model, TEXT, methods=["deescalate", "contranorm"], sequences=2, tokens=16, knobs={"deescalate": {"tau": 0.5}}
    )
    knobs = dict(table.groupby("method", sort=False)["knobs"].first())
    assert knobs == {"baseline": "", "deescalate": "tau=0.5", "contranorm": "s=0.1,tau=1"}
    last = table[table.layer == table.layer.max()].set_index("method")["cos_sim"]
    assert last["deescalate"] == pytest.approx(last_cos_sim_by_hand(model, "deescalate", tau=0.5), abs=1e-6)
    assert last["deescalate"] != pytest.approx(last_cos_sim_by_hand(model, "deescalate"), abs=1e-4)
    assert last["contranorm"] == pytest.approx(last_cos_sim_by_hand(model, "contranorm"), abs=1e-6)


def test_a_bare_knob_that_fits_several_listed_methods_is_refused_naming_them(model):
    with pytest.raises(UsageError, match=r"tau=0.5 fits deescalate and contranorm; give it per method"):
        oversmooth.analyze(model, TEXT, methods=["deescalate", "contranorm"], tau=0.5)
    with pytest.raises(UsageError, match="knobs for neutreno, which is not among the methods"):
        oversmooth.analyze(model, TEXT, methods=["contranorm"], knobs={"neutreno": {"lam": 0.2}})
    with pytest.raises(UsageError, match="twice"):
        oversmooth.analyze(model, TEXT, methods=["neutreno"], lam=0.2, knobs={"neutreno": {"lam": 0.4}})


def test_a_stack_is_one_row_group_with_both_methods_knobs(model):
    table = oversmooth.analyze(model, TEXT, methods=["neutreno+featscale"], sequences=2, tokens=16, lam=0.2)
    assert set(table.method) == {"baseline", "neutreno+featscale"}
    assert table[table.method == "neutreno+featscale"].knobs.iloc[0] == "lam=0.2,s_dc=-0.5,s_hc=0.5"


SIGNATURE = """
import inspect, pydoc, sys
import oversmooth
import oversmooth.analyze.settings  # the package, torch-free: now oversmooth.analyze is the package
torch_before = "torch" in sys.modules
from oversmooth.analyze.notebook import analyze
print(torch_before, inspect.signature(oversmooth.analyze) == inspect.signature(analyze))
print(pydoc.render_doc(oversmooth.analyze, renderer=pydoc.plaintext))
"""


def test_the_lazy_api_shows_real_signatures_and_docstrings():
    out = subprocess.run([sys.executable, "-c", SIGNATURE], capture_output=True, text=True, check=True).stdout
    first, doc = out.split("\n", 1)
    assert first == "False True"
    assert "knobs: 'Mapping[str, Mapping[str, Any]] | None' = None" in doc and "Knobs per method" in doc
    assert "*args, **kwargs" not in doc
    for name in ("load", "plot_layers", "measure", "patch", "patched", "watch"):
        function = getattr(oversmooth, name)
        assert "*args" not in str(inspect.signature(function)) and function.__doc__, name
