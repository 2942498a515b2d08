"""Discover how a loaded transformers model is built, from the model itself: ``layout(model)``.

1. Blocks and attention modules: the classes the model declares for its own
   ``output_hidden_states`` and ``output_attentions`` (``_can_record_outputs``, transformers 5.x).
2. Inside the attention module: the value projection (or fused QKV) and the output projection,
   by transformers' names (``VALUE_NAMES``, ``FUSED_NAMES``, ``OUT_NAMES``); heads, kv-heads and
   the head size from their shapes and the config's head count; causal from ``is_causal``.
3. The residual wiring, from one forward pass on a short random input with hooks on every
   submodule of the first block, matched by value (``wiring``): the norm in front of attention,
   where the attention branch ends (the output projection, or a module that transforms its
   output before the add), the norm that reads ``block input + attention branch``, and whether
   the block ends in a norm (post-LN), adds the MLP branch to that sum (pre-LN) or adds both
   branches to its input (parallel). The same pass gives the order blocks are called in (a shared
   block, as in ALBERT, is called once per layer), the final norm, and what
   ``output_hidden_states[-1]`` is. A model that matches none of these is refused with what was
   found.
"""

from __future__ import annotations

import inspect
from collections import Counter
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from oversmooth.errors import UsageError
from oversmooth.hf.families import Family, FamilyNote, Layout, features, note_for
from oversmooth.hf.hooks import HookSet

VALUE_NAMES = ("v_proj", "value", "v_lin", "v")
FUSED_NAMES = ("qkv_proj", "query_key_value", "c_attn", "Wqkv")
OUT_NAMES = ("o_proj", "out_proj", "dense", "c_proj", "out_lin", "o")
PROBE_TOKENS = 6


@dataclass(frozen=True)
class Recorder:
    """One entry of ``_can_record_outputs``: which modules, and the output index to read."""

    target: type | None
    index: int
    layer_name: str | None
    class_name: str | None

    def matches(self, path: str, module: nn.Module) -> bool:
        hit = (self.target is not None and isinstance(module, self.target)) or (
            self.class_name is not None and path.endswith(self.class_name)
        )
        return hit and (self.layer_name is None or f".{self.layer_name.strip('.')}." in f".{path}.")


@dataclass
class Call:
    """One call of a submodule of the probed block: path relative to the block, first input and output."""

    path: str
    module: nn.Module
    input: Tensor | None
    output: Tensor | None = None


@dataclass(frozen=True)
class Wiring:
    """The residual wiring of a block (``Family`` fields)."""

    residual: str
    attn_out: str
    pre_norm: str | None
    mid_norm: str | None
    out_norm: str | None
    mlp_out: str  # the module whose output is the MLP branch, before its residual add


class Refused(Exception):
    """The model's structure matched none of the known wirings (message: what was found)."""


def layout(model: nn.Module) -> Layout:
    """The layout of a loaded ``transformers`` model (base or with a head), discovered once and kept
    on the model."""
    found = model.__dict__.get("_oversmooth_layout")
    if found is None:
        found = discover(model)
        model.__dict__["_oversmooth_layout"] = found
    return found


def discover(model: nn.Module) -> Layout:
    """The layout of ``model`` (see the module docstring); UsageError, one line, if unsupported."""
    config = getattr(model, "config", None)
    if config is None or not hasattr(model, "base_model"):
        raise UsageError(
            f"{type(model).__name__} is not a Hugging Face transformers model; pass a model loaded with transformers"
        )
    note = note_for(config.model_type, type(config).__name__)
    if "decoder_input_ids" in inspect.signature(model.forward).parameters:
        raise UsageError(f"{note.name} is an encoder-decoder model; analyse its encoder (model.get_encoder())")
    try:
        return _discover(model, note)
    except Refused as reason:
        raise UsageError(f"{note.name} ({config.model_type}) is not supported: {reason}") from None


