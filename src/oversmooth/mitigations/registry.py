"""Every mitigation, by name: the one place that lists them, and declares each one's knobs.

Each entry is a ``Method`` record: its paper and formula, its ``Knobs`` dataclass (defaults, ranges
and help), where it acts, and where its layer for our Transformer and its patch for pretrained
models are (``"module:name"`` under ``oversmooth.mitigations``, imported on first use). The CLI
flags, ``MitigationConfig``, ``oversmooth.patch``, study grids, ``analyze --sweep`` and the docs
table are all read from here. Order matters: within a site, methods act in this order.

Torch-free: listing methods and knobs (``oversmooth train --help``) imports no method module, and
a lookup imports the method's module by name, whatever was imported before.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from oversmooth.errors import UsageError, did_you_mean
from oversmooth.mitigations.knobs import Knobs, Scope, knob

if TYPE_CHECKING:
    from oversmooth.mitigations.base import LayerShape, Patcher, SiteLayer

#: Where a method acts, in the order a block meets them: the layer's own weights (structure), the
#: values before ``A V``, the per-head context ``A V``, the attention sub-layer output before the
#: residual add, the residual stream after the attention residual add, the residual add itself
#: (how each branch joins the stream; one method at most), or the block's linear weights as
#: the model's init leaves them (weights).
Site = Literal["structure", "values", "context", "output", "stream", "residual", "weights"]
SITES: tuple[Site, ...] = ("structure", "values", "context", "output", "stream", "residual", "weights")
NORMS = ("pre", "post")


@dataclass(frozen=True)
class Method:
    """One mitigation: what it is, its knobs and where it acts, where its layer and patch are."""

    name: str
    paper: str  # authors, venue / year, and the equation where there is one
    formula: str  # one line
    knobs: type[Knobs]
    site: Site
    layer_at: str  # "module:name" of ``layer(knobs, LayerShape) -> SiteLayer``
    attribute: str  # the layer's attribute name (state-dict prefix)
    in_block: bool = False  # the layer lives on the block, not on its attention
    patch_at: str = ""  # "module:name" of its ``Patcher``; "" if it has none
    unpatchable: str = ""  # why there is no patch
    zero: dict[str, Any] = dataclasses.field(default_factory=dict)  # knobs at which it is the baseline
    norms: tuple[str, ...] = NORMS  # the block norm placements where it is defined
    norms_why: str = ""  # why not in the others
    #: patched at its defaults it is the model as it was (adaptation moves it from there), so
    #: ``analyze`` patches it only when asked
    patch_is_identity: bool = False
    sweep: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)  # analyze --sweep grid
    short: str = ""  # short label in tables

    @property
    def layer(self) -> Callable[[Knobs, LayerShape], SiteLayer]:
        """Builds the method's layer in our Transformer (imports its module, and torch)."""
        return _resolve(self.layer_at)

    @property
    def patcher(self) -> Patcher | None:
        """How it edits a pretrained model (imports its module, and torch), or None."""
        return _resolve(self.patch_at) if self.patch_at else None

    def flag(self, field: str) -> str:
        """The global name of knob ``field`` (CLI ``--flag``, flat config key)."""
        return self.knob_field(field).metadata["flag"] or f"{self.name}_{field}"

    def knob_field(self, name: str) -> dataclasses.Field:
        return next(f for f in dataclasses.fields(self.knobs) if f.name == name)

    def fields(self, scope: Scope | None = None) -> tuple[dataclasses.Field, ...]:
        """The knob fields, those that apply in ``scope`` when given."""
        return tuple(f for f in dataclasses.fields(self.knobs) if scope is None or scope in f.metadata["scope"])


def _resolve(at: str) -> Any:
    """``"neutreno:PATCHER"`` -> ``oversmooth.mitigations.neutreno.PATCHER``."""
    module, _, name = at.partition(":")
    return getattr(importlib.import_module(f"oversmooth.mitigations.{module}"), name)


@dataclass(frozen=True)
class SymmetricKnobs(Knobs):
    method = "symmetric"


