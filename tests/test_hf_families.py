"""Every supported family, discovered from a tiny random checkpoint saved to disk and loaded back:
the structure found, capture against transformers' own outputs, the residual identity, values
and context against the attention pattern, zero-knob patches bit-identical, unpatch, causality,
and each patch against a naive reference (the sink interventions and gated attention included)."""

import itertools

import pytest
import torch
import transformers as tf
from hf_tiny import ALL_FAMILIES, CONFIGS, ENCODER_DECODER, LIVE_KNOBS, VISION, move_gates, perturb, tiny_inputs

from oversmooth.errors import UsageError
from oversmooth.hf import layout
from oversmooth.hf.capture import capture, merge_heads, split_heads
from oversmooth.hf.hooks import first_output
from oversmooth.hf.load import encoder_of
from oversmooth.hf.patch import ZERO_KNOBS, patch, patched_method, supported_methods, unpatch

ATOL = 1e-5
POST = ("bert", "roberta", "xlm_roberta", "electra", "albert", "distilbert", "opt_post", "bart")
PARALLEL = ("phi", "gpt_neox")
# kind -> (residual wiring, causal, output_hidden_states[-1]), as the models' source code has them
EXPECTED = {
    kind: (
        "post" if kind in POST else "parallel" if kind in PARALLEL else "pre",
        kind not in POST[:6] + VISION + ENCODER_DECODER,
        "no final norm" if kind in POST else "before final norm" if kind in VISION else "after final norm",
    )
    for kind in ALL_FAMILIES
}
# the attention branch ends after the output projection: a post-attention norm, a layer scale
BRANCH_END = {"gemma2": "post_attention_layernorm", "gemma3": "post_attention_layernorm", "dinov2": "layer_scale1"}
MASKED_LM = ("bert", "roberta", "xlm_roberta", "electra", "albert", "distilbert")


def head_class(kind: str):
    """The class whose logits the patches must keep: causal LM, masked LM, image classifier, or
    the base model (T5 / BART: their encoder)."""
    if kind in VISION:  # DeiT has two classifiers, so the auto class cannot choose
        return {
            "vit": tf.ViTForImageClassification,
            "deit": tf.DeiTForImageClassification,
            "dinov2": tf.Dinov2ForImageClassification,
        }[kind]
    if kind in MASKED_LM:
        return tf.AutoModelForMaskedLM
    return tf.AutoModel if kind in ENCODER_DECODER else tf.AutoModelForCausalLM


@pytest.fixture(scope="module", params=ALL_FAMILIES)
def loaded(request, tmp_path_factory):
    """(kind, model loaded from a saved tiny checkpoint, inputs)."""
    kind, folder = request.param, tmp_path_factory.mktemp(request.param)
    torch.manual_seed(0)
    config = CONFIGS[kind]()
    config.initializer_range = 0.2
    cls = head_class(kind)
    perturb(cls.from_config(config) if hasattr(cls, "from_config") else cls(config)).save_pretrained(folder)
    model = head_class(kind).from_pretrained(folder, attn_implementation="eager").eval()
    return kind, encoder_of(model), tiny_inputs(kind)


def outputs(model, inputs):
    with torch.no_grad():
        out = model(**inputs)
    return out.logits if getattr(out, "logits", None) is not None else out.last_hidden_state


def test_structure_is_discovered(loaded):
    kind, model, _ = loaded
    lay = layout(model)
    residual, causal, last = EXPECTED[kind]
    assert (lay.family.residual, lay.family.causal, lay.family.hidden_states_last) == (residual, causal, last)
    assert lay.family.attn_out == BRANCH_END.get(kind, lay.family.out_proj)
    assert lay.family.tested and lay.depth == 2
    assert (lay.family.mid_norm is None) == (residual == "parallel")
    assert (lay.family.out_norm is not None) == (residual == "post")
    config = model.config.get_text_config()
    assert lay.heads * lay.head_dim == tf.AutoConfig.for_model(**config.to_dict()).num_attention_heads * lay.head_dim
    assert lay.kv_heads == (getattr(config, "num_key_value_heads", None) or lay.heads)
    if kind == "albert":
        assert lay.blocks[0] is lay.blocks[1]  # one shared layer, called twice


