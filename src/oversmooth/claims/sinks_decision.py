"""Claims S1 and S2 decided as registered (docs/registrations/sinks.md) from the measurements
``oversmooth.claims.sinks_pretrained`` writes under ``results/sinks/``.

- S1 (Barbero et al., COLM 2025): per passage, the mean over layers 1 to L of cos_sim(sink removed)
  - cos_sim(unpatched); a two-sided paired t over the passages, Holm in the family *sinks* (m = 5),
  which the caller applies with the family's other claims (``s1_claim`` is S1's entry;
  ``verdicts.decide_family`` decides them; ``s1_row`` writes the row from S1's decision). Beside
  it: each layer's mean difference, the outlier-free cos_sim's, both arms' perplexity, the
  registered smallest detectable effect, and MiniLM's same measurement as a contrast (no p-value).
- S2 (arXiv 2510.06477): three layers from the unpatched model's per-layer means over the passages,
  where the first token's norm jumps most, the representation entropy's minimum and the stream read
  by the block that gains the most sink heads; held when they lie within 1 layer of each other on
  the passages and on at least 95 % of 2 000 bootstrap resamples of the passages, contradicted
  when at least 3 apart on both, else inconclusive (``s2_row``).

Both rules were written after an exploratory look at the same model on other text; the rows say so.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats

from oversmooth.claims.sinks_pretrained import NOVEL, REMOVED, UNPATCHED, command, result_path
from oversmooth.claims.verdicts import Decision, PairedClaim
from oversmooth.study.stats import POWER, paired_test
from oversmooth.utils.json_files import read_table

FAMILY, FAMILY_SIZE, ALPHA = "sinks", 5, 0.05
DIRECTION = "higher"  # S1: removing the sink raises similarity
#: S2's bootstrap: resamples of the passages, drawn as ``np.random.default_rng(SEED).integers(0, n, (RESAMPLES, n))``
RESAMPLES, SEED, SHARE = 2000, 0, 0.95
HELD_SPREAD, CONTRADICTED_SPREAD = 1, 3
EXPLORED = (
    "the rule was written after an exploratory look at the same model on other text (4 passages of Pride and "
    "Prejudice: docs/metrics.md, docs/analyze.md)"
)
PENDING = "pending: Holm in the family sinks (m = 5) decides it with S3a, S3b, S4a, S4b"


def read_measurement(results: str | Path, model: str) -> dict | None:
    """``model``'s measurement under ``results`` (``sinks_pretrained``'s JSON), None when not there;
    UsageError naming the file when damaged."""
    path = result_path(results, model)
    if not path.is_file():
        return None
    fields = {"model": str, "depth": int, "arms": dict, "text": dict, "command": str}
    return read_table(path, fields, f"rerun: {command(model, str(results))}")


def scope(data: dict) -> str:
    """The row's scope: the model, its depth, the passages and the text."""
    text = data["text"]
    first = "position 0 is each passage's first word (no BOS)" if text.get("special_tokens") == 0 else ""
    return (
        f"{data['model']}, {data['depth']} blocks, {data['dtype']}, {data['attention']} attention; the first "
        f"{text['passages']} passages of {text['tokens']} tokens of Austen's {NOVEL.capitalize()}"
    ) + (f"; {first}" if first else "")


def layer_means(data: dict, arm: str, measure: str) -> list[float]:
    """Per passage, the mean of ``measure`` over layers 1 to L in ``arm``."""
    return [float(np.mean(values[1:])) for values in data["arms"][arm][measure]]


def mean_differences(data: dict, measure: str) -> list[float]:
    """Per layer 0 to L, the mean over passages of ``measure`` (sink removed) - (unpatched)."""
    removed, unpatched = (np.asarray(data["arms"][arm][measure]) for arm in (REMOVED, UNPATCHED))
    return (removed - unpatched).mean(axis=0).tolist()


def registered_mde(n: int, sd: float) -> float:
    """S1's smallest detectable effect as registered: ``(t_0.995,n-1 + t_0.8,n-1) SD / sqrt(n)``
    (power 0.8, alpha 0.01 two-sided: Holm's strictest over 5)."""
    alpha = ALPHA / FAMILY_SIZE
    return float(stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(POWER, n - 1)) * sd / math.sqrt(n)