#: ``spectral`` modes -> the range the eigenvalues of W_V W_O are kept in.
SPECTRAL_MODES: dict[str, str] = {
    "sharpen": "(-1, 0): lambda = -sigmoid(psi)",
    "smooth": "(0, 1): lambda = sigmoid(psi)",
    "free": "unconstrained: lambda = psi",
}


@dataclass(frozen=True)
class SpectralKnobs(Knobs):
    method = "spectral"
    spectral: str = knob(
        "free",
        "eigenvalue range of W_V W_O: sharpen (-1, 0) | smooth (0, 1) | free",
        choices=tuple(SPECTRAL_MODES),
        flag="spectral",
        scope=("train",),
        label="spectral mode",
    )


@dataclass(frozen=True)
class ValueResidualKnobs(Knobs):
    method = "value_residual"
    value_mix: float = knob(
        0.5,
        "value-residual share of V1 mixed into V, in [0, 1]",
        low=0.0,
        high=1.0,
        flag="value_mix",
        scope=("train",),
        label="value_mix",
    )


@dataclass(frozen=True)
class AttnScaleKnobs(Knobs):
    """Training learns omega from 0; a patched pretrained model takes it fixed."""

    method = "attnscale"
    omega: float = knob(
        0.5,
        "AttnScale omega for every head (or one per head), fixed when patched",
        flag="omega",
        scope=("patch",),
        per="head",
    )


@dataclass(frozen=True)
class NeutrenoKnobs(Knobs):
    method = "neutreno"
    lam: float = knob(
        0.6,
        "NeuTRENO lambda, the fidelity weight (paper: 0.6 DeiT, 0.4 WikiText-103 LM)",
        low=0.0,
        flag="lam",
        causal=0.4,
        label="NeuTRENO lambda",
    )


@dataclass(frozen=True)
class FeatScaleKnobs(Knobs):
    """Training learns both scales from 0; a patched pretrained model takes them fixed."""

    method = "featscale"
    s_dc: float = knob(
        -0.5,
        "FeatScale DC scale for every channel (or one per channel), fixed when patched",
        flag="s_dc",
        scope=("patch",),
        per="channel",
    )
    s_hc: float = knob(
        0.5,
        "FeatScale high-frequency scale for every channel (or one per channel), fixed when patched",
        flag="s_hc",
        scope=("patch",),
        per="channel",
    )


#: where de-escalation acts: the attention sub-layer output, or the stream after the residual add.
PLACEMENTS = ("attn_out", "stream")


@dataclass(frozen=True)
class DeescalationKnobs(Knobs):
    """tau 1 is the paper's usual setting, and one default serves training and patching alike
    (``analyze --sweep`` shows smaller shares on a pretrained model)."""

    method = "deescalate"
    tau: float = knob(
        1.0,
        "de-escalation tau, the share of the mean token removed, in [0, 1] (paper: often 1)",
        low=0.0,
        high=1.0,
        flag="tau",
        label="de-escalation tau",
    )
    tau_learnable: bool = knob(False, "learn tau (clamped to [0, 1])", flag="tau_learnable", scope=("train",))
    deescalate_at: str = knob(
        "attn_out",
        "where: attn_out (before the residual add) | stream (after it)",
        choices=PLACEMENTS,
        flag="deescalate_at",
        scope=("train",),
    )


@dataclass(frozen=True)
class ContraNormKnobs(Knobs):
    method = "contranorm"
    s: float = knob(0.1, "ContraNorm scale s of the similarity term (0: off)", low=0.0, label="ContraNorm s")
    tau: float = knob(
        1.0, "ContraNorm temperature tau of the token-similarity softmax, > 0", low=0.0, label="ContraNorm tau"
    )
    learnable: bool = knob(False, "ContraNorm: learn s, one per feature, starting at --contranorm-s", scope=("train",))

    def check(self) -> None:
        super().check()
        if self.tau == 0:
            raise UsageError("ContraNorm tau must be > 0 (a softmax temperature), got 0")