def test_stream_equals_output_hidden_states(loaded):
    kind, model, inputs = loaded
    _, cache = capture(model, inputs)
    with torch.no_grad():
        hidden = model(**inputs, output_hidden_states=True).hidden_states
    stream = cache.stream()
    assert len(hidden) == len(stream) == 3
    for ours, theirs in zip(stream[:-1], hidden[:-1]):
        torch.testing.assert_close(ours, theirs, atol=0, rtol=0)
    last = stream[-1]
    if layout(model).family.hidden_states_last == "after final norm":
        last = layout(model).final_norm(last)
    torch.testing.assert_close(last, hidden[-1], atol=ATOL, rtol=0)


def test_attention_residual_add(loaded):
    """resid_pre + attn_out = resid_mid; for parallel blocks resid_mid is that sum by definition,
    so their check is that the block output is resid_mid plus the MLP branch."""
    kind, model, inputs = loaded
    _, cache = capture(model, inputs)
    for pre, out, mid in zip(
        cache.layer_stack("resid_pre"), cache.layer_stack("attn_out"), cache.layer_stack("resid_mid")
    ):
        torch.testing.assert_close(pre + out, mid, atol=ATOL, rtol=0)
    if kind in PARALLEL:
        lay = layout(model)
        for layer, (mid, post) in enumerate(zip(cache.layer_stack("resid_mid"), cache.layer_stack("resid_post"))):
            block = lay.blocks[layer]
            norm = block.post_attention_layernorm if kind == "gpt_neox" else block.input_layernorm
            with torch.no_grad():
                torch.testing.assert_close(
                    mid + block.mlp(norm(cache.layer_stack("resid_pre")[layer])), post, atol=ATOL, rtol=0
                )


def test_values_context_and_output_projection(loaded):
    """A V = z with the eager pattern; V = norm(resid_pre) W_V + b per kv-head (h // groups);
    attn_out = merge(z) W_O + b, then the module that ends the branch where there is one."""
    kind, model, inputs = loaded
    lay = layout(model)
    _, cache = capture(model, inputs, pattern=True)
    groups = lay.heads // lay.kv_heads
    for layer in range(lay.depth):
        pattern, v, z = (cache.layer_stack(h)[layer] for h in ("pattern", "v", "z"))
        torch.testing.assert_close(pattern @ v, z, atol=ATOL, rtol=0)
        x = cache.layer_stack("resid_pre")[layer]
        with torch.no_grad():
            if lay.family.pre_norm is not None:
                x = lay.module(layer, "pre_norm")(x)
            bias = lay.value_bias(layer)
            projected = x @ lay.value_weight(layer) + (0 if bias is None else bias)
            for head in range(lay.heads):
                kv = head // groups
                expected = projected[..., kv * lay.head_dim : (kv + 1) * lay.head_dim]
                torch.testing.assert_close(v[:, head], expected, atol=ATOL, rtol=0)
            out_bias = lay.module(layer, "out_proj").bias
            out = merge_heads(z) @ lay.out_weight(layer) + (0 if out_bias is None else out_bias)
            if lay.family.attn_out != lay.family.out_proj:
                out = lay.module(layer, "attn_out")(out)
        torch.testing.assert_close(out, cache.layer_stack("attn_out")[layer], atol=ATOL, rtol=0)


def move_sigma_reparam_gammas(model, factor=0.9):
    """What adaptation does to sigmaReparam: its gammas move away from sigma(W)."""
    from oversmooth.mitigations.sigma_reparam import SpectralScale

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, SpectralScale):
                module.gamma.mul_(factor)


def test_zero_knobs_are_exact_and_unpatch_restores(loaded):
    _, model, inputs = loaded
    baseline = outputs(model, inputs)
    for method in supported_methods(model):
        patch(model, method, **ZERO_KNOBS[method])
        assert torch.equal(outputs(model, inputs), baseline), method
        unpatch(model)
        patch(model, method, **LIVE_KNOBS.get(method, {}))
        move_sigma_reparam_gammas(model)
        move_gates(model)
        assert not torch.allclose(outputs(model, inputs), baseline), f"{method} at defaults changes nothing"
        unpatch(model)
        assert torch.equal(outputs(model, inputs), baseline), f"{method}: unpatch did not restore"


def naive_mean(x, mask, causal):
    """Mean over valid tokens (prefix-limited when causal), one token at a time. x: [B, ..., n, d]."""
    out = torch.zeros_like(x)
    for b in range(x.shape[0]):
        for t in range(x.shape[-2]):
            keep = [s for s in range(x.shape[-2]) if mask[b, s] and (s <= t or not causal)]
            out[b, ..., t, :] = x[b, ..., keep, :].mean(dim=-2)
    return out


