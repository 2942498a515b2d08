"""`oversmooth report`: claims decided from hand-made cells whose answers are known, and the files.

Cells are written as `oversmooth study` archives them (cell.json with the preset's own train
arguments, metrics.jsonl, results.json, analysis.json), so pairing, gates and the protocol's
measures all run on them.
"""

import csv
import json
from pathlib import Path

import pytest
from scipy import stats

from oversmooth.cli import main
from oversmooth.hf.quality import Quality, QualityRow
from oversmooth.study import STUDY_PRESETS
from oversmooth.study.claims import CLAIMS, Inputs, baseline_gate, decide_claims
from oversmooth.study.probes import CurvePair, Probes, random_init
from oversmooth.study.report import write_report
from oversmooth.study.results import read_study

SOFTMAX_ACC = [0.900, 0.904, 0.898, 0.902]  # mean 90.1 %: passes the 89 % gate


def analysis(cos_stream, verdicts=("smoothing",) * 8, changes=(0.02,) * 8, flipped=(-0.01,) * 8):
    blocks = lambda changes, verdicts: [{"layer": i + 1, "verdict": {"verdict": v},  # noqa: E731
                                         "attention": {"t_sim_change": c, "cos_sim_change": c}}
                                        for i, (c, v) in enumerate(zip(changes, verdicts))]
    return {"stream": {"cos_sim": list(cos_stream), "t_sim": list(cos_stream)}, "blocks": blocks(changes, verdicts),
            "ln_flip": {"blocks": blocks(flipped, verdicts), "val": {"accuracy": 0.1}, "val_unflipped": {"accuracy": 0.9}}}


def make_cell(root: Path, study: str, label: str, seed: int, accuracy: float, *, norm: str = "pre",
              last_gain: float = 0.001, status: str = "completed", examples_per_second: float = 100.0,
              cell_analysis: dict | None = None, depth: int | None = None) -> None:
    """A cell of preset ``study`` as `oversmooth study --results` archives it: the preset's own
    cell.json, two epochs whose val score rose by ``last_gain`` in the last, results.json."""
    cell = next(c for c in STUDY_PRESETS[study].cells() if (c.variant.label, c.seed, c.norm) == (label, seed, norm)
                and (depth is None or c.depth == depth))
    folder = root / study / cell.name
    folder.mkdir(parents=True)
    (folder / "cell.json").write_text(json.dumps(cell.to_dict()))
    lm = cell.model == "lm"
    name = "perplexity" if lm else "accuracy"
    epochs = [{"epoch": e, "val": {name: accuracy - (last_gain if e == 1 else 0.0), "loss": 4.0 + (last_gain if e == 1 else 0)},
               "layers": [{"layer": l, "cos_sim": 0.3, "t_sim": 0.3} for l in range(cell.depth)]} for e in (1, 2)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(e) + "\n" for e in epochs))
    if status != "partial":
        (folder / "results.json").write_text(json.dumps({
            "status": status, "test": {name: accuracy} if status == "completed" else None,
            "train_examples_per_second": examples_per_second, "wall_seconds": 1.0}))
    if cell_analysis is not None:
        (folder / "analysis.json").write_text(json.dumps(cell_analysis))
    study_file = root / study / "study.json"
    if not study_file.exists():
        study_file.write_text(json.dumps({**STUDY_PRESETS[study].to_dict(), "command": f"oversmooth study {study} --x"}))


def fmnist(root, neutreno_gain=(0.010, 0.012, 0.008, 0.011), softmax=SOFTMAX_ACC, seeds=(0, 1, 2, 3), **softmax_kw):
    """fmnist-vit: NeuTRENO +1 pp on each seed; smooth and sharpen noise around softmax."""
    noise = [(0.002, -0.001), (-0.003, 0.002), (0.001, 0.001), (0.0, -0.002)]
    for seed in seeds:
        base = softmax[seed]
        make_cell(root, "fmnist-vit", "softmax", seed, base, examples_per_second=100.0, cell_analysis=analysis(
            [0.1, 0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.78, 0.7]), **softmax_kw)
        make_cell(root, "fmnist-vit", "neutreno", seed, base + neutreno_gain[seed], examples_per_second=95.0,
                  cell_analysis=analysis([0.1] * 9))
        make_cell(root, "fmnist-vit", "sharpen", seed, base + noise[seed][0],
                  cell_analysis=analysis([0.1] * 9, ("sharpening",) * 8, (-0.01,) * 8))
        make_cell(root, "fmnist-vit", "smooth", seed, base + noise[seed][1], cell_analysis=analysis([0.1] * 9))