@dataclass(frozen=True)
class LayerScaleKnobs(Knobs):
    method = "layerscale"
    eps: float | None = knob(
        None,
        "LayerScale: initial gamma of every channel of each residual branch (unset: CaiT's epsilon by depth, "
        "0.1 up to 18 blocks, 1e-5 up to 24, 1e-6 deeper)",
        low=0.0,
        flag="layerscale_eps",
        scope=("train",),
        label="LayerScale eps",
    )
    gamma: float = knob(
        1.0,
        "LayerScale gamma of both branches for every channel (or one per channel), fixed when patched "
        "(1: the model as it is)",
        low=0.0,
        flag="layerscale_gamma",
        scope=("patch",),
        per="channel",
        label="LayerScale gamma",
    )


@dataclass(frozen=True)
class ReZeroKnobs(Knobs):
    method = "rezero"
    alpha: float = knob(
        0.0,
        "ReZero: initial residual weight of each block, in [0, 1] (paper: 0; its 'ReZero alpha = 1' row: 1)",
        low=0.0,
        high=1.0,
        flag="rezero_alpha",
        scope=("train",),
        label="ReZero alpha",
    )


@dataclass(frozen=True)
class MVSplitKnobs(Knobs):
    method = "mv_split"
    alpha: float = knob(
        0.0,
        "MV-split: initial per-channel gain of the mean mode, in [0, 1]: the share of the branch's mean "
        "that replaces the stream's (paper: 0)",
        low=0.0,
        high=1.0,
        flag="mv_alpha",
        scope=("train",),
        label="MV-split alpha",
    )
    beta: float = knob(
        0.03,
        "MV-split: initial per-channel gain of the variation, >= 0 (paper: 0.03)",
        low=0.0,
        flag="mv_beta",
        scope=("train",),
        label="MV-split beta",
    )


@dataclass(frozen=True)
class DeepNormKnobs(Knobs):
    method = "deepnorm"


