"""Named studies, sized for a 2-core CPU (``oversmooth study PRESET``; ``--set`` rescales them).

- ``depth-vit``: Fashion-MNIST ViTs, pre- and post-norm, depth 2-16, seven methods, two seeds
  (claims 2, 3, 4, 6, 7 of DESIGN §8).
- ``lm-austen``: the NeuTRENO LM setting (lambda 0.4) scaled to CPU on Jane Austen: softmax vs
  NeuTRENO vs de-escalation (claim 2). Pre-norm: at this budget (250 steps) a post-norm LM stayed
  on the unigram plateau (test perplexity 660 for every method; see docs/studies.md).
- ``lambda-sweep``: NeuTRENO's lambda ablation (seed 001, Table 13) on a Fashion-MNIST ViT.
- ``quick``: a minute-sized Fashion-MNIST grid to try the machinery (and for tests).

The claims protocol (``oversmooth.study.protocol``, docs/studies.md) runs these, in this order,
one cell at a time (about 15 CPU-hours on one core of our 2-core machine):

- ``postnorm-pilot``: where does post-norm softmax fail at width 64? (depths 24 and 48, 1 seed);
- ``fmnist-vit`` (A): softmax, NeuTRENO, spectral sharpen and smooth; 4 seeds (claims 2a, 3, 5, 6);
- ``austen-lm`` (D): softmax vs NeuTRENO (lambda 0.4), pre-norm LM; 3 seeds (claim 2b);
- ``fmnist-featscale`` (B): FeatScale, paired with A's softmax cells; 3 seeds (claim 7);
- ``postnorm-depth`` (C): post-norm softmax and de-escalation vs pre-norm softmax at the depth
  the pilot found (claim 4).
"""

from __future__ import annotations

from oversmooth.errors import UsageError
from oversmooth.study.config import StudyConfig, Variant

_M = Variant.parse

#: the seven methods of the depth study: the baseline, four drop-ins and two spectral modes.
DEPTH_METHODS = (
    _M("softmax"),
    Variant("neutreno", "neutreno", {"lam": 0.6}),
    Variant("deescalate", "deescalate", {"tau": 1.0}),
    _M("attnscale"),
    _M("featscale"),
    Variant("sharpen", "spectral", {"spectral": "sharpen"}),
    Variant("smooth", "spectral", {"spectral": "smooth"}),
)

#: a 32-wide ViT on 4 x 4 patches of 7 x 7 pixels (16 + CLS tokens): minutes per run on one core.
_SMALL_VIT = {"width": 32, "heads": 4, "patch_size": 7, "batch_size": 64, "lr": 2e-3, "val_size": 2000}

#: the Fashion-MNIST ViT of the claims protocol: 8 x 64, 4 heads, 4 x 4 patches (49 + CLS tokens),
#: MLP x2, full training split (55 000 images) with 2-pixel shifts and flips, 10 epochs.
#: A checkpoint every 100 steps (about a minute of CPU), so a killed cell loses little.
FMNIST_VIT = {"width": 64, "heads": 4, "mlp_ratio": 2.0, "patch_size": 4, "augment": True,
              "batch_size": 128, "lr": 1e-3, "epochs": 10, "checkpoint_every": 100}
#: the Jane Austen LM of the claims protocol: width 64, 4 heads, 64-token context, 8 epochs.
AUSTEN_LM = {"width": 64, "heads": 4, "seq_len": 64, "batch_size": 64, "lr": 2e-3, "epochs": 8,
             "checkpoint_every": 100}
SHARPEN = Variant("sharpen", "spectral", {"spectral": "sharpen"})
SMOOTH = Variant("smooth", "spectral", {"spectral": "smooth"})