def claims_of(root, **kw):
    cells = [cell for study in sorted(p for p in root.iterdir() if p.is_dir()) for cell in read_study(study)]
    return {c.id: c for c in decide_claims(cells, **kw)}


def test_known_paired_effects_give_the_known_verdicts(tmp_path):
    fmnist(tmp_path)
    for seed, (base, featscale) in enumerate(zip(SOFTMAX_ACC, (0.001, -0.002, 0.0))):  # B pairs with A's softmax
        make_cell(tmp_path, "fmnist-featscale", "featscale", seed, base + featscale)
    claims = claims_of(tmp_path)
    tested = [n for n, c in claims.items() if c.verdict != "not tested"]
    assert sorted(claims) == sorted(set(CLAIMS) - {"1a", "1b", "5a-MiniLM"})  # no probes: no probe claims
    assert sorted(tested) == ["2a", "3", "5a", "5b", "5c", "6", "7"]
    m = len(tested)

    # 2a: +1.0, +1.2, +0.8, +1.1 pp: t = 1.025 / (0.0957 / 2) = 21.4, df 3
    gains = [1.0, 1.2, 0.8, 1.1]
    p = stats.ttest_rel([a + g for a, g in zip(SOFTMAX_ACC, gains)], SOFTMAX_ACC).pvalue
    assert claims["2a"].verdict == "held" and "difference +1.03" in claims["2a"].ours and "n = 4" in claims["2a"].ours
    assert f"over {m} claims" in claims["2a"].reason and p < 0.05 / m
    assert "passed" in claims["2a"].gate and claims["2a"].command == "oversmooth study fmnist-vit --out runs/studies/fmnist-vit --results results"
    # 3: time ratio 100 / 95 = 1.053 < 1.10 on every seed, exactly: no spread, held
    assert claims["3"].verdict == "held"
    # 5a: cos_sim ends at 0.70 below its peak 0.80, every seed alike: held
    assert claims["5a"].verdict == "held" and "0.7 vs 0.8" in claims["5a"].ours
    # 5b: sharpen's blocks say sharpening and fall, the others say smoothing and rise: 100 % vs chance 62.5 %
    assert claims["5b"].verdict == "held" and "1 vs 0.625" in claims["5b"].ours
    # 5c: flipped -0.01 vs trained +0.02 in every block
    assert claims["5c"].verdict == "held" and "accuracy with the flip 10.0 % vs 90.0 % as trained" in claims["5c"].ours
    # 6: smooth - sharpen = -0.3, +0.5, 0, -0.2 pp: noise, inconclusive with a detectable effect
    assert claims["6"].verdict == "inconclusive" and "smallest effect this design detects" in claims["6"].reason
    # 7: FeatScale (study fmnist-featscale) paired with fmnist-vit's softmax: +0.1, -0.2, 0 pp
    assert claims["7"].verdict == "inconclusive" and "n = 3" in claims["7"].ours
    assert claims["2b"].verdict == "not tested" and "0 of 3 planned seed pairs" in claims["2b"].reason


def test_a_baseline_below_its_gate_is_not_tested_undertrained(tmp_path):
    fmnist(tmp_path, softmax=[a - 0.05 for a in SOFTMAX_ACC])  # 85.1 %: the same +1 pp effect, but undertrained
    claim = claims_of(tmp_path)["2a"]
    assert claim.verdict == "not tested" and "undertrained: softmax test accuracy 85.10 % (mean of 4 seeds) < 89 %" in claim.reason
    assert "failed" in claim.gate


