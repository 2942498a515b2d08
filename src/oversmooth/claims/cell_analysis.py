"""Measurements on a finished cell's trained model, for the claims of Dovonon, Bronstein & Kusner
("Setting the Record Straight on Transformer Oversmoothing", TMLR 2025) that need trained weights.

``python -m oversmooth.claims.cell_analysis CELL_DIR`` reads ``CELL_DIR/model`` and the cell's data
and writes ``CELL_DIR/analysis.json`` (atomically). On the first ``PROBE`` validation examples
(the first ``ATTENTION`` of them for the attention maps):

- ``stream``: ``cos_sim`` and ``t_sim`` of the residual stream, state 0 (embeddings) to L, in the
  toolkit's one numbering (``oversmooth.activations``: index i = after block i);
- ``blocks``: per block (``layer`` = i for block i), the change of both across each stage
  (``attention``, ``mlp``, and in
  post-norm blocks ``attn_norm`` / ``mlp_norm``): ``after - before``, stages in stream order;
  and the dynamics verdict of the attention sublayer (``oversmooth.spectra.dynamics_verdict``:
  the eigenvalues of ``W_O^h diag(gamma) W_V^h`` per head, with the pre-attention LayerNorm's
  gamma in pre-norm blocks, against the measured attention maps; the verdict most sequences
  give);
- ``ln_flip`` (pre-norm models only): the same with the sign of every pre-attention LayerNorm
  weight flipped (``gamma -> -gamma``, biases kept), plus the validation scores of both models:
  the first protocol's reading of the paper's LayerNorm-sign statement (it breaks the model);
- ``value_flip`` (pre-norm models only; the second protocol's claim 5c): per block, that block's
  pre-attention gamma negated **in the value path only** (queries and keys keep it, so the
  attention maps are unchanged): the attention sublayer's t_sim change and dynamics verdict
  with the flip and as trained, and its t_sim change under a sham shift of gamma of the flip's
  size (the third protocol's 5c);
- ``sinks`` (language models only; claims S3 and S4): ``oversmooth.claims.cell_sinks``'s record of
  the trained model and of the same seed's model at initialisation, on the same probe;
- ``reference`` (only a cell that is the baseline of a gate whose floor is a reference model,
  ``protocol.reference_needed``): a language model's, the validation NLL of an interpolated
  bigram model on the same tokens; an image classifier's, the validation accuracy of a
  logistic regression on the same training images (``oversmooth.claims.reference``).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections import Counter
from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch
import torch.nn.functional as F

from oversmooth.activations import hook_name
from oversmooth.claims.cell_sinks import sink_record
from oversmooth.claims.protocol import reference_needed
from oversmooth.claims.reference import bigram_nll, logistic_accuracy
from oversmooth.errors import UsageError
from oversmooth.metrics import measure
from oversmooth.spectra.value_output import value_output_eigenvalues
from oversmooth.spectra.verdict import dynamics_verdict
from oversmooth.study.files import ANALYSIS_FILE, CELL_FILE, MODEL_DIR, RESULTS_FILE
from oversmooth.study.results import read_cell
from oversmooth.train.evaluation import validation_probe
from oversmooth.train.run import data_identity
from oversmooth.utils.atomic import atomic_write
from oversmooth.utils.json_files import read_table
from oversmooth.utils.provenance import Provenance

PROBE, ATTENTION = 64, 8
UNDEFINED = "undefined"  # the dynamics verdict of an attention that is not row-stochastic
METRICS = ("cos_sim", "t_sim")
_HOOKS = ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post")


def _stages(cache, block: int, post_norm: bool) -> list[tuple[str, torch.Tensor]]:
    """The stream states inside block ``block`` after each stage, in order (see module docstring)."""
    get = lambda hook: cache[hook_name(block, hook)]  # noqa: E731
    if not post_norm:
        return [("attention", get("hook_resid_mid")), ("mlp", get("hook_resid_post"))]
    return [
        ("attention", get("hook_resid_pre") + get("hook_attn_out")),
        ("attn_norm", get("hook_resid_mid")),
        ("mlp", get("hook_resid_mid") + get("hook_mlp_out")),
        ("mlp_norm", get("hook_resid_post")),
    ]


def _verdict(block, patterns: torch.Tensor, post_norm: bool, sign: float = 1.0) -> dict:
    """The attention sublayer's dynamics verdict over the sequences of ``patterns [B, H, n, n]``
    (``sign`` -1: with the pre-attention gamma negated in the value path). ``undefined`` when the
    attention is not softmax (softpick: its rows need not sum to 1, and the verdict reads the modes
    of a row-stochastic A)."""
    if block.attn.normaliser is not None:
        return {"verdict": UNDEFINED, "verdict_counts": {}, "reason": "the attention rows need not sum to 1"}
    w_v, w_o = block.attn.value_output_weights()
    gamma = None if post_norm else sign * block.ln_attn.weight
    lam = value_output_eigenvalues(w_v, w_o, gamma, heads=block.attn.heads)
    found = [dynamics_verdict(pattern.double(), lam) for pattern in patterns]
    ranked = Counter(v.verdict for v in found).most_common()
    tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
    return {
        "verdict": "mixed" if tied else ranked[0][0],
        "verdict_counts": dict(ranked),
        "c": found[0].c,
        "o": [v.o for v in found],
        "max_real_eigenvalue": float(lam.real.max()),
        "min_real_eigenvalue": float(lam.real.min()),
    }


@torch.no_grad()
def measure_model(model, inputs: torch.Tensor) -> dict:
    """``stream`` and ``blocks`` (see module docstring) of ``model`` on ``inputs``."""
    post_norm = model.cfg.norm == "post"
    depth = model.cfg.depth
    names = [hook_name(b, hook) for b in range(depth) for hook in _HOOKS]
    _, cache = model.run_with_cache(inputs, names=names)
    _, sample = model.run_with_cache(inputs[:ATTENTION], names=[hook_name(b, "pattern") for b in range(depth)])
    patterns = sample.layer_stack("pattern")
    states = [cache[hook_name(0, "resid_pre")]]
    stages = []
    for block in range(depth):
        for stage, state in _stages(cache, block, post_norm):
            states.append(state)
            stages.append((block + 1, stage))
    rows = measure(states, metrics=METRICS).to_dict("records")
    blocks = [
        {"layer": layer, "verdict": _verdict(model.blocks[layer - 1], patterns[layer - 1], post_norm)}
        for layer in range(1, depth + 1)
    ]
    for (layer, stage), before, after in zip(stages, rows, rows[1:]):
        blocks[layer - 1][stage] = {f"{m}_change": after[m] - before[m] for m in METRICS}
    last = "mlp_norm" if post_norm else "mlp"  # the stage that ends a block
    ends = [0] + [i + 1 for i, (_, stage) in enumerate(stages) if stage == last]
    return {"stream": {m: [rows[i][m] for i in ends] for m in METRICS}, "blocks": blocks}


@contextmanager
def gamma_shifted_values(block, delta: torch.Tensor):
    """Within the context, ``block``'s attention values are those of its pre-attention LayerNorm
    with weight ``gamma + delta [width]``; queries and keys keep ``gamma``, so the attention maps
    do not move: ``v -> v + (delta * x_hat) W_V``, ``x_hat`` the normalised block input.
    ``delta = -2 gamma`` is claim 5c's flip (Dovonon et al. 2025, Sec. 5: the value path's
    effective map is ``diag(gamma) W_V W_O``)."""
    ln, attn = block.ln_attn, block.attn
    normalised = {}

    def keep(_module, inputs, _output):
        normalised["x_hat"] = F.layer_norm(inputs[0], ln.normalized_shape, eps=ln.eps)

    def shift(_module, _inputs, v):
        return v + attn._split(_value_projection(attn, delta * normalised["x_hat"]))

    handles = [ln.register_forward_hook(keep), attn.hook_v.register_forward_hook(shift)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _value_projection(attn, z: torch.Tensor) -> torch.Tensor:
    """``z W_V`` (``[B, n, width]``), the value projection without its bias."""
    if attn.value is not None:
        return F.linear(z, attn.value.weight)
    w_v, _ = attn.value_output.weights()
    return z @ w_v


@torch.no_grad()
def value_flip(model, inputs: torch.Tensor, patterns: torch.Tensor, seed: int = 0) -> list[dict]:
    """Claim 5c per block of a pre-norm ``model``: the attention sublayer's ``t_sim`` change and
    verdict with that block's pre-attention gamma negated in the value path only, and as trained
    (``patterns [blocks, B, H, n, n]``: the trained model's maps, which the flip leaves alone);
    and the change under a sham of the flip's size (the third protocol's 5c): gamma plus a
    Gaussian direction scaled to ``||2 gamma||``, one draw per block from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for layer, block in enumerate(model.blocks):
        names = [hook_name(layer, "resid_pre"), hook_name(layer, "resid_mid")]

        def change(delta: torch.Tensor | None, names: list[str] = names, block=block) -> float:
            with gamma_shifted_values(block, delta) if delta is not None else nullcontext():
                _, cache = model.run_with_cache(inputs, names=names)
            return float(measure([cache[n] for n in names], metrics=("t_sim",))["t_sim"].diff().iloc[1])

        gamma = block.ln_attn.weight.detach()
        sham = torch.randn(gamma.shape, generator=generator)
        rows.append(
            {
                "layer": layer + 1,
                "t_sim_change": change(-2 * gamma),
                "t_sim_change_trained": change(None),
                "t_sim_change_sham": change(sham * (2 * gamma).norm() / sham.norm()),
                "verdict": _verdict(block, patterns[layer], False, -1.0)["verdict"],
                "verdict_trained": _verdict(block, patterns[layer], False)["verdict"],
            }
        )
    return rows


