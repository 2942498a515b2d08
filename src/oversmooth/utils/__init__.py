"""Plumbing that every package may use and that knows nothing of Transformers: atomic writes,
damaged-JSON reading, lazy exports, memory checks, output-folder rules, plotting, provenance,
seeds, tensor argument guards and thread pools. The domain's own shared modules (``activations``, ``errors``)
stay at the top of ``oversmooth``."""
