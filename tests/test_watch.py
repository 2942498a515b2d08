"""Measuring during training: ``oversmooth.watch`` in a plain loop and ``SimilarityCallback`` in a
``transformers.Trainer`` run give, at a step, what ``analyze``'s own stream measurement gives for
the checkpoint saved at that step; bad input is one exception naming the argument."""

from __future__ import annotations

import csv

import pytest
import torch
import transformers as tf
from hf_tiny import CONFIGS, tiny_inputs

from oversmooth.analyze import AnalysisSettings
from oversmooth.analyze.analysis import _stream_table
from oversmooth.analyze.watch import WATCHED, watch
from oversmooth.errors import UsageError


def tiny_lm():
    torch.manual_seed(0)
    config = CONFIGS["gpt2"]()
    config.initializer_range = 0.2
    return tf.AutoModelForCausalLM.from_config(config)


def analyze_numbers(model, probe):
    """The numbers `oversmooth analyze` prints for this model on these inputs (its layerwise path)."""
    settings = AnalysisSettings(methods=()).for_model(model)
    table, *_ = _stream_table(model.eval(), probe, settings)
    return table


def test_the_trainer_callback_logs_what_analyze_measures_on_the_saved_checkpoint(tmp_path):
    from oversmooth.integrations.trainer_callback import SimilarityCallback

    model, probe = tiny_lm(), tiny_inputs("gpt2")
    ids = torch.randint(3, 50, (16, 8), generator=torch.Generator().manual_seed(2))
    data = [{"input_ids": row, "labels": row} for row in ids]
    args = tf.TrainingArguments(
        output_dir=str(tmp_path / "run"),
        max_steps=4,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        save_strategy="steps",
        save_steps=2,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    callback = SimilarityCallback(probe, every=2)
    tf.Trainer(model=model, args=args, train_dataset=data, callbacks=[callback]).train()
    assert [step for step, _ in callback.watch.records] == [2, 4]
    for step, logged in callback.watch.records:
        saved = tf.AutoModelForCausalLM.from_pretrained(tmp_path / "run" / f"checkpoint-{step}")
        expected = analyze_numbers(saved, probe)
        for metric in WATCHED:
            assert logged[metric].tolist() == pytest.approx(expected[metric].tolist(), rel=1e-6, nan_ok=True), metric
    rows = list(csv.DictReader(open(tmp_path / "run" / "similarity" / "similarity.csv")))
    assert [int(r["step"]) for r in rows] == [2, 2, 2, 4, 4, 4]  # embeddings + 2 blocks, twice
    assert float(rows[-1]["cos_sim"]) == pytest.approx(callback.watch.records[-1][1]["cos_sim"].iloc[-1])


def test_watch_counts_optimiser_steps_and_leaves_training_alone(tmp_path):
    """With the optimiser given, every step is counted by a hook; the probe changes neither the
    weights' trajectory (same as an unwatched run) nor the model's mode."""

    def run(watched: bool) -> torch.Tensor:
        model = tiny_lm().train()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        ids = torch.randint(3, 50, (4, 8), generator=torch.Generator().manual_seed(3))
        context = watch(model, tiny_inputs("gpt2"), every=2, out=tmp_path / "w", optimizer=optimizer)
        with context if watched else torch.enable_grad():
            for _ in range(4):
                optimizer.zero_grad()
                model(input_ids=ids, labels=ids).loss.backward()
                optimizer.step()
        assert model.training
        if watched:
            assert [step for step, _ in context.records] == [2, 4]
        return torch.cat([p.detach().flatten() for p in model.parameters()])

    torch.manual_seed(5)
    watched = run(True)
    torch.manual_seed(5)
    assert torch.equal(watched, run(False))


def test_watch_refuses_bad_input_before_writing(tmp_path):
    model = tiny_lm()
    one = {k: v[:1] for k, v in tiny_inputs("gpt2").items()}
    with pytest.raises(UsageError, match="at least 2"):
        watch(model, one, out=tmp_path / "a")
    with pytest.raises(UsageError, match="every must be a whole number"):
        watch(model, tiny_inputs("gpt2"), every=0, out=tmp_path / "a")
    with pytest.raises(UsageError, match="input dict"):
        watch(model, torch.zeros(2, 3, dtype=torch.long), out=tmp_path / "a")
    with pytest.raises(UsageError, match="not a Hugging Face transformers model"):
        watch(torch.nn.Linear(3, 3), {"input_ids": torch.zeros(2, 3)}, out=tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_watch_measures_our_own_models_too():
    from oversmooth.metrics import measure
    from oversmooth.models import ViT, ViTConfig

    model = ViT(ViTConfig.preset("vit-cpu", depth=2))
    images = torch.randn(3, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    with watch(model, images, every=1) as w:
        w.step()
    from oversmooth.activations import stream_names

    with torch.no_grad():  # the fused attention, as a training step has it (no pattern asked for)
        _, cache = model.eval().run_with_cache(images, names=stream_names(2))
    expected = measure(cache.stream(), metrics=WATCHED)
    assert w.records[0][1]["cos_sim"].tolist() == pytest.approx(expected["cos_sim"].tolist(), rel=1e-12)
