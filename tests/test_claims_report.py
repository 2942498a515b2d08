"""`oversmooth claims`: claims decided from hand-made cells whose answers are known, and the files.

Cells are written as `oversmooth study` archives them (cell.json of the preset's own cell,
metrics.jsonl, results.json, analysis.json), so pairing, gates and the protocol's measures all
run on them; the expected p-values come from scipy, not from the code under test.
"""

import csv
import json
import math
import re
import shutil
import statistics
from pathlib import Path

import pytest
from scipy import stats

from oversmooth.analyze.quality import Quality, QualityRow
from oversmooth.claims.gathering import Inputs, baseline_gate
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.claims.probes import CurvePair, Existence, Probes, random_init
from oversmooth.claims.protocol import FAMILIES
from oversmooth.claims.questions import QUESTIONS
from oversmooth.claims.registry import CLAIMS, decide_claims
from oversmooth.claims.report import render_claims
from oversmooth.claims.statements import STATEMENTS
from oversmooth.cli import main
from oversmooth.errors import UsageError
from oversmooth.study.results import read_studies, read_study

SEEDS = range(14)
#: softmax validation accuracy per seed: mean 88.1 %, above the 87 % floor
SOFTMAX_VAL = [0.881 + 0.001 * ((s % 3) - 1) for s in SEEDS]


#: the value-path flip of claim 5c: blocks 1-6 turn to sharpening and their t_sim change falls;
#: blocks 7-8 keep their verdict and rise (so the flip alone pulls down 0 % of the time)
FLIP = (-0.01,) * 6 + (0.03,) * 2
FLIP_VERDICTS = ("sharpening",) * 6 + (None,) * 2  # None: the verdict as trained


def analysis(
    cos_stream=(0.1,) * 9,
    verdicts=("smoothing",) * 8,
    changes=(0.02,) * 8,
    flip=FLIP,
    flip_verdicts=FLIP_VERDICTS,
    reference=None,
):
    blocks = [
        {"layer": i + 1, "verdict": {"verdict": v}, "attention": {"t_sim_change": c, "cos_sim_change": c}}
        for i, (c, v) in enumerate(zip(changes, verdicts))
    ]
    found = {
        "stream": {"cos_sim": list(cos_stream), "t_sim": list(cos_stream)},
        "blocks": blocks,
        "value_flip": [
            {
                "layer": i + 1,
                "t_sim_change": f,
                "t_sim_change_trained": c,
                "verdict": w or v,
                "verdict_trained": v,
            }
            for i, (f, c, v, w) in enumerate(zip(flip, changes, verdicts, flip_verdicts))
        ],
    }
    if reference is not None:
        found["reference"] = {"bigram_val_nll": reference, "bigram_weight": 0.9}
    return found


def make_cell(
    root: Path,
    study: str,
    label: str,
    seed: int,
    test: float,
    *,
    norm: str = "pre",
    depth=None,
    val: list[float] | None = None,
    status: str = "completed",
    cell_analysis: dict | None = None,
) -> None:
    """A cell of preset ``study`` as `oversmooth study --results` archives it: the preset's own
    cell.json, one record per entry of ``val`` (validation accuracy, or an LM's NLL; the loss
    falls to the last), and results.json with the ``test`` score."""
    cell = next(
        c
        for c in CLAIMS_PRESETS[study].cells()
        if (c.variant.label, c.seed, c.norm) == (label, seed, norm) and (depth is None or c.depth == depth)
    )
    folder = root / study / cell.name
    folder.mkdir(parents=True)
    (folder / "cell.json").write_text(json.dumps(cell.to_dict()))
    lm = cell.model == "lm"
    val = val or [test - (0.001 if not lm else -0.01), test]
    epochs = [
        {
            "epoch": e + 1,
            "val": ({"loss": v, "perplexity": math.exp(v)} if lm else {"accuracy": v, "loss": 1.0 - 0.01 * e}),
            "layers": [{"layer": l, "cos_sim": 0.3, "t_sim": 0.3} for l in range(cell.depth + 1)],
        }
        for e, v in enumerate(val)
    ]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(e) + "\n" for e in epochs))
    if status != "partial":
        scores = {"loss": test, "perplexity": math.exp(test)} if lm else {"accuracy": test, "loss": 0.4}
        (folder / "results.json").write_text(
            json.dumps(
                {
                    "status": status,
                    "test": scores if status == "completed" else None,
                    "train_examples_per_second": 100.0,
                    "wall_seconds": 1.0,
                }
            )
        )
    if cell_analysis is not None:
        (folder / "analysis.json").write_text(json.dumps(cell_analysis))
    study_file = root / study / "study.json"
    if not study_file.exists():
        study_file.write_text(
            json.dumps({**CLAIMS_PRESETS[study].to_dict(), "command": f"oversmooth study {study} --x"})
        )


NEUTRENO_GAIN = [0.010, 0.012, 0.008, 0.011, 0.009, 0.010, 0.013, 0.007, 0.010, 0.011, 0.009, 0.012, 0.010, 0.011]
FEATSCALE_NOISE = [0.001, -0.002, 0.0, 0.001, -0.001, 0.002, 0.0, -0.001, 0.001, 0.0, -0.002, 0.001, 0.0, -0.001]


def fmnist(
    root, seeds=SEEDS, softmax_val=SOFTMAX_VAL, long_gain=0.001, spectral=True, gains=NEUTRENO_GAIN, **softmax_kw
):
    """fmnist-p7: NeuTRENO ``gains`` (+1 pp on each seed), FeatScale within 0.2 pp; the spectral
    arms (seeds 0-7): sharpen's blocks say sharpening and their t_sim falls, the others' rise;
    smooth vs sharpen is noise. The long run of seed 0 gains ``long_gain``."""
    for seed in seeds:
        base = softmax_val[seed]
        make_cell(root, "fmnist-p7", "softmax", seed, base, cell_analysis=analysis(), **softmax_kw)
        make_cell(root, "fmnist-p7", "neutreno", seed, base + gains[seed], cell_analysis=analysis())
        make_cell(root, "fmnist-p7", "featscale", seed, base + FEATSCALE_NOISE[seed], cell_analysis=analysis())
        if spectral and seed < 8:
            make_cell(
                root,
                "fmnist-p7-spectral",
                "smooth",
                seed,
                base + (0.002 if seed % 2 else -0.002),
                cell_analysis=analysis(),
            )
            make_cell(
                root,
                "fmnist-p7-spectral",
                "sharpen",
                seed,
                base,
                cell_analysis=analysis(verdicts=("sharpening",) * 8, changes=(-0.01,) * 8),
            )
            make_cell(root, "fmnist-p7-spectral", "free", seed, base, cell_analysis=analysis())
    make_cell(root, "fmnist-p7-long", "softmax", 0, softmax_val[0] + long_gain)


def claims_of(root, **kw):
    cells = [cell for study in sorted(p for p in root.iterdir() if p.is_dir()) for cell in read_study(study)]
    return {c.id: c for c in decide_claims(cells, **kw)}


def test_known_paired_effects_give_the_known_verdicts(tmp_path):
    fmnist(tmp_path)
    claims = claims_of(tmp_path)
    assert sorted(claims) == sorted(CLAIMS)  # no probes: the static claims are there, not tested
    assert claims["1a"].verdict == claims["1b"].verdict == "not tested"
    tested = sorted(n for n, c in claims.items() if c.verdict != "not tested")
    assert tested == ["2a", "5b", "5c", "6", "7"]
    # 2a: +1 pp on every seed; Holm over the fixed primary family of 7 (the others enter with p = 1)
    p = stats.ttest_rel([a + g for a, g in zip(SOFTMAX_VAL, NEUTRENO_GAIN)], SOFTMAX_VAL).pvalue
    two_a = claims["2a"]
    assert two_a.verdict == "held" and two_a.family == "primary" and two_a.n == 14
    assert two_a.p == pytest.approx(p) and two_a.p_holm == pytest.approx(7 * p)
    assert "passed" in two_a.gate and two_a.gate_passed is True
    # a passed gate shows what it measured: SOFTMAX_VAL's mean, seed 0's long run 0.1 pp up
    mean = 100 * statistics.fmean(SOFTMAX_VAL)
    assert (
        f"(b) seed 0 trained 1.5x as long gains 0.10 pp at its end, 0.10 pp at its best epoch (bar 0.50 pp); "
        f"(c) val accuracy {mean:.2f} % (mean of 14 seeds) >= 87 % (by {mean - 87:.2f} pp)" in two_a.gate
    )
    assert two_a.command == "oversmooth study fmnist-p7 --out runs/studies/fmnist-p7 --results results"
    # 7: FeatScale within +-0.2 pp: the TOST interval lies inside +-0.5 pp
    assert (
        claims["7"].verdict == "held"
        and claims["7"].margin == 0.5
        and -0.5 < claims["7"].ci[0] < claims["7"].ci[1] < 0.5
    )
    # 6: smooth - sharpen alternates +-0.2 pp: inconclusive, with the smallest detectable effect
    assert claims["6"].verdict == "inconclusive" and claims["6"].mde > 0.2 and "detects" in claims["6"].reason
    # 5b: every verdict matches its sign (share 1) vs the majority (rising) share 3/4: held
    assert claims["5b"].verdict == "held" and "verdict right 1 vs majority sign right 0.75" in claims["5b"].ours
    # 5c (seeds 4-13): 6 of 8 blocks' verdicts turn to sharpening and their t_sim change falls
    # (+0.02 -> -0.01) while the flip raises the other two: share 1 vs the registered 1/2, and vs
    # the flip's own pull (0) in the third protocol's reading
    assert claims["5c"].verdict == "held" and claims["5c"].n == 10 and "turned the verdict of 60" in claims["5c"].ours
    assert "says 1 vs registered chance 0.5;" in claims["5c"].ours
    assert claims["5c"].reading == "held" and "mean difference +1," in claims["5c"].reading_reason
    planned = len(CLAIMS_PRESETS["austen-p3"].seeds)
    assert claims["2b"].verdict == "not tested" and f"0 of {planned} planned seed pairs" in claims["2b"].reason
    assert claims["8"].p_holm == 1.0 or claims["8"].p_holm is None


