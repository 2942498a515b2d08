"""The verdict of an adaptation in words (``oversmooth.adapt.verdict``), on hand-made results whose
answers are worked out by hand: the share of the gap closed only where the patched start lacks
something of the control's end, and a warning beside a verdict read on a small validation sample."""

import math

import pytest

from oversmooth.adapt.report import markdown
from oversmooth.adapt.result import AdaptResult, ArmResult
from oversmooth.adapt.tradeoff import tradeoffs
from oversmooth.adapt.verdict import MIN_VAL_EXAMPLES, judge, small_sample

CONFIG = {"method": "neutreno", "steps": 4, "batch_size": 8, "lr": 1e-4, "warmup": 0.1, "seed": 0, "lora": 0}


def arm(name: str, measure: str, start: float, end: float) -> ArmResult:
    return ArmResult(name, "neutreno", None, "completed", 4, 1.0, {measure: start}, {measure: end}, None, 0.3, 0.3)


def result(measure: str, control: float, patched: float, adapted: float, val: dict | None = None) -> AdaptResult:
    """The control scores ``control`` before and after; the patched arm goes from ``patched`` to ``adapted``."""
    arms = {"control": arm("control", measure, control, control)}
    arms["neutreno"] = arm("neutreno", measure, patched, adapted)
    val = val or {"examples": 64, "tokens": 64 * 128}
    train = {"examples": 512, **({"tokens": 512 * 128} if "tokens" in val else {})}  # text, or images
    data = {"train": train, "val": val, "test": val}
    return AdaptResult(CONFIG, {"kind": "pretrained", "path": "m"}, "distill", arms, data)


@pytest.mark.parametrize(
    "measure, control, patched, adapted, share",
    [
        ("output_cosine", 1.0, 0.5, 0.8, 60),  # (0.8 - 0.5) / (1.0 - 0.5)
        ("accuracy", 0.80, 0.60, 0.85, 125),  # past the control: (0.85 - 0.60) / (0.80 - 0.60)
        ("perplexity", 20.0, 40.0, 25.0, 68),  # log scale: log(25 / 40) / log(20 / 40) = 0.678
    ],
)
def test_the_share_of_a_gap_closed_is_worked_out_by_hand(measure, control, patched, adapted, share):
    verdict = judge(result(measure, control, patched, adapted), result(measure, control, patched, adapted).patched[0])
    assert round(100 * verdict.recovered) == share
    assert f", {share} % of the gap to the control closed" in verdict.words()


@pytest.mark.parametrize(
    "measure, control, patched, adapted",
    [
        ("accuracy", 0.80, 0.85, 0.70),  # was "300 % of the gap closed": (0.70 - 0.85) / (0.80 - 0.85)
        ("accuracy", 0.80, 0.85, 0.88),  # was "-160 %"
        ("perplexity", 20.0, 18.0, 22.0),  # lower is better: the patched start is already better
        ("output_cosine", 1.0, 1.0, 0.99),  # no gap at all
        # float32 rounding, as MiniLM with massive_clip at strength 1 (which moves no activation) scored
        # in the showcase: was "-879382745689 % of the gap to the control closed"
        ("output_cosine", 1.0, 1.0 - 1.731e-12, 0.9848),
        ("perplexity", 20.0, 20.0 * (1 + 3e-8), 22.0),
    ],
)
def test_no_share_is_given_where_the_patched_start_was_already_as_good_as_the_control(
    measure, control, patched, adapted
):
    made = result(measure, control, patched, adapted)
    verdict = judge(made, made.patched[0])
    words = verdict.words()
    assert verdict.recovered is None and "%" not in words and "gap to the control closed" not in words
    assert f"no gap to close: patched {patched:.4g} already as good as the control's {control:.4g}" in words
    assert tradeoffs(made)[0].start.per_unit is None  # no quality lost at step 0: "no loss", not a ratio