def test_a_baseline_that_fails_alone_shows_its_gate_before_any_method_trains(tmp_path):
    """The gate-first runner stops after the softmax cells: every claim on them must say why."""
    for seed, base in enumerate(SOFTMAX_ACC):
        make_cell(tmp_path, "fmnist-vit", "softmax", seed, base - 0.05)  # 85.1 %
    claims = claims_of(tmp_path)
    for claim_id in ("2a", "6", "7"):  # 6's pair is smooth vs sharpen, its gate still reads softmax
        assert "undertrained: softmax test accuracy 85." in claims[claim_id].reason, claim_id
        assert "failed: undertrained" in claims[claim_id].gate and claims[claim_id].verdict == "not tested"

    for seed, base in enumerate(SOFTMAX_ACC):  # a diverged baseline is finished too, and failed
        make_cell(tmp_path / "diverged", "fmnist-vit", "softmax", seed, base, status="diverged")
    claim = claims_of(tmp_path / "diverged")["2a"]
    assert "did not complete 2+ epochs on every seed" in claim.reason and "failed: undertrained" in claim.gate


def test_a_claims_command_runs_the_whole_grid():
    """A claim is reproduced by its study's command less the flags that keep some methods or seeds."""
    ran = "oversmooth study fmnist-vit --out 'runs/my studies' --methods softmax --seeds=0,1 --jobs 3"
    inputs = Inputs([], commands={"fmnist-vit": ran})
    assert inputs.command("fmnist-vit") == "oversmooth study fmnist-vit --out 'runs/my studies' --jobs 3"
    assert inputs.command("austen-lm") == "oversmooth study austen-lm --out runs/studies/austen-lm --results results"


def test_the_runner_stops_on_the_gate_the_report_would_name(tmp_path):
    """scripts/run_claims.sh trains the softmax cells first and asks ``baseline_gate`` whether to go on."""
    preset = STUDY_PRESETS["fmnist-vit"]
    cells = lambda folder: read_study(folder / "fmnist-vit") if (folder / "fmnist-vit").exists() else []  # noqa: E731
    assert baseline_gate(preset, []) == "undertrained: no finished cell of fmnist-vit"
    for seed, base in enumerate(SOFTMAX_ACC):  # 90.1 %, plateaued: go on
        make_cell(tmp_path / "good", "fmnist-vit", "softmax", seed, base)
    assert baseline_gate(preset, cells(tmp_path / "good")) is None
    for seed, base in enumerate((0.8901, 0.8852, 0.8871, 0.8845)):  # recipe 3's four seeds: mean 88.67 %
        make_cell(tmp_path / "recipe3", "fmnist-vit", "softmax", seed, base)
    assert baseline_gate(preset, cells(tmp_path / "recipe3")) == "undertrained: softmax test accuracy 88.67 % (mean of 4 seeds) < 89 %"
    make_cell(tmp_path / "rising", "fmnist-vit", "softmax", 0, 0.90, last_gain=0.004)
    assert baseline_gate(preset, cells(tmp_path / "rising")) == "not plateaued: softmax gained 0.40 pp val accuracy in its last epoch"
    make_cell(tmp_path / "lm", "austen-lm", "softmax", 0, 400.0)  # perplexity 400 > 120
    assert baseline_gate(STUDY_PRESETS["austen-lm"], read_study(tmp_path / "lm" / "austen-lm")) == \
        "undertrained: softmax test perplexity 400.0 > 120"
    assert baseline_gate(STUDY_PRESETS["austen-lm"], cells(tmp_path / "good")) == "undertrained: no finished cell of austen-lm"


def test_a_baseline_still_rising_is_not_tested_not_plateaued(tmp_path):
    fmnist(tmp_path, last_gain=0.004)  # +0.4 pp in the last epoch
    claim = claims_of(tmp_path)["6"]
    assert claim.verdict == "not tested" and "not plateaued: softmax gained 0.40 pp" in claim.reason


def test_unfinished_seeds_are_not_tested_yet_and_leave_the_holm_family(tmp_path):
    fmnist(tmp_path, seeds=(0, 1))
    claims = claims_of(tmp_path)
    assert claims["2a"].verdict == "not tested" and "2 of 4 planned seed pairs finished" in claims["2a"].reason
    assert "difference +1.1" in claims["2a"].ours  # the interim numbers are shown
    assert all(c.verdict == "not tested" for c in claims.values())


