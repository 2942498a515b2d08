"""Many small decompositions spread over the CPU cores.

LAPACK on one small matrix (an eigensolve of 128 x 128 or 384 x 384) runs 4-6x slower with
several threads than with one on a shared CPU, so ``single_thread`` pins torch to one thread.
``thread_map`` then gets the cores back by running independent pieces (layers of states) on
one Python thread each: torch releases the GIL inside its kernels, so they run side by side.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

Item = TypeVar("Item")
Result = TypeVar("Result")


def set_threads(count: int | None) -> None:
    """Run torch on ``count`` intra-op threads from now on (None: leave torch's choice), as every
    command's ``--threads`` does."""
    if count is not None:
        torch.set_num_threads(count)


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run torch on one intra-op thread inside the block, then restore the previous count."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def thread_map(fn: Callable[[Item], Result], items: Sequence[Item]) -> list[Result]:
    """``[fn(item) for item in items]`` on as many threads as torch had, each single-threaded.

    Results keep the order of ``items``; the first exception raised by ``fn`` is re-raised.
    The caller's grad mode (thread-local in torch) holds in the workers too. Called with torch
    already on one thread (e.g. nested), it runs serially.

    >>> thread_map(lambda m: torch.linalg.eigvalsh(m).tolist(), [torch.eye(2), 2 * torch.eye(2)])
    [[1.0, 1.0], [2.0, 2.0]]
    """
    workers = min(torch.get_num_threads(), len(items))
    grad = torch.is_grad_enabled()

    def run(item: Item) -> Result:
        with torch.set_grad_enabled(grad):
            return fn(item)

    with single_thread():
        if workers <= 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(workers, thread_name_prefix="oversmooth") as pool:
            return list(pool.map(run, items))
