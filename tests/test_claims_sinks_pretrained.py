"""Claims S1 and S2 (docs/registrations/sinks.md): the decisions on hand-made measurements against
scipy and a hand bootstrap, S2's three-layer rule where the answer is known, and the measurement
end to end on a tiny random LlamaForCausalLM against the model's own forward with the sink masked
by an explicit attention mask and every measure written out by hand."""

import json
import math

import numpy as np
import pytest
import torch
from hf_tiny import ESSAY_WORDS, prose, save_tiny_with_head
from scipy import stats

from oversmooth.claims import sinks_decision as decision
from oversmooth.claims import sinks_pretrained as sinks
from oversmooth.claims.verdicts import PairedClaim, decide_family


def write_measurement(results, model, unpatched, removed, extra=None, depth=None):
    """A measurement file as ``sinks_pretrained`` writes it, from per-passage arrays."""
    arms = {sinks.UNPATCHED: unpatched, sinks.REMOVED: removed}
    record = {
        "model": f"hand-made {model}",
        "depth": depth or len(unpatched["cos_sim"][0]) - 1,
        "dtype": "float32",
        "attention": "eager",
        "text": {"passages": len(unpatched["cos_sim"]), "tokens": 128},
        "arms": {arm: {k: np.asarray(v).tolist() for k, v in values.items()} for arm, values in arms.items()},
        "command": "hand-made",
        **(extra or {}),
    }
    path = sinks.result_path(results, model)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


def s1_measurement(results, seed=0, passages=12, depth=4):
    rng = np.random.default_rng(seed)
    unpatched = rng.uniform(0.2, 0.6, (passages, depth + 1))
    removed = unpatched + rng.normal(0.01, 0.02, (passages, depth + 1))
    removed[:, 0] = unpatched[:, 0]  # the embeddings are not touched
    nll = rng.uniform(3, 4, (2, passages))
    stream = {"cos_sim_outlier_free": unpatched - 0.1}
    write_measurement(
        results,
        "smollm2",
        {"cos_sim": unpatched, "nll": nll[0], **stream},
        {"cos_sim": removed, "nll": nll[1], "cos_sim_outlier_free": removed - 0.05},
    )
    return unpatched, removed, nll


def test_s1_row_against_scipy(tmp_path):
    unpatched, removed, nll = s1_measurement(tmp_path)
    row = decision.s1_row(tmp_path)
    per_passage_removed, per_passage_unpatched = removed[:, 1:].mean(1), unpatched[:, 1:].mean(1)
    reference = stats.ttest_rel(per_passage_removed, per_passage_unpatched)
    low, high = reference.confidence_interval(0.95)
    numbers = row["numbers"]
    assert numbers["p"] == pytest.approx(reference.pvalue, rel=1e-9)
    assert numbers["t"] == pytest.approx(reference.statistic, rel=1e-9)
    assert numbers["ci95"] == pytest.approx([low, high], rel=1e-9)
    assert numbers["mean"] == pytest.approx(np.mean(per_passage_removed - per_passage_unpatched))
    assert numbers["per_layer"] == pytest.approx((removed - unpatched)[:, 1:].mean(0).tolist())
    assert numbers["outlier_free_mean"] == pytest.approx(0.05 + np.mean(per_passage_removed - per_passage_unpatched))
    assert numbers["perplexity"][sinks.UNPATCHED] == pytest.approx(math.exp(nll[0].mean()))
    assert numbers["perplexity_ratio"] == pytest.approx(math.exp(nll[1].mean() - nll[0].mean()))
    assert row["verdict"] == decision.PENDING and "exploratory look" in row["sentence"]
    assert "MiniLM contrast not run" in row["sentence"]


def test_registered_mde_is_044_sd_at_64_passages():
    """The registration's 0.44 SD: (t_0.995,63 + t_0.8,63) / 8 (t tables: 2.656 + 0.847)."""
    assert decision.registered_mde(64, 1.0) == pytest.approx((2.656 + 0.847) / 8, abs=1e-3)
    assert decision.registered_mde(64, 2.0) == pytest.approx(2 * decision.registered_mde(64, 1.0))