@pytest.mark.parametrize(
    "change, why",
    [
        ({"softmax_val": [a - 0.02 for a in SOFTMAX_VAL]}, "undertrained (c): val accuracy 86."),
        ({"long_gain": 0.006}, "not plateaued (b): seed 0 trained 1.5x as long gains 0.60 pp on validation"),
        ({"val": [0.89, 0.895, 0.888]}, "ended 0.70 pp short of the best of its last 3"),
    ],
)
def test_each_gate_can_fail_and_names_its_seed_and_margin(tmp_path, change, why):
    """DESIGN 9.3 on validation: the floor (c), 1.5x the epochs (b), the plateau of each seed (a)."""
    kw = dict(change)
    val = kw.pop("val", None)
    fmnist(tmp_path, **kw, **({"val": val} if val else {}))
    claims = claims_of(tmp_path)
    for claim_id in ("2a", "6", "7", "5c"):
        claim = claims[claim_id]
        assert claim.verdict == "not tested" and why in claim.reason, claim_id
        assert claim.gate_passed is False and "failed" in claim.gate
    from oversmooth.claims.report import verdict_summary

    untested = verdict_summary(list(claims.values())).splitlines()[-1]
    assert "2a, 2c, 5b, 5c, 6, 7, 8 (a gate failed); 1a, 1b, 2b, 3, 4a, 4b, 5a (runs not finished)" in untested


def test_the_long_run_must_have_finished(tmp_path):
    fmnist(tmp_path)
    for path in (tmp_path / "fmnist-p7-long").glob("*/results.json"):
        path.unlink()
    claim = claims_of(tmp_path)["2a"]
    assert claim.verdict == "not tested" and "fmnist-p7-long (1.5x the epochs) has not finished" in claim.reason
    # the gate has not failed: it waits (before, an unfinished long run read as a failed gate)
    assert claim.gate_passed is None and "failed" not in claim.gate and claim.why_not_tested == "runs not finished"


