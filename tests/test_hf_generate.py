"""Patched generation with the KV cache equals the same patched model recomputing the whole
sequence at every step: tokens and every step's logits, greedy, batch 1 and a left-padded batch,
for every method and every family that generates."""

import inspect

import pytest
import torch
import transformers as tf
from hf_tiny import CONFIGS, LIVE_KNOBS, move_gates, perturb

from oversmooth.errors import UsageError
from oversmooth.hf.patch import PATCHABLE, patch, supported_methods, unpatch

DECODERS = (
    "gpt2",
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "gemma",
    "gemma2",
    "gemma3",
    "phi",
    "phi3",
    "gpt_neox",
    "gpt_neox_sequential",
    "opt",
    "opt_post",
)
STEPS = 5


@pytest.fixture(scope="module", params=DECODERS)
def lm(request):
    torch.manual_seed(0)
    config = CONFIGS[request.param]()
    config.initializer_range = 0.2  # peaked next-token distributions: no near-ties in the argmax
    model = perturb(tf.AutoModelForCausalLM.from_config(config)).eval()
    model.generation_config.eos_token_id = None  # always STEPS new tokens
    model.generation_config.pad_token_id = 0
    return model


def prompts(batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` 1: one prompt of 6 tokens; 2: prompts of 6 and 3 tokens, left-padded."""
    ids = torch.randint(3, 50, (batch, 6), generator=torch.Generator().manual_seed(batch))
    mask = torch.ones_like(ids)
    if batch == 2:
        mask[1, :3] = 0
        ids[1, :3] = 0
    return ids, mask


@torch.no_grad()
def recompute(model, ids: torch.Tensor, mask: torch.Tensor, steps: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Greedy decoding without a cache: the whole sequence through the model at every step, with
    the positions generate gives a left-padded batch. Returns the tokens and each step's logits."""
    takes_positions = "position_ids" in inspect.signature(model.forward).parameters
    logits = []
    for _ in range(steps):
        extra = {"position_ids": (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)} if takes_positions else {}
        logits.append(model(input_ids=ids, attention_mask=mask, use_cache=False, **extra).logits[:, -1])
        ids = torch.cat([ids, logits[-1].argmax(-1, keepdim=True)], dim=1)
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
    return ids, logits


@torch.no_grad()
def cached(model, ids: torch.Tensor, mask: torch.Tensor, steps: int, **options):
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=steps,
        do_sample=False,
        use_cache=True,
        output_logits=True,
        return_dict_in_generate=True,
        **options,
    )
    return out.sequences, list(out.logits)


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("method", [None, *PATCHABLE])
def test_cached_generation_equals_recomputation(lm, method, batch):
    ids, mask = prompts(batch)
    if method and method not in supported_methods(lm):
        pytest.skip(f"{method} refuses this family")
    if method:
        patch(lm, method, **LIVE_KNOBS.get(method, {}))
        move_gates(lm)
    try:
        tokens, logits = cached(lm, ids, mask, STEPS)
        expected_tokens, expected_logits = recompute(lm, ids, mask, STEPS)
    finally:
        unpatch(lm)
    assert torch.equal(tokens, expected_tokens)
    for step, (ours, theirs) in enumerate(zip(logits, expected_logits)):
        torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4, msg=f"step {step}")


def test_patch_changes_generation_and_beam_search_follows_the_cache():
    """De-escalation changes what a tiny Llama generates; beam search with the cache (reordered
    every step) gives the beams of beam search without it."""
    torch.manual_seed(0)
    config = CONFIGS["llama"]()
    config.initializer_range = 0.2
    model = perturb(tf.AutoModelForCausalLM.from_config(config)).eval()
    model.generation_config.eos_token_id, model.generation_config.pad_token_id = None, 0
    ids, mask = prompts(2)
    with torch.no_grad():
        plain = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=STEPS, do_sample=False)
        patch(model, "deescalate", tau=1.0)
        try:
            greedy = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=STEPS, do_sample=False)
            beams = [
                model.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    max_new_tokens=STEPS,
                    num_beams=3,
                    num_return_sequences=3,
                    do_sample=False,
                    use_cache=use_cache,
                )
                for use_cache in (True, False)
            ]
        finally:
            unpatch(model)
    assert not torch.equal(plain, greedy)
    assert torch.equal(beams[0], beams[1])
    assert "_reorder_cache" not in model.__dict__


def test_a_cache_filled_before_patching_is_refused():
    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(CONFIGS["llama"]()).eval()
    ids, mask = prompts(1)
    with torch.no_grad():
        past = model(input_ids=ids, attention_mask=mask, use_cache=True).past_key_values
        patch(model, "featscale")
        try:
            with pytest.raises(UsageError, match="the KV cache holds 6 tokens but the patch has seen 0"):
                model(
                    input_ids=ids[:, :1],
                    attention_mask=torch.ones(1, 7, dtype=torch.long),
                    past_key_values=past,
                    use_cache=True,
                )
        finally:
            unpatch(model)