def _discover(model: nn.Module, note: FamilyNote) -> Layout:
    base, text_config = model.base_model, model.config.get_text_config()
    block_spec, attention_spec = _recorders(base)
    blocks = [m for path, m in base.named_modules() if block_spec.matches(path, m)]
    if not blocks:
        raise Refused("no blocks found")
    attentions = [path for path, m in blocks[0].named_modules() if attention_spec.matches(path, m)]
    if len(attentions) != 1:
        raise Refused(f"expected one self-attention module per block, found {len(attentions)}")
    attention = attentions[0]
    heads = int(text_config.num_attention_heads)
    value, value_layout = _value_projection(blocks[0], attention, note)
    out_proj = _out_projection(blocks[0], attention, heads)
    hidden = features(blocks[0].get_submodule(out_proj))[1]
    head_dim = features(blocks[0].get_submodule(out_proj))[0] // heads
    kv_heads = _kv_heads(features(blocks[0].get_submodule(value))[1], value_layout, heads, head_dim)
    flags = [
        m.is_causal
        for _, m in blocks[0].get_submodule(attention).named_modules()
        if isinstance(getattr(m, "is_causal", None), bool)
    ]
    if not flags:
        raise Refused(f"its attention ({attention}) does not use transformers' attention interface")
    probe = _probe(model, base, blocks)
    wiring = wiring_of(probe.calls, probe.x, probe.y, out_proj, probe.tolerance)
    final_norm, last = _final_norm(probe)
    family = Family(
        name=note.name,
        model_type=model.config.model_type,
        residual=wiring.residual,
        attention=attention,
        pattern_index=attention_spec.index,
        value=value,
        value_layout=value_layout,
        out_proj=out_proj,
        attn_out=wiring.attn_out,
        pre_norm=wiring.pre_norm,
        mid_norm=wiring.mid_norm,
        out_norm=wiring.out_norm,
        mlp_out=wiring.mlp_out,
        final_norm=final_norm,
        causal=any(flags),
        modality="image" if model.main_input_name == "pixel_values" else "text",
        hidden_states_last=last,
    )
    norm = None if final_norm is None else base.get_submodule(final_norm)
    return Layout(
        family=family,
        base=base,
        blocks=tuple(probe.order),
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        hidden=hidden,
        final_norm=norm,
    )


def _recorders(base: nn.Module) -> tuple[Recorder, Recorder]:
    declared = getattr(base, "_can_record_outputs", None) or {}
    found = []
    for key, default_index in (("hidden_states", 0), ("attentions", 1)):
        spec = declared.get(key)
        spec = spec[0] if isinstance(spec, (list, tuple)) else spec
        if spec is None:
            raise Refused(f"{type(base).__name__} does not declare its {key.replace('_', ' ')} (_can_record_outputs)")
        if isinstance(spec, (type, str)):
            found.append(
                Recorder(
                    None if isinstance(spec, str) else spec,
                    default_index,
                    None,
                    spec if isinstance(spec, str) else None,
                )
            )
        else:
            found.append(Recorder(spec.target_class, spec.index, spec.layer_name, spec.class_name))
    return found[0], found[1]


def _projections(block: nn.Module, within: str) -> list[tuple[str, nn.Module]]:
    """Linear (and GPT-2 Conv1D) modules under ``within`` (a path in ``block``), paths from the
    block; a module wrapping one as its ``base_layer`` (a peft LoRA layer) stands for it, so hooks
    see the projection's output with the adapter's part."""
    prefix = f"{within}." if within else ""
    return [
        (f"{prefix}{path}", m)
        for path, m in block.get_submodule(within).named_modules()
        if _projection(m) or _projection(getattr(m, "base_layer", None))
    ]


def _projection(module: nn.Module | None) -> bool:
    return isinstance(module, nn.Linear) or hasattr(module, "nf")


def _value_projection(block: nn.Module, attention: str, note: FamilyNote) -> tuple[str, str]:
    projections = _projections(block, attention)
    for names, layout in ((VALUE_NAMES, "separate"), (FUSED_NAMES, "per_head" if note.per_head_qkv else "fused")):
        for path, _ in projections:
            if path.rsplit(".", 1)[-1] in names:
                return path, layout
    raise Refused(f"no value projection ({', '.join(VALUE_NAMES + FUSED_NAMES)}) in {attention}")


def _out_projection(block: nn.Module, attention: str, heads: int) -> str:
    """The output projection: in the attention module, else the first one after it in the block
    (BERT keeps it in a sibling, ``attention.output.dense``)."""
    inside = _projections(block, attention)
    outside = [(p, m) for p, m in _projections(block, "") if not p.startswith(f"{attention}.")]
    for path, module in inside + outside:
        if path.rsplit(".", 1)[-1] in OUT_NAMES and features(module)[0] % heads == 0:
            return path
    raise Refused(f"no output projection ({', '.join(OUT_NAMES)}) for {attention}")


def _kv_heads(value_out: int, layout: str, heads: int, head_dim: int) -> int:
    per_token = {"separate": value_out, "fused": (value_out - heads * head_dim) // 2, "per_head": heads * head_dim}[
        layout
    ]
    kv_heads = per_token // head_dim
    if kv_heads < 1 or kv_heads * head_dim != per_token or heads % kv_heads:
        raise Refused(
            f"its value projection ({value_out} outputs) fits no head layout of {heads} heads of size {head_dim}"
        )
    return kv_heads