def s1_claim(results: str | Path) -> PairedClaim:
    """S1's entry in the family *sinks*: per passage, the removed and unpatched arms' mean cos_sim
    over layers 1 to L (their difference is the registered measure); not run: p = 1."""
    return _s1_pair(read_measurement(results, "smollm2"), results)


def _s1_pair(data: dict | None, results: str | Path) -> PairedClaim:
    """``s1_claim`` from SmolLM2's measurement ``data`` (None: not run)."""
    if data is None:
        return PairedClaim((), (), DIRECTION, f"not run ({command('smollm2', str(results))})")
    return PairedClaim(
        tuple(layer_means(data, REMOVED, "cos_sim")), tuple(layer_means(data, UNPATCHED, "cos_sim")), DIRECTION
    )


def _perplexities(data: dict) -> dict[str, float]:
    """Each arm's perplexity over every passage: exp of the mean per-passage NLL (every passage
    predicts the same number of tokens)."""
    return {arm: math.exp(float(np.mean(data["arms"][arm]["nll"]))) for arm in (UNPATCHED, REMOVED)}


def _contrast(results: str | Path) -> dict:
    """MiniLM's S1 measurement, described (no p-value, not in the family)."""
    data = read_measurement(results, "minilm")
    if data is None:
        return {"sentence": f"MiniLM contrast not run ({command('minilm', str(results))})"}
    test = paired_test(layer_means(data, REMOVED, "cos_sim"), layer_means(data, UNPATCHED, "cos_sim"), DIRECTION)
    cosine = float(np.mean(data["arms"][REMOVED]["output_cosine"]))
    per_layer = mean_differences(data, "cos_sim")[1:]
    return {
        "scope": scope(data),
        "mean": test.mean,
        "ci95": [test.ci_low, test.ci_high],
        "per_layer": per_layer,
        "output_cosine": cosine,
        "sentence": (
            f"encoder contrast (MiniLM, [CLS] at position 0, every token counted; no p-value): mean difference "
            f"{test.mean:+.4f}, 95 % CI [{test.ci_low:+.4f}, {test.ci_high:+.4f}] over {test.n} passages; per layer "
            f"{', '.join(f'{v:+.3f}' for v in per_layer)}; output cosine to the unpatched model {cosine:.4f}"
        ),
    }


def s1_row(results: str | Path, decision: Decision | None = None) -> dict:
    """S1's row: ``verdict`` (``decision``'s, from the family *sinks*; None: pending), ``sentence``
    and ``numbers`` (the paired test's raw p and 95 % interval, the registered MDE, per-layer mean
    differences, both arms' perplexity) and MiniLM's ``contrast``."""
    data = read_measurement(results, "smollm2")
    claim = _s1_pair(data, results)
    if data is None:
        return {"claim": "S1", "verdict": "pending", "sentence": claim.failed_gate, "numbers": {}}
    test = paired_test(claim.method, claim.baseline, DIRECTION)
    mde = registered_mde(test.n, test.sd)
    per_layer = mean_differences(data, "cos_sim")[1:]
    outlier_free = mean_differences(data, "cos_sim_outlier_free")[1:]
    ppl = _perplexities(data)
    contrast = _contrast(results)
    numbers = {
        "n": test.n,
        "mean": test.mean,
        "sd": test.sd,
        "t": test.t,
        "df": test.df,
        "p": test.p_two_sided,
        "ci95": [test.ci_low, test.ci_high],
        "mde": mde,
        "per_layer": per_layer,
        "outlier_free_mean": float(np.mean(outlier_free)),
        "outlier_free_per_layer": outlier_free,
        "perplexity": ppl,
        "perplexity_ratio": ppl[REMOVED] / ppl[UNPATCHED],
    }
    measured = (
        f"mean over layers 1-{data['depth']} of cos_sim(sink removed) - cos_sim(unpatched), first token left out: "
        f"{test.mean:+.4f} over {test.n} passages (SD {test.sd:.4f}, t {test.t:.3g}, raw two-sided p "
        f"{test.p_two_sided:.3g}, "
        f"95 % CI [{test.ci_low:+.4f}, {test.ci_high:+.4f}]); smallest detectable effect (power 0.8, alpha 0.01 "
        f"two-sided) {mde:.4f} = {mde / test.sd:.2f} x SD; per layer "
        f"{', '.join(f'{v:+.3f}' for v in per_layer)}; outlier-free "
        f"cos_sim {numbers['outlier_free_mean']:+.4f}; perplexity {ppl[UNPATCHED]:.3f} -> {ppl[REMOVED]:.3f} "
        f"(x{numbers['perplexity_ratio']:.3f}) on the same passages"
    )
    verdict = PENDING if decision is None else decision.verdict
    lead = "" if decision is None else f"{decision.reason}; "
    return {
        "claim": "S1",
        "scope": scope(data),
        "verdict": verdict,
        "sentence": f"{lead}{measured}; {contrast['sentence']}; {EXPLORED}",
        "numbers": numbers,
        "contrast": contrast,
        "command": data["command"],
    }


