"""An ``oversmooth train`` run folder as the thing adapted: its own task, loss and data pipeline,
its saved model continued with or without a mitigation.

A patched arm is the run's model rebuilt with ``method`` (and knobs) in place of the run's
method, loading the run's weights: a method that adds parameters (AttnScale, FeatScale) starts
them at their initial values; one that removes or re-parameterises weights (symmetric, spectral),
or starts from an initialisation of its own that is not the run's function (``FRESH_SITES``: the
depth fixes, softpick, gated attention, registers), cannot continue from them and is refused.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from oversmooth.adapt.config import FRONTIER, AdaptConfig
from oversmooth.adapt.ramp import Ramp, off_setting
from oversmooth.errors import FieldError, UsageError
from oversmooth.train.run import shown_task
from oversmooth.train.saved_run import SavedRun, is_train_run
from oversmooth.utils.provenance import shown_path


def is_unfinished_train_run(path: str | None) -> bool:
    """A train run folder without its results or model yet (still training, or killed)."""
    return (
        path is not None
        and not is_train_run(path)
        and any((Path(path) / name).is_file() for name in ("checkpoint.pt", "metrics.jsonl", "spec.json"))
    )


#: sites whose methods start from an initialisation of their own, not from a run's function
FRESH_SITES = {
    "residual": "changes how each block's output joins the stream",
    "weights": "reparametrises every block weight",
    "scores": "replaces the attention's softmax",
    "gate": "gates every head's output (at about 1/2)",
    "tokens": "adds tokens every patch attends to",
}


class TrainRunSource:
    """Adapt a model ``oversmooth train`` saved (``saved``: a run's, or an adaptation arm's) on its
    run's own task."""

    objective = "task"

    def __init__(self, config: AdaptConfig, saved: SavedRun):
        self.config, self.folder = config, Path(config.model)
        if config.objective not in ("auto", "task"):
            raise UsageError(
                f"{self.folder} is an `oversmooth train` run: it adapts on its own task; "
                f"drop objective {config.objective!r} (or give objective task)"
            )
        if config.lora:
            raise UsageError("lora is for large pretrained models; our own train runs are fine-tuned whole: set lora 0")
        if config.knobs == FRONTIER:
            raise FieldError(
                "{knobs} %s reads the frontier of `oversmooth analyze --sweep`, which sweeps pretrained models; "
                "give an `oversmooth train` run's knobs as values (--lam 0.2,0.6)" % FRONTIER
            )
        self.source = saved
        self.run, self.saved = saved.description, saved.load()
        train = self.run["train"]
        self.defaults = {
            "batch_size": train["batch_size"],
            "lr": train["lr"] / 10,
            "weight_decay": train["weight_decay"],
            "grad_clip": train["grad_clip"],
        }
        self.identity = {"model": shown_path(self.folder, config.out), "task": shown_task(self.run["task"], config.out)}
        self.description = {  # as recorded since the first adaptations (a resumed arm compares it)
            "kind": "train run",
            "path": str(self.folder),
            "task": self.run["task"],
            "model": self.run["model"],
            "method": self.run["method"],
            "model_config": self.run["model_config"],
        }

    def task(self):
        """The run's own task (``SavedRun.task``)."""
        return self.source.task()

    def check_method(self, name: str) -> None:
        """``UsageError`` (``FieldError`` naming ``ramp``) naming method ``name`` and why when the
        run's model cannot continue with it: a method that rebuilds what the run trained, or whose
        knobs ``--ramp`` cannot set."""
        self._patched(name, {})
        if self.config.ramp:
            self._ramp_off(name)

    def repeats_control(self, method: str, knobs: dict) -> str:
        """'': not judged in a train run. An arm at a method's off setting comes here only from knobs
        given on the command line (no default puts a method there, and ``--knobs frontier`` is for
        pretrained models), and whether it repeats the control depends on the run's own method and
        on knobs made learnable (``tau_learnable``); it is kept, as asked."""
        return ""

    def resolve(self, name: str, knobs: dict) -> dict:
        """``knobs`` as given (our models fill in the defaults), checked by building the arm: a knob
        the method lacks or a value out of range, or (``--ramp``) a knob made learnable, refused."""
        model = self._patched(name, knobs)
        if self.config.ramp:
            ramped_layers(model, name, self._ramp_off(name), self.config.ramp)
        return dict(knobs)

    def arm(self, method: str | None, knobs: dict | None = None) -> nn.Module:
        """The run's model (``method`` None: the control, its method unchanged) or the patched one."""
        if method is None:
            model = type(self.saved)(self.saved.cfg)
            model.load_state_dict(self.saved.state_dict())
            return model
        return self._patched(method, knobs)

    def _ramp_off(self, name: str) -> dict:
        """``--ramp``'s start: method ``name``'s off setting, of the knobs our layers take."""
        from oversmooth.mitigations.registry import method

        chosen = method(name)
        zero = " and ".join(chosen.zero)
        return off_setting(
            name,
            self.config.ramp,
            {f.name for f in chosen.fields("train")},
            f"in an `oversmooth train` run's model it learns {zero}, as parameters that start at the off setting",
        )

    def ramp(self, model: nn.Module, method: str, knobs: dict) -> Ramp:
        """``--ramp`` for the arm ``model`` built with ``method`` at ``knobs``: the knob values its method's layers
        hold (``NeutrenoLayer.lam``, ``Deescalation.tau``, ``ContraNorm.s``) set in place."""
        off = self._ramp_off(method)
        layers = ramped_layers(model, method, off, self.config.ramp)
        target = {**self.knob_defaults(method), **knobs}

        def apply(values: dict) -> None:
            for layer in layers:
                for name, value in values.items():
                    held = getattr(layer, name)
                    if isinstance(held, torch.Tensor):  # a buffer: set in place, it stays registered
                        with torch.no_grad():
                            held.copy_(torch.as_tensor(value, dtype=held.dtype))
                    else:
                        setattr(layer, name, value)

        return Ramp(off, {k: target[k] for k in off}, self.config.ramp, apply)

    def knob_defaults(self, method: str) -> dict:
        """``method``'s knobs when not given (a causal LM's where they differ)."""
        from oversmooth.mitigations.registry import knob_dict, make_knobs

        return knob_dict(make_knobs(method, {}, causal=self.run["model"] == "lm"))

    def _patched(self, name: str, knobs: dict) -> nn.Module:
        from oversmooth.layers import MitigationConfig
        from oversmooth.mitigations.registry import check_trainable, method

        check_trainable((name,))  # an intervention, which does not train: refused first
        chosen = method(name)
        if chosen.site in FRESH_SITES:
            what = FRESH_SITES[chosen.site]
            raise UsageError(
                f"{name} {what} from its own initialisation, so a run's trained model would not "
                f"be where it starts; train with --method {name} instead, or continue with a method "
                "that keeps the run's function (neutreno, attnscale, featscale, deescalate, contranorm)"
            )
        named = {chosen.flag(k): v for k, v in knobs.items()}  # a config names knobs globally
        mitigation = MitigationConfig.parse(name, causal=self.run["model"] == "lm", **named)
        cfg = type(self.saved.cfg).from_dict({**self.saved.cfg.to_dict(), "mitigation": mitigation.to_dict()})
        model = type(self.saved)(cfg)
        missing, unexpected = model.load_state_dict(self.saved.state_dict(), strict=False)
        if unexpected:
            raise UsageError(
                f"{name} re-parameterises the run's weights ({unexpected[0]} has no "
                "place in it), so it cannot continue from them; choose a method that keeps "
                "them (neutreno, attnscale, featscale, deescalation, contranorm)"
            )
        return model

    def save(self, model: nn.Module, folder: Path, method: str | None, knobs: dict | None) -> None:
        """Our own models record their method in their config: they load again with it."""
        from oversmooth.models import save_model

        save_model(model, folder)


def ramped_layers(model: nn.Module, name: str, off: dict, ramp: int) -> list[nn.Module]:
    """The layers of method ``name`` in ``model`` (by their attribute, ``Method.attribute``), each
    holding every knob of ``off`` as a fixed value; ``FieldError`` (naming ``ramp``) for a learned one."""
    from oversmooth.mitigations.registry import method

    attribute = method(name).attribute
    layers = [m for path, m in model.named_modules() if path.rpartition(".")[2] == attribute]
    for layer in layers:
        for knob in off:
            if isinstance(getattr(layer, knob, None), nn.Parameter):
                raise FieldError(
                    "{ramp} %d: %s's %s is a learned parameter in this model, not a fixed knob to ramp; "
                    "drop {ramp}, or leave it fixed" % (ramp, name, knob)
                )
            if not hasattr(layer, knob):
                raise FieldError("{ramp} %d: %s's layer holds no %s to set; drop {ramp}" % (ramp, name, knob))
    if not layers:
        raise FieldError("{ramp} %d: the model holds no %s layer to ramp; drop {ramp}" % (ramp, name))
    return layers