@pytest.mark.parametrize(
    "val, source, expected",
    [
        ({"examples": 4, "tokens": 4 * 16}, "pretrained", "4 validation sequences, fewer than 8"),
        ({"examples": 7, "tokens": 7 * 16}, "pretrained", "raise --eval-sequences"),
        ({"examples": 5}, "train run", "5 validation examples, fewer than 8: another sample may reverse it"),
        ({"examples": 5}, "train run", "train the run with a larger --val-size"),
        ({"examples": MIN_VAL_EXAMPLES, "tokens": 8 * 16}, "pretrained", None),
    ],
)
def test_a_verdict_on_a_small_validation_sample_comes_with_a_warning_in_the_report(val, source, expected):
    made = result("output_cosine", 1.0, 0.5, 0.8, val)
    made.source["kind"] = source
    warning = small_sample(made)
    report = markdown(made)
    if expected is None:
        assert warning is None and "Warning" not in report
        return
    assert expected in warning and f"**Warning**: {warning}." in report
    assert report.index("**Warning**") < report.index("- neutreno:")  # above the verdicts it qualifies


def test_the_threshold_is_where_the_t_interval_grows_wider_than_the_spread_of_single_examples():
    """``MIN_VAL_EXAMPLES``' stated reason: t(0.975, n - 1) / sqrt(n) > 1 up to n = 6, < 1 from 7 on
    (scipy's t quantiles, an independent reference), and 8 is analyze's default sample."""
    from scipy import stats

    from oversmooth.analyze.settings import DEFAULT_SEQUENCES

    assert MIN_VAL_EXAMPLES == DEFAULT_SEQUENCES
    width = {n: stats.t.ppf(0.975, n - 1) / math.sqrt(n) for n in range(2, 12)}
    assert all(width[n] > 1 for n in range(2, 7)) and all(width[n] < 1 for n in range(7, 12))
    assert width[MIN_VAL_EXAMPLES] == pytest.approx(0.84, abs=0.005)


def test_each_arm_has_one_colour_in_both_figures_and_no_two_arms_share_one(monkeypatch, tmp_path):
    """Ten patched arms beside the control, as ``--method all-patchable`` on MiniLM gives: the
    colour of each arm's line in adapt.png is that of its arrow in tradeoff.png, and the control
    (black) shares its colour with no arm (it shared blue with the tenth before)."""
    import oversmooth.adapt.report as report
    import oversmooth.adapt.tradeoff as tradeoff

    names = ["control", *(f"arm{i}" for i in range(10))]
    arms = {}
    for i, name in enumerate(names):
        made = arm(name, "output_cosine", 1.0 - i / 100, 0.99)
        made.rows = [
            {"arm": name, "step": step, "val_output_cosine": q, "cos_sim_last": 0.3, "cos_sim_0": 0.1, "cos_sim_1": 0.3}
            for step, q in ((0, 1.0 - i / 100), (4, 0.99))
        ]
        arms[name] = made
    data = {split: {"examples": 64, "tokens": 64 * 128} for split in ("train", "val", "test")}
    config = CONFIG | {"eval_sequences": 64}
    made = AdaptResult(config, {"kind": "pretrained", "path": "m", "model": "m"}, "distill", arms, data)
    drawn = {}

    def keep(fig, stem, formats):
        drawn[stem.name] = {line.get_label(): line.get_color() for ax in fig.axes for line in ax.get_lines()}

    monkeypatch.setattr(report, "save_figure", keep)
    monkeypatch.setattr(tradeoff, "save_figure", keep)
    report.plot(made, report.table(made), tmp_path / "adapt", ("png",))
    tradeoff.plot(made, tmp_path / "tradeoff", ("png",))
    lines, arrows = drawn["adapt"], drawn["tradeoff"]
    assert {name: lines[name] for name in names} == {name: arrows[name] for name in names}
    assert len({lines[name] for name in names}) == len(names)