def test_a_diverged_long_run_fails_the_gate_instead_of_waiting_for_it(tmp_path):
    """A diverged cell is finished (the runner never trains it again): gate (b) must fail on it."""
    fmnist(tmp_path)
    for path in (tmp_path / "fmnist-p7-long").glob("*/results.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "status": "diverged"}))
    claim = claims_of(tmp_path)["2a"]
    assert claim.gate_passed is False and "fmnist-p7-long (1.5x the epochs) diverged" in claim.gate


def test_the_runner_trains_each_settings_pilot_and_long_run_first():
    """scripts/run_claims.sh reads what comes before a setting from the protocol (docs/studies.md,
    "Running it"): claim 4's pilot, and the 1.5x-epochs runs of the three gated baselines."""
    from oversmooth.claims.protocol import runs_before

    assert {name: runs_before(name) for name in ("fmnist-p7", "fmnist-p7-spectral", "depth-w32", "austen-p3")} == {
        "fmnist-p7": {"pilot": "", "long": "fmnist-p7-long"},
        "fmnist-p7-spectral": {"pilot": "", "long": ""},  # gated on fmnist-p7's softmax, trained there
        "depth-w32": {"pilot": "depth-w32-pilot", "long": "depth-w32-long"},
        "austen-p3": {"pilot": "", "long": "austen-p3-long"},
    }
    assert "runs_before" in (Path(__file__).parents[1] / "scripts" / "run_claims.sh").read_text()


def test_the_runner_stops_on_the_gate_the_report_would_name(tmp_path):
    """scripts/run_claims.sh trains the softmax cells first and asks ``baseline_gate`` whether to go on."""
    preset = CLAIMS_PRESETS["fmnist-p7"]
    assert (
        baseline_gate(preset, []) == "not judged yet: not every claim trained on fmnist-p7 has a finished baseline cell"
    )
    for seed in SEEDS:
        make_cell(tmp_path, "fmnist-p7", "softmax", seed, SOFTMAX_VAL[seed])
    cells = read_study(tmp_path / "fmnist-p7")
    waits = "gate (b) not judged yet: fmnist-p7-long (1.5x the epochs) has not finished"
    assert baseline_gate(preset, cells) == waits  # the runner does not go on while the gate waits
    make_cell(tmp_path, "fmnist-p7-long", "softmax", 0, SOFTMAX_VAL[0])
    assert baseline_gate(preset, cells + read_study(tmp_path / "fmnist-p7-long")) is None


def test_unfinished_seeds_are_not_tested_and_stay_in_the_family(tmp_path):
    fmnist(tmp_path, seeds=(0, 1, 2), spectral=False)
    claims = claims_of(tmp_path)
    assert claims["2a"].verdict == "not tested" and "3 of 14 planned seed pairs finished" in claims["2a"].reason
    assert "seed(s) 3-13 lack neutreno (pre-norm, depth 8), softmax (pre-norm, depth 8)" in claims["2a"].reason
    assert "seed(s) 0-13 lack their adaptation" in claims["8"].reason
    assert "difference +1" in claims["2a"].ours  # the interim numbers are shown
    assert all(c.verdict == "not tested" for c in claims.values())


def test_the_language_model_claim_compares_nll_downwards_against_a_bigram_floor(tmp_path):
    nll = [4.00, 4.02, 3.99, 4.01] * 2
    for seed in range(8):
        make_cell(
            tmp_path,
            "austen-p3",
            "softmax",
            seed,
            nll[seed],
            val=[4.2, nll[seed]],
            cell_analysis=analysis(reference=4.5),
        )
        make_cell(tmp_path, "austen-p3", "neutreno", seed, nll[seed] - 0.02 - 0.002 * seed, cell_analysis=analysis())
    make_cell(tmp_path, "austen-p3-long", "softmax", 0, 3.99, val=[4.2, 3.99])  # 0.25 % lower: plateaued
    claim = claims_of(tmp_path)["2b"]
    assert claim.verdict == "held" and claim.effect == pytest.approx(-0.027) and claim.n == 8
    assert "passed" in claim.gate
    for path in (tmp_path / "austen-p3").glob("*softmax*/analysis.json"):
        path.write_text(json.dumps(analysis(reference=3.9)))  # the bigram model beats the LM
    assert (
        "undertrained (c): val NLL 4.0050 (mean of 8 seeds) >= the bigram reference's 3.9000"
        in claims_of(tmp_path)["2b"].reason
    )


DEPTH_SEEDS = range(2, 10)
#: depth-w32's test accuracy per seed: post-norm softmax loses 20 pp at depth 48 (and 1 pp at 8), seed-dependent
POST_48 = [0.60, 0.62, 0.58, 0.65, 0.55, 0.61, 0.59, 0.63]
DEESC_48 = [0.75, 0.74, 0.78, 0.73, 0.76, 0.77, 0.72, 0.75]


def depth_logistic(reference: float | None) -> dict:
    return analysis() if reference is None else {**analysis(), "reference": {"logistic_val_accuracy": reference}}


def depth_cells(root, reference=0.80, long_gain=0.001):
    """depth-w32 (seeds 2-9): pre-norm 0.81 at depth 8 and 0.82 at 48; post-norm softmax 0.80 at 8,
    ``POST_48`` at 48; de-escalation 0.80 at 8, ``DEESC_48`` at 48. The pre-norm depth-48 cells'
    analysis records a logistic regression at ``reference`` (None: not measured); the pilot's
    seed 0 and the long run (``long_gain`` more) make gate (b)."""
    for i, seed in enumerate(DEPTH_SEEDS):
        make_cell(root, "depth-w32", "softmax", seed, 0.81, norm="pre", depth=8)
        make_cell(
            root, "depth-w32", "softmax", seed, 0.82, norm="pre", depth=48, cell_analysis=depth_logistic(reference)
        )
        for label, deep in (("softmax", POST_48[i]), ("deescalate", DEESC_48[i])):
            make_cell(root, "depth-w32", label, seed, 0.80, norm="post", depth=8)
            make_cell(root, "depth-w32", label, seed, deep, norm="post", depth=48)
    make_cell(root, "depth-w32-pilot", "softmax", 0, 0.82, norm="pre", depth=48)
    make_cell(root, "depth-w32-long", "softmax", 0, 0.82 + long_gain, norm="pre", depth=48)


def test_claim_4_is_a_paired_t_test_on_test_accuracy_in_pp(tmp_path):
    depth_cells(tmp_path)
    claims = claims_of(tmp_path)
    four_a = [100 * ((0.82 - post) - (0.81 - 0.80)) for post in POST_48]  # (pre48 - post48) - (pre8 - post8)
    four_b = [100 * (deesc - post) for deesc, post in zip(DEESC_48, POST_48)]
    for claim_id, values in (("4a", four_a), ("4b", four_b)):
        claim = claims[claim_id]
        assert claim.verdict == "held" and claim.n == 8 and "passed" in claim.gate, claim.reason
        assert claim.effect == pytest.approx(sum(values) / 8)
        assert claim.p == pytest.approx(stats.ttest_1samp(values, 0.0).pvalue)
        assert claim.deviations and "redesigned 2026-11-25" in claim.deviations[0]
    assert min(claims["4a"].p_holm, claims["4b"].p_holm) == pytest.approx(7 * min(claims["4a"].p, claims["4b"].p))


@pytest.mark.parametrize(
    "reference, why",
    [
        (
            0.83,
            "undertrained (c): val accuracy 82.00 % (mean of 8 seeds) <= the logistic-regression reference's 83.00 %",
        ),
        (None, "undertrained (c): the logistic-regression reference has not been measured yet"),
    ],
)
def test_claim_4s_gate_is_a_logistic_regression_on_the_same_images(tmp_path, reference, why):
    depth_cells(tmp_path, reference=reference)
    for claim_id in ("4a", "4b"):
        claim = claims_of(tmp_path)[claim_id]
        assert claim.verdict == "not tested" and why in claim.reason, claim.reason


@pytest.mark.parametrize(
    "reference, long_gain, said",
    [
        (
            0.80,
            0.001,
            "(bar 0.50 pp); (c) val accuracy 82.00 % (mean of 8 seeds) > the logistic-regression "
            "reference's 80.00 % (by 2.00 pp)",
        ),
        # 0.05 pp above the reference and 0.05 pp under (b)'s bar: both under a quarter of (a)'s 0.5 pp
        (
            0.8195,
            0.0045,
            "(bar 0.50 pp, narrowly); (c) val accuracy 82.00 % (mean of 8 seeds) > the "
            "logistic-regression reference's 81.95 % (by 0.05 pp, narrowly)",
        ),
    ],
)
def test_a_gate_passed_close_to_its_bar_says_narrowly(tmp_path, reference, long_gain, said):
    depth_cells(tmp_path, reference=reference, long_gain=long_gain)
    claim = claims_of(tmp_path)["4a"]
    assert claim.gate_passed is True and said in claim.gate, claim.gate


def test_claim_4s_long_run_is_depth_w32_long(tmp_path):
    depth_cells(tmp_path, long_gain=0.006)
    claim = claims_of(tmp_path)["4a"]
    assert claim.verdict == "not tested"
    assert "not plateaued (b): seed 0 trained 1.5x as long gains 0.60 pp on validation" in claim.reason


def adapted(seed, control, lams):
    arm = lambda name, acc, knobs: {
        "name": name,
        "method": "neutreno" if knobs else "softmax",
        "knobs": knobs,  # noqa: E731
        "test": {"accuracy": acc},
    }
    return {
        "seed": seed,
        "arms": {
            "control": arm("control", control, None),
            **{f"lam={lam:g}": arm(f"lam={lam:g}", acc, {"lam": lam}) for lam, acc in lams.items()},
        },
    }


def test_claims_8_and_2c_read_the_adaptations(tmp_path):
    fmnist(tmp_path, spectral=False)
    records = [adapted(seed, 0.880, {0.2: 0.881, 0.6: 0.885 + 0.0005 * (seed % 2), 1.8: 0.870}) for seed in SEEDS]
    cells = [cell for study in sorted(p for p in tmp_path.iterdir() if p.is_dir()) for cell in read_study(study)]
    claims = {c.id: c for c in decide_claims(cells, adapted=records)}
    assert claims["8"].verdict == "held" and claims["8"].effect == pytest.approx(0.525) and claims["8"].n == 14
    assert claims["2c"].verdict == "held" and claims["2c"].n == 8 and claims["2c"].family == "secondary"
    assert claims["2c"].p < claims["2c"].p_holm <= 5 * claims["2c"].p  # Holm: at most m = 5 times its p
    # each extreme described beside the test: lam 0.6 averages 88.525 % over seeds 0-7, lam 0.2 88.1 %
    assert "n = 8 (seeds 0-7)" in claims["2c"].ours and "n = 14 (seeds 0-13)" in claims["8"].ours
    assert (
        "described after the fact, not tested: lam 0.6 - lam 0.2: +0.425 pp, unadjusted 95 % CI [" in claims["2c"].ours
    )
    claims = {c.id: c for c in decide_claims(cells, adapted=records[:5])}
    assert "5 of 14 planned adaptations finished" in claims["8"].reason


def test_claim_3_is_an_equivalence_test_on_the_benchmark_rounds():
    rounds = [{"softmax": 1.0, "neutreno": 1.02 + 0.01 * (i % 3)} for i in range(20)]
    claim = {c.id: c for c in decide_claims([], benchmark={"rounds": rounds, "note": "test rounds"})}["3"]
    assert claim.verdict == "held" and claim.margin == pytest.approx(math.log(1.1)) and claim.n == 20
    slow = [{"softmax": 1.0, "neutreno": 1.3 + 0.01 * (i % 3)} for i in range(20)]
    assert {c.id: c for c in decide_claims([], benchmark={"rounds": slow})}["3"].verdict == "contradicted"


def probes(quality=None, existence=None):
    lower = CurvePair([[0.1, 0.3, 0.5, 0.6]], [[0.1, 0.3, 0.4, 0.45]], 0.6, "test")
    broken = CurvePair([[0.1, 0.3, 0.5, 0.4]], [[0.1, 0.3, 0.4, 0.35]], 0.6, "test", quality)
    frontier = CurvePair(
        [[0.1, 0.3, 0.5, 0.4]],
        [[0.1, 0.3, 0.52, 0.41]],
        0.1,
        "frontier",
        Quality((QualityRow("neutreno", "lam=0.1", "output_cosine", 0.97, 1.0, None, True),)),
    )
    blocks = [
        {
            "layer": l,
            "verdict": "smoothing",
            "attention": {"cos_sim_change": 0.1, "t_sim_change": 0.1},
            "mlp": {"cos_sim_change": 0.0, "t_sim_change": 0.0},
            "norm": {"cos_sim_change": 0.0, "t_sim_change": 0.0},
        }
        for l in (1, 2, 3)
    ]
    return Probes(lower, broken, blocks, frontier, existence)


def test_the_probes_plot_draws_the_deciding_lambda_and_labels_a_broken_one(tmp_path, monkeypatch):
    """MiniLM's panel draws 1b's deciding lambda (the frontier, within budget) solid, and the
    registered 0.6 dashed and labelled broken with what it did; each panel says the claimed side."""
    from oversmooth.claims import report

    figures = []
    monkeypatch.setattr(report, "save_png", lambda plt, fig, path: figures.append(fig))
    broken = Quality((QualityRow("neutreno", "lam=0.6", "output_cosine", 0.2, 1.0, None, False),))
    report.plot_probes(probes(broken), tmp_path / "probes.png")
    untrained, pretrained = figures[0].axes
    lines = {line.get_label(): line for line in pretrained.get_lines()}
    assert set(lines) == {
        "softmax",
        "NeuTRENO lam 0.1 (output cosine 0.97)",
        "NeuTRENO lam 0.6 (broken: output cosine 0.2)",
    }
    assert list(lines["NeuTRENO lam 0.1 (output cosine 0.97)"].get_ydata()) == [0.1, 0.3, 0.52, 0.41]
    assert lines["NeuTRENO lam 0.6 (broken: output cosine 0.2)"].get_linestyle() == "--"
    assert lines["NeuTRENO lam 0.1 (output cosine 0.97)"].get_linestyle() == "-"
    assert [line.get_label() for line in untrained.get_lines()] == ["softmax", "NeuTRENO lam 0.6"]
    assert all("claimed: NeuTRENO lower" in ax.get_title() for ax in (untrained, pretrained))


def test_static_claims_from_known_curves():
    broken = Quality((QualityRow("neutreno", "lam=0.6", "output_cosine", 0.2, 1.0, None, False),))
    claims = {c.id: c for c in decide_claims([], probes(broken), ids=("1a", "1b"))}
    assert claims["1a"].verdict == "held" and "0.600 -> 0.450" in claims["1a"].ours and claims["1a"].family is None
    # 1b at the frontier (lambda 0.1, within budget): higher at two layers, so the change does not happen
    assert claims["1b"].verdict == "contradicted" and "lower at 0 of 2 layers" in claims["1b"].reason
    assert "at lam 0.6: similarity lower, model broken (output cosine 0.2)" in claims["1b"].ours


def test_claim_5a_is_decided_on_held_out_sequences():
    falls = Existence(5, 32, 0.03, [(0.34 + 0.001 * (i % 5), 0.29 + 0.002 * (i % 3)) for i in range(64)], "test model")
    claim = {c.id: c for c in decide_claims([], probes(existence=falls))}["5a"]
    assert claim.verdict == "held" and claim.n == 64 and claim.family == "secondary"
    assert "layer 5 -> 6" in claim.ours


def test_untrained_neutreno_probe_matches_the_baseline_where_it_must():
    """Same weights: at lambda 0 every layer equals softmax; at 0.6 the embeddings and block 1 still do."""
    zero = random_init(seeds=(0,), lam=0.0, images=4)
    assert zero.neutreno[0] == pytest.approx(zero.baseline[0], abs=1e-6)
    pair = random_init(seeds=(0,), lam=0.6, images=4)
    assert pair.neutreno[0][:2] == pytest.approx(pair.baseline[0][:2], abs=1e-6)
    assert len(pair.baseline[0]) == 13 and pair.neutreno[0][-1] != pytest.approx(pair.baseline[0][-1], abs=1e-3)


def test_a_claims_command_runs_the_whole_grid():
    """A claim is reproduced by its study's command less the flags that keep some methods or seeds."""
    ran = "oversmooth study fmnist-p7 --out 'runs/my studies' --methods softmax --seeds=0,1 --jobs 3"
    inputs = Inputs([], commands={"fmnist-p7": ran})
    assert inputs.command("fmnist-p7") == "oversmooth study fmnist-p7 --out 'runs/my studies' --jobs 3"
    assert inputs.command("austen-p3") == "oversmooth study austen-p3 --out runs/studies/austen-p3 --results results"


def test_claims_writes_claims_json_and_every_declared_claim(tmp_path, capsys):
    """Every declared claim appears in the report and in claims.json with the fields of DESIGN 9.6;
    the Holm families are the pre-registered ones (a hidden claim would change m)."""
    fmnist(tmp_path)
    depth_cells(tmp_path)
    deep = list((tmp_path / "depth-w32").glob("*/results.json"))
    for path in deep:  # half an hour each (the other fixture cells: 1 s)
        path.write_text(json.dumps({**json.loads(path.read_text()), "wall_seconds": 1800.0}))
    dirs = [str(p) for p in sorted(tmp_path.iterdir()) if p.is_dir()]
    assert main(["claims", *dirs, "--no-probes", "--out", str(tmp_path / "rep")]) == 0
    assert "wrote" in capsys.readouterr().out
    report = (tmp_path / "rep" / "report.md").read_text()
    others = len(list(tmp_path.glob("*/*/results.json"))) - len(deep)
    assert f"trained for {len(deep) / 2 + others / 3600:.1f} hours in all" in report
    assert f"Cells: {len(deep)} completed; {len(deep) / 2:.2f} hours of training" in report
    rows = json.loads((tmp_path / "rep" / "claims.json").read_text())
    fields = {
        "id",
        "family",
        "statement",
        "paper",
        "measure",
        "effect",
        "ci",
        "n",
        "p",
        "p_holm",
        "mde",
        "margin",
        "gate",
        "gate_passed",
        "verdict",
        "reason",
        "deviations",
        "command",
    }
    assert all(fields <= set(row) for row in rows)
    tests = {r["id"]: r["test"] for r in rows}
    assert tests["7"] == tests["3"] == "TOST" and tests["1a"] == tests["1b"] == "deterministic rule"
    assert tests["2a"] == tests["4b"] == tests["5c"] == "paired t"
    checked = 0
    for row in rows:  # a paired t claim's plain 95 % interval lies inside its Holm-matched one
        if row["ci95"] is not None and row["ci"] is not None and row["margin"] is None:
            assert row["ci"][0] <= row["ci95"][0] <= row["effect"] <= row["ci95"][1] <= row["ci"][1], row["id"]
            checked += 1
    assert checked
    assert sorted(row["id"] for row in rows) == sorted(CLAIMS)  # 1a, 1b too: "not tested", the probes did not run
    assert {r["id"]: r["verdict"] for r in rows if r["id"] in ("1a", "1b")} == {"1a": "not tested", "1b": "not tested"}
    assert sorted(QUESTIONS) == sorted(claim_id for ids in FAMILIES.values() for claim_id in ids)
    assert list(CLAIMS) == list(STATEMENTS)  # one statement a claim, in the report's order
    for family, ids in FAMILIES.items():
        assert sorted(r["id"] for r in rows if r["family"] == family) == sorted(ids)
    for row in rows:
        assert f"| {row['id']} | {row['statement']} |" in report and f"**{row['verdict']}**" in report
    for png in ("claims.png", "claim4_depth.png", "fmnist-p7_curves.png"):
        assert (tmp_path / "rep" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png in report
    # 5b's confusion table: per model, then all together (each model's sublayers counted once more)
    per_model = re.findall(r"^\| (\w+) \| (\w+) \| (\d+) \| (\d+) \|$", report, re.MULTILINE)
    models = {model for model, *_ in per_model} - {"all"}
    assert {"softmax", "smooth", "sharpen", "free"} <= models, per_model
    for verdict in {v for _, v, *_ in per_model}:
        for column in (2, 3):
            pooled = [int(row[column]) for row in per_model if row[:2] == ("all", verdict)]
            assert pooled == [sum(int(row[column]) for row in per_model if row[1] == verdict and row[0] in models)]
    assert len(list(csv.DictReader(open(tmp_path / "rep" / "cells.csv")))) > 0


#: each tested claim's unit, as its measure states it (docs/studies.md's claims table)
UNITS = {
    **dict.fromkeys(("2a", "2c", "4a", "4b", "6", "7", "8"), "pp"),
    "2b": "nats/token",
    "3": "log time ratio",
    "5a": "cos_sim",
    "5b": "share of blocks",
    "5c": "share of blocks",
}


def test_the_claims_report_opens_with_one_row_per_claim_on_one_screen(tmp_path):
    """Right under the title: one row per claim, in the registry's order, with its effect and
    Holm-matched interval in its unit (the paper's too, and carried to ours), the regime, the
    verdict and the third protocol's reading only where it differs; short rows (each claim in full
    is in the family tables below)."""
    fmnist(tmp_path)
    depth_cells(tmp_path)
    cells = [cell for study in sorted(p for p in tmp_path.iterdir() if p.is_dir()) for cell in read_study(study)]
    claims, report = render_claims(cells)
    lines = report.markdown.splitlines()
    head = lines.index(
        "| id | claim | paper's effect | ours [Holm-matched CI] | regime: softmax cos_sim vs random init | verdict |"
    )
    assert head < 6 and lines[head + 2 + len(claims)] == ""
    rows = lines[head + 2 : head + 2 + len(claims)]
    assert [row.split(" | ")[0] for row in rows] == [f"| {claim_id}" for claim_id in CLAIMS]
    assert any(claim.reading != claim.verdict for claim in claims)  # the fixture has a reading that differs
    for claim, row in zip(claims, rows):
        _, statement, paper, ours, regime, verdict = row.strip("| ").split(" | ")
        assert len(row) < 220 and statement in claim.statement, row
        assert verdict.startswith(f"**{claim.verdict}**")
        assert ("third protocol" in verdict) is (claim.reading != claim.verdict) and claim.reading in verdict
        if claim.effect is not None:
            low, high = claim.ci
            assert ours.startswith(f"{claim.effect:+#.3g} [{low:+#.3g}, {high:+#.3g}] {UNITS[claim.id]} (")
            assert ours.endswith(f"n = {claim.n}")
        if claim.paper_effect is not None:
            carried = claim.paper_transferred
            unit = UNITS[claim.id]
            assert paper == f"{claim.paper_effect:+.3g} {unit}" + (
                f" ({carried:+.3g} {unit} carried to ours)" if carried is not None else ""
            )
        if claim.regime is not None and claim.regime.cos_sim is not None:
            assert regime.startswith(f"{claim.regime.cos_sim:.3f} vs ")
    assert claims[0].verdict == "not tested" and rows[0].endswith("| **not tested** |")  # no probes: 1a
    assert sorted(UNITS) == sorted(QUESTIONS)  # every tested claim has its unit
    assert {claim_id: STATEMENTS[claim_id].unit for claim_id in UNITS} == UNITS
    assert any(c.paper_transferred is not None for c in claims)


def test_claims_without_dir_reads_the_protocols_archives_under_results(tmp_path, monkeypatch, capsys):
    """With no DIR, `oversmooth claims` reads the protocol's archives under ./results (named in the
    command the report records) and nothing else there; it needs --out then, and a results/ without
    them is one line, exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    assert main(["claims", "--no-probes", "--out", "rep"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds none of the claims protocol's archives" in err
    make_cell(tmp_path / "results", "fmnist-p7", "softmax", 0, 0.90)
    make_cell(tmp_path / "results", "fmnist-p7", "neutreno", 0, 0.91)
    (tmp_path / "results" / "mine").mkdir()  # no archive of the protocol, and no study: not read
    (tmp_path / "results" / "mine" / "notes.txt").write_text("mine")
    assert main(["claims", "--no-probes"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pass --out" in err
    assert not Path("rep").exists() and not (tmp_path / "results" / "fmnist-p7" / "report.md").exists()
    assert main(["claims", "--no-probes", "--out", "rep"]) == 0
    report = Path("rep/report.md").read_text()
    assert "written by `oversmooth claims results/fmnist-p7 --out rep --no-probes`" in report
    assert "Cells: 2 completed" in report


def test_report_of_a_folder_that_is_no_study_exits_2(tmp_path, capsys):
    assert main(["claims", str(tmp_path), "--no-probes"]) == 2
    assert "not a study folder" in capsys.readouterr().err


@pytest.mark.parametrize("damaged", ["study.json", "null.json", "results.json", "metrics.jsonl", "cell.json"])
def test_a_damaged_file_is_one_line_naming_it(tmp_path, capsys, damaged):
    """A truncated study.json, null.json, results.json, metrics.jsonl or cell.json: exit 2, one line
    naming the file, no report written."""
    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.90)
    study = tmp_path / "fmnist-p7"
    (study / "null.json").write_text(json.dumps({"study": "fmnist-p7", "arms": [NULL_ARM]}))
    path = study / damaged if damaged in ("study.json", "null.json") else next(study.glob(f"*/{damaged}"))
    path.write_text(path.read_text()[:-10])  # its tail lost
    assert main(["claims", str(study), "--no-probes", "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{damaged} is damaged" in err
    assert not (tmp_path / "rep").exists()


def test_a_cell_folder_without_its_cell_json_is_named_not_skipped(tmp_path, capsys):
    """A seed's folder whose cell.json was lost would otherwise vanish from its pair: exit 2, one
    line naming the folder, no report written."""
    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.90)
    make_cell(tmp_path, "fmnist-p7", "softmax", 1, 0.91)
    study = tmp_path / "fmnist-p7"
    lost = next(study.glob("*-s1"))
    (lost / "cell.json").unlink()
    assert main(["claims", str(study), "--no-probes", "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and lost.name in err and "without its cell.json" in err
    assert not (tmp_path / "rep").exists()
    for path in lost.iterdir():  # emptied, as a study stopped while making the folder leaves it: passed over
        path.unlink()
    assert main(["claims", str(study), "--no-probes", "--out", str(tmp_path / "rep")]) == 0


def test_archived_cells_load_and_follow_the_stream_numbering(tmp_path):
    """The real archives under results/ (written before the one-cache change) still load, their
    analysis.json streams have depth + 1 states (0 = embeddings) and blocks 1..depth, and the
    report is written from them."""
    root = Path(__file__).resolve().parents[1] / "results"
    studies = [study for study in sorted(root.iterdir()) if (study / "study.json").is_file()] if root.is_dir() else []
    if not studies:
        pytest.skip("no archived results/ in this checkout")
    cells = [cell for study in studies for cell in read_study(study)]
    measured = [cell for cell in cells if cell.analysis]
    assert measured
    for cell in measured:
        assert len(cell.analysis["stream"]["cos_sim"]) == cell.depth + 1
        assert [block["layer"] for block in cell.analysis["blocks"]] == list(range(1, cell.depth + 1))
    claims, report = render_claims(cells)
    report.write(tmp_path / "rep")
    assert [c.id for c in claims] == list(CLAIMS)
    assert (tmp_path / "rep" / "report.md").is_file()


def test_docs_results_are_the_report_of_the_committed_results(tmp_path):
    """docs/results is what the committed results/ decide, archived probes included: claims.json and
    report.md as `make results` writes them (scripts/claims_report.sh, run_claims.sh's last step), each figure as the
    report draws it today (up to 0.1 % of its pixels, for a different CPU's rounding), and no file
    the report does not write (a stale figure would sit beside the text that no longer shows it)."""
    import shlex

    from matplotlib import image as plt_image

    from oversmooth.claims.evidence import THIRD_PROTOCOL_STUDIES, protocol_archives, read_folders
    from oversmooth.claims.report import render_claims
    from oversmooth.study.report import cell_hours

    root = Path(__file__).resolve().parents[1]
    docs = root / "docs" / "results"
    archives = protocol_archives(root / "results")
    if not archives or not (docs / "claims.json").is_file():
        pytest.skip("no committed results/ or docs/results/claims.json in this checkout")
    title = "oversmooth: the claims protocol at CPU scale"
    writer = (root / "scripts" / "claims_report.sh").read_text()
    assert "claims --out docs/results --force" in writer and f'--title "{title}"' in writer
    assert 'PY="$py" scripts/claims_report.sh' in (root / "scripts" / "run_claims.sh").read_text()
    relative = [str(Path(a).relative_to(root)) for a in archives]
    command = shlex.join(["oversmooth", "claims", *relative, "--out", "docs/results", "--title", title])
    found = read_folders(archives)
    claims, report = render_claims(
        found.cells,
        found.probes,
        found.commands,
        title,
        command,
        adapted=found.adapted,
        benchmark=found.benchmark,
        third_protocol=found.third_protocol,
    )
    written = {row["id"]: row for row in json.loads((docs / "claims.json").read_text())}
    assert sorted(written) == sorted(claim.id for claim in claims)
    for claim in claims:
        assert json.loads(json.dumps(claim.to_json())) == written[claim.id], claim.id
    assert (docs / "report.md").read_text() == report.markdown
    expected = {*report.figures, "report.md", "claims.json"} | ({"cells.csv"} if found.cells else set())
    assert {f.name for f in docs.iterdir()} == expected
    report.write(tmp_path / "now")
    for name in expected - {"report.md", "claims.json"}:
        now, committed = tmp_path / "now" / name, docs / name
        if name.endswith(".png"):
            now, committed = plt_image.imread(now), plt_image.imread(committed)
            assert now.shape == committed.shape, name
            assert (abs(now - committed) > 1 / 255).any(axis=-1).mean() < 0.001, name
        else:
            assert now.read_text() == committed.read_text(), name
    # docs/studies.md quotes the second protocol's hours of training: the report's total less the
    # third protocol's cells (they keep arriving; the report's total counts them as they do)
    total = float(re.search(r"trained for ([0-9.]+) hours in all", report.markdown)[1])
    third = cell_hours([c for c in found.cells if c.study in THIRD_PROTOCOL_STUDIES])
    studies = (root / "docs" / "studies.md").read_text()
    second = re.search(r"second protocol's own cells and\s+adaptations trained for \*\*([0-9.]+) hours\*\*", studies)
    assert second and abs(float(second[1]) - (total - third)) <= 0.1, (total, third)  # both rounded


def test_docs_studies_quotes_smollm2s_regime_as_archived():
    """docs/studies.md's regime of claim 8 on SmolLM2 is what results/ holds: the mean of the
    controls' last-layer cos_sim over the seeds it names, and null.json's random inits and
    pretrained value (measured by scripts/smollm2_8.py)."""
    from oversmooth.adapt.result import AdaptResult

    root = Path(__file__).resolve().parents[1]
    archive = root / "results" / "third-protocol" / "smollm2-8"
    if not (archive / "null.json").is_file():
        pytest.skip("no committed results/third-protocol/smollm2-8/null.json in this checkout")
    null = json.loads((archive / "null.json").read_text())
    controls = [
        AdaptResult.from_dict(json.loads((archive / f"s{seed}" / "adapt.json").read_text())).control.cos_sim_last
        for seed in (0, 1, 10, 11)
    ]
    studies = (root / "docs" / "studies.md").read_text()
    paragraph = " ".join(studies.split("*Claim 8 on SmolLM2, its regime beside the null")[1].split("\n\n")[0].split())
    assert f"**{statistics.fmean(controls):.3f}** (mean of seeds 0, 1, 10 and 11," in paragraph
    assert f"at random init on the same probe, {null['mean']:.3f} ± {null['sd']:.3f}**" in paragraph
    assert f"({len(null['random_init'])} inits; the pretrained model before adaptation: {null['pretrained']:.3f})" in (
        paragraph
    )


def test_the_1b_retests_row_says_what_its_last_layer_did():
    """The registered measure averages over layers; the record's sentence (scripts/retest_1b.py)
    adds each model's last-layer change, which docs/studies.md quotes for MiniLM (+0.0046)."""
    root = Path(__file__).resolve().parents[1]
    path = root / "results" / "third-protocol" / "retest-1b.json"
    if not path.is_file():
        pytest.skip("no committed results/third-protocol/retest-1b.json in this checkout")
    record = json.loads(path.read_text())
    changes = [
        model["per_layer_mean"]["neutreno"][-1] - model["per_layer_mean"]["plain"][-1]
        for model in record["models"].values()
    ]
    assert record["sentence"].endswith(f"last layer's mean change, MiniLM {changes[0]:+.4f}, SmolLM2 {changes[1]:+.4f}")
    assert f"(+{changes[0]:.4f})" in (root / "docs" / "studies.md").read_text()


def test_archived_probes_read_back_as_they_were(tmp_path):
    """probes.json round-trips: the Probes read back equal the ones written, tuples and all."""
    from oversmooth.claims.evidence import read_folders
    from oversmooth.claims.files import PROBES_FILE

    broken = Quality((QualityRow("neutreno", "lam=0.6", "perplexity", 90.0, 30.0, 3.0, False),))
    falls = Existence(5, 32, 0.03, [(0.34, 0.29), (0.33, 0.30)], "a model")
    written = probes(broken, existence=falls)
    (tmp_path / "probes").mkdir()
    (tmp_path / "probes" / PROBES_FILE).write_text(json.dumps(written.to_json()))
    assert read_folders([tmp_path / "probes"]).probes == written
    (tmp_path / "probes" / PROBES_FILE).write_text('{"random_init": {}}')
    with pytest.raises(UsageError, match="probes.json is damaged"):
        read_folders([tmp_path / "probes"])


@pytest.mark.parametrize("spread, seeds", [(1.0, range(2, 14)), (0.1, range(2, 10))])
def test_claim_4s_seed_rule_by_hand(tmp_path, spread, seeds):
    """The pilot's four arms, two seeds each, differ in validation accuracy by 2, 2, 4 and 10 pp times
    ``spread`` (their test accuracies by much more, and are not read): the pooled variance is the
    mean of d^2 / 2 over the arms; 4a's SD 2 sigma; the detectable effect of the two-sided paired
    t-test at 0.05 / 7 with 8 seeds (power 0.8) from the noncentral t by hand."""
    from scipy import optimize

    from oversmooth.claims.protocol import depth_seeds

    gaps = {("pre", 8): 2, ("pre", 48): 2, ("post", 8): 4, ("post", 48): 10}
    for (norm, depth), gap in gaps.items():
        for seed in (0, 1):
            val = 0.7 + seed * gap * spread / 100
            make_cell(tmp_path, "depth-w32-pilot", "softmax", seed, 0.5 + seed * 0.3, val=[val], norm=norm, depth=depth)
    sigma = math.sqrt(sum((gap * spread) ** 2 / 2 for gap in gaps.values()) / 4)
    alpha, df = 0.05 / 7, 7
    critical = stats.t.isf(alpha / 2, df)
    power = lambda d: stats.nct.sf(critical, df, d * math.sqrt(8)) + stats.nct.cdf(-critical, df, d * math.sqrt(8))  # noqa: E731
    detectable = 2 * sigma * optimize.brentq(lambda d: power(d) - 0.8, 0.01, 5)
    found = depth_seeds(read_study(tmp_path / "depth-w32-pilot"))
    assert found[0] == pytest.approx(sigma) and found[1] == pytest.approx(detectable, rel=1e-6)
    assert found[2] == tuple(seeds) and (detectable > 5) == (len(seeds) == 12)


@pytest.mark.parametrize("spread, count", [(0.004, 8), (0.006, 10), (0.007, 12), (0.02, 12)])
def test_claim_2bs_seed_rule_by_hand(tmp_path, spread, count):
    """The LM pilot's four softmax seeds end at validation NLL 4.5 + (-1.5, -0.5, 0.5, 1.5) x
    ``spread`` (test NLL far off, and not read); sigma is their sample SD, a pair's SD sqrt(2)
    sigma; the detectable effect of the two-sided paired t-test at 0.05 / 7 (power 0.8) from the
    noncentral t by hand; the first of 8, 10, 12 seeds below 0.017 nats, else 12."""
    from scipy import optimize

    from oversmooth.claims.protocol import lm_seeds

    for seed, step in enumerate((-1.5, -0.5, 0.5, 1.5)):
        make_cell(tmp_path, "austen-p3", "softmax", seed, 3.0 + seed, val=[4.9, 4.5 + step * spread])
    sigma = spread * math.sqrt((2 * 1.5**2 + 2 * 0.5**2) / 3)
    found = lm_seeds(read_study(tmp_path / "austen-p3"))
    assert found[0] == pytest.approx(sigma)

    def power(d: float, n: int) -> float:  # both tails of the noncentral t at 0.05 / 7
        critical = stats.t.isf(0.05 / 14, n - 1)
        return stats.nct.sf(critical, n - 1, d * math.sqrt(n)) + stats.nct.sf(critical, n - 1, -d * math.sqrt(n))

    for n in (8, 10, 12):
        detectable = math.sqrt(2) * sigma * optimize.brentq(lambda d, n=n: power(d, n) - 0.8, 0.1, 2.5)
        assert found[1][n] == pytest.approx(detectable, rel=1e-6)
    assert found[2] == tuple(range(count))
    with pytest.raises(ValueError, match="has not finished"):
        lm_seeds(read_study(tmp_path / "austen-p3")[:3])


def test_claim_4s_seed_rule_needs_the_whole_pilot(tmp_path):
    from oversmooth.claims.protocol import depth_seeds

    make_cell(tmp_path, "depth-w32-pilot", "softmax", 0, 0.7, norm="pre", depth=8)
    with pytest.raises(ValueError, match="depth-w32-pilot has not finished"):
        depth_seeds(read_study(tmp_path / "depth-w32-pilot"))


def test_a_report_refuses_a_mismatched_or_doubled_cell_instead_of_dropping_its_seed(tmp_path, capsys):
    """A cell of a protocol study trained in another setting, a study folder given twice, and an
    adaptation that is not the registered continuation: each is one line naming it, exit 2, and no
    report (a seed silently left out of its pair would change n without a word)."""
    from oversmooth.cli import main

    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.90)
    make_cell(tmp_path, "fmnist-p7", "neutreno", 0, 0.91)
    study, out = tmp_path / "fmnist-p7", tmp_path / "rep"
    assert main(["claims", str(study), "--no-probes", "--out", str(out)]) == 0
    shutil.rmtree(out)

    copy = tmp_path / "copy" / "fmnist-p7"
    shutil.copytree(study, copy)
    assert main(["claims", str(study), str(copy), "--no-probes", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"fmnist-p7/fmnist-pre-d8-softmax-s0 is read twice, from {study} and from {copy}" in err
    assert len(err.splitlines()) == 1 and not out.exists()

    info = study / "fmnist-pre-d8-neutreno-s0" / "cell.json"
    cell = json.loads(info.read_text())
    cell["spec"]["lr"], cell["command"] = 0.01, cell["command"].replace("--lr 0.002", "--lr 0.01")
    info.write_text(json.dumps(cell))
    assert main(["claims", str(study), "--no-probes", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "fmnist-p7/fmnist-pre-d8-neutreno-s0 (its cell.json) was trained with lr=0.01" in err
    assert len(err.splitlines()) == 1 and not out.exists()
    shutil.rmtree(study)


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda cell, results: cell["spec"]["knobs"].update(lam=0.2), "cell.json's knobs {'lam': 0.6}"),
        (
            lambda cell, results: cell.update(command=cell["command"].replace("0.6", "0.2")),
            "command is not the one its spec makes",
        ),
        (lambda cell, results: results.update(description=DESCRIBED(lam=0.2)), "results.json's lam 0.2"),
        (lambda cell, results: results.update(description=DESCRIBED(epochs=12)), "results.json's epochs 12"),
        (lambda cell, results: AT_LAMBDA_0_2(cell, results), "lam=0.2, not as preset fmnist-p7 trains it"),
    ],
    ids=["spec-knob", "command", "recorded-knob", "recorded-epochs", "not-the-presets-knob"],
)
def test_a_cell_trained_at_another_knob_is_refused_not_paired(tmp_path, capsys, edit, named):
    """A NeuTRENO arm whose files disagree on lambda (its spec, its command, or the configuration
    its run recorded), or that agree on a lambda its preset does not train, is not paired as if it
    were the registered arm: one line naming the cell, exit 2, no report."""
    from oversmooth.cli import main

    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.90)
    make_cell(tmp_path, "fmnist-p7", "neutreno", 0, 0.91)
    folder, out = tmp_path / "fmnist-p7" / "fmnist-pre-d8-neutreno-s0", tmp_path / "rep"
    cell, results = json.loads((folder / "cell.json").read_text()), json.loads((folder / "results.json").read_text())
    results["description"] = DESCRIBED()
    (folder / "results.json").write_text(json.dumps(results))
    assert main(["claims", str(tmp_path / "fmnist-p7"), "--no-probes", "--out", str(out)]) == 0
    shutil.rmtree(out)
    edit(cell, results)
    (folder / "cell.json").write_text(json.dumps(cell))
    (folder / "results.json").write_text(json.dumps(results))
    assert main(["claims", str(tmp_path / "fmnist-p7"), "--no-probes", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "fmnist-pre-d8-neutreno-s0" in err and named in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def AT_LAMBDA_0_2(cell: dict, results: dict) -> None:
    """Every file of the cell says lambda 0.2, which fmnist-p7 does not train."""
    cell["variant"]["lam"] = cell["spec"]["knobs"]["lam"] = 0.2
    cell["command"] = cell["command"].replace("--lam 0.6", "--lam 0.2")
    results["description"] = DESCRIBED(lam=0.2)


def DESCRIBED(lam: float = 0.6, epochs: int = 10) -> dict:
    """The part of results.json's ``description`` that says how fmnist-p7's NeuTRENO seed 0 trained."""
    mitigation = {"methods": ["neutreno"], "lam": lam}
    return {"method": "neutreno", "model_config": {"mitigation": mitigation}, "train": {"seed": 0, "epochs": epochs}}


def test_a_resumed_run_that_trained_no_step_is_read_not_called_damaged(tmp_path):
    """A run killed after its last checkpoint and resumed records no speed (null): it is finished."""
    make_cell(tmp_path, "fmnist-p7", "softmax", 0, 0.90)
    path = tmp_path / "fmnist-p7" / "fmnist-pre-d8-softmax-s0" / "results.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "train_examples_per_second": None}))
    (cell,) = read_study(tmp_path / "fmnist-p7")
    assert cell.status == "completed" and cell.examples_per_second is None


def test_an_adaptation_that_is_not_the_registered_continuation_is_refused(tmp_path, capsys):
    from oversmooth.claims.adaptations import LR, NAME, STEPS, WARMUP
    from oversmooth.cli import main

    out = tmp_path / "rep"

    record = adapted(0, 0.88, {0.6: 0.885})
    record["config"] = {
        "seed": 0,
        "steps": STEPS // 2,
        "lr": LR,
        "warmup": WARMUP,
        "method": "neutreno",
        "objective": "task",
    }
    (tmp_path / NAME / "s0").mkdir(parents=True)
    (tmp_path / NAME / "s0" / "adapt.json").write_text(json.dumps(record))
    assert main(["claims", str(tmp_path / NAME), "--no-probes", "--out", str(out)]) == 2
    assert "s0/adapt.json is not the registered continuation of seed 0" in capsys.readouterr().err
    assert not out.exists()


def test_the_lambda_plot_shows_each_continuations_gain_over_its_control(tmp_path, monkeypatch):
    """The bold line is the mean of (accuracy at lambda - control's) over the seeds that ran every
    lambda (seed 0), by hand; a lambda more seeds ran (0.6: seeds 0 and 1) gets the mean over all of
    them beside it, its n in the legend, so no line mixes two sets of seeds."""
    from oversmooth.claims import report

    records = [adapted(0, 0.880, {0.2: 0.881, 0.6: 0.886, 1.8: 0.870}), adapted(1, 0.890, {0.6: 0.892})]
    figures = []
    monkeypatch.setattr(report, "save_png", lambda plt, fig, path: figures.append(fig))
    report.plot_lambdas(records, tmp_path / "lambda.png")
    ax = figures[0].axes[0]
    bold = max(ax.get_lines(), key=lambda line: line.get_linewidth())
    assert list(bold.get_xdata()) == [0.2, 0.6, 1.8]
    assert list(bold.get_ydata()) == pytest.approx([0.1, 0.6, -1.0])
    squares = [line for line in ax.get_lines() if line.get_marker() == "s"]
    assert len(squares) == 1 and list(squares[0].get_ydata()) == pytest.approx([(0.6 + 0.2) / 2])
    labels = ax.get_legend_handles_labels()[1]
    assert labels == [
        "mean over the seeds that ran every lambda (n = 1), 95 % CI",
        "lambda 0.6: mean over every seed that ran it (n = 2), 95 % CI",
    ]
    (shaded,) = [p for p in ax.patches if p.get_alpha() == 0.08]  # claim 8's side: above 0
    assert shaded.get_y() == 0 and shaded.get_y() + shaded.get_height() == pytest.approx(ax.get_ylim()[1])
    assert "claimed: 8 higher than 0 (shaded); 2c highest at lambda 0.6" in ax.get_title()


def test_a_method_arm_that_has_not_plateaued_is_compared_at_equal_budget_and_says_so(tmp_path):
    """DESIGN 9.3: method arms report gate (a) too; NeuTRENO's seed 3 ends 0.7 pp short of its best."""
    fmnist(tmp_path, spectral=False)
    shutil.rmtree(tmp_path / "fmnist-p7" / "fmnist-pre-d8-neutreno-s3")
    make_cell(tmp_path, "fmnist-p7", "neutreno", 3, SOFTMAX_VAL[3] + NEUTRENO_GAIN[3], val=[0.89, 0.895, 0.888])
    claims = claims_of(tmp_path)
    assert "neutreno (pre-norm, depth 8) not plateaued (a), so compared at equal budget: seed 3 ended 0.70 pp" in (
        claims["2a"].ours
    )
    assert claims["2a"].verdict == "held" and claims["2a"].gate_passed is True  # the baseline's gate still decides
    assert "equal budget" not in claims["7"].ours


def test_a_finished_seed_without_a_value_is_named_not_dropped(tmp_path):
    """5c's seed 9 finished, but the flip turned no block's verdict: the row names the seed."""
    fmnist(tmp_path, spectral=False)
    folder = tmp_path / "fmnist-p7" / "fmnist-pre-d8-softmax-s9"
    (folder / "analysis.json").write_text(json.dumps(analysis() | {"value_flip": []}))
    claim = claims_of(tmp_path)["5c"]
    assert claim.verdict == "not tested" and claim.n == 9
    from oversmooth.claims.report import verdict_summary

    assert "5c (a finished seed gave no value)" in verdict_summary([claim])
    assert "9 of 10 planned seed pairs finished; seed(s) 9 finished but give the measure no value" in claim.reason


def test_claim_5c_is_decided_by_its_registered_chance_and_read_against_the_flips_own_pull(tmp_path):
    """Every block's verdict turns to smoothing, but the flip raises t_sim in every block, turned
    or not: the turned blocks' share (1) beats the registered 1/2 (held, the registered verdict),
    but is what the flip gives anyway, so the third protocol's reading (the reference chosen
    after the data) is not held."""
    fmnist(tmp_path, spectral=False)
    for seed in range(4, 14):
        rising = analysis(
            verdicts=("sharpening",) * 5 + ("smoothing",) * 3,
            changes=(-0.01 - 0.001 * seed,) * 8,
            flip=(0.03,) * 8,
            flip_verdicts=("smoothing",) * 8,
        )
        folder = tmp_path / "fmnist-p7" / f"fmnist-pre-d8-softmax-s{seed}"
        (folder / "analysis.json").write_text(json.dumps(rising))
    claim = claims_of(tmp_path)["5c"]
    assert claim.n == 10 and claim.verdict == "held" and claim.effect == 0.5
    assert "moved as the new verdict says 1 vs registered chance 0.5;" in claim.ours
    assert "the flip turned the verdict of 50 (50 sharpening to smoothing)" in claim.ours
    assert claim.reading == "inconclusive" and "read against the flip's own pull" in claim.reading_reason
    assert "mean difference +0," in claim.reading_reason and "exploratory" in claim.reading_reason


def test_claim_2cs_gate_reads_its_own_seeds_and_claims_without_a_gate_judge_none(tmp_path):
    """A softmax start outside 2c's seeds (10) that had not plateaued fails claim 8's gate, not 2c's;
    claims 3 and 5a have no gate, so none is judged."""
    fmnist(tmp_path, spectral=False)
    shutil.rmtree(tmp_path / "fmnist-p7" / "fmnist-pre-d8-softmax-s10")
    make_cell(tmp_path, "fmnist-p7", "softmax", 10, SOFTMAX_VAL[10], val=[0.89, 0.895, 0.888])
    records = [adapted(seed, 0.880, {0.2: 0.881, 0.6: 0.885 + 0.0005 * (seed % 2), 1.8: 0.870}) for seed in SEEDS]
    rounds = [{"softmax": 1.0, "neutreno": 1.02 + 0.01 * (i % 3)} for i in range(20)]
    claims = claims_of(tmp_path, adapted=records, benchmark={"rounds": rounds})
    assert claims["8"].gate_passed is False and "seed 10 ended" in claims["8"].reason
    assert claims["2c"].gate_passed is True and claims["2c"].verdict == "held"
    assert claims["3"].gate_passed is None and claims["3"].verdict == "held"
    ratio = math.exp(statistics.fmean(math.log(r["neutreno"]) for r in rounds))  # softmax's rounds take 1.0
    assert f"as a ratio {ratio:.3f} [" in claims["3"].ours


def test_claim_6_reports_free_beside_it_and_the_report_opens_with_the_verdicts(tmp_path):
    from oversmooth.claims.report import verdict_summary

    fmnist(tmp_path)
    claims = claims_of(tmp_path)
    free = statistics.fmean(100 * SOFTMAX_VAL[seed] for seed in range(8))
    assert f"free beside (not tested): mean test score {free:.4g} over 8 seeds" in claims["6"].ours
    summary = verdict_summary(list(claims.values()))
    assert summary.splitlines()[0] == "- **held** (4): 2a, 5b, 5c, 7"
    assert {line.split("** (")[0][4:] for line in summary.splitlines()} == {c.verdict for c in claims.values()}
    assert sum(int(line.split("(")[1].split(")")[0]) for line in summary.splitlines()) == len(claims)


def test_the_effects_plot_puts_the_papers_effect_beside_ours(tmp_path, monkeypatch):
    """2a's panel holds our interval and the paper's +0.84 pp (Nguyen et al. 2023, Table 1); 6's,
    whose paper states no number, only ours."""
    from oversmooth.claims import report

    fmnist(tmp_path)
    claims = claims_of(tmp_path)
    figures = []
    monkeypatch.setattr(report, "save_png", lambda plt, fig, path: figures.append(fig))
    report.plot_effects(list(claims.values()), tmp_path / "claims.png")
    panels = {ax.get_title().split(" ")[0]: ax for ax in figures[0].axes if ax.get_visible()}
    stars = lambda ax: [line.get_ydata()[0] for line in ax.get_lines() if line.get_marker() == "*"]  # noqa: E731
    assert stars(panels["2a"]) == [0.84] and claims["2a"].paper_effect == 0.84
    assert stars(panels["6"]) == [] and claims["6"].paper_effect is None


def test_the_reason_says_where_the_papers_effect_lies_against_our_interval(tmp_path):
    """2a (paper +0.84 pp) and 7 (paper +0.18 pp) against their Holm-matched intervals, by hand;
    6 (the paper states no number) says nothing of it."""
    fmnist(tmp_path)
    claims = claims_of(tmp_path)
    for claim_id, paper in (("2a", 0.84), ("7", 0.18)):
        low, high = claims[claim_id].ci
        where = "above" if paper > high else "below" if paper < low else "inside"
        assert f"the paper's effect (+{paper:g}) lies {where} this interval" in claims[claim_id].reason
    assert "paper's effect" not in claims["6"].reason
    no_number = [c for c in claims.values() if c.verdict == "inconclusive" and c.paper_effect is None]
    assert no_number and all("the paper states no effect in this measure" in c.reason for c in no_number)


def test_the_adaptation_table_gives_each_arms_recovery():
    """Two seeds: NeuTRENO patched in drops val accuracy to 80 / 82 % at step 0 and the
    continuation brings it to 89 / 90 %; the control stays at 89 %. Means and sample SDs by hand."""
    from oversmooth.claims.report import adaptation_table

    def arm(start, val, test, cos_start, cos_after):
        return {
            "status": "completed",
            "start": {"accuracy": start},
            "val": {"accuracy": val},
            "test": {"accuracy": test},
            "start_cos_sim_last": cos_start,
            "cos_sim_last": cos_after,
        }

    records = [
        {
            "seed": 0,
            "arms": {"neutreno-lam0.6": arm(0.80, 0.89, 0.88, 0.1, 0.2), "control": arm(0.89, 0.89, 0.88, 0.3, 0.3)},
        },
        {
            "seed": 1,
            "arms": {"neutreno-lam0.6": arm(0.82, 0.90, 0.87, 0.1, 0.4), "control": arm(0.89, 0.89, 0.88, 0.3, 0.3)},
        },
    ]
    rows = adaptation_table(records).splitlines()[2:]
    sd = math.sqrt(2) / 2  # two values 1 apart (pp): sample SD
    assert rows[0] == "| control | 0-1 | 89.00 ± 0.00 | 89.00 ± 0.00 | 88.00 ± 0.00 | 0.30 ± 0.00 | 0.30 ± 0.00 |"
    assert rows[1] == (
        f"| neutreno-lam0.6 | 0-1 | 81.00 ± {2 * sd:.2f} | 89.50 ± {sd:.2f} | 87.50 ± {sd:.2f} | 0.10 ± 0.00 "
        f"| 0.30 ± {0.2 * sd:.2f} |"
    )


def test_a_gate_waits_for_its_baseline_before_judging(tmp_path):
    """Only depth-w32's depth-8 cells of seed 2 have finished: claim 4's gate reads the pre-norm
    softmax at depth 48, which has not run, so it is not judged (not failed) and the claim waits."""
    from oversmooth.claims.report import verdict_summary

    make_cell(tmp_path, "depth-w32", "softmax", 2, 0.81, norm="pre", depth=8)
    make_cell(tmp_path, "depth-w32", "softmax", 2, 0.80, norm="post", depth=8)
    claims = claims_of(tmp_path)
    for claim_id in ("4a", "4b"):
        assert claims[claim_id].gate_passed is None and claims[claim_id].verdict == "not tested"
    assert "4a, 4b (runs not finished)" in verdict_summary([claims["4a"], claims["4b"]])


#: the paper's +0.84 pp (72.17 -> 73.01 %) carried to SOFTMAX_VAL's error by hand (DESIGN 9.8)
TRANSFERRED_2A = 0.84 / 27.83 * (100 - 100 * statistics.fmean(SOFTMAX_VAL))


@pytest.mark.parametrize(
    "gains, verdict, reading",
    [
        (NEUTRENO_GAIN, "held", "held"),  # +1 pp: beyond the paper's carried effect
        ([g / 20 for g in NEUTRENO_GAIN], "held", "held, smaller than claimed"),  # +0.05 pp on every seed
        (FEATSCALE_NOISE, "inconclusive", "smaller than claimed"),  # within +-0.2 pp, mean about 0
    ],
)
def test_the_third_protocol_reads_2a_in_magnitude(tmp_path, gains, verdict, reading):
    """2a's registered verdict stays; beside it, its Holm-matched interval against the paper's
    effect carried to our softmax's error: 0.84 / 27.83 of 11.9 pp, by hand."""
    fmnist(tmp_path, gains=gains)
    claim = claims_of(tmp_path)["2a"]
    assert claim.verdict == verdict and claim.reading == reading
    assert claim.paper_transferred == pytest.approx(TRANSFERRED_2A) and claim.paper_effect == 0.84
    short = reading != verdict
    assert (claim.ci[1] < TRANSFERRED_2A) == short
    assert f"is {TRANSFERRED_2A:+.3g} (3.02 % of the paper's error removed, of our softmax's" in claim.reading_reason
    assert ("lies entirely short of it" if short else "reaches it") in claim.reading_reason


def test_an_existence_claim_that_did_not_show_is_not_shown_here_and_the_summary_says_so(tmp_path):
    """6 ("smoothing can improve") inconclusive here reads "not shown here"; 2a (+1 pp, above the
    paper's carried effect) and 7 (an equivalence claim) read as registered."""
    from oversmooth.claims.report import claims_table, reading_summary

    fmnist(tmp_path)
    claims = claims_of(tmp_path)
    assert claims["6"].verdict == "inconclusive" and claims["6"].reading == "not shown here"
    assert "an existence claim" in claims["6"].reading_reason
    assert claims["7"].reading == "held" and claims["7"].paper_transferred is None
    summary = reading_summary(list(claims.values()))
    assert "6 **not shown here**" in summary and "2a" not in summary
    table = claims_table(list(claims.values()))
    assert "| **inconclusive** | *not shown here* |" in table and "| **held** | same |" in table
    assert "  Third protocol's reading: **not shown here**: an existence claim" in table


def test_the_papers_numbers_give_the_registered_effects_and_only_where_the_rule_applies():
    """The paper's two numbers of 2a, 2b and 8 give the effect registered beside them (+0.84,
    -0.017 rounded, +0.46: at the paper's own baseline, transferring changes nothing); the existence
    claims are 5a and 6 (DESIGN 9.8)."""
    numbers = {i: s.paper_numbers for i, s in STATEMENTS.items() if s.paper_numbers is not None}
    assert sorted(numbers) == ["2a", "2b", "8"]
    for claim_id, paper in numbers.items():
        assert paper.transferred(paper.baseline) == pytest.approx(STATEMENTS[claim_id].paper_effect, abs=5e-4)
    assert sorted(i for i, q in QUESTIONS.items() if q.existence) == ["5a", "6"]


def test_the_effects_plot_marks_the_claimed_side_n_and_the_full_measure(tmp_path, monkeypatch):
    """Each panel shades the side of 0 its claim states (7: inside its margin), draws the paper's
    carried effect where it has one, says n, and names the measure in full."""
    from matplotlib.patches import Rectangle

    from oversmooth.claims import report

    fmnist(tmp_path, gains=FEATSCALE_NOISE)
    claims = claims_of(tmp_path)
    figures = []
    monkeypatch.setattr(report, "save_png", lambda plt, fig, path: figures.append(fig))
    report.plot_effects(list(claims.values()), tmp_path / "claims.png")
    panels = {ax.get_title().split(" ")[0]: ax for ax in figures[0].axes if ax.get_visible()}
    for claim_id, (low, high) in (("2a", (0, None)), ("7", (-0.5, 0.5))):
        ax = panels[claim_id]
        (shaded,) = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_alpha() == 0.08]  # axhspan
        ys = shaded.get_y(), shaded.get_y() + shaded.get_height()
        assert ys == pytest.approx((low, ax.get_ylim()[1] if high is None else high))
        assert f"n = {claims[claim_id].n}" in ax.get_xlabel()
        assert ax.get_ylabel().replace("\n", " ") == claims[claim_id].measure
    assert "claimed: higher than 0" in panels["2a"].get_xlabel()
    assert "third protocol: smaller than claimed" in panels["2a"].get_title()
    dotted = [line.get_ydata()[0] for line in panels["2a"].get_lines() if line.get_linestyle() == ":"]
    assert dotted == [pytest.approx(TRANSFERRED_2A)]


#: fmnist-p7's softmax arm at random init, as scripts/random_init_null.py writes it
NULL_ARM = {
    "task": "fmnist",
    "norm": "pre",
    "label": "softmax",
    "depth": 8,
    "method": "softmax",
    "model": "vit",
    "cos_sim": [0.12, 0.15, 0.15],
    "mean": 0.14,
    "sd": 0.017,
    "inits": 3,
    "probe_examples": 32,
}


def softmax_cos_sim(root, value_of_seed=None) -> dict[int, float]:
    """fmnist-p7's softmax cells' last-layer cos_sim in their last record, by seed, read from their
    metrics.jsonl; set first to ``value_of_seed(seed)`` where given."""
    found = {}
    for folder in (root / "fmnist-p7").glob("fmnist-pre-d8-softmax-s*"):
        seed = int(folder.name.rsplit("-s", 1)[1])
        records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        if value_of_seed is not None:
            records[-1]["layers"][-1]["cos_sim"] = value_of_seed(seed)
            (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        found[seed] = records[-1]["layers"][-1]["cos_sim"]
    return found


def test_each_trained_claims_row_gives_its_baselines_cos_sim_beside_the_random_init_null(tmp_path):
    """DESIGN 9.8: the softmax arm's last-layer cos_sim, the mean over the claim's own seeds, beside
    the same architecture's at random init (the study's null.json); none for the static claims."""
    fmnist(tmp_path)
    softmax_cos_sim(tmp_path, lambda seed: 0.2 + 0.01 * seed)
    (tmp_path / "fmnist-p7" / "null.json").write_text(json.dumps({"study": "fmnist-p7", "arms": [NULL_ARM]}))
    trained = softmax_cos_sim(tmp_path)
    claims = claims_of(tmp_path)
    for claim_id, seeds in (
        ("2a", SEEDS),
        ("7", SEEDS),
        ("8", SEEDS),
        ("2c", range(8)),
        ("6", range(8)),
        ("5c", range(4, 14)),
    ):
        regime = claims[claim_id].regime
        mean = statistics.fmean(trained[seed] for seed in seeds)
        assert regime.cos_sim == pytest.approx(mean, abs=1e-12) and regime.seeds == len(seeds), claim_id
        assert (regime.arm, regime.null_mean, regime.null_sd, regime.null_inits) == (
            "fmnist-p7 softmax (pre-norm, depth 8)",
            0.14,
            0.017,
            3,
        )
        assert regime.text.startswith(f"{mean:.3f} ({len(seeds)} seeds) vs 0.140 ± 0.017 at random init (3 inits)")
        assert claims[claim_id].to_json()["regime"]["cos_sim"] == regime.cos_sim
    assert claims["4a"].regime.text == "no finished cell yet"  # no depth-w32 cells here
    assert all(claims[claim_id].regime is None for claim_id in ("1a", "1b", "3", "5a"))


@pytest.mark.parametrize("value, oversmooths", [(0.499, False), (0.5, True), (0.9, True)])
def test_the_row_says_it_was_tested_where_the_baseline_does_not_oversmooth_exactly_below_one_half(
    tmp_path, value, oversmooths
):
    """Below 0.5 (DESIGN 9.8's gate) the row, its details and the summary say so; a study without
    null.json says the null was not computed, and the report is still written."""
    fmnist(tmp_path)
    softmax_cos_sim(tmp_path, lambda seed: value)
    cells = [cell for study in sorted(p for p in tmp_path.iterdir() if p.is_dir()) for cell in read_study(study)]
    claims, report = render_claims(cells)
    said = "tested where the baseline does not oversmooth"
    tail = "the baseline oversmooths (>= 0.5)" if oversmooths else f"{said} (< 0.5)"
    for claim in claims:
        if claim.regime is not None and claim.regime.cos_sim is not None:
            assert claim.regime.oversmooths is oversmooths
            seeds = claim.regime.seeds
            assert claim.regime.text == f"{value:.3f} ({seeds} seeds) vs random init: null not computed: {tail}"
            family_row = f"| {claim.id} | {claim.statement} | {claim.paper} |"  # not the summary's
            row = next(line for line in report.markdown.splitlines() if line.startswith(family_row))
            assert row.endswith(f"| {claim.regime.text} |")
    summary = next(line for line in report.markdown.splitlines() if line.startswith("- *where the problem exists*"))
    assert (f"{said}: 2a, 2c, 5b, 5c, 6, 7, 8" in summary) is not oversmooths
    assert ("the baseline oversmooths: 2a, 2c, 5b, 5c, 6, 7, 8" in summary) is oversmooths


def test_the_third_protocols_records_are_tabled_as_recorded_and_a_damaged_one_is_named(tmp_path, capsys):
    """results/third-protocol/*.json: one row per record in the claims report, and each verdict in
    its claim's summary row; a record missing a field is one line naming the file (exit 2), nothing
    written."""
    from oversmooth.claims.third_protocol import FIELDS, read_third_protocol, third_protocol_section

    folder = tmp_path / "third-protocol"
    folder.mkdir()
    record = {name: f"{name} of a" for name in FIELDS} | {"verdict": "held", "extra": [1, 2]}
    (folder / "a.json").write_text(json.dumps(record))
    (folder / "b.json").write_text(json.dumps(record | {"claim": "8", "verdict": "pending", "regime": "0.6 vs 0.8"}))
    records = read_third_protocol(folder)
    section = "\n".join(third_protocol_section(records))
    assert section.count("| **held** |") == 1 and section.count("| **pending** |") == 1
    assert "| claim of a | model of a | – | **held** | sentence of a | `command of a` |" in section  # none recorded: –
    assert "| 8 | model of a | 0.6 vs 0.8 | **pending** |" in section  # a trained test's regime, as recorded
    assert main(["claims", str(folder), "--out", str(tmp_path / "ok"), "--no-probes"]) == 0
    summary = (tmp_path / "ok" / "report.md").read_text().split("\n### ")[0]  # the first screen
    row_8 = next(line for line in summary.splitlines() if line.startswith("| 8 |"))
    assert row_8.endswith("; 8: **pending** |")  # the record of claim 8 joins its row
    where = next(line for line in summary.splitlines() if line.startswith("- *where the problem exists*"))
    assert where.endswith("; 8: 0.6 vs 0.8")  # its regime joins the line, and the regime-less record's does not
    assert "claim of a" not in summary  # a record of no claim (a family's) does not
    decided = record | {"claim": "8 (SmolLM2)", "verdict": "contradicted", "effect": -0.017, "unit": "nat"}
    decided["test"] = {"seeds": [10, 11, 12], "mean": 0.3996, "ci": [0.3951, 0.4073], "reading": "contradicted"}
    smaller = decided | {"verdict": "inconclusive"}
    smaller["test"] = decided["test"] | {"ci": [-0.01, 0.004], "reading": "smaller than claimed"}
    for fresh, shown in (
        (decided, "**contradicted**, +0.400 [+0.395, +0.407] nat, n = 3 (paper -0.017 nat) |"),
        (
            smaller,
            "**inconclusive**, +0.400 [-0.0100, +0.00400] nat, n = 3 (paper -0.017 nat) (*smaller than claimed*) |",
        ),
    ):  # a decided paired test shows its numbers in the summary, its reading where it differs
        (folder / "b.json").write_text(json.dumps(fresh))
        out = tmp_path / f"decided-{fresh['verdict']}"
        assert main(["claims", str(folder), "--out", str(out), "--no-probes"]) == 0
        rows = (out / "report.md").read_text().split("\n### ")[0].splitlines()
        assert next(line for line in rows if line.startswith("| 8 |")).endswith(f"8 (SmolLM2): {shown}")
    (folder / "c.json").write_text(json.dumps({"claim": "1b", "command": "python scripts/x.py"}))
    out = tmp_path / "out"
    assert main(["claims", str(folder), "--out", str(out), "--no-probes"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "c.json is damaged" in err and "model, verdict, sentence" in err
    assert "python scripts/x.py" in err and not out.exists()


def test_claim_4_reads_not_tested_only_when_every_deep_post_norm_seed_trained(tmp_path):
    """The rule of docs/studies.md's depth pilots: a post-norm seed that ends below 20 % validation
    accuracy fails; none failing (and both pilots finished) makes 4a and 4b 'not tested' in the
    third protocol's reading, with each seed's accuracy in the reason."""
    from oversmooth.claims.reading import post_norm_trains_deep

    finals = {("depth-w32-d96-pilot", 0): 0.846, ("depth-w32-d96-pilot", 1): 0.847, ("depth-w32-d192-pilot", 0): 0.821}
    for (study, seed), accuracy in finals.items():
        make_cell(tmp_path, study, "softmax", seed, accuracy - 0.01, norm="post", val=[0.5, accuracy])
    read = lambda: read_studies([tmp_path / s for s in ("depth-w32-d96-pilot", "depth-w32-d192-pilot")])[0]  # noqa: E731
    assert post_norm_trains_deep(read()) == ""  # depth 192's second seed has not run: nothing to read yet
    make_cell(tmp_path, "depth-w32-d192-pilot", "softmax", 1, 0.09, norm="post", val=[0.3, 0.199])
    assert post_norm_trains_deep(read()) == ""  # it failed (19.9 % < 20 %): 4a and 4b are to be tested
    shutil.rmtree(tmp_path / "depth-w32-d192-pilot" / "fmnist-post-d192-softmax-s1")
    make_cell(tmp_path, "depth-w32-d192-pilot", "softmax", 1, 0.82, norm="post", val=[0.3, 0.833])
    reason = post_norm_trains_deep(read())
    assert "depths 96 and 192" in reason and "depth 96: 84.6 %, 84.7 %; depth 192: 82.1 %, 83.3 %" in reason