def test_s1_in_its_family_of_five(tmp_path):
    """Holm over m = 5 with the other four not run (p = 1): S1's adjusted p is min(1, 5 p)."""
    s1_measurement(tmp_path)
    others = [PairedClaim((), (), "higher", "not run")] * 4
    decided = decide_family([decision.s1_claim(tmp_path), *others])
    p = decision.s1_row(tmp_path)["numbers"]["p"]
    assert decided[0].p_adjusted == pytest.approx(min(1.0, 5 * p))
    row = decision.s1_row(tmp_path, decided[0])
    assert row["verdict"] == decided[0].verdict and row["sentence"].startswith(decided[0].reason)


def test_s1_not_run_enters_with_p_one(tmp_path):
    assert decision.s1_claim(tmp_path).p_value() == 1.0
    assert decision.s1_row(tmp_path)["verdict"] == "pending"
    assert decision.s2_row(tmp_path)["verdict"] == "pending"


def test_minilm_contrast_is_described(tmp_path):
    s1_measurement(tmp_path)
    rng = np.random.default_rng(3)
    unpatched = rng.uniform(0.3, 0.5, (6, 7))
    removed = unpatched - 0.02
    write_measurement(
        tmp_path, "minilm", {"cos_sim": unpatched}, {"cos_sim": removed, "output_cosine": np.full(6, 0.97)}
    )
    contrast = decision.s1_row(tmp_path)["contrast"]
    assert contrast["mean"] == pytest.approx(-0.02) and contrast["output_cosine"] == pytest.approx(0.97)
    assert contrast["per_layer"] == pytest.approx([-0.02] * 6)


def hand_layers(norms, entropy, sinks_):
    """S2's three layers written out with loops (first of ties: strict comparisons)."""
    depth = len(norms) - 1
    best_jump, best_valley, best_gain = None, None, None
    m = e = b = 0
    sink_rates = [0.0, *sinks_]
    for layer in range(1, depth + 1):
        jump = math.log(norms[layer]) - math.log(norms[layer - 1])
        if best_jump is None or jump > best_jump:
            best_jump, m = jump, layer
        if best_valley is None or entropy[layer] < best_valley:
            best_valley, e = entropy[layer], layer
        gain = sink_rates[layer] - sink_rates[layer - 1]
        if best_gain is None or gain > best_gain:
            best_gain, b = gain, layer
    return m, e, b - 1


def s2_measurement(results, norms, entropy, sink_rate):
    """A SmolLM2 measurement holding S2's measures (``[passages, ...]``) and a flat S1 part."""
    cos = np.full(np.shape(norms), 0.5)
    unpatched = {"cos_sim": cos, "first_token_norm": norms, "repr_entropy": entropy, "sink_rate": sink_rate}
    write_measurement(results, "smollm2", unpatched, {"cos_sim": cos}, extra={"depth": np.shape(sink_rate)[1]})


@pytest.mark.parametrize(
    "norms, entropy, sink_rate, layers, verdict",
    [
        # norm jumps most into layer 3, entropy's valley at 3, block 4 gains most (reads stream 3): held
        ([1, 1.1, 1.5, 20, 25, 30], [3, 2.9, 2.5, 1.0, 1.2, 1.4], [0, 0, 0.1, 0.6, 0.6], (3, 3, 3), "held"),
        # valley at 5, sink at stream 1: spread 4, contradicted
        ([1, 1.1, 1.5, 20, 25, 30], [3, 2.9, 2.5, 2.0, 1.2, 1.0], [0.5, 0.5, 0.5, 0.6, 0.6], (3, 5, 0), "contradicted"),
        # spread 2: neither
        ([1, 1.1, 1.5, 20, 25, 30], [3, 2.9, 2.5, 2.0, 1.2, 1.0], [0, 0, 0.1, 0.6, 0.6], (3, 5, 3), "inconclusive"),
        # ties take the first: equal jumps at 1 and 2, entropy flat, sink rate flat (b* = 1, stream 0)
        ([1, 2, 4, 4, 4, 4], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0], (1, 1, 0), "held"),
    ],
)
def test_three_layer_rule_on_known_cases(tmp_path, norms, entropy, sink_rate, layers, verdict):
    """Identical passages: every resample agrees, so the passages decide."""
    passages = 5
    assert hand_layers(norms, entropy, sink_rate) == layers
    s2_measurement(tmp_path, [norms] * passages, [entropy] * passages, [sink_rate] * passages)
    row = decision.s2_row(tmp_path)
    assert tuple(row["numbers"]["layers"].values()) == layers
    assert row["verdict"] == verdict and row["sentence"].startswith(verdict)


