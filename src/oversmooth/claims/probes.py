"""The claims that need no training, measured in seconds.

- ``random_init``: NeuTRENO (Nguyen et al. 2023) App. G.3. A randomly initialised DeiT-tiny body
  (12 x 192, 3 heads) with and without NeuTRENO, *the same weights* (NeuTRENO adds none), on
  Fashion-MNIST test images cut into 2 x 2 patches so the sequence is 197 tokens as in DeiT.
  Per-layer cos_sim, several inits.
- ``pretrained``: NeuTRENO App. G.9. The bundled pretrained MiniLM with NeuTRENO patched in, no
  fine-tuning, with what the patch did to its output (``oversmooth.analyze.quality``); and, unpatched,
  per block the change of cos_sim / t_sim across its attention sublayer, MLP and norms
  (``oversmooth.analyze.sublayers``) beside the attention sublayer's dynamics verdict (Dovonon et al.
  2025: W_V W_O eigenvalues against the measured attention maps).
- ``frontier``: NeuTRENO App. G.9 decided where the model still works (second protocol, claim 1b):
  MiniLM at the largest lambda whose output stays within the quality budget (``analyze --sweep``).
- ``existence``: Dovonon et al. 2025's "similarity need not grow with depth" in a pretrained model
  (claim 5a): the block whose stream cos_sim falls most on 32 Austen passages, measured on 64 others.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from oversmooth.activations import stream_names
from oversmooth.analyze import Quality, QualityRow
from oversmooth.claims.files import PROBES_FILE
from oversmooth.errors import UsageError
from oversmooth.metrics import measure
from oversmooth.utils.atomic import atomic_write


@dataclass
class CurvePair:
    """Per-layer ``cos_sim`` (layer 0 = embeddings) of a baseline and NeuTRENO, one list per run,
    and what NeuTRENO did to the model's job (None for an untrained model, which has none)."""

    baseline: list[list[float]]
    neutreno: list[list[float]]
    lam: float
    source: str
    quality: Quality | None = None
    note: str = ""

    def mean(self, which: str) -> list[float]:
        runs = getattr(self, which)
        return [sum(values) / len(values) for values in zip(*runs)]

    @classmethod
    def from_json(cls, data: dict) -> CurvePair:
        quality = data["quality"] and Quality(tuple(QualityRow(**row) for row in data["quality"]["rows"]))
        return cls(**{**data, "quality": quality})


@dataclass
class Existence:
    """Claim 5a on one model: the stream pair (``layer``, ``layer + 1``) whose mean cos_sim fell
    most on the ``selection`` sequences, and on each held-out sequence ``(cos_sim at layer,
    cos_sim at layer + 1)`` (layer i: after block i)."""

    layer: int
    selection: int
    selection_fall: float
    values: list[tuple[float, float]]
    source: str

    def text(self) -> str:
        before = sum(b for b, _ in self.values) / len(self.values)
        after = sum(a for _, a in self.values) / len(self.values)
        return (
            f"{self.source}: the pair chosen on {self.selection} other sequences is layer {self.layer} -> "
            f"{self.layer + 1} (fell {self.selection_fall:.3f} there); on the {len(self.values)} held-out "
            f"sequences cos_sim {before:.3f} -> {after:.3f}"
        )


@dataclass
class Probes:
    """``pretrained_blocks``: per block of MiniLM (``layer`` 1-based), the summed change of
    ``cos_sim`` / ``t_sim`` across its ``attention``, ``mlp`` and ``norm`` stages, and the
    attention sublayer's dynamics ``verdict``."""

    random_init: CurvePair
    pretrained: CurvePair
    pretrained_blocks: list[dict]
    frontier: CurvePair | None = None
    existence: Existence | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Probes:
        """The probes ``to_json`` wrote (JSON turns tuples into lists: they are turned back)."""
        existence = data["existence"] and {
            **data["existence"],
            "values": [tuple(v) for v in data["existence"]["values"]],
        }
        return cls(
            random_init=CurvePair.from_json(data["random_init"]),
            pretrained=CurvePair.from_json(data["pretrained"]),
            pretrained_blocks=data["pretrained_blocks"],
            frontier=data["frontier"] and CurvePair.from_json(data["frontier"]),
            existence=existence and Existence(**existence),
        )

    def block_text(self, layer: int) -> str:
        """``"attention +0.012, mlp -0.030, norm -0.004"``: block ``layer``'s cos_sim changes."""
        block = self.pretrained_blocks[layer - 1]
        return ", ".join(f"{kind} {block[kind]['cos_sim_change']:+.3f}" for kind in ("attention", "mlp", "norm"))

    def pretrained_agreement(self) -> str:
        """How often the dynamics verdict of an attention sublayer matches its measured t_sim change."""
        judged = [
            ((b["verdict"] == "smoothing"), b["attention"]["t_sim_change"] > 0)
            for b in self.pretrained_blocks
            if b["verdict"] in ("smoothing", "sharpening")
        ]
        agree = sum(v == m for v, m in judged)
        p, q = (sum(v for v, _ in judged) / max(len(judged), 1)), (sum(m for _, m in judged) / max(len(judged), 1))
        verdicts = ", ".join(b["verdict"] for b in self.pretrained_blocks)
        changes = ", ".join(f"{b['attention']['t_sim_change']:+.3f}" for b in self.pretrained_blocks)
        return (
            f"verdicts {verdicts}; measured t_sim change across attention {changes}: {agree} of "
            f"{len(judged)} judged blocks agree ({(p * q + (1 - p) * (1 - q)) * len(judged):.1f} by chance "
            "from the marginals)"
        )


