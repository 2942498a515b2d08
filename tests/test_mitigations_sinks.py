"""The methods that train the sink away, in our own models: softpick and gated attention against
naive transcriptions of their official formulas at shared weights, registers in the ViT, and the
command-line refusals of the sink methods (one line, exit 2, nothing written)."""

import math

import pytest
import torch

from oversmooth.cli import main
from oversmooth.layers import Attention, MitigationConfig
from oversmooth.mitigations.softpick import softpick
from oversmooth.models import ViT, ViTConfig

WIDTH, HEADS, TOKENS = 16, 4, 7


def plain_softpick(scores: torch.Tensor) -> torch.Tensor:
    """Zuhri et al.'s formula as written, unstabilised: ReLU(e^x - 1) / sum |e^x - 1| over the finite x."""
    lifted = torch.exp(scores) - 1
    total = torch.where(scores.isfinite(), lifted.abs(), 0.0).sum(dim=-1, keepdim=True)
    return torch.relu(lifted) / total


def test_softpick_is_the_formula_and_leaves_rows_that_see_nothing_positive_empty():
    g = torch.Generator().manual_seed(0)
    scores = 3 * torch.randn(5, 9, generator=g, dtype=torch.float64)
    scores[:, 6:] = -math.inf  # masked keys
    torch.testing.assert_close(softpick(scores), plain_softpick(scores), rtol=1e-7, atol=1e-12)
    assert torch.all(softpick(scores)[scores <= 0] == 0)
    assert torch.all(softpick(scores).sum(-1) <= 1 + 1e-12)
    assert torch.equal(softpick(-torch.rand(2, 4, dtype=torch.float64)), torch.zeros(2, 4, dtype=torch.float64))
    big = torch.tensor([[800.0, 799.0, -3.0]])  # e^800 overflows: the stable form does not
    assert torch.isfinite(softpick(big)).all() and softpick(big)[0, 0] > softpick(big)[0, 1] > 0


def naive_attention(attention: Attention, x: torch.Tensor, causal: bool, weights_of, gate=None, omega=None):
    """Multi-head attention written out per head from the layer's own weights, float64:
    ``A = weights_of(Q K^T / sqrt(d_h))`` (masked keys -inf), ``O_h = A V_h`` (AttnScale: ``+ omega_h
    (O_h - mean_t V_h)``), gated by ``gate(x)`` per head and channel, heads concatenated, W_O."""
    d_head = WIDTH // HEADS
    x = x.double()

    def linear(layer, inputs):
        return inputs @ layer.weight.double().T + layer.bias.double()

    q, k, v = linear(attention.query, x), linear(attention.key, x), linear(attention.value, x)
    heads = []
    for h in range(HEADS):
        cols = slice(h * d_head, (h + 1) * d_head)
        scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(d_head)
        if causal:
            scores = scores.masked_fill(torch.ones(TOKENS, TOKENS, dtype=torch.bool).triu(1), -math.inf)
        out = weights_of(scores) @ v[..., cols]
        if omega is not None:
            out = out + omega[h] * (out - v[..., cols].mean(dim=-2, keepdim=True))
        if gate is not None:
            out = out * gate(x)[..., cols]
        heads.append(out)
    return linear(attention.output, torch.cat(heads, dim=-1))


def attention_with(spec: str, causal: bool) -> Attention:
    torch.manual_seed(0)
    layer = Attention(WIDTH, HEADS, mitigation=MitigationConfig.parse(spec, causal=causal), causal=causal)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(0.5 * torch.randn_like(p))
    return layer.eval()


@pytest.mark.parametrize("causal", [False, True])
def test_softpick_attention_is_the_official_formula_at_shared_weights(causal):
    layer = attention_with("softpick", causal)
    x = torch.randn(2, TOKENS, WIDTH, generator=torch.Generator().manual_seed(1))
    expected = naive_attention(layer, x, causal, plain_softpick)
    torch.testing.assert_close(layer(x)[0].double(), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    ("spec", "causal"), [("gated_attention", False), ("gated_attention", True), ("gated_attention+attnscale", False)]
)
def test_gated_attention_is_the_official_formula_at_shared_weights(spec, causal):
    """Qiu et al.'s G1 (``attn_output * sigmoid(gate_score)`` after SDPA, before o_proj), with the
    gate scores a linear map of the attention's input; after AttnScale's per-head term, which then
    no longer folds into W_O."""
    layer = attention_with(spec, causal)
    x = torch.randn(2, TOKENS, WIDTH, generator=torch.Generator().manual_seed(1))
    gate = layer.gate.proj
    omega = layer.attnscale.omega.double() if "attnscale" in spec else None
    expected = naive_attention(
        layer,
        x,
        causal,
        lambda scores: scores.softmax(dim=-1),
        gate=lambda inputs: torch.sigmoid(inputs @ gate.weight.double().T + gate.bias.double()),
        omega=omega,
    )
    torch.testing.assert_close(layer(x)[0].double(), expected, atol=1e-5, rtol=1e-5)


def test_registers_are_appended_unpositioned_read_by_the_blocks_and_left_out_of_the_measures():
    from oversmooth.metrics import measure
    from oversmooth.train.evaluation import stream_table

    torch.manual_seed(0)
    model = ViT(ViTConfig.preset("vit-cpu", depth=2, mitigation=MitigationConfig.parse("registers", registers=3)))
    images = torch.randn(4, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    logits, cache = model.run_with_cache(images)
    first = cache["blocks.0.hook_resid_pre"]
    assert first.shape == (4, 53, 64)
    torch.testing.assert_close(first[:, :50], model.embed(images))
    assert torch.equal(first[:, 50:], model.registers.tokens.expand(4, -1, -1))
    assert model.registers.tokens.std() > 0.01  # drawn, not left at 0
    with torch.no_grad():  # the ViT written out: blocks on [CLS, patches, registers], head on CLS
        x = torch.cat([model.embed(images), model.registers.tokens.expand(4, -1, -1)], dim=1)
        for block in model.blocks:
            x, _ = block(x)
        torch.testing.assert_close(logits, model.head(model.final_norm(x)[:, 0]))
    table = stream_table(model, images)
    assert table.attrs["tokens"] == 50
    expected = measure([state[:, :50] for state in cache.stream()], hook="stream")
    for column in ("cos_sim", "t_sim", "effective_rank"):
        torch.testing.assert_close(torch.tensor(table[column].values), torch.tensor(expected[column].values))


def refused(capsys, argv, folder, match):
    """``oversmooth argv`` exits 2 with one line holding ``match``, and ``folder`` is not made."""
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    error = capsys.readouterr().err.strip()
    assert code == 2 and len(error.splitlines()) == 1 and match in error, error
    assert not folder.exists()


def test_bad_requests_are_one_line_exit_2_and_write_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    train = ["train", "--task", "synthetic", "--epochs", "1", "--out", str(out)]
    refused(capsys, [*train, "--model", "lm", "--method", "registers"], out, "registers trains in our ViT only")
    refused(capsys, [*train, "--model", "vit", "--method", "sink_removal"], out, "sink_removal does not train")
    refused(capsys, [*train, "--model", "vit", "--method", "registers", "--registers", "1.5"], out, "invalid int")
    analyze = ["analyze", "--text", "a short text " * 20, "--max-sequences", "2", "--max-length", "16"]
    refused(
        capsys,
        [*analyze, "--methods", "sink_removal", "--sink-position", "40", "--out", str(out)],
        out,
        "sink position 40 is outside sequence 0",
    )
    refused(capsys, [*analyze, "--methods", "registers", "--out", str(out)], out, "registers cannot be patched")
