"""Tiny random Hugging Face models of every supported family, built in code (no downloads), and
text in their tiny vocabulary."""

from __future__ import annotations

import random

import torch
import transformers as tf

from oversmooth.hf.load import encoder_of

_TEXT = dict(vocab_size=50, max_position_embeddings=40)
_BERT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48, **_TEXT)
_DECODER = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=48,
    vocab_size=50,
    max_position_embeddings=64,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)
_VISION = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=48,
    image_size=16,
    patch_size=4,
    num_channels=3,
)

# kind -> config; encoder-decoder kinds are analysed through their encoder (``tiny_model``).
CONFIGS = {
    "bert": lambda: tf.BertConfig(pad_token_id=0, **_BERT),
    "roberta": lambda: tf.RobertaConfig(pad_token_id=1, **_BERT),
    "xlm_roberta": lambda: tf.XLMRobertaConfig(pad_token_id=1, **_BERT),
    "electra": lambda: tf.ElectraConfig(pad_token_id=0, embedding_size=16, **_BERT),
    "albert": lambda: tf.AlbertConfig(pad_token_id=0, embedding_size=16, **_BERT),  # one shared layer
    "distilbert": lambda: tf.DistilBertConfig(dim=32, n_layers=2, n_heads=4, hidden_dim=48, pad_token_id=0, **_TEXT),
    "gpt2": lambda: tf.GPT2Config(
        n_embd=32, n_layer=2, n_head=4, vocab_size=50, n_positions=40, bos_token_id=0, eos_token_id=0
    ),
    "llama": lambda: tf.LlamaConfig(num_key_value_heads=2, **_DECODER),
    "mistral": lambda: tf.MistralConfig(num_key_value_heads=2, **_DECODER),
    "qwen2": lambda: tf.Qwen2Config(num_key_value_heads=2, **_DECODER),  # biases on q, k, v
    "qwen3": lambda: tf.Qwen3Config(num_key_value_heads=2, head_dim=16, **_DECODER),  # head_dim != d / H
    "gemma": lambda: tf.GemmaConfig(num_key_value_heads=1, head_dim=16, **_DECODER),  # MQA
    "gemma2": lambda: tf.Gemma2Config(num_key_value_heads=2, head_dim=16, **_DECODER),  # sandwich norms
    "gemma3": lambda: tf.Gemma3TextConfig(num_key_value_heads=2, head_dim=16, **_DECODER),
    "phi": lambda: tf.PhiConfig(**_DECODER),  # parallel attention + MLP, one norm
    "phi3": lambda: tf.Phi3Config(num_key_value_heads=2, **_DECODER),  # fused qkv_proj with GQA
    "gpt_neox": lambda: tf.GPTNeoXConfig(**_DECODER),  # parallel, two norms, per-head fused QKV
    "gpt_neox_sequential": lambda: tf.GPTNeoXConfig(use_parallel_residual=False, **_DECODER),
    "opt": lambda: tf.OPTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        ffn_dim=48,
        vocab_size=50,
        max_position_embeddings=64,
        word_embed_proj_dim=32,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    ),
    "opt_post": lambda: tf.OPTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        ffn_dim=48,
        vocab_size=50,
        max_position_embeddings=64,
        word_embed_proj_dim=32,
        do_layer_norm_before=False,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    ),
    "vit": lambda: tf.ViTConfig(**_VISION),
    "deit": lambda: tf.DeiTConfig(**_VISION),
    "dinov2": lambda: tf.Dinov2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        mlp_ratio=2,
        image_size=16,
        patch_size=4,
        num_channels=3,
    ),
    "t5": lambda: tf.T5Config(d_model=32, d_ff=48, num_layers=2, num_heads=4, d_kv=8, vocab_size=50, pad_token_id=0),
    "bart": lambda: tf.BartConfig(
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=48,
        decoder_ffn_dim=48,
        vocab_size=50,
        max_position_embeddings=64,
        pad_token_id=1,
    ),
}
ALL_FAMILIES = tuple(CONFIGS)
TINY_FAMILIES = ("bert", "roberta", "distilbert", "gpt2", "vit", "deit", "llama")  # one of each kind, for the
# module-level tests; tests/test_hf_families.py checks every kind
VISION = ("vit", "deit", "dinov2")
ENCODER_DECODER = ("t5", "bart")