def _fmnist_images(count: int) -> tuple[torch.Tensor, str]:
    """``[count, 1, 28, 28]`` standardised Fashion-MNIST test images, or Gaussian noise without the data."""
    from oversmooth.data import load_fashion_mnist

    try:
        images = torch.from_numpy(load_fashion_mnist()["test"].images[:count]).float()
        source = f"{count} Fashion-MNIST test images"
    except UsageError:
        images = torch.randn(count, 28, 28, generator=torch.Generator().manual_seed(0))
        source = f"{count} Gaussian-noise images (Fashion-MNIST not installed)"
    images = (images - images.mean()) / images.std()
    return images.unsqueeze(1), source


def _stream_cos_sim(model, images: torch.Tensor) -> list[float]:
    """``cos_sim`` of the stream, 0 = embeddings, i = after block i (``oversmooth.activations``)."""
    _, cache = model.run_with_cache(images, names=stream_names(model.cfg.depth))
    return measure(cache.stream(), metrics=("cos_sim",))["cos_sim"].tolist()


@torch.no_grad()
def random_init(seeds: tuple[int, ...] = (0, 1, 2), lam: float = 0.6, images: int = 16) -> CurvePair:
    """G.3: per-layer cos_sim of randomly initialised DeiT-tiny bodies, softmax vs NeuTRENO."""
    from oversmooth.models import ViT, ViTConfig

    batch, source = _fmnist_images(images)
    shape = dict(image_size=28, patch_size=2, channels=1, num_classes=10)
    pair = CurvePair([], [], lam, f"DeiT-tiny body (12 x 192, 3 heads, 197 tokens), {source}, inits {list(seeds)}")
    for seed in seeds:
        torch.manual_seed(seed)
        base = ViT(ViTConfig.preset("deit-tiny", **shape)).eval()
        neutreno = ViT(ViTConfig.preset("deit-tiny", mitigation={"methods": ["neutreno"], "lam": lam}, **shape)).eval()
        neutreno.load_state_dict(base.state_dict())
        pair.baseline.append(_stream_cos_sim(base, batch))
        pair.neutreno.append(_stream_cos_sim(neutreno, batch))
    return pair


@torch.no_grad()
def pretrained(lam: float = 0.6, sequences: int = 8, tokens: int = 128) -> tuple[CurvePair, list[dict]]:
    """G.9: the bundled MiniLM on the built-in English sample, with and without NeuTRENO patched
    in; and its blocks (see ``Probes.pretrained_blocks``)."""
    from oversmooth.analyze import BASELINE, AnalysisSettings, block_totals, read_text, run_analysis, text_batch
    from oversmooth.hf import load

    loaded = load(None, sequences, tokens)
    text, source = read_text(None)
    inputs = text_batch(loaded.tokenizer, text, tokens, sequences)
    settings = AnalysisSettings(methods=("neutreno",), knobs={"neutreno": {"lam": lam}}, attention_sequences=2)
    analysis = run_analysis(loaded.model, inputs, settings, tokenizer=loaded.tokenizer)
    pair = CurvePair(
        [analysis.tables[BASELINE]["cos_sim"].tolist()],
        [analysis.tables["neutreno"]["cos_sim"].tolist()],
        lam,
        f"pretrained {loaded.name}, {analysis.sequences} x {analysis.tokens} tokens of {source}",
        analysis.quality["neutreno"],
    )
    blocks = [{"layer": layer.layer, "verdict": layer.dynamics["verdict"]} for layer in analysis.spectrum]
    for total in block_totals(analysis.sublayers):
        blocks[total.layer - 1][total.kind] = {
            "cos_sim_change": total.cos_sim_change,
            "t_sim_change": total.t_sim_change,
        }
    return pair, blocks