def test_context_methods_match_naive_reference(loaded):
    """NeuTRENO and AttnScale on z = A V (per head), from the patched model's own A and V; the
    right-padded second sequence's padding never counts."""
    _, model, inputs = loaded
    lay = layout(model)
    patch(model, "neutreno", lam=0.3)
    _, cache = capture(model, inputs, pattern=True)
    unpatch(model)
    v1 = cache["blocks.0.attn.hook_v"]
    for layer, (a, v, z) in enumerate(
        zip(cache.layer_stack("pattern"), cache.layer_stack("v"), cache.layer_stack("z"))
    ):
        expected = a @ v + (0.3 * (v1 - v) if layer > 0 else 0)
        torch.testing.assert_close(z, expected, atol=ATOL, rtol=0)
    omega = torch.linspace(-0.5, 1.0, lay.heads)
    patch(model, "attnscale", omega=omega.tolist())
    _, cache = capture(model, inputs, pattern=True)
    unpatch(model)
    for a, v, z in zip(cache.layer_stack("pattern"), cache.layer_stack("v"), cache.layer_stack("z")):
        av = a @ v
        expected = av + omega[:, None, None] * (av - naive_mean(v, cache.mask, lay.family.causal))
        torch.testing.assert_close(z, expected, atol=ATOL, rtol=0)


def test_output_methods_match_naive_reference(loaded):
    """De-escalation and FeatScale on the attention branch output (merge(z) W_O + b, then the
    module that ends the branch where there is one)."""
    _, model, inputs = loaded
    lay = layout(model)
    s_dc, s_hc = torch.linspace(-1, 1, lay.hidden), torch.linspace(0.5, -0.5, lay.hidden)
    for method, knobs in (("deescalate", {"tau": 0.7}), ("featscale", {"s_dc": s_dc, "s_hc": s_hc})):
        patch(model, method, **knobs)
        _, cache = capture(model, inputs)
        unpatch(model)
        for layer in range(cache.depth):
            bias = lay.module(layer, "out_proj").bias
            with torch.no_grad():
                plain = merge_heads(cache.layer_stack("z")[layer]) @ lay.out_weight(layer) + (
                    0 if bias is None else bias
                )
                if lay.family.attn_out != lay.family.out_proj:
                    plain = lay.module(layer, "attn_out")(plain)
            dc = naive_mean(plain, cache.mask, lay.family.causal)
            expected = plain - 0.7 * dc if method == "deescalate" else plain + s_dc * dc + s_hc * (plain - dc)
            torch.testing.assert_close(cache.layer_stack("attn_out")[layer], expected, atol=ATOL, rtol=0)


def test_causal_models_stay_causal(loaded):
    """Changing tokens from position 4 on never changes an earlier output of a causal model,
    patched or not; in an encoder it does (so the check can fail)."""
    kind, model, inputs = loaded
    if kind in VISION:
        pytest.skip("images have no token order")
    changed = {k: v.clone() for k, v in inputs.items()}
    changed["input_ids"][:, 4:] = (changed["input_ids"][:, 4:] + 7) % 50
    for method in (None, *supported_methods(model)):
        if method:
            patch(model, method)
        try:
            before, after = outputs(model, inputs)[:, :4], outputs(model, changed)[:, :4]
        finally:
            unpatch(model)
        if layout(model).family.causal:
            torch.testing.assert_close(before, after, atol=ATOL, rtol=0)
        else:
            assert not torch.allclose(before, after, atol=ATOL), method


def test_refused_models_say_why():
    torch.manual_seed(0)
    swin = tf.SwinModel(
        tf.SwinConfig(embed_dim=16, depths=[2], num_heads=[2], image_size=16, patch_size=4, window_size=2)
    )
    with pytest.raises(UsageError, match="Swin is not supported: Swin attends within local windows"):
        layout(swin)
    t5 = tf.T5Model(CONFIGS["t5"]())
    with pytest.raises(UsageError, match=r"encoder-decoder model; analyse its encoder \(model.get_encoder\(\)\)"):
        layout(t5)
    with pytest.raises(UsageError, match="not a Hugging Face transformers model"):
        layout(torch.nn.Linear(2, 2))


def mlp_branches(lay, run) -> tuple[list, object]:
    """``run()``'s result and what each block's ``mlp_out`` module returned, in call order, i.e. by
    layer (a shared block, as ALBERT's, is one module); hooked before anything ``run`` adds."""
    branches = []
    modules = dict.fromkeys(lay.module(layer, "mlp_out") for layer in range(lay.depth))
    handles = [module.register_forward_hook(lambda module, args, out: branches.append(out)) for module in modules]
    try:
        return branches, run()
    finally:
        for handle in handles:
            handle.remove()


