"""thread_map: the same results as a plain loop, on several threads, with the caller's grad mode."""

from __future__ import annotations

import threading

import pytest
import torch

from oversmooth.metrics import measure
from oversmooth.utils.threads import single_thread, thread_map


@pytest.fixture
def two_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


def test_order_workers_and_single_threaded_torch(two_threads):
    seen = []

    def work(i: int) -> int:
        seen.append((threading.get_ident(), torch.get_num_threads()))
        threading.Event().wait(0.02)  # long enough that both workers take an item
        return i * i

    assert thread_map(work, range(6)) == [i * i for i in range(6)]
    assert len({ident for ident, _ in seen}) == 2
    assert {threads for _, threads in seen} == {1}
    assert torch.get_num_threads() == 2  # restored


def test_nested_call_runs_serially(two_threads):
    with single_thread():
        idents = thread_map(lambda _: threading.get_ident(), range(4))
    assert set(idents) == {threading.get_ident()}


def test_exception_reaches_the_caller(two_threads):
    def work(i: int) -> int:
        if i == 3:
            raise ValueError("item 3")
        return i

    with pytest.raises(ValueError, match="item 3"):
        thread_map(work, range(5))
    assert torch.get_num_threads() == 2


def test_grad_mode_follows_the_caller(two_threads):
    w = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        assert not any(thread_map(lambda _: (w * 2).requires_grad, range(4)))
    assert all(thread_map(lambda _: (w * 2).requires_grad, range(4)))


def test_measure_on_threads_equals_a_serial_measure(two_threads):
    torch.manual_seed(0)
    states = [torch.randn(3, 9, 6) for _ in range(5)]
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, 6:] = False
    attentions = [torch.softmax(torch.randn(3, 2, 9, 9), dim=-1) for _ in range(5)]
    parallel = measure(states, mask, attentions=attentions)
    with single_thread():
        serial = measure(states, mask, attentions=attentions)
    assert parallel.equals(serial)
