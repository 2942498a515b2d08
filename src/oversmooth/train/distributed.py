"""Process-group setup for ``torchrun``: one process per device, gloo on CPU, nccl on GPU."""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import sys
from dataclasses import dataclass

import torch
import torch.distributed as dist

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass(frozen=True)
class Distributed:
    """Where this process sits: ``rank`` of ``world_size`` on ``device``."""

    rank: int = 0
    world_size: int = 1
    device: torch.device = torch.device("cpu")

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def all_reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` over processes (returned on its own device); identity when alone."""
        if not self.enabled:
            return tensor
        reduced = tensor.to(self.device, copy=True)
        dist.all_reduce(reduced)
        return reduced.to(tensor.device)

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()


def setup_distributed(device: str = "auto") -> Distributed:
    """Join the process group that ``torchrun`` describes in the environment, if any.

    ``device``: ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``. Under torchrun each
    process takes GPU ``LOCAL_RANK``.
    """
    use_cuda = torch.cuda.is_available() if device == "auto" else device == "cuda"
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    target = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(target)
    if world_size == 1:
        return Distributed(device=target)
    exit_with_parent()
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return Distributed(dist.get_rank(), dist.get_world_size(), target)


def exit_with_parent() -> None:
    """Have the kernel send this process SIGTERM when its parent dies (Linux ``prctl``
    ``PR_SET_PDEATHSIG``): a torchrun worker whose agent is killed stops instead of living on.
    Elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def teardown_distributed() -> None:
    """Leave the process group while the interpreter is fully alive: objects that still hold it
    (a DDP reducer in a reference cycle) are collected first, so gloo's worker threads are not
    torn down during interpreter finalisation."""
    if dist.is_initialized():
        gc.collect()
        dist.destroy_process_group()
