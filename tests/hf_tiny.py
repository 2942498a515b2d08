"""Tiny random Hugging Face models of every supported family, built in code (no downloads)."""

from __future__ import annotations

import torch
from transformers import (AutoModel, BertConfig, DeiTConfig, DistilBertConfig, GPT2Config,
                          LlamaConfig, RobertaConfig, ViTConfig)

_TEXT = dict(vocab_size=50, max_position_embeddings=40)
_VISION = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
               image_size=16, patch_size=4, num_channels=3)

CONFIGS = {
    "bert": lambda: BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                               intermediate_size=48, pad_token_id=0, **_TEXT),
    "roberta": lambda: RobertaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=48, pad_token_id=1, **_TEXT),
    "distilbert": lambda: DistilBertConfig(dim=32, n_layers=2, n_heads=4, hidden_dim=48, pad_token_id=0,
                                           **_TEXT),
    "gpt2": lambda: GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=50, n_positions=40,
                               bos_token_id=0, eos_token_id=0),
    "vit": lambda: ViTConfig(**_VISION),
    "deit": lambda: DeiTConfig(**_VISION),
    "llama": lambda: LlamaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                 num_key_value_heads=2, intermediate_size=48, vocab_size=50,
                                 max_position_embeddings=40),
}
FAMILIES = tuple(CONFIGS)


def tiny_model(kind: str, seed: int = 0, attn: str = "eager"):
    """A tiny random model in eval mode, with perturbed norm weights (some negative)."""
    torch.manual_seed(seed)
    model = AutoModel.from_config(CONFIGS[kind](), attn_implementation=attn).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() and name.endswith("weight"):
                p.copy_(torch.randn_like(p))
    return model


def tiny_inputs(kind: str, seed: int = 1) -> dict[str, torch.Tensor]:
    """Two sequences of 7 tokens, the second right-padded by 2 (text), or two 16x16 images."""
    g = torch.Generator().manual_seed(seed)
    if kind in ("vit", "deit"):
        return {"pixel_values": torch.randn(2, 3, 16, 16, generator=g)}
    ids = torch.randint(3, 50, (2, 7), generator=g)
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 5:] = 0
    ids[1, 5:] = CONFIGS[kind]().pad_token_id or 0
    return {"input_ids": ids, "attention_mask": mask}


WORDS = ("the a of and to in was she he it her his that with for as had you not be is on at by "
         "but have which were so all this from they my very no said been an one would").split()


def tiny_tokenizer():
    """A word-level fast tokenizer over WORDS (+ [PAD] [UNK] [CLS] [SEP]), built in code."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", model_max_length=32)


def save_tiny(kind: str, folder):
    """Save a tiny model (and for text a tokenizer) as a checkpoint folder; returns its path."""
    tiny_model(kind, attn="sdpa").save_pretrained(folder)
    if kind not in ("vit", "deit"):
        tiny_tokenizer().save_pretrained(folder)
    return folder


HEADS = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM", "bert": "BertForMaskedLM",
         "vit": "ViTForImageClassification"}


def save_tiny_with_head(kind: str, folder, seed: int = 0):
    """Save a tiny model with its task head (``HEADS``) and, for text, the tiny tokenizer.

    Weights are drawn 10x wider than transformers' default, so the outputs are far from uniform
    and a patch that breaks the model shows in its loss.
    """
    import transformers
    torch.manual_seed(seed)
    config = CONFIGS[kind]()
    config.initializer_range = 0.2
    if kind == "vit":
        config.num_labels = 5
    getattr(transformers, HEADS[kind])(config).eval().save_pretrained(folder)
    if kind != "vit":
        tokenizer = tiny_tokenizer()
        tokenizer.add_special_tokens({"mask_token": "[MASK]"}) if kind == "bert" else None
        tokenizer.save_pretrained(folder)
    return folder


def write_images(folder, count: int, size: tuple[int, int] = (16, 16)):
    """``count`` solid-colour RGB PNGs of ``size`` (width, height) in a new ``folder``; returns it."""
    from PIL import Image
    folder.mkdir()
    for i in range(count):
        Image.new("RGB", size, (50 * i, 90, 200 - 40 * i)).save(folder / f"{i}.png")
    return folder
