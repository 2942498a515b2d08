"""What one call of a function costs besides time: FLOPs, memory traffic and activation memory.

``flops`` uses ``torch.utils.flop_counter.FlopCounterMode``, which counts matmuls, convolutions
and attention only (elementwise work is free to it); torch registers no formula for the CPU's
fused attention kernel, so this module registers torch's own SDPA formulas for it.
``traffic_bytes`` counts what those FLOPs leave out: the bytes read and written by every other
op (elementwise, reductions, copies), the memory traffic that bounds their time.
``activation_bytes`` is what autograd keeps for backward (parameters excluded): on a CPU, the
part of the peak memory that a method can change; ``peak_bytes`` is the CUDA peak on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils import flop_counter
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

_aten = torch.ops.aten
for _cpu, _gpu in (
    (_aten._scaled_dot_product_flash_attention_for_cpu, _aten._scaled_dot_product_flash_attention),
    (_aten._scaled_dot_product_flash_attention_for_cpu_backward, _aten._scaled_dot_product_flash_attention_backward),
):
    flop_counter.flop_registry.setdefault(_cpu, flop_counter.flop_registry[_gpu])  # same leading arguments


def flops(fn: Callable[[], object]) -> int:
    """FLOPs of one call of ``fn`` (multiply-add = 2), as ``FlopCounterMode`` counts them."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def _bytes(t: torch.Tensor) -> int:
    """Bytes an op touches in ``t``: its elements, or its storage if smaller (broadcast views)."""
    return min(t.numel() * t.element_size(), t.untyped_storage().nbytes())


class _Traffic(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not func.is_view and func.overloadpacket not in flop_counter.flop_registry:
            self.bytes += sum(_bytes(t) for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor))
        return out


def traffic_bytes(fn: Callable[[], object]) -> int:
    """Bytes read and written by the ops of one call of ``fn`` that ``flops`` does not count
    (views excluded): a lower bound on their memory traffic (each operand counted once per op)."""
    with _Traffic() as mode:
        fn()
    return mode.bytes


def activation_bytes(fn: Callable[[], object]) -> int:
    """Bytes of the distinct storages autograd saves for backward during ``fn``, parameters
    excluded (saved views of one storage count once)."""
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if not (t.is_leaf and t.requires_grad):
            storage = t.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(seen.values())


def peak_bytes(fn: Callable[[], object], device: torch.device | str) -> int:
    """CUDA: the peak memory above what was allocated before ``fn``; elsewhere ``activation_bytes``."""
    if torch.device(device).type != "cuda":
        return activation_bytes(fn)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base