@dataclass
class Probe:
    """What one forward pass showed: the first block call's input ``x``, output ``y`` and submodule
    calls, the blocks in call order, the last block's output, the norms outside blocks, and the
    model's own ``output_hidden_states``."""

    x: Tensor
    y: Tensor
    calls: list[Call]
    order: list[nn.Module]
    y_last: Tensor
    outside: dict[str, Call]
    hidden_states: tuple[Tensor, ...] | None
    tolerance: float


def _tensor(value) -> Tensor | None:
    value = value[0] if isinstance(value, (tuple, list)) and value else value
    return value if isinstance(value, Tensor) else None


def _input(args: tuple, kwargs: dict) -> Tensor | None:
    return _tensor(args[0]) if args else _tensor(kwargs.get("hidden_states"))


def is_norm(module: nn.Module) -> bool:
    """A leaf module whose class is a norm (LayerNorm, RMSNorm, T5LayerNorm, ...)."""
    return not any(True for _ in module.children()) and "norm" in type(module).__name__.lower()


def probe_inputs(model: nn.Module) -> dict[str, Tensor]:
    """A short random input: ``PROBE_TOKENS`` token ids, or one image of the configured size."""
    generator = torch.Generator().manual_seed(0)
    config = model.config.get_text_config()
    if model.main_input_name == "pixel_values":
        size = config.image_size if isinstance(config.image_size, (list, tuple)) else (config.image_size,) * 2
        pixels = torch.randn(1, config.num_channels, *size, generator=generator)
        return {"pixel_values": pixels.to(model.device, model.dtype)}
    if model.main_input_name == "input_ids":
        ids = torch.randint(0, config.vocab_size, (1, PROBE_TOKENS), generator=generator).to(model.device)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    raise Refused(f"its input is {model.main_input_name!r}; text (input_ids) and images (pixel_values) are supported")


@torch.no_grad()
def _probe(model: nn.Module, base: nn.Module, blocks: list[nn.Module]) -> Probe:
    """One forward pass on ``probe_inputs`` recording block calls, the first block's submodule calls
    and the norms outside the blocks."""
    order: list[nn.Module] = []
    first: dict[str, Tensor] = {}
    calls: list[Call] = []
    open_calls: dict[int, Call] = {}
    outside: dict[str, Call] = {}
    hooks = HookSet()
    recording = lambda: len(order) == 1 and "y" not in first  # noqa: E731 - inside the first block call

    def block_in(module, args, kwargs):
        order.append(module)
        if len(order) == 1:
            first["x"] = _input(args, kwargs)

    def block_out(module, args, output):
        first.setdefault("y", _tensor(output))
        first["y_last"] = _tensor(output)

    def sub_in(path):
        def hook(module, args, kwargs):
            if recording():
                open_calls[id(module)] = Call(path, module, _input(args, kwargs))
                calls.append(open_calls[id(module)])

        return hook

    def sub_out(module, args, output):
        if recording() and id(module) in open_calls:
            open_calls.pop(id(module)).output = _tensor(output)

    def norm_out(path):
        return lambda module, args, output: outside.__setitem__(
            path, Call(path, module, _tensor(args), _tensor(output))
        )

    inside = {id(m) for block in blocks for m in block.modules()}
    try:
        for block in set(blocks):
            hooks.before(block, block_in, with_kwargs=True)
            hooks.after(block, block_out)
        for path, module in blocks[0].named_modules():
            if path:
                hooks.before(module, sub_in(path), with_kwargs=True)
                hooks.after(module, sub_out)
        for path, module in base.named_modules():
            if id(module) not in inside and is_norm(module):
                hooks.after(module, norm_out(path))
        training = model.training
        model.eval()
        extra = {"use_cache": False} if "use_cache" in inspect.signature(model.forward).parameters else {}
        try:
            outputs = model(**probe_inputs(model), output_hidden_states=True, **extra)
        finally:
            model.train(training)
    finally:
        hooks.remove()
    if first.get("x") is None or first.get("y") is None:
        raise Refused("its blocks do not take and return the hidden states as their first argument / output")
    tolerance = 1e-4 if torch.finfo(first["y"].dtype).bits >= 32 else 3e-2
    return Probe(
        first["x"],
        first["y"],
        calls,
        order,
        first["y_last"],
        outside,
        getattr(outputs, "hidden_states", None),
        tolerance,
    )


