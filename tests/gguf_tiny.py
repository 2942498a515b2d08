"""A tiny Llama written as a GGUF file with the ``gguf`` package's writer, as llama.cpp's converter
lays it out (Q and K rows permuted for its rotary layout, float32 tensors), with a byte-level BPE
tokenizer. No download."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers as tf

LAYERS, HEADS, KV_HEADS, HIDDEN = 2, 4, 2, 32


def tokens() -> tuple[list[str], list[str]]:
    """The 256 byte symbols, two merges ("th", "the") and an end-of-text control token."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return [*bytes_to_unicode().values(), "th", "the", "<|endoftext|>"], ["t h", "th e"]


def tiny_llama(seed: int = 0) -> tf.LlamaForCausalLM:
    torch.manual_seed(seed)
    vocab = len(tokens()[0])
    config = tf.LlamaConfig(
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        intermediate_size=48,
        vocab_size=vocab,
        max_position_embeddings=64,
        rms_norm_eps=1e-5,
        bos_token_id=vocab - 1,
        eos_token_id=vocab - 1,
        tie_word_embeddings=False,
        initializer_range=0.2,
    )
    return tf.LlamaForCausalLM(config).eval()


def _permute(weight: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's row order for a rotary projection (transformers undoes it on load)."""
    return (
        weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)
    )


def write_gguf(model: tf.LlamaForCausalLM, path: Path, architecture: str = "llama") -> Path:
    """Write ``model`` to ``path`` as GGUF (metadata, tokenizer, float32 tensors)."""
    import gguf

    vocab, merges = tokens()
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name("tiny-llama")
    writer.add_context_length(64)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(48)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(HIDDEN // HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_vocab_size(len(vocab))
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(vocab)
    writer.add_token_types([1] * (len(vocab) - 1) + [3])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(len(vocab) - 1)
    writer.add_eos_token_id(len(vocab) - 1)
    names = {
        "model.embed_tokens.weight": "token_embd.weight",
        "model.norm.weight": "output_norm.weight",
        "lm_head.weight": "output.weight",
    }
    parts = {
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    }
    for layer in range(LAYERS):
        names.update(
            {f"model.layers.{layer}.{ours}.weight": f"blk.{layer}.{theirs}.weight" for ours, theirs in parts.items()}
        )
    for key, tensor in model.state_dict().items():
        array = tensor.detach().numpy().astype(np.float32)
        if key.endswith("q_proj.weight"):
            array = _permute(array, HEADS)
        elif key.endswith("k_proj.weight"):
            array = _permute(array, KV_HEADS)
        writer.add_tensor(names[key], array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