def check_mlp_adds(kind, lay, cache, branches) -> None:
    """Each block's output is resid_mid plus its MLP branch ``branches[layer]`` (pre-LN, parallel)
    or the last norm of that branch plus the mid norm's output (post-LN: resid_mid is the sum
    before that norm)."""
    for layer, (mid, post) in enumerate(zip(cache.layer_stack("resid_mid"), cache.layer_stack("resid_post"))):
        mlp = branches[layer].reshape(mid.shape)
        with torch.no_grad():
            if kind in POST:
                expected = lay.module(layer, "out_norm")(lay.module(layer, "mid_norm")(mid) + mlp)
            else:
                expected = mid + mlp
        torch.testing.assert_close(expected, post, atol=ATOL, rtol=0)


def test_the_mlp_branch_is_found(loaded):
    """The module found as ``mlp_out`` returns what the block adds to the stream after attention."""
    kind, model, inputs = loaded
    lay = layout(model)
    branches, (_, cache) = mlp_branches(lay, lambda: capture(model, inputs))
    check_mlp_adds(kind, lay, cache, branches)


def test_layerscale_scales_both_branches(loaded):
    """LayerScale (CaiT) patched with a per-channel gamma: the attention branch is gamma times the
    unpatched branch, and the block adds gamma times the MLP branch where the plain block adds it."""
    kind, model, inputs = loaded
    lay = layout(model)
    _, plain = capture(model, inputs)
    gamma = torch.linspace(0.3, 1.7, lay.hidden)

    def patched_run():
        patch(model, "layerscale", gamma=gamma)
        try:
            return capture(model, inputs)
        finally:
            unpatch(model)

    raw, (_, cache) = mlp_branches(lay, patched_run)
    torch.testing.assert_close(
        cache.layer_stack("attn_out")[0], gamma * plain.layer_stack("attn_out")[0], atol=ATOL, rtol=0
    )
    check_mlp_adds(kind, lay, cache, [gamma * branch.reshape(-1, gamma.numel()) for branch in raw])


def test_sigma_reparam_is_each_weight_over_its_spectral_norm_and_saves_as_plain_weights(loaded):
    """sigmaReparam (Zhai et al. 2023): every linear weight of the blocks becomes gamma / sigma W with
    sigma = v^T W u after one power step from the kept u, written out here; unpatch(keep=True)
    leaves those weights plain, and patching them again changes nothing."""
    import copy

    from transformers.pytorch_utils import Conv1D

    from oversmooth.mitigations.sigma_reparam import SpectralScale

    _, model, inputs = loaded
    reference = copy.deepcopy(model)
    patch(model, "sigma_reparam")
    move_sigma_reparam_gammas(model, 0.8)
    patched = outputs(model, inputs)
    ours = dict(model.named_modules())
    with torch.no_grad():
        count = 0
        for name, module in reference.named_modules():
            if isinstance(module, (torch.nn.Linear, Conv1D)) and hasattr(ours[name], "parametrizations"):
                scale = next(m for m in ours[name].parametrizations.weight if isinstance(m, SpectralScale))
                w = module.weight.double()
                v = w @ scale.u.double()
                v = v / v.norm()
                u = w.T @ v
                u = u / u.norm()
                module.weight.mul_(scale.gamma.double() / (v @ w @ u)).float()
                count += 1
    assert count > 0
    torch.testing.assert_close(outputs(reference, inputs), patched, atol=ATOL, rtol=1e-5)
    unpatch(model, keep=True)
    assert not any(isinstance(m, SpectralScale) for m in model.modules())
    torch.testing.assert_close(outputs(model, inputs), patched, atol=ATOL, rtol=1e-6)
    kept = outputs(model, inputs)
    patch(model, "sigma_reparam")
    torch.testing.assert_close(outputs(model, inputs), kept, atol=1e-6, rtol=1e-6)
    unpatch(model)


def naive_sink_removal(pattern, sink, strength):
    """Each row by hand: the sink's weight times ``1 - strength``, the row divided by its new sum (a
    row left with nothing, all on the sink, kept). pattern: [B, H, q, k]; sink: a key per sequence."""
    out = pattern.clone()
    for b, h, i in itertools.product(*map(range, pattern.shape[:3])):
        row = pattern[b, h, i].clone()
        row[sink[b]] *= 1 - strength
        if row.sum() > 0:
            out[b, h, i] = row / row.sum()
    return out