def test_a_claim_on_every_method_of_a_seed_waits_for_all_of_them(tmp_path):
    """5b reads every method's blocks: the softmax baseline alone (all seeds, gate passed) decides
    5a and 5c, which read only softmax, but not 5b, whose value would change as methods land."""
    for seed, base in enumerate(SOFTMAX_ACC):
        make_cell(tmp_path, "fmnist-vit", "softmax", seed, base,
                  cell_analysis=analysis([0.1, 0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.78, 0.7]))
    claims = claims_of(tmp_path)
    assert claims["5a"].verdict == "held" and claims["5c"].verdict == "held"
    assert claims["5b"].verdict == "not tested" and "0 of 4 planned seed pairs finished" in claims["5b"].reason


def test_the_language_model_claim_compares_perplexity_downwards(tmp_path):
    for seed, (ppl, change) in enumerate(((90.0, -1.0), (92.0, -1.5), (91.0, -0.5))):
        make_cell(tmp_path, "austen-lm", "softmax", seed, ppl, last_gain=0.001)
        make_cell(tmp_path, "austen-lm", "neutreno", seed, ppl + change)
    claim = claims_of(tmp_path)["2b"]
    assert claim.verdict == "inconclusive" and "difference -1" in claim.ours  # t = -3.46, df 2, p 0.074
    assert claim.reason.startswith("inconclusive: mean difference -1 over 3 pairs")


def test_a_cell_of_another_training_does_not_pair(tmp_path):
    fmnist(tmp_path)
    info = json.loads((tmp_path / "fmnist-vit" / "fmnist-pre-d8-neutreno-s0" / "cell.json").read_text())
    info["spec"]["epochs"] += 1
    (tmp_path / "fmnist-vit" / "fmnist-pre-d8-neutreno-s0" / "cell.json").write_text(json.dumps(info))
    claim = claims_of(tmp_path)["2a"]
    assert claim.verdict == "not tested" and "3 of 4 planned seed pairs" in claim.reason


def probes(quality=None, blocks=None):
    lower = CurvePair([[0.1, 0.3, 0.5, 0.6]], [[0.1, 0.3, 0.4, 0.45]], 0.6, "test")
    falls = CurvePair([[0.1, 0.3, 0.5, 0.4]], [[0.1, 0.3, 0.4, 0.35]], 0.6, "test", quality)
    blocks = blocks or [{"layer": l, "verdict": "smoothing", "attention": {"cos_sim_change": 0.1, "t_sim_change": 0.1},
                         "mlp": {"cos_sim_change": -0.2 if l == 3 else 0.05, "t_sim_change": 0.0},
                         "norm": {"cos_sim_change": 0.0, "t_sim_change": 0.0}} for l in (1, 2, 3)]
    return Probes(lower, falls, blocks)


def test_probe_claims_from_known_curves():
    claims = {c.id: c for c in decide_claims([], probes(), ids=("1a", "1b", "5a-MiniLM"))}
    assert claims["1a"].verdict == "held" and "0.600 -> 0.450" in claims["1a"].ours
    assert claims["5a-MiniLM"].verdict == "held" and "layer 3: 0.500 -> 0.400 (attention +0.100, mlp -0.200" \
        in claims["5a-MiniLM"].ours and "raises cos_sim in 3 of 3 blocks" in claims["5a-MiniLM"].ours
    broken = Quality((QualityRow("neutreno", "lam=0.6", "output_cosine", 0.2, 1.0, None, False),))
    claim = decide_claims([], probes(broken), ids=("1b",))[0]
    assert claim.verdict == "model broken" and "output cosine 0.2" in claim.reason
    assert "3 of 3 judged blocks agree (3.0 by chance from the marginals)" in probes().pretrained_agreement()


def test_untrained_neutreno_probe_matches_the_baseline_where_it_must():
    """Same weights: at lambda 0 every layer equals softmax; at 0.6 the embeddings and block 1 still do."""
    zero = random_init(seeds=(0,), lam=0.0, images=4)
    assert zero.neutreno[0] == pytest.approx(zero.baseline[0], abs=1e-6)
    pair = random_init(seeds=(0,), lam=0.6, images=4)
    assert pair.neutreno[0][:2] == pytest.approx(pair.baseline[0][:2], abs=1e-6)
    assert len(pair.baseline[0]) == 13 and pair.neutreno[0][-1] != pytest.approx(pair.baseline[0][-1], abs=1e-3)


