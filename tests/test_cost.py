"""FLOPs and activation bytes against counts written out by hand."""

import torch
import torch.nn.functional as F

from oversmooth.bench.cost import activation_bytes, flops, traffic_bytes


def test_attention_and_linear_flops_on_the_cpu():
    b, h, n, d = 2, 3, 10, 8
    q, k, v = (torch.randn(b, h, n, d) for _ in range(3))
    assert flops(lambda: F.scaled_dot_product_attention(q, k, v)) == 2 * (2 * b * h * n * n * d)  # QK^T, AV
    x, w = torch.randn(b, n, 5), torch.randn(7, 5)
    assert flops(lambda: F.linear(x, w)) == 2 * b * n * 5 * 7


def test_activation_bytes_count_each_saved_storage_once():
    x = torch.randn(100, requires_grad=True)  # a leaf that requires grad: a parameter-like input
    y = x * 2  # saved by nothing (scalar multiply keeps no tensor)
    assert activation_bytes(lambda: (y * y).sum()) == 100 * 4  # y, saved twice, counted once
    assert activation_bytes(lambda: (x * x).sum()) == 0


def test_traffic_counts_elementwise_operands_and_skips_matmuls_and_views():
    a, b = torch.randn(10, 20), torch.randn(10, 20)
    assert traffic_bytes(lambda: a + b) == 3 * 200 * 4  # two reads, one write
    assert traffic_bytes(lambda: a + b[:1]) == (200 + 20 + 200) * 4  # a broadcast row is read once
    assert traffic_bytes(lambda: a.T.sum(0)) == (200 + 10) * 4  # the view is free
    assert traffic_bytes(lambda: a @ b.T) == 0  # counted by flops instead