def test_s2_bootstrap_against_hand_resampling(tmp_path):
    """Noisy passages: the shares of resamples within 1 and at least 3 apart, recomputed with loops
    over the registered draws (numpy default_rng(0), 2 000 resamples of the passages)."""
    rng = np.random.default_rng(5)
    passages, depth = 9, 6
    norms = np.exp(np.cumsum(rng.uniform(0, 1, (passages, depth + 1)), axis=1))
    entropy = rng.uniform(0, 1, (passages, depth + 1))
    sink_rate = rng.uniform(0, 1, (passages, depth))
    s2_measurement(tmp_path, norms, entropy, sink_rate)
    row = decision.s2_row(tmp_path)
    draws = np.random.default_rng(0).integers(0, passages, (2000, passages))
    within = apart = 0
    means = (norms, entropy, sink_rate)
    for draw in draws:
        layers = hand_layers(*([sum(v[i][k] for i in draw) / passages for k in range(len(v[0]))] for v in means))
        spread = max(layers) - min(layers)
        within += spread <= 1
        apart += spread >= 3
    assert row["numbers"]["share_within"] == within / 2000
    assert row["numbers"]["share_apart"] == apart / 2000
    assert 0 < within < 2000 or 0 < apart < 2000  # the case is not degenerate


def masked_reference(model, ids):
    """The tiny Llama with attention to the first token masked for every query but the first (an
    additive 4D mask: softmax over the other keys, Barbero et al.'s ablation), its block outputs
    by forward hooks and its logits."""
    n = ids.shape[1]
    blocked = torch.ones(n, n).triu(1).bool()
    blocked[1:, 0] = True
    mask = torch.zeros(1, 1, n, n).masked_fill(blocked, torch.finfo(torch.float32).min)
    return run_with_blocks(model, ids, attention_mask=mask)


def run_with_blocks(model, ids, **kwargs):
    states = []
    hooks = [
        layer.register_forward_hook(lambda m, i, o: states.append(o[0] if isinstance(o, tuple) else o))
        for layer in model.model.layers
    ]
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True, output_attentions=True, **kwargs)
    for hook in hooks:
        hook.remove()
    return [out.hidden_states[0], *states], out


def naive_cos_sim(x, skip_first):
    tokens = x[0, 1:] if skip_first else x[0]
    unit = torch.nn.functional.normalize(tokens.double(), dim=-1)
    gram = unit @ unit.T
    n = len(unit)
    return float((gram.sum() - gram.diagonal().sum()) / (n * (n - 1)))


def naive_nll(logits, ids):
    return float(torch.nn.functional.cross_entropy(logits[0, :-1].double(), ids[0, 1:]))


