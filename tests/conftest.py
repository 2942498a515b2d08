import os

# Nothing in the test suite may reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Tiny tensors on a shared 2-core box: one intra-op thread avoids OpenMP spin contention
# (measured: tests/test_layers_* + test_models_* take 197 s with 2 threads, 8 s with 1).
import torch  # noqa: E402

torch.set_num_threads(1)
