"""Interleaved rounds run every contender once per round in rotated order; the bootstrap CI of a
median ratio covers the true ratio about as often as its level says."""

import random
import statistics

import pytest
import torch

from oversmooth.bench.timing import allow_compiled_models, interleaved_rounds, ratio


def test_rounds_run_everyone_once_in_varying_order_and_drop_the_warm_up():
    calls = []
    contenders = {name: (lambda name=name: calls.append(name)) for name in "abcd"}
    times = interleaved_rounds(contenders, rounds=40, warmup=1, number=2)
    assert {name: len(t) for name, t in times.items()} == {name: 40 for name in "abcd"}
    assert len(calls) == 41 * 4 * 2 and calls[::2] == calls[1::2]  # a measurement: 2 calls in a row
    rounds = [calls[i : i + 8 : 2] for i in range(0, len(calls), 8)]
    assert all(sorted(r) == list("abcd") for r in rounds)
    predecessors = {(r[i - 1], r[i]) for r in rounds for i in range(1, 4)}
    assert len(predecessors) == 12  # every contender follows every other one in some round


def test_paired_ratio_cancels_a_slow_round():
    times = {"base": [1.0, 1.0, 5.0, 1.0, 1.0], "new": [1.2, 1.2, 6.0, 1.2, 1.2]}
    r = ratio(times, "new", "base")
    assert r.median == pytest.approx(1.2) and r.low == pytest.approx(1.2) and r.high == pytest.approx(1.2)


def test_bootstrap_interval_covers_the_true_median_ratio():
    """Per-round ratios drawn around a known median 1.05: the 95 % interval should miss it in
    about 5 % of studies (percentile bootstrap of a median runs a little narrow at 15 rounds)."""
    rng = random.Random(0)
    trials, covered = 300, 0
    for trial in range(trials):
        base = [rng.uniform(0.5, 2.0) for _ in range(15)]  # machine load varies from round to round
        new = [b * 1.05 * rng.lognormvariate(0.0, 0.03) for b in base]
        r = ratio({"base": base, "new": new}, "new", "base", resamples=1000, seed=trial)
        assert r.low <= r.median <= r.high
        covered += r.low <= 1.05 <= r.high
    assert 0.85 <= covered / trials <= 0.995, covered / trials


def test_median_is_the_median_of_per_round_ratios():
    rng = random.Random(1)
    base = [rng.uniform(1, 2) for _ in range(9)]
    new = [rng.uniform(1, 2) for _ in range(9)]
    assert ratio({"b": base, "n": new}, "n", "b").median == statistics.median(n / b for n, b in zip(new, base))


def test_many_compiled_models_of_one_class_all_compile():
    """Twelve compiled models of one class and different structure (as the benchmarks' methods
    are): past dynamo's default limit of 8 guard sets on the shared forward, the rest would run
    eagerly without a word; with the limit raised all twelve compile, and one more than allowed
    is an error, never a silent eager step."""
    graphs = []

    def backend(graph, example_inputs):  # counts compilations, runs the captured graph as is
        graphs.append(graph)
        return graph.forward

    def model(layers: int) -> torch.nn.Module:
        return torch.nn.Sequential(*(torch.nn.Linear(3, 3) for _ in range(layers)))

    x = torch.ones(2, 3)
    config = torch._dynamo.config
    torch._dynamo.reset()
    with config.patch(
        recompile_limit=config.recompile_limit, fail_on_recompile_limit_hit=config.fail_on_recompile_limit_hit
    ):  # restored on exit
        allow_compiled_models(12)
        for layers in range(1, 13):
            torch.compile(model(layers), backend=backend)(x)
        assert len(graphs) == 12
        with pytest.raises(Exception, match="recompile_limit|cache_size_limit"):
            torch.compile(model(13), backend=backend)(x)
    torch._dynamo.reset()
    assert config.recompile_limit == 8 and not config.fail_on_recompile_limit_hit
