"""``AdaptConfig``: one adaptation (a model, a mitigation at one or more knob settings, a schedule)
described as data. JSON-able and checked by ``check()`` without loading anything; imports no torch.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oversmooth.errors import UsageError
from oversmooth.seeds import check_seed

OBJECTIVES = {
    "auto": "the model's own job: a train run's task, causal LM, masked LM, else distill",
    "task": "an `oversmooth train` run's own task and loss, on its own training split",
    "causal_lm": "next-token cross-entropy on the text (models with a causal-LM head)",
    "masked_lm": "masked-token cross-entropy on the text (models with a masked-LM head)",
    "distill": "match the unpatched model: 1 - cosine of token states (encoders), "
    "KL of next-token distributions (decoders)",
}
TEXTS = ("austen", "sample", "text:FILE[,FILE...]")
DEVICES, DTYPES = ("auto", "cpu", "cuda"), ("float32", "bfloat16")
CONTROL = "control"


@dataclass(frozen=True)
class AdaptConfig:
    """Every setting of one adaptation. Arms: one ``control`` (method unchanged), and one patched
    arm per entry of ``knobs`` (``({"lam": 0.2}, {"lam": 0.6})``: two arms; ``({},)``: the
    method's defaults). Every arm starts from the same weights with the same seed, data order and
    schedule (``steps``, peak ``lr``, linear warm-up over ``warmup`` of the steps, cosine decay).

    ``None`` settings take the source's default: a train run's own batch size, weight decay and
    gradient clip, and a tenth of its peak lr; for a pretrained model batch 8, lr 1e-4 (whole
    model) or 1e-3 (LoRA), weight decay 0.01, clip 1.0.
    """

    model: str | None = None  # HF folder, .gguf, model package, or a train run folder; None: MiniLM
    out: str = "runs/adapt"
    method: str = "neutreno"
    knobs: tuple[dict[str, Any], ...] = ({},)
    objective: str = "auto"
    text: str = "austen"  # pretrained text models: austen | sample | text:FILE[,FILE...]
    steps: int = 200
    batch_size: int | None = None
    seq_len: int = 128  # pretrained text models: tokens per sequence
    lr: float | None = None
    warmup: float = 0.1
    weight_decay: float | None = None
    grad_clip: float | None = None
    seed: int = 0
    record_every: int | None = None  # steps between held-out evaluations; None: steps // 8
    eval_sequences: int = 64  # pretrained models: held-out sequences of val and of test
    lora: int = 0  # LoRA rank through peft; 0: fine-tune the whole model
    device: str = "auto"
    dtype: str = "float32"
    gradient_checkpointing: bool = False
    threads: int | None = None
    progress: bool = True

    def check(self) -> AdaptConfig:
        """Ranges and choices of the fields (UsageError naming the field and the fix); returns self."""
        for name in ("steps", "seq_len", "eval_sequences"):
            _at_least(name, getattr(self, name), 1)
        for name in ("batch_size", "record_every", "threads"):
            if getattr(self, name) is not None:
                _at_least(name, getattr(self, name), 1)
        _at_least("lora", self.lora, 0)
        check_seed(self.seed)
        for name in ("lr", "grad_clip"):
            value = getattr(self, name)
            if value is not None and not (_number(value) and value > 0):
                raise UsageError(f"{name} must be a number > 0, got {value!r}")
        if self.weight_decay is not None and not (_number(self.weight_decay) and self.weight_decay >= 0):
            raise UsageError(f"weight_decay must be a number >= 0, got {self.weight_decay!r}")
        if not (_number(self.warmup) and 0 <= self.warmup < 1):
            raise UsageError(f"warmup is a share of the steps in [0, 1), got {self.warmup!r}")
        for name, choices in (("objective", tuple(OBJECTIVES)), ("device", DEVICES), ("dtype", DTYPES)):
            if getattr(self, name) not in choices:
                raise UsageError(f"{name} must be one of {' | '.join(choices)}, got {getattr(self, name)!r}")
        if not (self.text in ("austen", "sample") or (self.text.startswith("text:") and self.text[5:].strip())):
            raise UsageError(f"text must be one of {' | '.join(TEXTS)}, got {self.text!r}")
        if not self.knobs or not all(isinstance(k, dict) for k in self.knobs):
            raise UsageError(
                f"knobs is a list of knob settings, one per patched arm, e.g. [{{'lam': 0.6}}]; got {self.knobs!r}"
            )
        if len(set(map(arm_name_of_knobs, self.knobs))) != len(self.knobs):
            raise UsageError("two patched arms have the same knobs; give each setting once")
        return self

    @property
    def every(self) -> int:
        """Steps between held-out evaluations."""
        return self.record_every or max(1, self.steps // 8)

    def arm_names(self) -> list[str]:
        return [CONTROL, *(f"{self.method}{arm_name_of_knobs(k)}" for k in self.knobs)]

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["knobs"] = [dict(k) for k in self.knobs]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdaptConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise UsageError(f"unknown adapt setting(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
        return cls(**{**data, "knobs": tuple(dict(k) for k in data.get("knobs", ({},)))})

    def save(self, path: Path) -> None:
        from oversmooth.atomic import atomic_write

        with atomic_write(path) as handle:
            json.dump(self.to_dict(), handle, indent=2)


#: fields that may differ when an adaptation is resumed in the same folder: how it runs, not what it learns.
RUN_OPTIONS = ("threads", "progress")


def setting(config: AdaptConfig) -> dict[str, Any]:
    """What an adaptation learns: every field but ``RUN_OPTIONS`` and ``out``."""
    return {k: v for k, v in config.to_dict().items() if k not in (*RUN_OPTIONS, "out")}


def arm_name_of_knobs(knobs: dict[str, Any]) -> str:
    """``{"lam": 0.6}`` -> ``"-lam0.6"``; ``{}`` -> ``""`` (the defaults)."""
    return "".join(f"-{k}{v:g}" if isinstance(v, float) else f"-{k}{v}" for k, v in sorted(knobs.items()))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _at_least(name: str, value: Any, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise UsageError(f"{name} must be a whole number >= {low}, got {value!r}")