def three_layers(norms: np.ndarray, entropy: np.ndarray, sinks: np.ndarray) -> np.ndarray:
    """S2's layers (l_M, l_E, l_S), ``[..., 3]`` ints, from per-layer means: the first-token norm
    ratio ``norms [..., L + 1]`` and ``entropy [..., L + 1]`` (index 0 = embeddings) and the sink
    rate ``sinks [..., L]`` (index b - 1 = block b). l_M: argmax over l = 1..L of log n[l] - log
    n[l - 1]; l_E: argmin over l = 1..L of e[l]; l_S: b* - 1 with b* the argmax over b = 1..L of
    s[b] - s[b - 1], s[0] = 0. Ties take the first."""
    jump = np.diff(np.log(norms), axis=-1).argmax(axis=-1) + 1
    valley = entropy[..., 1:].argmin(axis=-1) + 1
    padded = np.concatenate([np.zeros((*sinks.shape[:-1], 1)), sinks], axis=-1)
    gain = np.diff(padded, axis=-1).argmax(axis=-1) + 1
    return np.stack([jump, valley, gain - 1], axis=-1)


def _spread(layers: np.ndarray) -> np.ndarray:
    return layers.max(axis=-1) - layers.min(axis=-1)


def s2_row(results: str | Path) -> dict:
    """S2's row: ``verdict`` by the registered rule, ``sentence`` and ``numbers`` (the three layers
    on the passages, the spread, the shares of resamples within 1 and at least 3 apart)."""
    data = read_measurement(results, "smollm2")
    if data is None:
        return {
            "claim": "S2",
            "verdict": "pending",
            "sentence": f"not run ({command('smollm2', str(results))})",
            "numbers": {},
        }
    arms = data["arms"][UNPATCHED]
    norms, entropy, sinks = (
        np.asarray(arms[m], dtype=float) for m in ("first_token_norm", "repr_entropy", "sink_rate")
    )
    n = len(norms)
    layers = three_layers(norms.mean(0), entropy.mean(0), sinks.mean(0))
    spread = int(_spread(layers))
    draws = np.random.default_rng(SEED).integers(0, n, (RESAMPLES, n))
    resampled = _spread(three_layers(norms[draws].mean(1), entropy[draws].mean(1), sinks[draws].mean(1)))
    within, apart = float((resampled <= HELD_SPREAD).mean()), float((resampled >= CONTRADICTED_SPREAD).mean())
    if spread <= HELD_SPREAD and within >= SHARE:
        verdict = "held"
    elif spread >= CONTRADICTED_SPREAD and apart >= SHARE:
        verdict = "contradicted"
    else:
        verdict = "inconclusive"
    m, e, s = (int(v) for v in layers)
    sentence = (
        f"{verdict}: on the {n} passages the first token's norm jumps most at layer {m}, the representation "
        f"entropy's valley is at layer {e}, and block {s + 1} gains the most sink heads (stream {s}): spread "
        f"{spread}; over {RESAMPLES} bootstrap resamples of the passages (numpy default_rng({SEED})) "
        f"{100 * within:.1f} % within {HELD_SPREAD} layer, {100 * apart:.1f} % at least {CONTRADICTED_SPREAD} apart; "
        f"{EXPLORED}"
    )
    return {
        "claim": "S2",
        "scope": scope(data),
        "verdict": verdict,
        "sentence": sentence,
        "numbers": {
            "layers": {"massive": m, "entropy": e, "sink": s},
            "spread": spread,
            "share_within": within,
            "share_apart": apart,
            "resamples": RESAMPLES,
        },
        "command": data["command"],
    }