@dataclass(frozen=True)
class SigmaReparamKnobs(Knobs):
    method = "sigma_reparam"


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(
            "symmetric",
            "Sym-DeiT in NeuTRENO (Nguyen, Nguyen & Baraniuk, NeurIPS 2023)",
            "keys = queries (W_K tied to W_Q): symmetric attention scores",
            SymmetricKnobs,
            "structure",
            "symmetric:layer",
            "symmetric",
            unpatchable="it changes the weights a pretrained model was trained with",
        ),
        Method(
            "spectral",
            "Dovonon, Bronstein & Kusner, TMLR 2025",
            "W_V W_O = U diag(lambda) U^T, U orthogonal, lambda in a chosen range",
            SpectralKnobs,
            "structure",
            "spectral:layer",
            "value_output",
            unpatchable="it reparameterises W_V and W_O, which must be trained",
        ),
        Method(
            "value_residual",
            "Zhou et al. 2024, value residual learning (ResFormer)",
            "V_l <- (1 - mix) V_l + mix V1 in layers after the first",
            ValueResidualKnobs,
            "values",
            "value_residual:ValueResidual",
            "value_residual",
            unpatchable="not implemented for pretrained models",
            zero={"value_mix": 0.0},
        ),
        Method(
            "attnscale",
            "Wang et al., ICLR 2022 (AttnScale)",
            "A' = A + omega_h (A - uniform), omega per head, init 0",
            AttnScaleKnobs,
            "context",
            "attnscale:layer",
            "attnscale",
            patch_at="attnscale:PATCHER",
            zero={"omega": 0.0},
            sweep={"omega": (0.05, 0.1, 0.2, 0.5, 1.0)},
            short="attnsc",
        ),
        Method(
            "neutreno",
            "NeuTRENO (Nguyen, Nguyen & Baraniuk, NeurIPS 2023)",
            "O_h = A_h V_h + lam (V1_h - V_h) in layers after the first",
            NeutrenoKnobs,
            "context",
            "neutreno:NeutrenoLayer",
            "neutreno",
            patch_at="neutreno:PATCHER",
            zero={"lam": 0.0},
            sweep={"lam": (0.05, 0.1, 0.2, 0.4, 0.6, 1.0)},
        ),
        # s_dc alone is de-escalation with tau = -s_dc, so the sweep grid is s_hc's.
        Method(
            "featscale",
            "Wang et al., ICLR 2022 (FeatScale)",
            "Z' = Z + s_dc * DC + s_hc * HC per channel, init 0",
            FeatScaleKnobs,
            "output",
            "featscale:layer",
            "featscale",
            patch_at="featscale:PATCHER",
            zero={"s_dc": 0.0, "s_hc": 0.0},
            sweep={"s_hc": (0.05, 0.1, 0.2, 0.5, 1.0)},
            short="featsc",
        ),
        Method(
            "deescalate",
            'Yu & Zhang 2023, "Why classic Transformers are shallow"',
            "Y = (I - tau Pi_1) X on the attention output or the stream",
            DeescalationKnobs,
            "output",
            "deescalation:layer",
            "deescalate",
            in_block=True,
            patch_at="deescalation:PATCHER",
            zero={"tau": 0.0},
            sweep={"tau": (0.05, 0.1, 0.2, 0.5, 1.0)},
            short="deesc",
        ),
        Method(
            "contranorm",
            "Guo et al., ICLR 2023 (ContraNorm)",
            "X <- LN(X - s softmax(Xn Xn^T / tau) X) after the attention sublayer, Xn row-normalised",
            ContraNormKnobs,
            "stream",
            "contranorm:ContraNorm",
            "contranorm",
            in_block=True,
            patch_at="contranorm:PATCHER",
            zero={"s": 0.0},
            sweep={"s": (0.05, 0.1, 0.2, 0.5, 1.0)},
            short="contra",
        ),
        Method(
            "layerscale",
            "Touvron et al., ICCV 2021 (CaiT), LayerScale",
            "x <- x + diag(gamma) f(x) on each residual branch, gamma per channel, init eps by depth",
            LayerScaleKnobs,
            "residual",
            "layerscale:LayerScale",
            "layerscale",
            in_block=True,
            patch_at="layerscale:PATCHER",
            zero={"gamma": 1.0},
            patch_is_identity=True,
        ),
        Method(
            "rezero",
            "Bachlechner et al., UAI 2021 (ReZero is All You Need)",
            "x <- x + alpha f(x), one scalar alpha per block (init 0), no LayerNorm in the block",
            ReZeroKnobs,
            "residual",
            "rezero:ReZero",
            "rezero",
            in_block=True,
            unpatchable="it removes the block's LayerNorms and starts every block at the identity, "
            "so a pretrained model's function is lost",
        ),
        Method(
            "mv_split",
            'Lu 2026, "Mean Mode Screaming: Mean-Variance Split Residuals" (arXiv 2605.06169)',
            "x <- x + beta * (f - mean_t f) + alpha * (mean_t f - mean_t x), alpha, beta per channel",
            MVSplitKnobs,
            "residual",
            "mv_split:MVSplit",
            "mv_split",
            in_block=True,
            unpatchable="no setting of alpha and beta gives back x + f(x) (the mean mode is replaced, not "
            "added to), so it cannot start from a pretrained model's function",
        ),
        Method(
            "deepnorm",
            "Wang et al. 2022 (DeepNet: Scaling Transformers to 1,000 Layers), DeepNorm",
            "x <- LN(alpha x + f(x)), W_V, W_O and the MLP's weights initialised scaled by beta; "
            "alpha = (2N)^(1/4), beta = (8N)^(-1/4)",
            DeepNormKnobs,
            "residual",
            "deepnorm:DeepNorm",
            "deepnorm",
            in_block=True,
            unpatchable="it is an initialisation (beta) with a residual scale (alpha) that the "
            "pretrained weights were not trained with",
            norms=("post",),
            norms_why="it is a post-LN residual, LN(alpha x + f(x))",
        ),
        Method(
            "sigma_reparam",
            "Zhai et al., ICML 2023 (sigmaReparam), 'Stabilizing Transformer Training by Preventing "
            "Attention Entropy Collapse'",
            "W_hat = (gamma / sigma(W)) W for every linear layer of a block, sigma by one power-iteration "
            "step per training step, gamma learned, init sigma(W)",
            SigmaReparamKnobs,
            "weights",
            "sigma_reparam:layer",
            "sigma_reparam",
            in_block=True,
            patch_at="sigma_reparam:PATCHER",
            patch_is_identity=True,
            short="sigmaR",
        ),
    )
}