def test_measurement_end_to_end_on_a_tiny_llama(tmp_path):
    from oversmooth.hf import load, placement

    save_tiny_with_head("llama", tmp_path / "model")
    loaded = load(str(tmp_path / "model"), 1, 16, placement("cpu", "float32"))
    text = prose(ESSAY_WORDS)
    record = sinks.measure_model(loaded, text, count=3, tokens=16)
    assert record["depth"] == 2 and record["exclude"] == [0] and record["text"]["passages"] == 3
    ids = sinks.passages(loaded.tokenizer, text, 3, 16)["input_ids"]
    model = loaded.model
    unpatched, removed = record["arms"][sinks.UNPATCHED], record["arms"][sinks.REMOVED]
    for p in range(3):
        one = ids[p : p + 1]
        states, out = run_with_blocks(model, one)
        masked_states, masked_out = masked_reference(model, one)
        assert unpatched["cos_sim"][p] == pytest.approx([naive_cos_sim(s, True) for s in states], abs=1e-5)
        assert removed["cos_sim"][p] == pytest.approx([naive_cos_sim(s, True) for s in masked_states], abs=1e-5)
        assert removed["cos_sim"][p][1:] != pytest.approx(unpatched["cos_sim"][p][1:], abs=1e-3)  # it acts
        assert unpatched["nll"][p] == pytest.approx(naive_nll(out.logits, one), abs=1e-5)
        assert removed["nll"][p] == pytest.approx(naive_nll(masked_out.logits, one), abs=1e-5)
        for layer, state in enumerate(states):
            x = state[0].double()
            norms = x.norm(dim=-1).numpy()
            assert unpatched["first_token_norm"][p][layer] == pytest.approx(norms[0] / np.median(norms), rel=1e-5)
            entries = x.abs().numpy()
            assert unpatched["massive_ratio"][p][layer] == pytest.approx(entries.max() / np.median(entries), rel=1e-5)
            gram = (x @ x.T).numpy()
            eig = np.clip(np.linalg.eigvalsh(gram / np.trace(gram)), 0, None)
            entropy = -sum(v * math.log(v) for v in eig if v > 1e-14 * eig.max())
            assert unpatched["repr_entropy"][p][layer] == pytest.approx(entropy, abs=1e-5)
        for block, attention in enumerate(out.attentions):
            on_first = attention[0, :, 1:, 0].double().mean(dim=1)  # per head, queries 2..n
            assert unpatched["sink_rate"][p][block] == pytest.approx(float((on_first >= 0.3).double().mean()))
    # the decisions read what the measurement writes
    path = sinks.result_path(tmp_path / "results", "smollm2")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**record, "model": "tiny llama", "command": "test"}))
    assert decision.s1_row(tmp_path / "results")["numbers"]["n"] == 3
    assert decision.s2_row(tmp_path / "results")["verdict"] in ("held", "contradicted", "inconclusive")


def test_registered_values_are_the_defaults():
    import inspect

    assert (sinks.PASSAGES, sinks.TOKENS, sinks.NOVEL) == (64, 128, "persuasion")
    for function in (sinks.measure_model, sinks.run, sinks.passages):
        parameters = inspect.signature(function).parameters
        assert [parameters[name].default for name in parameters if name in ("count", "tokens")] == [64, 128]
    assert sinks.PATCH == {"position": 0, "strength": 1.0}
    assert (decision.RESAMPLES, decision.SEED, decision.SHARE) == (2000, 0, 0.95)
    from oversmooth.metrics.attention import SINK_EPSILON

    assert SINK_EPSILON == 0.3


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "gpt2"], "invalid choice"),
        ([], "--model"),
        (["--model", "minilm", "--results", "FILE"], "is a file"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "FILE").write_text("x")
    argv = [str(tmp_path / a) if a == "FILE" else a for a in argv]
    with pytest.raises(SystemExit) as stopped:
        sinks.main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "sinks").exists()


def test_short_text_is_one_line(tmp_path):
    from oversmooth.errors import UsageError
    from oversmooth.hf import load, placement

    save_tiny_with_head("llama", tmp_path / "model")
    loaded = load(str(tmp_path / "model"), 1, 16, placement("cpu", "float32"))
    with pytest.raises(UsageError, match="fewer than 3 passages of 16 tokens"):
        sinks.passages(loaded.tokenizer, "the a of and to in", 3, 16)