def test_report_files_and_partial_cells(tmp_path, capsys):
    fmnist(tmp_path, seeds=(0, 1))
    make_cell(tmp_path, "fmnist-vit", "softmax", 2, 0.65, status="partial")   # still training: last val
    make_cell(tmp_path, "fmnist-vit", "neutreno", 2, 0.40, status="diverged")  # stopped: last good val
    root = tmp_path / "fmnist-vit"
    assert main(["report", str(root), "--no-probes", "--out", str(tmp_path / "rep")]) == 0
    assert "wrote" in capsys.readouterr().out
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "| fmnist | pre | softmax | 81.8 ± 14.6* (3) |" in report  # 90.0, 90.4 and 65.0 (unfinished)
    assert "† (3)" in report and "oversmooth study fmnist-vit --x" in report
    for png in ("fmnist-vit_layers.png", "fmnist-vit_curves.png"):
        assert (tmp_path / "rep" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png in report
    rows = list(csv.DictReader(open(tmp_path / "rep" / "cells.csv")))
    assert len(rows) == 10 and {r["status"] for r in rows} == {"completed", "partial", "diverged"}
    assert json.loads((tmp_path / "rep" / "claims.json").read_text())[0]["id"] == "2a"


def test_report_of_a_folder_that_is_no_study_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--no-probes"]) == 2
    assert "not a study folder" in capsys.readouterr().err


def test_written_report_matches_the_claims_it_returns(tmp_path):
    fmnist(tmp_path)
    claims = write_report(read_study(tmp_path / "fmnist-vit"), tmp_path / "rep")
    report = (tmp_path / "rep" / "report.md").read_text()
    for claim in claims:
        assert f"| {claim.id} | {claim.statement} |" in report
        assert f"| **{claim.verdict}** | `{claim.command}` |" in report  # its row names how to reproduce it


def pilots(root, post_d96=0.191, status="completed"):
    """Both claim-4 pilots as archived; ``post_d96`` (post-norm at depth 96) decides whether one failed."""
    for study, depth, pre, post in (("postnorm-pilot", 24, 0.40, 0.43), ("postnorm-pilot", 48, 0.345, 0.424),
                                    ("postnorm-pilot-2", 48, 0.50, 0.52), ("postnorm-pilot-2", 96, 0.36, post_d96)):
        make_cell(root, study, "softmax", 0, pre, norm="pre", depth=depth)
        make_cell(root, study, "softmax", 0, post, norm="post", depth=depth,
                  status=status if depth == 96 else "completed")


POST_D96 = {"pre": [0.36, 0.35, 0.37], "post": [0.19, 0.22, 0.18], "deesc": [0.30, 0.31, 0.32]}


def postnorm_comparison(root):
    for i, seed in enumerate((1, 2, 3)):
        make_cell(root, "postnorm-deesc", "softmax", seed, POST_D96["pre"][i], norm="pre")
        make_cell(root, "postnorm-deesc", "softmax", seed, POST_D96["post"][i], norm="post")
        make_cell(root, "postnorm-deesc", "deescalate", seed, POST_D96["deesc"][i], norm="post")


@pytest.mark.parametrize("post_d96, status, why", [
    (0.33, "completed", "nothing to rescue: post-norm softmax did not fail in postnorm-pilot (depth 24 or 48) "
                        "nor in postnorm-pilot-2 (depth 48 or 96)"),
    (0.30, "completed", None),   # 6 pp below pre-norm: fails
    (0.35, "diverged", None),
])
def test_claim_4_is_tested_only_where_a_pilot_found_post_norm_failing(tmp_path, post_d96, status, why):
    pilots(tmp_path, post_d96, status)
    postnorm_comparison(tmp_path)
    claims = claims_of(tmp_path, ids=("4a", "4b"))
    assert ("Pilots: postnorm-pilot (lr 0.001, augmented, 2 epochs of 10 000 images, 1 seed), validation accuracy: "
            "depth 24: pre-norm 40.0 %, post-norm 43.0 %; depth 48: pre-norm 34.5 %, post-norm 42.4 %. postnorm-pilot-2 "
            "(lr 0.002, no augmentation, 2 epochs of 10 000 images, 1 seed), validation accuracy: depth 48: pre-norm "
            "50.0 %, post-norm 52.0 %") in claims["4a"].ours
    if why:
        assert claims["4a"].verdict == claims["4b"].verdict == "not tested"
        assert why in claims["4b"].reason and why in claims["4b"].gate
        return
    # the comparison's seeds decide, by a paired t-test with Holm over the two tested claims (scipy as reference)
    p_4a = stats.ttest_rel(POST_D96["post"], POST_D96["pre"]).pvalue
    p_4b = stats.ttest_rel(POST_D96["deesc"], POST_D96["post"]).pvalue
    assert claims["4a"].verdict == claims["4b"].verdict == "held"
    for claim, p in (("4a", p_4a), ("4b", p_4b)):
        holm = max(min(1.0, 2 * min(p_4a, p_4b)), p) if p == max(p_4a, p_4b) else min(1.0, 2 * p)
        assert f"Holm-adjusted p {holm:.3g} over 2 claims" in claims[claim].reason
    assert "difference -16.3" in claims["4a"].ours and "difference +11.3" in claims["4b"].ours


def test_claim_4_without_pilots_or_comparison_says_what_is_missing(tmp_path):
    assert {c.reason for c in decide_claims([], ids=("4a", "4b"))} == {"not tested: 0 of 3 planned seed pairs finished"}
    assert "Pilots: no pilot has run" in decide_claims([], ids=("4a",))[0].ours
    pilots(tmp_path, post_d96=0.33)  # no failure, and a comparison nobody should have run
    postnorm_comparison(tmp_path)    # trained like pilot 2 at depth 96, on other seeds: no pilot
    studies = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    for order in (studies, studies[::-1]):
        cells = [cell for study in order for cell in read_study(study)]
        assert [c.reason.split(":")[:2] for c in decide_claims(cells, ids=("4a", "4b"))] == \
            [["not tested", " nothing to rescue"]] * 2


@pytest.mark.parametrize("damaged", ["study.json", "results.json", "metrics.jsonl", "cell.json"])
def test_a_damaged_file_is_one_line_naming_it(tmp_path, capsys, damaged):
    """A truncated study.json, results.json, metrics.jsonl or cell.json: exit 2, one line naming the
    file, no report written."""
    make_cell(tmp_path, "fmnist-vit", "softmax", 0, 0.90)
    study = tmp_path / "fmnist-vit"
    path = study / damaged if damaged == "study.json" else next(study.glob(f"*/{damaged}"))
    path.write_text(path.read_text()[:-10])  # its tail lost
    assert main(["report", str(study), "--no-probes", "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{damaged} is damaged" in err
    assert not (tmp_path / "rep").exists()


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
    claims = write_report(cells, tmp_path / "rep")
    assert [c.id for c in claims] == [i for i in CLAIMS if i not in ("1a", "1b", "5a-MiniLM")]
    assert (tmp_path / "rep" / "report.md").is_file()


def test_every_panel_names_its_methods_in_one_colour_each(tmp_path, monkeypatch):
    """Panels may hold different methods (de-escalation only in the post-norm one): each panel has
    its own legend, and a method keeps its colour across panels."""
    import matplotlib.colors

    from oversmooth.study import report

    postnorm_comparison(tmp_path)
    cells = read_study(tmp_path / "postnorm-deesc")
    figures = []
    monkeypatch.setattr(report, "save_png", lambda plt, fig, path: figures.append(fig))
    report.plot_curves(cells, tmp_path / "curves.png")
    report.plot_layers(cells, tmp_path / "layers.png")
    for fig in figures:
        colours = {}
        for index, ax in enumerate(fig.axes):  # row by row: the first two are the pre- and post-norm panels
            lines = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
            if index < 2:  # the top row names what its column shows
                assert {t.get_text().split(" (")[0] for t in ax.get_legend().get_texts()} == \
                    {line.get_label().split(" (")[0] for line in lines}
            for line in lines:
                colours.setdefault(line.get_label().split(" (")[0], set()).add(matplotlib.colors.to_hex(line.get_color()))
        assert set(colours) == {"softmax", "deescalate"} and all(len(c) == 1 for c in colours.values())
        assert colours["softmax"] != colours["deescalate"]