def _has_own_parameters(module: nn.Module) -> bool:
    """A module with weights of its own (a layer scale even at 1), unlike dropout or identity."""
    return any(True for _ in module.parameters(recurse=False))


def close(a: Tensor | None, b: Tensor | None, tolerance: float) -> bool:
    """Same tokens and ``|a - b| <= tolerance * max(|a|, |b|)`` (Frobenius norms, float64); a
    ``[B * n, d]`` view of ``[B, n, d]`` (OPT flattens its stream) counts as the same tokens."""
    if a is None or b is None or a.shape[-1:] != b.shape[-1:] or a.numel() != b.numel():
        return False
    a, b = a.reshape(b.shape), b
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).norm()) <= tolerance * max(float(a.norm()), float(b.norm()), 1e-30)


def wiring_of(calls: list[Call], x: Tensor, y: Tensor, out_proj: str, tolerance: float) -> Wiring:
    """The block's wiring from its submodule ``calls`` (in call order), input ``x`` and output ``y``."""
    start = next((i for i, c in enumerate(calls) if c.path == out_proj), None)
    if start is None:
        raise Refused(f"the output projection {out_proj} did not run")
    branch, end = calls[start].output, start
    for i in range(start + 1, len(calls)):  # modules that transform the branch before the add
        c = calls[i]
        if (
            close(c.input, branch, tolerance)
            and c.output is not None
            and c.output.shape == branch.shape
            and (_has_own_parameters(c.module) or not close(c.output, branch, tolerance))
        ):
            branch, end = c.output, i
    mid = x + branch
    later = calls[end + 1 :]
    pre_norm = next((c.path for c in calls[:start] if is_norm(c.module) and close(c.input, x, tolerance)), None)
    readers = [c for c in later if close(c.input, mid, tolerance)]
    mid_norm = next((c for c in readers if is_norm(c.module)), None)

    uses = Counter(id(c.module) for c in calls)

    def mlp_out(among: list[Call], stream: Tensor | None, total: Tensor | None) -> str | None:
        """The last module to run whose output, added to ``stream``, gives ``total`` (compared at
        the stream's scale, so that a low precision's rounding of the sum does not hide a small
        branch), among those the block calls once (Phi's ``resid_dropout`` ends both branches)."""
        if stream is None or total is None:
            return None
        return next(
            (
                c.path
                for c in reversed(among)
                if uses[id(c.module)] == 1
                and c.output is not None
                and c.output.numel() == stream.numel()
                and close(stream + c.output.reshape(stream.shape), total, tolerance)
            ),
            None,
        )

    if mid_norm is None:
        if readers:
            raise Refused(f"the stream after the attention add is read by {readers[0].path}, not by a norm")
        mlp = mlp_out(later, mid, y)
        if mlp is None:
            raise Refused("its block output is neither a norm's output nor the attention sum plus one branch")
        return Wiring("parallel", calls[end].path, pre_norm, None, None, mlp)
    after_mid = later[later.index(mid_norm) + 1 :]
    norms = [c for c in after_mid if is_norm(c.module)]
    if norms and close(norms[-1].output, y, tolerance):
        mlp = mlp_out(after_mid[: after_mid.index(norms[-1])], mid_norm.output, norms[-1].input)
        if mlp is None:
            raise Refused(f"no module's output is the MLP branch that {norms[-1].path} adds to the stream")
        return Wiring("post", calls[end].path, pre_norm, mid_norm.path, norms[-1].path, mlp)
    mlp = mlp_out(after_mid, mid, y)
    if mlp is not None:
        return Wiring("pre", calls[end].path, pre_norm, mid_norm.path, None, mlp)
    raise Refused(f"after {mid_norm.path} its block output is neither a norm's output nor the stream plus one branch")


def _final_norm(probe: Probe) -> tuple[str | None, str]:
    """The norm applied to the last block's output (path in the base model, or None), and what the
    model's ``output_hidden_states[-1]`` is."""
    final = next(
        (c for c in reversed(list(probe.outside.values())) if close(c.input, probe.y_last, probe.tolerance)), None
    )
    hidden = probe.hidden_states
    if not hidden or len(hidden) != len(probe.order) + 1:
        raise Refused(f"output_hidden_states gave {len(hidden or ())} states for {len(probe.order)} block calls")
    if close(hidden[-1], probe.y_last, probe.tolerance):
        return (None, "no final norm") if final is None else (final.path, "before final norm")
    if final is not None and close(hidden[-1], final.output, probe.tolerance):
        return final.path, "after final norm"
    raise Refused("its last hidden state is neither the last block's output nor a final norm's output")