@torch.no_grad()
def frontier(model: str | None = None, sequences: int = 8, tokens: int = 128) -> CurvePair:
    """Claim 1b: a pretrained model (None: the bundled MiniLM; the third protocol's: SmolLM2's
    GGUF) with NeuTRENO at the largest lambda of the sweep grid whose output stays within the
    quality budget (none within: lambda 0's curve, which lowers nothing)."""
    from oversmooth.analyze import (
        BASELINE,
        AnalysisSettings,
        read_text,
        run_analysis,
        text_batch,
    )
    from oversmooth.hf import load

    loaded = load(model, sequences, tokens)
    text, source = read_text(None)
    inputs = text_batch(loaded.tokenizer, text, tokens, sequences)
    frontier, best = neutreno_sweep(loaded, inputs)
    lam = 0.0 if best is None else best.value
    analysis = run_analysis(
        loaded.model,
        inputs,
        AnalysisSettings(methods=("neutreno",), knobs={"neutreno": {"lam": lam}}, attention_sequences=1),
        tokenizer=loaded.tokenizer,
    )
    points = [p for p in frontier if p.method == "neutreno"]
    grid = ", ".join(f"{p.value:g}: {p.quality.primary.value:.3f}" for p in points)
    return CurvePair(
        [analysis.tables[BASELINE]["cos_sim"].tolist()],
        [analysis.tables["neutreno"]["cos_sim"].tolist()],
        lam,
        f"pretrained {loaded.name} at the largest lambda within the quality budget, {source}",
        analysis.quality["neutreno"],
        f"{points[0].quality.primary.measure.replace('_', ' ')} by lambda {{{grid}}}",
    )


def neutreno_sweep(loaded, inputs: dict) -> tuple[list, object | None]:
    """NeuTRENO without training over analyze's lambda grid on ``inputs`` (a tokenizer's batch):
    the frontier (``analyze.FrontierPoint`` per lambda) and its largest lambda within analyze's
    quality budget (None: none is)."""
    from oversmooth.analyze import AnalysisSettings, best_within_budget, default_sweeps, run_analysis

    swept = run_analysis(
        loaded.model,
        inputs,
        AnalysisSettings(methods=(), sweeps=default_sweeps(("neutreno",))),
        tokenizer=loaded.tokenizer,
    )
    return swept.frontier, best_within_budget(swept.frontier, "neutreno", "lam")


@torch.no_grad()
def similarity_fall(selection: int = 32, held_out: int = 64, tokens: int = 128) -> Existence | None:
    """Claim 5a on the bundled MiniLM and Jane Austen's text: the pair of blocks where cos_sim falls
    most on ``selection`` sequences, and its cos_sim before and after on ``held_out`` others (None
    without the Austen data)."""
    from oversmooth.analyze import text_batch
    from oversmooth.data.austen import load_austen
    from oversmooth.hf import capture, load
    from oversmooth.metrics import cos_sim

    try:
        documents = load_austen()
    except UsageError:
        return None
    loaded = load(None, selection + held_out, tokens)
    batch = text_batch(loaded.tokenizer, "\n".join(d.text for d in documents), tokens, selection + held_out)
    _, cache = capture(loaded.model, batch, hooks=("resid_pre", "resid_post"))
    mask = batch["attention_mask"].bool()
    per_layer = torch.stack([cos_sim(state, mask) for state in cache.stream()], dim=1)  # [sequences, layers]
    falls = (per_layer[:selection, :-1] - per_layer[:selection, 1:]).mean(0)
    layer = int(falls[1:].argmax()) + 1  # a pair of blocks: the embeddings' layer 0 is no block's output
    held = per_layer[selection:, layer : layer + 2].tolist()
    return Existence(
        layer,
        selection,
        float(falls[layer]),
        [(b, a) for b, a in held],
        f"pretrained {loaded.name} on {held_out} held-out Jane Austen passages of {tokens} tokens",
    )


def run_probes() -> Probes:
    pair, blocks = pretrained()
    return Probes(
        random_init=random_init(),
        pretrained=pair,
        pretrained_blocks=blocks,
        frontier=frontier(),
        existence=similarity_fall(),
    )


COMMAND = "python -m oversmooth.claims.probes --out results/probes"


def read_probes(folder: Path) -> Probes:
    """The archived probes in ``folder/probes.json``; UsageError naming the file when damaged."""
    path = Path(folder) / PROBES_FILE
    try:
        return Probes.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UsageError(f"{path} is damaged ({error}); rerun: {COMMAND}") from None


def main(argv: list[str] | None = None) -> int:
    """Run the probes (a few CPU-minutes) and archive them, so that a report from results/ alone
    decides the static claims and 5a without running them again."""
    parser = argparse.ArgumentParser(prog="python -m oversmooth.claims.probes", description=main.__doc__.split(",")[0])
    parser.add_argument("--out", default="results/probes", help="the folder for probes.json (default results/probes)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        print(f"error: --out {out} is a file; give a folder", file=sys.stderr)
        return 2
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    probes = run_probes()
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / PROBES_FILE) as handle:
        json.dump(probes.to_json(), handle, indent=1)
    print(f"wrote {out / PROBES_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