@pytest.mark.parametrize("strength", [1.0, 0.6])
def test_sink_removal_matches_naive_reference(loaded, strength):
    """Sink removal (Barbero et al.) in every family: block 0's patterns are the unpatched ones with
    the sink's weight cut and each row renormalised by hand; in every block the context is the
    edited pattern times the values, and the model's output is unchanged where the edit is off."""
    _, model, inputs = loaded
    _, plain = capture(model, inputs, pattern=True)
    patch(model, "sink_removal", strength=strength)
    _, cache = capture(model, inputs, pattern=True)
    unpatch(model)
    sink = [0, 0]  # tiny_inputs pads on the right: each sequence's first token is key 0
    torch.testing.assert_close(
        cache.layer_stack("pattern")[0], naive_sink_removal(plain.layer_stack("pattern")[0], sink, strength)
    )
    for a, v, z in zip(cache.layer_stack("pattern"), cache.layer_stack("v"), cache.layer_stack("z")):
        torch.testing.assert_close(a @ v, z, atol=ATOL, rtol=0)
        if strength == 1.0:
            alone = a[..., 1:].sum(-1) == 0  # rows that see the sink only (a causal model's first query)
            assert torch.all((a[..., 0] == 0) | alone)


def hidden_sink_mask(inputs, causal: bool) -> torch.Tensor:
    """A 4-D additive mask ``[B, 1, n, n]`` that hides key 0 from every query that sees another key,
    the padding and (causal) the future: transformers' own attention computing sink removal."""
    valid = inputs["attention_mask"].bool()
    n = valid.shape[1]
    keep = valid[:, None, None, :].expand(-1, 1, n, n).clone()
    if causal:
        keep &= torch.ones(n, n, dtype=torch.bool).tril()
    hidden = keep.clone()
    hidden[..., 0] = False
    keep = torch.where(hidden.any(-1, keepdim=True), hidden, keep)
    return torch.zeros(keep.shape).masked_fill(~keep, torch.finfo(torch.float32).min)


@pytest.mark.parametrize("kind", ["bert", "distilbert", "gpt2", "llama", "t5"])
def test_sink_removal_is_the_softmax_over_every_other_key(kind):
    """The whole patched model against transformers with a 4-D mask that hides the sink (families
    that take one): the same states at every real token."""
    from hf_tiny import tiny_model

    model, inputs = tiny_model(kind), tiny_inputs(kind)
    mask = hidden_sink_mask(inputs, layout(model).family.causal)
    with torch.no_grad():
        expected = model(input_ids=inputs["input_ids"], attention_mask=mask).last_hidden_state
        patch(model, "sink_removal")
        try:
            got = model(**inputs).last_hidden_state
        finally:
            unpatch(model)
    real = inputs["attention_mask"].bool()
    torch.testing.assert_close(got[real], expected[real], atol=ATOL, rtol=0)


def test_sink_removal_counts_from_the_first_real_token_and_refuses_a_position_outside():
    """A left-padded prompt's sink is its first real token; a position past a sequence's end is
    refused in one line, and the failed call leaves the model unpatched-equal after unpatch."""
    from hf_tiny import tiny_model

    model = tiny_model("llama")
    ids = torch.randint(3, 50, (2, 7), generator=torch.Generator().manual_seed(3))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, :3] = 0
    _, plain = capture(model, {"input_ids": ids, "attention_mask": mask}, pattern=True)
    patch(model, "sink_removal", position=1)
    try:
        _, cache = capture(model, {"input_ids": ids, "attention_mask": mask}, pattern=True)
        with pytest.raises(UsageError, match="sink position 1 is outside sequence 0, which has 1 real token"):
            model(input_ids=ids[:, :1], attention_mask=mask[:, :1])
    finally:
        unpatch(model)
    expected = naive_sink_removal(plain.layer_stack("pattern")[0], [1, 4], 1.0)
    torch.testing.assert_close(cache.layer_stack("pattern")[0], expected)
    assert model.config._attn_implementation == "eager"


def test_sink_removal_refuses_a_family_without_eager_attention(monkeypatch):
    """A model whose attention has no eager form (nothing returns its weights) is refused in one
    line, before anything is switched."""
    from hf_tiny import tiny_model

    model = tiny_model("bert", attn="sdpa")
    layout(model)  # discovered (one forward pass) before the eager form goes
    monkeypatch.delattr("transformers.models.bert.modeling_bert.eager_attention_forward")
    with pytest.raises(UsageError, match="BERT's attention has no eager form"):
        patch(model, "sink_removal")
    assert model.config._attn_implementation == "sdpa" and patched_method(model) is None


