"""The claims that need no training (DESIGN §8, claims 1 and 5), measured in seconds.

- ``random_init``: seed 001 G.3. A randomly initialised DeiT-tiny body (12 x 192, 3 heads) with
  and without NeuTRENO, *the same weights* (NeuTRENO adds none), on Fashion-MNIST test images cut
  into 2 x 2 patches so the sequence is 197 tokens as in DeiT. Per-layer cos_sim, several inits.
- ``pretrained``: seed 001 G.9. The bundled pretrained MiniLM with NeuTRENO patched in, no
  fine-tuning, with what the patch did to its output (``oversmooth.hf.quality``); also its
  per-block W_V W_O sign verdicts (weights only, seed 000).
- ``theory``: seed 000's spectral statements on ``X <- X + A X H``: H with eigenvalues in (0, 1]
  smooths, in [-1, 0) sharpens, negative pre-LayerNorm weights flip smoothing into sharpening.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from oversmooth.errors import UsageError
from oversmooth.hf.quality import Quality
from oversmooth.metrics import measure


@dataclass
class CurvePair:
    """Per-layer ``cos_sim`` (layer 0 = embeddings) of a baseline and NeuTRENO, one list per run,
    and what NeuTRENO did to the model's job (None for an untrained model, which has none)."""

    baseline: list[list[float]]
    neutreno: list[list[float]]
    lam: float
    source: str
    quality: Quality | None = None

    def mean(self, which: str) -> list[float]:
        runs = getattr(self, which)
        return [sum(values) / len(values) for values in zip(*runs)]


@dataclass
class Probes:
    random_init: CurvePair
    pretrained: CurvePair
    pretrained_verdicts: list[str]   # per block: sign_verdict of W_V W_O (weights only, no attention sample)
    theory: dict[str, float]         # case -> t_sim at the last layer

    def to_dict(self) -> dict:
        return asdict(self)


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
    names = ["blocks.0.hook_resid_pre", *(f"blocks.{l}.hook_resid_post" for l in range(model.cfg.depth))]
    _, cache = model.run_with_cache(images, names=names)
    return measure([cache[name] for name in names], metrics=("cos_sim",)).column("cos_sim")


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
def pretrained(lam: float = 0.6, sequences: int = 8, tokens: int = 128) -> tuple[CurvePair, list[str]]:
    """G.9: the bundled MiniLM on the built-in English sample, with and without NeuTRENO patched in."""
    from oversmooth.hf.analysis import BASELINE, AnalysisSettings, run_analysis
    from oversmooth.hf.inputs import read_text, text_batch
    from oversmooth.hf.load import load

    loaded = load(None, sequences, tokens)
    text, source = read_text(None)
    inputs = {k: v.to(loaded.device) for k, v in text_batch(loaded.tokenizer, text, tokens, sequences).items()}
    settings = AnalysisSettings(methods=("neutreno",), knobs={"neutreno": {"lam": lam}}, attention_sequences=0)
    analysis = run_analysis(loaded.model, inputs, settings, tokenizer=loaded.tokenizer)
    pair = CurvePair([analysis.tables[BASELINE].column("cos_sim")], [analysis.tables["neutreno"].column("cos_sim")],
                     lam, f"pretrained {loaded.name}, {analysis.sequences} x {analysis.tokens} tokens of {source}",
                     analysis.quality["neutreno"])
    return pair, [layer.summary["sign_verdict"] for layer in analysis.spectrum]


def theory() -> dict[str, float]:
    """t_sim after 64 layers of ``X <- X + A X H`` for the smoothing, sharpening and LN-sign cases."""
    from oversmooth.theory.experiment import Setup, run_preset

    setup = Setup()
    return {f"{result.preset}: {result.case.label}": result.table.column("t_sim")[-1]
            for preset in ("smoothing", "sharpening", "lnflip") for result in run_preset(preset, setup)}


def run_probes() -> Probes:
    pair, verdicts = pretrained()
    return Probes(random_init=random_init(), pretrained=pair, pretrained_verdicts=verdicts, theory=theory())