def method(name: str) -> Method:
    """The registry entry ``name``; UsageError naming the choices."""
    if name not in METHODS:
        raise UsageError(
            f"unknown mitigation {name!r}{did_you_mean(name, METHODS)}; choose from {', '.join(METHODS)} "
            "(or none for the softmax baseline)"
        )
    return METHODS[name]


#: what names the plain softmax Transformer (no method) in a ``+``-joined spec
BASELINE_NAMES = ("", "softmax", "baseline", "none")


def split_methods(spec: str) -> tuple[str, ...]:
    """``"neutreno+featscale"`` -> ``("neutreno", "featscale")``; ``"softmax"`` -> ``()``.

    >>> split_methods("neutreno+featscale"), split_methods("softmax")
    (('neutreno', 'featscale'), ())
    """
    spec = spec.strip().lower()
    if spec in BASELINE_NAMES:
        return ()
    return tuple(part.strip() for part in spec.replace(",", "+").split("+"))


def check_methods(names: tuple[str, ...]) -> None:
    """UsageError unless the methods ``names`` can act together, in training and patched alike:
    each named once, one residual add at most. The one rule for combining methods."""
    for name in names:
        method(name)
    if len(set(names)) != len(names):
        raise UsageError(f"mitigation listed twice in {'+'.join(names)}; give each once")
    adds = [name for name in names if method(name).site == "residual"]
    if len(adds) > 1:
        raise UsageError(f"{' and '.join(adds)} each replace the residual add; use one of them")


def patch_stack(spec: str) -> tuple[str, ...]:
    """The methods of a patch ``spec`` (``"neutreno"``, or ``"neutreno+featscale"`` stacked), in the
    order they act (the registry's); UsageError unless each can patch a pretrained model and they
    can act together (``check_methods``: the combinations ``train`` allows).

    >>> patch_stack("featscale+neutreno")
    ('neutreno', 'featscale')
    """
    names = split_methods(spec)
    if not names:
        raise UsageError(f"{spec!r} names no method to patch; name one of {', '.join(patchable())}")
    for name in names:
        check_patchable(name)
    check_methods(names)
    return tuple(sorted(names, key=list(METHODS).index))


