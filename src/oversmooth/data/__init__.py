"""Offline data sets (``make`` installs them: scripts/install_data.sh): Fashion-MNIST, Jane Austen,
user text files, a synthetic task.

This package knows nothing of models or training: it returns arrays and documents.
"""

from oversmooth.data.austen import NOVELS, default_austen_dir, load_austen
from oversmooth.data.documents import (
    SPLITS,
    Document,
    passages,
    read_text_file,
    read_text_files,
    reflow,
    split_documents,
    split_text,
)
from oversmooth.data.fashion_mnist import CLASSES, ImageSplit, load_fashion_mnist
from oversmooth.data.fashion_mnist import DEFAULT_DIR as FASHION_MNIST_DIR
from oversmooth.data.idx import read_idx
from oversmooth.data.synthetic import synthetic_images, synthetic_tokens
from oversmooth.data.token_blocks import blocks, token_stream
from oversmooth.data.tokenizer import END_OF_TEXT, cached_tokenizer, default_cache_dir, train_tokenizer

__all__ = [
    "NOVELS",
    "default_austen_dir",
    "load_austen",
    "SPLITS",
    "Document",
    "passages",
    "read_text_file",
    "read_text_files",
    "reflow",
    "split_documents",
    "split_text",
    "CLASSES",
    "FASHION_MNIST_DIR",
    "ImageSplit",
    "load_fashion_mnist",
    "read_idx",
    "synthetic_images",
    "synthetic_tokens",
    "blocks",
    "token_stream",
    "END_OF_TEXT",
    "cached_tokenizer",
    "default_cache_dir",
    "train_tokenizer",
]
