"""Naive reference implementations (numpy, explicit loops) of the metric table in docs/metrics.md, written separately
from oversmooth.metrics. Each takes one sequence's counted tokens as an [n, d] float64 array."""

import itertools

import numpy as np


def cos_sim(x):
    n = len(x)
    if n == 1:
        return 1.0
    total = 0.0
    for i, j in itertools.permutations(range(n), 2):
        ni, nj = np.linalg.norm(x[i]), np.linalg.norm(x[j])
        total += 0.0 if ni == 0 or nj == 0 else float(x[i] @ x[j]) / (ni * nj)
    return total / (n * (n - 1))


def t_sim(x):
    """Through the mean pairwise squared distance: D = 2 (mean |x|^2 - |xbar|^2)."""
    n = len(x)
    energy = sum(float(v @ v) for v in x) / n
    if energy == 0:
        return 1.0
    distance = sum(float((a - b) @ (a - b)) for a in x for b in x) / n**2
    return 1.0 - distance / (2 * energy)


def composite_norm(m):
    return np.sqrt(np.abs(m).sum(axis=0).max() * np.abs(m).sum(axis=1).max())


def centred_residual(x):
    scale = composite_norm(x)
    return 0.0 if scale == 0 else composite_norm(x - x.mean(axis=0)) / scale


def effective_rank(x):
    s = np.linalg.svd(x - x.mean(axis=0), compute_uv=False)
    if s.max() <= 1e-12 * np.linalg.norm(x):
        return 1.0
    p = s / s.sum()
    p = p[p > 0]
    return float(np.exp(-(p * np.log(p)).sum()))


def stable_rank(x):
    top = np.linalg.norm(x, 2)
    return 1.0 if top == 0 else np.linalg.norm(x, "fro") ** 2 / top**2


def attention_entropy(a):
    """a: one head's [n, n] attention over counted tokens."""
    rows = [-sum(p * np.log(p) for p in row if p > 0) for row in a]
    return float(np.mean(rows))


def attention_lambda2(a):
    if len(a) == 1:
        return 0.0
    a = a / a.sum(axis=1, keepdims=True)
    return float(sorted(np.abs(np.linalg.eigvals(a)), reverse=True)[1])


def attention_similarity(a, b):
    a, b = a.ravel(), b.ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _ratio(top, scale):
    if scale == 0:
        return 1.0 if top == 0 else float("inf")
    return top / scale


def massive_ratio(x):
    """x: the real tokens, [n, d] (whatever is excluded elsewhere)."""
    entries = [abs(float(v)) for row in x for v in row]
    return _ratio(max(entries), float(np.median(entries)))


def first_token_norm(x):
    """x: the real tokens, the first one first."""
    norms = [float(np.sqrt(sum(float(v) ** 2 for v in row))) for row in x]
    return _ratio(norms[0], float(np.median(norms)))


def repr_entropy(x):
    """x: the real tokens; von Neumann entropy (nats) of K / tr K, K = X X^T, not centred."""
    gram = np.array([[float(a @ b) for b in x] for a in x])
    if np.trace(gram) == 0:
        return 0.0
    eigenvalues = np.clip(np.linalg.eigvalsh(gram / np.trace(gram)), 0, None)
    return float(-sum(v * np.log(v) for v in eigenvalues if v > 1e-14 * eigenvalues.max()))


def massive_channels(x, factor=100.0):
    """x: the real tokens; the channels whose max |h| exceeds ``factor`` medians |h|."""
    median = float(np.median(np.abs(x)))
    return [c for c in range(x.shape[1]) if max(abs(float(v)) for v in x[:, c]) > factor * median]


def cos_sim_outlier_free(real, counted):
    """real: the real tokens (they decide the massive channels); counted: the tokens compared (the
    counted ones less position 0), [m, d]; NaN when none."""
    if len(counted) == 0:
        return float("nan")
    massive = set(massive_channels(real))
    kept = [c for c in range(real.shape[1]) if c not in massive]
    return cos_sim(counted[:, kept])


def sink_rate(a, queries, epsilon=0.3):
    """a: one sequence's [heads, n, n] maps; queries: the counted query positions."""
    if not queries:
        return float("nan")
    sinks = [np.mean([a[h][q][0] for q in queries]) >= epsilon for h in range(len(a))]
    return sum(sinks) / len(sinks)