def flip_attention_norms(model) -> torch.nn.Module:
    """A copy of a pre-norm ``model`` with every pre-attention LayerNorm weight negated."""
    flipped = copy.deepcopy(model)
    with torch.no_grad():
        for block in flipped.blocks:
            block.ln_attn.weight.neg_()
    return flipped


def initial_model(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """``model``'s architecture as training started: built from ``seed`` as ``train.run.build_model``
    builds it (the seed, then the constructor)."""
    torch.manual_seed(seed)
    return type(model)(model.cfg).eval()


def reference(task, model: str) -> dict:
    """The reference model's record (``oversmooth.claims.gates.REFERENCES``) on ``task``'s own data."""
    if model == "lm":
        nll, weight = bigram_nll(task.splits["train"].numpy(), task.splits["val"].numpy(), task.vocab_size)
        return {"bigram_val_nll": nll, "bigram_weight": weight}
    accuracy = logistic_accuracy(
        task.splits["train"], task.labels["train"], task.splits["val"], task.labels["val"], task.classes
    )
    return {"logistic_val_accuracy": accuracy}


def analyze_cell(folder: str | Path) -> dict:
    """Measure the trained model of the cell in ``folder`` and write its ``analysis.json``."""
    from oversmooth.models import load_model
    from oversmooth.train import Distributed, evaluate
    from oversmooth.train.task_factory import DataOptions, make_task

    folder = Path(folder)
    if not (folder / RESULTS_FILE).is_file() or not (folder / MODEL_DIR).is_dir():
        raise UsageError(
            f"{folder} is no finished cell: it needs {RESULTS_FILE} and {MODEL_DIR}/ "
            "(a completed `oversmooth train` run)"
        )
    description = read_table(folder / RESULTS_FILE, {"description": dict}, f"delete {folder} to train the cell again")[
        "description"
    ]
    model = load_model(folder / MODEL_DIR)
    task, _ = make_task(description["task"], description["model"], DataOptions(**description["data"]))
    inputs = validation_probe(task, PROBE)
    analysis = {
        "probe": {"split": "val", "examples": len(inputs), "attention_examples": min(ATTENTION, len(inputs))},
        **measure_model(model, inputs),
    }
    if model.cfg.norm == "pre" and model.cfg.ln_sign == "free":
        flipped = flip_attention_norms(model)
        env = Distributed()
        analysis["ln_flip"] = {
            **measure_model(flipped, inputs),
            "val": evaluate(flipped, task, "val", 256, env),
            "val_unflipped": evaluate(model, task, "val", 256, env),
        }
        _, sample = model.run_with_cache(
            inputs[:ATTENTION], names=[hook_name(b, "pattern") for b in range(model.cfg.depth)]
        )
        analysis["value_flip"] = value_flip(model, inputs, sample.layer_stack("pattern"), description["train"]["seed"])
    if description["model"] == "lm":
        initial = initial_model(model, description["train"]["seed"])
        analysis["sinks"] = {"trained": sink_record(model, inputs), "init": sink_record(initial, inputs)}
    if (folder / CELL_FILE).is_file() and reference_needed(read_cell(folder)):
        analysis["reference"] = reference(task, description["model"])
    analysis["provenance"] = Provenance.gather(
        "python -m oversmooth.claims.cell_analysis .",  # run in the cell's folder
        next(model.parameters()).device,
        {"seed": description["train"]["seed"]},
        data_identity(description["task"], task, folder),
    ).to_json()
    with atomic_write(folder / ANALYSIS_FILE) as handle:
        json.dump(analysis, handle, indent=1)
    return analysis


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m oversmooth.claims.cell_analysis", description=__doc__.split("\n")[0]
    )
    parser.add_argument("cell", help="a finished cell's folder (with model/ and results.json)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        analyze_cell(args.cell)
    except UsageError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {Path(args.cell) / ANALYSIS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