def perturb(model):
    """Random norm weights (some negative) and layer scales, drawn from torch's global generator, so
    every module the discovery and the hooks rely on changes the stream."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            lowered = name.lower()
            if (
                p.dim() == 1
                and ("norm" in lowered or "layer_scale" in lowered)
                and lowered.endswith(("weight", "lambda1", "lambda2"))
            ):
                p.copy_(torch.randn_like(p))
    return model


#: knobs at which a patch whose defaults are the identity, or find nothing to act on in a tiny random
#: model (no activation there is 100 times its token's median), changes it
LIVE_KNOBS = {"layerscale": {"gamma": 0.5}, "massive_clip": {"ratio": 2.0}}


def move_gates(model, seed: int = 0):
    """What adaptation does to gated attention's patch: its gate weights move away from 0 (drawn here)."""
    from oversmooth.mitigations.gated_attention import Gate

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, Gate):
                for p in module.parameters():
                    p.copy_(torch.randn(p.shape, generator=g))
    return model


def tiny_model(kind: str, seed: int = 0, attn: str = "eager"):
    """A tiny random base model in eval mode (an encoder-decoder kind: its encoder), with perturbed
    norm weights."""
    torch.manual_seed(seed)
    model = tf.AutoModel.from_config(CONFIGS[kind](), attn_implementation=attn).eval()
    return perturb(encoder_of(model))


def tiny_inputs(kind: str, seed: int = 1) -> dict[str, torch.Tensor]:
    """Two sequences of 7 tokens, the second right-padded by 2 (text), or two 16x16 images."""
    g = torch.Generator().manual_seed(seed)
    if kind in VISION:
        return {"pixel_values": torch.randn(2, 3, 16, 16, generator=g)}
    ids = torch.randint(3, 50, (2, 7), generator=g)
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 5:] = 0
    ids[1, 5:] = CONFIGS[kind]().pad_token_id or 0
    return {"input_ids": ids, "attention_mask": mask}


WORDS = (
    "the a of and to in was she he it her his that with for as had you not be is on at by but "
    "have which were so all this from they my very no said been an one would"
).split()


def prose(paragraph_words: list[int], seed: int = 0) -> str:
    """Paragraphs of WORDS (one per count, that many words), joined by blank lines; each word
    follows from the one before by one of three steps: structure a tiny LM can learn."""
    rng, paragraphs = random.Random(seed), []
    for count in paragraph_words:
        word, words = rng.choice(WORDS), []
        for _ in range(count):
            words.append(word)
            word = WORDS[(WORDS.index(word) * 7 + rng.choice((1, 2, 3))) % len(WORDS)]
        paragraphs.append(" ".join(words))
    return "\n\n".join(paragraphs)


#: a short essay's worth (about 17 kB, twelve paragraphs)
ESSAY_WORDS = [150, 420, 300, 520, 260, 480, 350, 400, 290, 450, 330, 400]


def tiny_tokenizer():
    """A word-level fast tokenizer over WORDS (+ [PAD] [UNK] [CLS] [SEP]), built in code."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_max_length=32,
    )


def save_tiny(kind: str, folder):
    """Save a tiny model (and for text a tokenizer) as a checkpoint folder; returns its path."""
    torch.manual_seed(0)
    model = tf.AutoModel.from_config(CONFIGS[kind](), attn_implementation="sdpa").eval()
    perturb(model).save_pretrained(folder)
    if kind not in VISION:
        tiny_tokenizer().save_pretrained(folder)
    return folder


HEADS = {
    "gpt2": "GPT2LMHeadModel",
    "llama": "LlamaForCausalLM",
    "bert": "BertForMaskedLM",
    "vit": "ViTForImageClassification",
}


def save_tiny_with_head(kind: str, folder, seed: int = 0, head: str | None = None):
    """Save a tiny model with its task head (``head``, default ``HEADS[kind]``) and, for text,
    the tiny tokenizer.

    Weights are drawn 10x wider than transformers' default, so the outputs are far from uniform
    and a patch that breaks the model shows in its loss.
    """
    torch.manual_seed(seed)
    config = CONFIGS[kind]()
    config.initializer_range = 0.2
    if kind in VISION:
        config.num_labels = 5
    getattr(tf, head or HEADS[kind])(config).eval().save_pretrained(folder)
    if kind not in VISION:
        tokenizer = tiny_tokenizer()
        tokenizer.add_special_tokens({"mask_token": "[MASK]"}) if "Masked" in (head or HEADS[kind]) else None
        tokenizer.save_pretrained(folder)
    return folder


def write_images(folder, count: int, size: tuple[int, int] = (16, 16)):
    """``count`` solid-colour RGB PNGs of ``size`` (width, height) in a new ``folder``; returns it."""
    from PIL import Image

    folder.mkdir()
    for i in range(count):
        Image.new("RGB", size, (50 * i, 90, 200 - 40 * i)).save(folder / f"{i}.png")
    return folder
