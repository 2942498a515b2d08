"""Attention measures on ``attn: [batch, heads, n, n]`` (rows are queries and sum to 1).

Masked: only counted queries and keys enter. Each returns ``[batch]`` (mean over heads), or
``[batch, heads]`` with ``per_head=True``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from oversmooth.errors import UsageError
from oversmooth.metrics.tokens import valid_tokens
from oversmooth.utils.tensors import check_tensor


def _check(attn: Tensor) -> None:
    if check_tensor(attn, "attention maps", "[batch, heads, n, n]").shape[-1] != attn.shape[-2]:
        raise UsageError(f"attention must be [batch, heads, n, n], got {tuple(attn.shape)}")


def _pair_mask(attn: Tensor, mask: Tensor | None, exclude: Sequence[int]) -> Tensor:
    """``[batch, 1, n, n]`` True where both query and key are counted."""
    valid = valid_tokens(attn[:, 0], mask, exclude)
    return (valid[:, :, None] & valid[:, None, :])[:, None]


def _head_mean(value: Tensor, per_head: bool) -> Tensor:
    return value if per_head else value.mean(dim=1)


def attention_entropy(
    attn: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = (), per_head: bool = False
) -> Tensor:
    """Mean over counted queries of the entropy ``-sum_k a_qk log a_qk`` over counted keys (nats),
    ``attn: [batch, heads, n, n]`` -> ``[batch]`` (``[batch, heads]`` with ``per_head``).

    >>> attention_entropy(torch.full((1, 1, 4, 4), 0.25)).tolist()
    [1.3862943611198906]
    """
    _check(attn)
    pairs = _pair_mask(attn, mask, exclude)
    a = torch.where(pairs, attn.to(torch.float64), 0.0)
    row = -torch.where(a > 0, a * a.clamp_min(torch.finfo(torch.float64).tiny).log(), 0.0).sum(-1)
    queries = pairs.any(dim=-1).to(torch.float64)
    value = (row * queries).sum(-1) / queries.sum(-1).clamp_min(1)
    return _head_mean(value, per_head)


def counted_eigenvalues(attn: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = ()) -> list[Tensor]:
    """Per sequence, the eigenvalues ``[heads, n_b]`` (complex128) of each head's block of
    ``attn: [batch, heads, n, n]`` over its ``n_b`` counted tokens, rows renormalised to sum to 1."""
    _check(attn)
    valid = valid_tokens(attn[:, 0], mask, exclude)
    eigenvalues = []
    for pattern, keep in zip(attn, valid):
        block = pattern[:, keep][:, :, keep].to(torch.float64)
        block = block / block.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(torch.float64).tiny)
        eigenvalues.append(torch.linalg.eigvals(block))
    return eigenvalues


def attention_lambda2(
    attn: Tensor,
    mask: Tensor | None = None,
    exclude: Sequence[int] = (),
    per_head: bool = False,
    eigenvalues: Sequence[Tensor] | None = None,
) -> Tensor:
    """``|lambda_2(A)|``, the second-largest eigenvalue modulus of the counted block of A,
    ``attn: [batch, heads, n, n]`` -> ``[batch]`` (``[batch, heads]`` with ``per_head``).

    The block's rows are renormalised to sum to 1 (lambda_1 = 1). Yu & Zhang: the smaller
    it is, the faster repeated attention drives tokens together. One counted token gives 0.
    ``eigenvalues``: the block's ``counted_eigenvalues``, when the caller has them already.

    >>> round(attention_lambda2(torch.tensor([[[[0.9, 0.1], [0.2, 0.8]]]])).item(), 6)
    0.7
    """
    _check(attn)
    eigenvalues = counted_eigenvalues(attn, mask, exclude) if eigenvalues is None else eigenvalues
    heads = attn.shape[1]
    value = torch.stack(
        [
            eig.abs().sort(dim=-1, descending=True).values[:, 1]
            if eig.shape[-1] > 1
            else attn.new_zeros(heads, dtype=torch.float64)
            for eig in eigenvalues
        ]
    )
    return _head_mean(value, per_head)


def attention_similarity(
    attn_a: Tensor, attn_b: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = (), per_head: bool = False
) -> Tensor:
    """Cosine similarity of two layers' attention maps, head by head (NeuTRENO G.2 redundancy),
    ``attn_a, attn_b: [batch, heads, n, n]`` -> ``[batch]`` (``[batch, heads]`` with ``per_head``).

    >>> a = torch.softmax(torch.randn(2, 3, 5, 5), -1)
    >>> [round(v, 9) for v in attention_similarity(a, a).tolist()]
    [1.0, 1.0]
    """
    _check(attn_a)
    if attn_a.shape != attn_b.shape:
        raise UsageError(f"attention maps differ in shape: {tuple(attn_a.shape)} vs {tuple(attn_b.shape)}")
    pairs = _pair_mask(attn_a, mask, exclude)
    a = torch.where(pairs, attn_a.to(torch.float64), 0.0).flatten(2)
    b = torch.where(pairs, attn_b.to(torch.float64), 0.0).flatten(2)
    value = torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-300)
    return _head_mean(value.clamp(-1.0, 1.0), per_head)


def sink_mass(
    attn: Tensor,
    mask: Tensor | None = None,
    exclude: Sequence[int] = (),
    per_head: bool = False,
    sinks: Sequence[int] = (0,),
) -> Tensor:
    """The attention share on the sink positions ``sinks`` (default: the first token, Xiao et al.
    2023, StreamingLLM), averaged over counted queries, ``attn: [batch, heads, n, n]`` -> ``[batch]``
    (mean over heads) or ``[batch, heads]``. Sinks are keys whatever ``exclude`` says (a causal
    LM's first token is excluded from the similarity measures because it is the sink); queries are
    the counted tokens.

    >>> a = torch.tensor([[[[1.0, 0.0], [0.75, 0.25]]]])
    >>> sink_mass(a).tolist()  # queries 0 and 1 put 1 and 0.75 on token 0
    [0.875]
    """
    _check(attn)
    n = attn.shape[-1]
    for position in sinks:
        if not -n <= position < n:
            raise UsageError(f"sink position {position} is outside sequences of {n} tokens")
    keys = torch.zeros(n, dtype=torch.bool, device=attn.device)
    keys[list(sinks)] = True
    queries = valid_tokens(attn[:, 0], mask, exclude).to(torch.float64)[:, None, :]  # [batch, 1, n]
    share = attn.to(torch.float64)[..., keys].sum(dim=-1)  # [batch, heads, n]
    value = (share * queries).sum(-1) / queries.sum(-1).clamp_min(1)
    return _head_mean(value, per_head)


#: Gu et al.'s threshold on a head's mean attention to the first token
SINK_EPSILON = 0.3


def sink_rate(
    attn: Tensor, mask: Tensor | None = None, exclude: Sequence[int] = (), epsilon: float = SINK_EPSILON
) -> Tensor:
    """The share of heads that are sinks: a head whose mean attention on the first token, over the
    counted queries (``sink_mass`` per head), is at least ``epsilon`` (Gu et al., "When Attention
    Sink Emerges in Language Models", ICLR 2025, arXiv 2410.10781: epsilon = 0.3), ``attn: [batch,
    heads, n, n]`` -> ``[batch]`` in [0, 1]. The first token is a key whatever ``exclude`` says;
    the queries are the counted tokens (a causal LM's first query, which sees only itself, is
    left out with ``exclude=(0,)``). NaN for a sequence with no counted query.

    >>> a = torch.tensor([[[[1.0, 0.0], [0.5, 0.5]], [[1.0, 0.0], [0.1, 0.9]]]])
    >>> sink_rate(a, exclude=(0,)).tolist()  # query 1 puts 0.5 and 0.1 on token 0: one head of two
    [0.5]
    """
    mass = sink_mass(attn, mask, exclude, per_head=True)
    rate = (mass >= epsilon).to(torch.float64).mean(dim=1)
    queries = valid_tokens(attn[:, 0], mask, exclude).any(dim=1)
    return torch.where(queries, rate, torch.nan)