PRESETS: dict[str, StudyConfig] = {
    "postnorm-pilot": StudyConfig(
        name="postnorm-pilot", model="vit", tasks=("fmnist",), norms=("pre", "post"), depths=(24, 48),
        variants=(_M("softmax"),), seeds=(0,), train={**FMNIST_VIT, "epochs": 2, "limit_train": 10000},
        description="pilot of claim 4: pre- vs post-norm softmax ViT at depths 24 and 48, 2 epochs of "
                    "10 000 images, 1 seed: post-norm fails where it trails pre-norm by >= 5 pp or diverges",
    ),
    "fmnist-vit": StudyConfig(
        name="fmnist-vit", model="vit", tasks=("fmnist",), norms=("pre",), depths=(8,),
        variants=(_M("softmax"), Variant("neutreno", "neutreno", {"lam": 0.6}), SHARPEN, SMOOTH),
        seeds=(0, 1, 2, 3), train=FMNIST_VIT,
        description="claims A: pre-norm Fashion-MNIST ViT 8 x 64, 10 epochs, augmented: softmax, NeuTRENO "
                    "(lam 0.6), spectral sharpen and smooth; 4 seeds",
    ),
    "fmnist-featscale": StudyConfig(
        name="fmnist-featscale", model="vit", tasks=("fmnist",), norms=("pre",), depths=(8,),
        variants=(_M("featscale"),), seeds=(0, 1, 2), train=FMNIST_VIT,
        description="claims B: FeatScale in fmnist-vit's setting, 3 seeds; its baseline is fmnist-vit's softmax",
    ),
    "austen-lm": StudyConfig(
        name="austen-lm", model="lm", tasks=("austen",), norms=("pre",), depths=(8,),
        variants=(_M("softmax"), Variant("neutreno", "neutreno", {"lam": 0.4})), seeds=(0, 1, 2), train=AUSTEN_LM,
        description="claims D: pre-norm causal LM 8 x 64 on Jane Austen, 8 epochs: softmax vs NeuTRENO "
                    "(lam 0.4); 3 seeds",
    ),
    "depth-vit": StudyConfig(
        name="depth-vit", model="vit", tasks=("fmnist",), norms=("pre", "post"), depths=(2, 4, 8, 16),
        variants=DEPTH_METHODS, seeds=(0, 1),
        train={**_SMALL_VIT, "epochs": 3, "limit_train": 10000},
        description="Fashion-MNIST ViT at depths 2-16, pre- and post-norm, every method, 2 seeds",
    ),
    "lm-austen": StudyConfig(
        name="lm-austen", model="lm", tasks=("austen",), norms=("pre",), depths=(4, 8),
        variants=(_M("softmax"), Variant("neutreno", "neutreno", {"lam": 0.4}),
                  Variant("deescalate", "deescalate", {"tau": 1.0})),
        seeds=(0, 1),
        train={"width": 64, "heads": 4, "seq_len": 64, "batch_size": 64, "lr": 2e-3, "epochs": 2,
               "limit_train": 8000},
        description="causal LM on Jane Austen: softmax vs NeuTRENO (lam 0.4) vs de-escalation",
    ),
    "lambda-sweep": StudyConfig(
        name="lambda-sweep", model="vit", tasks=("fmnist",), norms=("pre",), depths=(8,),
        variants=(_M("softmax"), *(Variant(f"lam={lam}", "neutreno", {"lam": lam})
                                   for lam in (0.1, 0.3, 0.6, 1.0, 2.0))),
        seeds=(0, 1),
        train={**_SMALL_VIT, "epochs": 3, "limit_train": 10000},
        description="NeuTRENO lambda ablation on an 8-layer Fashion-MNIST ViT",
    ),
    "quick": StudyConfig(
        name="quick", model="vit", tasks=("fmnist",), norms=("pre",), depths=(1, 2),
        variants=(_M("softmax"), Variant("neutreno", "neutreno", {"lam": 0.6})),
        train={"width": 16, "heads": 2, "patch_size": 7, "epochs": 2, "limit_train": 2048,
               "val_size": 500, "batch_size": 64, "lr": 2e-3, "probe_size": 16},
        description="a minute-sized grid to try the machinery; not a result",
    ),
}


def study_preset(name: str) -> StudyConfig:
    if name not in PRESETS:
        raise UsageError(f"unknown study preset {name!r}; choose from {', '.join(PRESETS)} or give a .json/.toml file")
    return PRESETS[name]