def assign_knobs(
    methods: tuple[str, ...], bare: Mapping[str, Any], per_method: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """Method -> knob field -> value for the patched ``methods``, from knobs given per method
    (``{"deescalate": {"tau": 0.5}}``) and bare ones (``tau=0.5``). A bare knob goes to the one
    method among ``methods`` with a patch knob of that name, else to the owner of that global name
    (``contranorm_tau``); UsageError when it fits several (naming them), none, or is given twice.

    >>> assign_knobs(("neutreno", "contranorm"), {"lam": 0.2, "contranorm_tau": 2.0})
    {'neutreno': {'lam': 0.2}, 'contranorm': {'tau': 2.0}}
    """
    given: dict[str, dict[str, Any]] = {}
    for name, values in (per_method or {}).items():
        if name not in methods:
            raise UsageError(f"knobs for {name}, which is not among the methods {list(methods)}; add it or drop them")
        make_knobs(name, dict(values), scope="patch")  # a knob the method lacks, a value out of range
        given[name] = dict(values)
    owners = knob_owners("patch")
    for knob_name, value in bare.items():
        fits = [m for m in methods if knob_name in {f.name for f in METHODS[m].fields("patch")}]
        if len(fits) > 1:
            raise UsageError(
                f"{knob_name}={value!r} fits {' and '.join(fits)}; give it per method, e.g. "
                f"knobs={{{fits[0]!r}: {{{knob_name!r}: {value!r}}}}}"
            )
        owner, field = (fits[0], knob_name) if fits else owners.get(knob_name, (None, None))
        if owner not in methods:
            takes = ", ".join(f.name for m in methods for f in METHODS[m].fields("patch")) or "no knobs"
            raise UsageError(f"{'+'.join(methods) or 'no method'} takes {takes}, not {knob_name}")
        if field in given.get(owner, {}):
            raise UsageError(f"{owner}'s {field} is given twice (bare and in knobs); give it once")
        given.setdefault(owner, {})[field] = value
    return given


def stack_knobs(spec: str, per_method: Mapping[str, Mapping[str, Any]], causal: bool = False) -> dict[str, dict]:
    """Each method of patch ``spec``'s knobs (``patch_knobs``): its defaults overridden by ``per_method``."""
    return {name: patch_knobs(name, per_method.get(name, {}), causal) for name in patch_stack(spec)}


def flat_knobs(per_method: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Method -> knob -> value as one flat dict for display: one method by its knob names, a stack
    by their global names (``contranorm_tau``), which never collide.

    >>> flat_knobs({"contranorm": {"s": 0.1, "tau": 1.0}})
    {'s': 0.1, 'tau': 1.0}
    >>> flat_knobs({"deescalate": {"tau": 1.0}, "contranorm": {"s": 0.1, "tau": 1.0}})
    {'tau': 1.0, 'contranorm_s': 0.1, 'contranorm_tau': 1.0}
    """
    if len(per_method) == 1:
        return dict(*per_method.values())
    return {METHODS[m].flag(field): value for m, values in per_method.items() for field, value in values.items()}


def patchable() -> tuple[str, ...]:
    """The methods that can be patched into a pretrained model."""
    return tuple(name for name, m in METHODS.items() if m.patch_at)


def check_patchable(name: str) -> str:
    """``name`` if it can be patched into a pretrained model; UsageError otherwise."""
    names = patchable()
    if name not in METHODS:
        raise UsageError(f"unknown method {name!r}{did_you_mean(name, names)}; choose from {', '.join(names)}")
    if METHODS[name].patcher is None:
        raise UsageError(
            f"{name} cannot be patched into a pretrained model: {METHODS[name].unpatchable}; "
            f"choose from {', '.join(names)}"
        )
    return name


def patch_knobs(name: str, knobs: dict, causal: bool = False) -> dict:
    """Patchable method ``name``'s knobs: its defaults overridden by ``knobs``; UsageError on a knob
    the method lacks or a value out of range. One rule for defaults everywhere (train, patch,
    analyze, adapt): the registry's, a causal LM's where it has its own (``causal``: NeuTRENO's
    lambda 0.4)."""
    fields = {f.name for f in method(check_patchable(name)).fields("patch")}
    values = knob_dict(make_knobs(name, knobs, causal=causal, scope="patch"))
    return {k: v for k, v in values.items() if k in fields}


def default_patches() -> tuple[str, ...]:
    """What ``analyze`` patches when no method is named: every patchable method whose patch at its
    defaults changes the model."""
    return tuple(name for name in patchable() if not METHODS[name].patch_is_identity)


def knob_owners(scope: Scope | None = None) -> dict[str, tuple[str, str]]:
    """Global knob name (CLI flag, flat config key) -> (method, field), over every method."""
    owners: dict[str, tuple[str, str]] = {}
    for m in METHODS.values():
        for f in m.fields(scope):
            flag = m.flag(f.name)
            if flag in owners:
                raise RuntimeError(f"knob {flag} declared by {owners[flag][0]} and {m.name}")
            owners[flag] = (m.name, f.name)
    return owners


def make_knobs(name: str, values: dict[str, Any], *, causal: bool = False, scope: Scope | None = None) -> Knobs:
    """Method ``name``'s knobs from field-named ``values`` over its defaults (``causal``: a causal
    model's); UsageError on a knob the method lacks or a value out of range."""
    m = method(name)
    allowed = {f.name for f in m.fields(scope)}
    extra = sorted(set(values) - allowed)
    if extra:
        takes = ", ".join(sorted(allowed)) or "no knobs"
        raise UsageError(f"{name} takes {takes}, not {', '.join(extra)}")
    return m.knobs(**{**m.knobs.defaults(causal), **values})


def knob_dict(knobs: Knobs) -> dict[str, Any]:
    """Field name -> value."""
    return {f.name: getattr(knobs, f.name) for f in dataclasses.fields(knobs)}