def block_outputs(lay, run) -> tuple[list, object]:
    """Each block's output as the block returned it (hooked before anything ``run`` adds), and ``run()``."""
    raw = []
    handles = [
        block.register_forward_hook(lambda module, args, out: raw.append(first_output(out).clone()))
        for block in dict.fromkeys(lay.blocks)
    ]
    try:
        return raw, run()
    finally:
        for handle in handles:
            handle.remove()


def naive_massive_clip(raws, mask, ratio, to, strength):
    """Sun et al.'s intervention by hand, entry by entry: ``raws`` the blocks' outputs as they left
    each block (each computed from the edited output before it); returns the edited outputs."""
    edited_tokens = set()
    outs = []
    for x in raws:
        out = x.clone()
        forming = {}
        for b, t in itertools.product(range(x.shape[0]), range(x.shape[1])):
            if not mask[b, t] or (b, t) in edited_tokens:
                continue
            values = sorted(abs(v) for v in x[b, t].tolist())
            median = (values[(len(values) - 1) // 2] + values[len(values) // 2]) / 2
            channels = [c for c in range(x.shape[2]) if abs(x[b, t, c].item()) > ratio * median]
            if channels:
                edited_tokens.add((b, t))
                for c in channels:
                    forming.setdefault((t, c), []).append(b)
        for (t, c), rows in forming.items():
            target = 0.0 if to == "zero" else sum(x[b, t, c].item() for b in rows) / len(rows)
            for b in rows:
                out[b, t, c] = x[b, t, c] + strength * (target - x[b, t, c])
        outs.append(out)
    return outs


@pytest.mark.parametrize(("to", "strength"), [("mean", 1.0), ("zero", 0.7)])
def test_massive_clip_matches_naive_reference(loaded, to, strength):
    """Massive-activation clipping (Sun et al.) in every family: each block's output is what the
    block made, with each token's massive entries (|h| > 2 x its median |h|, a low ratio so that a
    tiny random model has some) moved toward their target at the first block where the token has
    one, by hand; padding never counts."""
    _, model, inputs = loaded
    lay = layout(model)

    def patched_run():
        patch(model, "massive_clip", ratio=2.0, to=to, strength=strength)
        try:
            return capture(model, inputs, hooks=("resid_post",))
        finally:
            unpatch(model)

    raw, (_, cache) = block_outputs(lay, patched_run)
    mask = cache.mask
    expected = naive_massive_clip(raw, mask, 2.0, to, strength)
    assert any(not torch.equal(e, r) for e, r in zip(expected, raw))  # the clip acted
    for got, want in zip(cache.layer_stack("resid_post"), expected):
        torch.testing.assert_close(got[mask], want[mask], atol=ATOL, rtol=0)


def test_gated_attention_patch_is_the_identity_then_gates_each_head(loaded):
    """Gated attention (Qiu et al., G1) patched: 2 sigmoid(0) = 1 leaves the model bit for bit;
    with the gates drawn, the output projection reads A V times 2 sigmoid(x W_g + b_g) per head, x
    the attention's input (the block input after its norm), from the patched model's own A and V."""
    _, model, inputs = loaded
    lay = layout(model)
    baseline = outputs(model, inputs)
    patch(model, "gated_attention")
    try:
        assert torch.equal(outputs(model, inputs), baseline)
        move_gates(model)
        _, cache = capture(model, inputs, pattern=True)
        gates = [lay.module(layer, "attention").oversmooth_gate for layer in range(lay.depth)]
    finally:
        unpatch(model)
    assert not any(hasattr(lay.module(layer, "attention"), "oversmooth_gate") for layer in range(lay.depth))
    for layer, gate in enumerate(gates):
        x = cache.layer_stack("resid_pre")[layer]
        with torch.no_grad():
            if lay.family.pre_norm is not None:
                x = lay.module(layer, "pre_norm")(x)
            g = 2 * torch.sigmoid(x @ gate.proj.weight.T + gate.proj.bias)
        av = cache.layer_stack("pattern")[layer] @ cache.layer_stack("v")[layer]
        expected = av * split_heads(g, lay.heads)
        torch.testing.assert_close(cache.layer_stack("z")[layer], expected, atol=ATOL, rtol=0)
