"""Save and load our models as ``model.safetensors`` + ``config.json`` (no pickles)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from safetensors.torch import load_file, save_file

from oversmooth.errors import UsageError
from oversmooth.models.causal_lm import CausalLM, CausalLMConfig
from oversmooth.models.hooked import HookedTransformer
from oversmooth.models.vit import ViT, ViTConfig
from oversmooth.utils.atomic import atomic_directory

MODEL_CLASSES = {ViT.family: (ViTConfig, ViT), CausalLM.family: (CausalLMConfig, CausalLM)}
WEIGHTS, CONFIG = "model.safetensors", "config.json"


def save_model(model: HookedTransformer, directory: str | os.PathLike) -> Path:
    """Write ``directory/config.json`` and ``directory/model.safetensors`` atomically."""
    state = {name: tensor.detach().cpu().contiguous() for name, tensor in model.state_dict().items()}
    config = {"family": model.family, "config": model.cfg.to_dict()}
    with atomic_directory(directory) as staging:
        save_file(state, str(staging / WEIGHTS), metadata={"family": model.family})
        (staging / CONFIG).write_text(json.dumps(config, indent=2) + "\n")
    return Path(directory)


def load_model(directory: str | os.PathLike, device: str = "cpu") -> HookedTransformer:
    """Rebuild the model saved by ``save_model`` (in eval mode) on ``device``."""
    directory = Path(directory)
    if not (directory / CONFIG).is_file() or not (directory / WEIGHTS).is_file():
        raise UsageError(
            f"{directory} holds no saved model ({CONFIG} + {WEIGHTS}); give a folder written by save_model"
        )
    saved = json.loads((directory / CONFIG).read_text())
    if saved.get("family") not in MODEL_CLASSES:
        raise UsageError(
            f"{directory / CONFIG}: unknown model family {saved.get('family')!r}; "
            f"expected one of {', '.join(MODEL_CLASSES)}"
        )
    config_cls, model_cls = MODEL_CLASSES[saved["family"]]
    try:
        config = config_cls.from_dict(saved["config"])
    except UsageError as error:  # not a FieldError: it names the file's keys, no command's flags
        raise UsageError(f"{directory / CONFIG} is damaged ({error}); save the model again") from None
    model = model_cls(config)
    model.load_state_dict(load_file(str(directory / WEIGHTS), device="cpu"))
    return model.to(device).eval()
