"""Named studies (``oversmooth study PRESET``): the generic ``quick``, and the lookup of a preset by
name in a table of them. A package built on ``study`` keeps its own presets in a table of its own
(the claims protocol's: ``oversmooth.claims.presets``), which its caller passes to ``study_preset``."""

from __future__ import annotations

from collections.abc import Mapping

from oversmooth.errors import UsageError, did_you_mean
from oversmooth.study.config import StudyConfig, Variant

#: the presets that belong to no study of a claim: ``quick``, a minute-sized Fashion-MNIST grid to
#: try the machinery (and for tests)
STUDY_PRESETS: dict[str, StudyConfig] = {
    "quick": StudyConfig(
        name="quick",
        model="vit",
        tasks=("fmnist",),
        norms=("pre",),
        depths=(1, 2),
        variants=(Variant.parse("softmax"), Variant("neutreno", "neutreno", {"lam": 0.6})),
        train={
            "width": 16,
            "heads": 2,
            "patch_size": 7,
            "epochs": 2,
            "limit_train": 2048,
            "val_size": 500,
            "batch_size": 64,
            "lr": 2e-3,
            "probe_size": 16,
        },
        description="a minute-sized grid to try the machinery; not a result",
    ),
}


def study_preset(name: str, presets: Mapping[str, StudyConfig] = STUDY_PRESETS) -> StudyConfig:
    """The study named ``name`` in ``presets``; an unknown name is a UsageError that lists them."""
    if name not in presets:
        raise UsageError(
            f"unknown study preset {name!r}{did_you_mean(name, presets)}; choose from "
            f"{', '.join(presets)} or give a .json/.toml file"
        )
    return presets[name]
