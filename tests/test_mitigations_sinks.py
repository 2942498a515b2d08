"""Registers in our ViT, and the command-line refusals of the sink methods (one line, exit 2,
nothing written). Softpick and gated attention against naive transcriptions of their official
formulas at shared weights: tests/test_layers_attention.py; the interventions and the gated patch
in every Hugging Face family: tests/test_hf_families.py."""

import torch
from test_bad_input import refused  # one line, exit 2, nothing written

from oversmooth.layers import MitigationConfig
from oversmooth.models import ViT, ViTConfig


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


def test_bad_requests_are_one_line_exit_2_and_write_nothing(tmp_path, capsys):
    out = str(tmp_path / "out")
    train = ["train", "--task", "synthetic", "--epochs", "1", "--out", out]
    refused([*train, "--model", "lm", "--method", "registers"], capsys, tmp_path, "registers trains in our ViT only")
    refused([*train, "--model", "vit", "--method", "sink_removal"], capsys, tmp_path, "sink_removal does not train")
    refused([*train, "--model", "vit", "--method", "registers", "--registers", "1.5"], capsys, tmp_path, "invalid int")
    analyze = ["analyze", "--text", "a short text " * 20, "--max-sequences", "2", "--max-length", "16", "--out", out]
    refused(
        [*analyze, "--methods", "sink_removal", "--sink-position", "40"],
        capsys,
        tmp_path,
        "sink position 40 is outside sequence 0",
    )
    refused([*analyze, "--methods", "registers"], capsys, tmp_path, "registers cannot be patched")
