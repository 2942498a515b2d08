"""Claims 4a, 4b and the depth-fix family where post-norm fails (docs/registrations/fourth-step.md,
sections 1 and 6): preset ``postnorm-family``, the confirmed recipe (w64-lr0.004-wu0.05-clip1 on
depth-w32's 16-epoch schedule) on fresh seeds, every registered seed paired, decided on the final
validation accuracy in % (``measures.final_val``); the test split is reported beside it and
decides nothing.

- **4a and 4b**, one Holm family of two: 4a per seed is post-norm's validation-accuracy deficit to
  pre-norm at depth 96 minus the same at depth 8 (``measures.val_deficit_by_depth``), 4b is
  post-norm de-escalation (tau 1) minus post-norm softmax at depth 96; both claimed higher.
- **The depth fixes**, a Holm family of five: each fix in its paper's placement
  (``presets.DEPTH_FIXES``) minus post-norm softmax at depth 96, a positive difference "held".

Every test is a two-sided paired t-test by seed; "held" is the claimed side.

Each family is decided together (``verdicts.decide_family``): **held** where the Holm-matched
interval lies above 0, **contradicted** below, **inconclusive** otherwise; **pending**, with what
has finished, while a cell of the family is missing; **not tested** when pre-norm softmax at depth
96 did not train on a registered seed (``postnorm_confirm.pre_norm_short``: gate (a) within
0.5 pp and a final validation accuracy of at least 78.89 %). Each record states beside its
verdict, deciding nothing: the difference on each seed, the test split's mean difference,
how far post-norm softmax ends below pre-norm at depth 96 (for a fix, the share of it closed) and
each arm's validation accuracy with its last-layer cos_sim; and, whatever the verdict, the
regime: post-norm softmax's last-layer cos_sim at depth 96 beside its random-init null
(``regime.tested_where``) on the seeds where it trains, those where it fails named beside it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from oversmooth.claims import measures
from oversmooth.claims.gates import LAST_EVALUATIONS, MIN_EPOCHS_BEFORE_END, arm_name, plateau_shortfall
from oversmooth.claims.gathering import gather, group_cells, has_finished
from oversmooth.claims.measures import Key, Measure, last_val
from oversmooth.claims.postnorm_confirm import CANDIDATE, PLATEAU_PP, PRE_TRAINS_AT, pre_norm_short
from oversmooth.claims.postnorm_screen import CHANCE_BAR, K_PP, ScreenRow, arm_of
from oversmooth.claims.presets import CLAIMS_PRESETS, DEPTH_FIXES
from oversmooth.claims.protocol import Protocol
from oversmooth.claims.regime import tested_where
from oversmooth.claims.statements import DEPTH_FIXES_ROW
from oversmooth.claims.third_protocol import test_fields
from oversmooth.claims.verdicts import PairedClaim, decide_family
from oversmooth.study.report import last_cos_sim, seed_span
from oversmooth.study.results import CellResult, paired_score
from oversmooth.utils.markdown import markdown_table, mean_sd

PRESET = CLAIMS_PRESETS["postnorm-family"]
COMMAND = "oversmooth study postnorm-family --out runs/studies/postnorm-family --results results --jobs 2"
DEEP, SHALLOW = 96, 8
POST, PRE = ("post", "softmax", DEEP), ("pre", "softmax", DEEP)
#: what sets these records apart from the claims' other tests
CASE = "post-norm fails"
#: each depth fix by its paper's name
FIX_NAMES = {
    "deepnorm": "DeepNorm",
    "layerscale": "LayerScale",
    "rezero": "ReZero",
    "sigma_reparam": "σReparam",
    "mv_split": "MV-split",
}


@dataclass(frozen=True)
class FamilyClaim:
    """One claim of the families: its record's ``name``, its ``question`` (the pairs on validation
    accuracy) and ``on_test``, the same measure on the test split (reported, deciding nothing)."""

    name: str
    question: Protocol
    on_test: Measure
    what: str  # the record's "tested on", after the recipe


def _claim(
    name: str, method: Key, baseline: Key, on_val: Measure, on_test: Measure, what: str, reads=()
) -> FamilyClaim:
    """A claim on ``PRESET``'s cells, claimed higher, paired by seed across depths; each seed waits
    for pre-norm softmax at depth 96 too (the gate's cell)."""
    question = Protocol(name, PRESET, method, baseline, on_val, "higher", across=("depth",), reads=(PRE, *reads))
    return FamilyClaim(name, question, on_test, what)


CLAIM_4A = _claim(
    f"4a ({CASE})",
    POST,
    ("post", "softmax", SHALLOW),
    measures.val_deficit_by_depth,
    measures.deficit_by_depth,
    f"(pre - post at depth {DEEP}) - (pre - post at depth {SHALLOW}), softmax",
    reads=(("pre", "softmax", SHALLOW),),
)
CLAIM_4B = _claim(
    f"4b ({CASE})",
    ("post", "deescalate", DEEP),
    POST,
    measures.final_val,
    measures.score,
    f"post-norm de-escalation (tau 1) - post-norm softmax at depth {DEEP}",
)
FIXES = tuple(
    _claim(
        f"{FIX_NAMES[fix.label]} ({CASE})",
        (fix.norms[0], fix.label, DEEP),
        POST,
        measures.final_val,
        measures.score,
        f"{FIX_NAMES[fix.label]} ({fix.norms[0]}-norm) - post-norm softmax at depth {DEEP}",
    )
    for fix in DEPTH_FIXES
)
#: the registered Holm families: 4a and 4b (m = 2), the depth fixes (m = 5)
FAMILIES = ((CLAIM_4A, CLAIM_4B), FIXES)


def pre_norm_gate(cells: list[CellResult]) -> str | None:
    """Why no claim here is tested: pre-norm softmax at depth 96 did not train on a registered
    seed (the first such seed's reason); None while every finished one trained."""
    seeds = group_cells(CLAIM_4A.question, cells)
    for seed in PRESET.seeds:
        cell = seeds.get(seed, {}).get(PRE)
        if has_finished(cell) and (short := pre_norm_short(cell)):
            return f"pre-norm softmax at depth {DEEP} did not train ({short}; the gate of section 1)"
    return None


def family_records(cells: list[CellResult]) -> list[dict]:
    """One record per claim of both families (``claims.third_protocol``'s fields, with the test's
    numbers once decided; a fix's ``beside`` names the summary's row of them), in the order of
    ``FAMILIES``."""
    failure, where = pre_norm_gate(cells), _regime(cells)
    return [record for family in FAMILIES for record in _family(family, cells, failure, where)]


def _family(family: tuple[FamilyClaim, ...], cells: list[CellResult], failure: str | None, where: dict) -> list[dict]:
    """One family's records: not tested, pending, or decided together by Holm; each with the
    regime ``where`` (``_regime``: post-norm softmax at depth 96, one for both families), deciding nothing."""
    base = {
        claim.name: {
            "claim": claim.name,
            "model": f"ViT {CANDIDATE}, {PRESET.train['epochs']} epochs, seeds {seed_span(list(PRESET.seeds))}: "
            f"{claim.what}, val accuracy (pp)",
            "command": COMMAND,
            "unit": "pp",
            "direction": "higher",  # every test is two-sided; "held" is its side
            **where,
            **({"beside": DEPTH_FIXES_ROW[0]} if family is FIXES else {}),
        }
        for claim in family
    }
    if failure:
        return [base[claim.name] | {"verdict": "not tested", "sentence": f"not tested: {failure}"} for claim in family]
    evidence = {claim.name: gather(claim.question, cells) for claim in family}
    waiting = [name for name, found in evidence.items() if found.missing]
    if waiting:
        return [
            base[name]
            | {
                "verdict": "pending",
                "sentence": found.missing or f"its pairs have finished; its Holm family waits for {', '.join(waiting)}",
            }
            for name, found in evidence.items()
        ]
    pairs = [PairedClaim(*(tuple(v[i] for v in found.values) for i in (1, 2)), "higher") for found in evidence.values()]
    groups = group_cells(CLAIM_4A.question, cells)
    records = []
    for claim, decision in zip(family, decide_family(pairs)):
        seeds = [seed for seed, *_ in evidence[claim.name].values]
        differences = [m - b for _, m, b in evidence[claim.name].values]
        by_seed = ", ".join(f"{d:+.2f}" for d in differences)
        described = f"by seed ({seed_span(seeds)}): {by_seed} pp; " + _described(
            claim, cells, [groups[seed] for seed in seeds]
        )
        records.append(
            base[claim.name]
            | {
                "verdict": decision.verdict,
                "sentence": f"{decision.reason}; {described}",
                "test": test_fields(decision, seeds) | {"differences": differences},
            }
        )
    return records


def _regime(cells: list[CellResult]) -> dict:
    """The families' regime fields, read as the rule reads it, on a trained baseline: post-norm
    softmax's last-layer cos_sim at depth 96 beside its random-init null (``regime.tested_where``)
    on the seeds where it trains by the screen's rule (``post_norm_fails``); the seeds where it
    fails are named beside it with their cos_sim (tokens collapsed in a model that did not train),
    not read ({} while no seed of it is read and none has a probe)."""
    fails = post_norm_fails(cells)
    groups = group_cells(CLAIM_4A.question, cells)
    unread = [group[POST] for seed, group in groups.items() if POST in group and fails.get(seed) is not False]
    regime = tested_where(CLAIM_4A.question, [c for c in cells if all(c is not u for u in unread)])
    words = [] if regime.cos_sim is None else [regime.text]
    if failed := [seed for seed, fail in fails.items() if fail]:
        collapsed = {seed: last_cos_sim(groups[seed][POST]) for seed in failed}
        probed = [cos for cos in collapsed.values() if cos is not None]
        unprobed = [seed for seed, cos in collapsed.items() if cos is None]
        text = f"on seed(s) {seed_span(failed)} it did not train (the screen's rule), and the rule, which reads only "
        text += "a trained baseline, leaves it out there"
        if probed:
            text += f": its last-layer cos_sim {value_range(probed, '.3f')}, tokens collapsed in a model that failed"
        if unprobed:
            text += f" (seed(s) {seed_span(unprobed)} diverged before a probe)"
        words.append(text)
    if not words:
        return {}
    return {"regime": f"{PRESET.name} {arm_name(POST)}: {'; '.join(words)}", "oversmooths": regime.oversmooths}


def _described(claim: FamilyClaim, cells: list[CellResult], groups: list[Mapping[Key, CellResult]]) -> str:
    """What the record states beside its verdict, deciding nothing: the test split's mean
    difference, how far post-norm ends below pre-norm at depth 96 (a fix: the share of it closed), and each arm
    it reads with its validation accuracy and last-layer cos_sim, the means over ``groups``."""
    on_test = [m - b for _, m, b in gather(replace(claim.question, measure=claim.on_test), cells).values]
    parts = [f"on the test split (deciding nothing) the mean difference is {statistics.fmean(on_test):+.2f} pp"]
    gap = _mean_difference(groups, PRE, POST)
    closed = ""
    if claim in FIXES and gap > 0:
        share = 100 * _mean_difference(groups, claim.question.method, POST) / gap
        closed = f"; the fix closed {share:.0f} % of that gap" + (" (above pre-norm)" if share > 100 else "")
    way = "below" if gap >= 0 else "above"
    parts.append(f"post-norm softmax ends {abs(gap):.2f} pp {way} pre-norm at depth {DEEP} in val accuracy{closed}")
    arms = dict.fromkeys((claim.question.method, claim.question.baseline, *claim.question.reads))
    parts.append("val accuracy / last-layer cos_sim: " + "; ".join(f"{arm_name(a)} {_means(groups, a)}" for a in arms))
    diverged = {a: [g[a].seed for g in groups if g[a].status == "diverged"] for a in arms}
    parts += [
        f"{arm_name(a)} diverged on seed(s) {seed_span(seeds)} (counted at its last evaluation, or chance before one)"
        for a, seeds in diverged.items()
        if seeds
    ]
    return "; ".join(parts)


def _mean_difference(groups: list[Mapping[Key, CellResult]], arm: Key, other: Key) -> float:
    """``arm``'s validation accuracy minus ``other``'s (pp), the mean over ``groups`` (seeds)."""
    return statistics.fmean(last_val(g[arm]) - last_val(g[other]) for g in groups)


def _arm_means(groups: list[Mapping[Key, CellResult]], arm: Key) -> tuple[float, float | None]:
    """``arm``'s mean validation accuracy (%) and last-layer cos_sim over ``groups`` (the seeds
    with a probe; None for none)."""
    return _cell_means([g[arm] for g in groups])


def _cell_means(cells: list[CellResult]) -> tuple[float, float | None]:
    """The mean validation accuracy (%) and last-layer cos_sim of ``cells`` (those with a probe; None
    for none)."""
    found = [cos for c in cells if (cos := last_cos_sim(c)) is not None]
    return statistics.fmean(last_val(c) for c in cells), statistics.fmean(found) if found else None


def _means(groups: list[Mapping[Key, CellResult]], arm: Key) -> str:
    """``arm``'s ``_arm_means`` in words."""
    accuracy, cos_sim = _arm_means(groups, arm)
    return f"{accuracy:.2f} % / " + ("–" if cos_sim is None else f"{cos_sim:.3f}")


def rescue_headline(cells: list[CellResult], records: list[dict]) -> str:
    """For the report's opening, once every fix is decided among ``records`` (each holds its paired
    ``test``): on how many seeds post-norm softmax at depth 96 fails (``failure_count``), post-norm
    and pre-norm softmax's validation accuracy and last-layer cos_sim there, and the range over the
    fixes that held, means over the registered seeds; where post-norm fails on some seeds only, the
    same means over those seeds for post-norm softmax, the fixes and de-escalation (described);
    '' before (or when they were not tested)."""
    decided = {r["claim"]: r["verdict"] for r in records if "test" in r}
    if any(fix.name not in decided for fix in FIXES):
        return ""
    seeds = group_cells(CLAIM_4A.question, cells)
    groups = [seeds[seed] for seed in PRESET.seeds]  # every registered seed: the families are decided
    text = (
        f"post-norm softmax at depth {DEEP} {failure_count(cells)} and ends at {_means(groups, POST)}, pre-norm at "
        f"{_means(groups, PRE)}"
    )
    held = [fix.question.method for fix in FIXES if decided[fix.name] == "held"]
    if held:
        text += f", the fixes that held at {_spans(groups, held)}"
    text += " (validation accuracy / last-layer cos_sim)"
    failed = failing_seeds(cells)
    if 0 < len(failed) < len(groups):  # a seed-dependent failure: where it failed, described
        where = [seeds[seed] for seed in failed]
        text += (
            f"; on the {_seeds(len(failed))} where it fails, described and deciding nothing, post-norm softmax ends "
            f"at {_means(where, POST)}, the {len(FIXES)} fixes at {_spans(where, [f.question.method for f in FIXES])} "
            f"and de-escalation at {_means(where, CLAIM_4B.question.method)}"
        )
    return text


def _spans(groups: list[Mapping[Key, CellResult]], arms: Sequence[Key]) -> str:
    """The range over ``arms`` of their ``_arm_means`` in words ("85.06-85.54 % / 0.189-0.391")."""
    accuracies, cos_sims = zip(*(_arm_means(groups, arm) for arm in arms))
    found = [cos for cos in cos_sims if cos is not None]
    return f"{value_range(accuracies, '.2f')} % / " + (value_range(found, ".3f") if found else "–")


def post_norm_fails(cells: list[CellResult]) -> dict[int, bool | None]:
    """Registered seed -> whether post-norm softmax at depth 96 fails on it by the screen's rule
    (``postnorm_screen.ScreenRow.post_fails``: diverged, below 20 %, or at least 5 pp below pre-norm
    softmax of its seed; None where the rule cannot read it: pre-norm without an evaluation), for
    the seeds where both cells have finished: described, deciding nothing."""
    seeds = group_cells(CLAIM_4A.question, cells)
    found = {}
    for seed in PRESET.seeds:
        group = seeds.get(seed, {})
        row = ScreenRow(CANDIDATE, DEEP, *(arm_of(group[arm]) if arm in group else None for arm in (POST, PRE)))
        if row.post is not None and row.pre is not None:
            found[seed] = row.post_fails
    return found


def failing_seeds(cells: list[CellResult]) -> list[int]:
    """The seeds of ``post_norm_fails`` on which post-norm softmax fails."""
    return [seed for seed, fails in post_norm_fails(cells).items() if fails]


def failure_count(cells: list[CellResult]) -> str:
    """For the opening: on how many of the seeds the rule reads (``post_norm_fails``) post-norm
    softmax fails ('' before the rule reads any)."""
    read = [fails for fails in post_norm_fails(cells).values() if fails is not None]
    if not read:
        return ""
    of = f"its {_seeds(len(read))}" if len(read) == len(PRESET.seeds) else f"the {_seeds(len(read))} finished"
    return f"fails on {sum(read)} of {of} (by the screen's rule)"


def failure_sentence(cells: list[CellResult]) -> str:
    """``post_norm_fails`` in a sentence of the family's section: the seeds where post-norm softmax
    failed, those where it trained (with its validation accuracy) and those the rule cannot read;
    '' before any seed has both cells."""
    found = post_norm_fails(cells)
    if not found:
        return ""
    seeds = group_cells(CLAIM_4A.question, cells)
    failed = [seed for seed, fails in found.items() if fails]
    trained = [f"{seed} ({last_val(seeds[seed][POST]):.2f} %)" for seed, fails in found.items() if fails is False]
    unread = [seed for seed, fails in found.items() if fails is None]
    read = len(failed) + len(trained)
    text = (
        f"Post-norm softmax at depth {DEEP} fails by the screen's rule (diverged, below {100 * CHANCE_BAR:g} %, or "
        f"at least {K_PP:g} pp below pre-norm of its seed; described, deciding nothing) on {len(failed)} of the "
        f"{_seeds(read)} where both have finished"
        + (f" (seed{'s' * (len(failed) > 1)} {seed_span(failed)})" if failed else "")
        + (f" and trains on seed{'s' * (len(trained) > 1)} {', '.join(trained)}" if trained else "")
        + (f"; the rule cannot read seed(s) {seed_span(unread)} (pre-norm has no evaluation)" if unread else "")
    )
    if failed and trained:
        text += "; so a paired difference from it mixes a rescue from failure with a comparison where it trained"
    return text + "."


def _seeds(n: int) -> str:
    """``n`` seeds in words: "1 seed", "4 seeds"."""
    return f"{n} seed{'s' * (n != 1)}"


def value_range(values: Sequence[float], spec: str) -> str:
    """The range of ``values`` ("low-high"; one value alone where they are equal as printed).

    >>> value_range([84.8, 85.7], ".1f"), value_range([0.369], ".3f")
    ('84.8-85.7', '0.369')
    """
    low, high = (format(v, spec) for v in (min(values), max(values)))
    return low if low == high else f"{low}-{high}"


def family_table(cells: list[CellResult]) -> str:
    """Markdown: every arm of ``PRESET`` over the registered seeds that finished it with an
    evaluation: validation accuracy (deciding), test accuracy (beside) and the last-layer cos_sim of
    the validation probe, each the mean ± SD over those seeds; where post-norm softmax at depth 96
    fails on some seeds and trains on others (``failing_seeds``), the means of validation accuracy
    and cos_sim over the seeds where it fails too; '' before any has finished."""
    seeds = group_cells(CLAIM_4A.question, cells)
    read = post_norm_fails(cells)
    failed = [seed for seed, fails in read.items() if fails]  # failing_seeds, from the same reading
    mixed = 0 < len(failed) < len(read)
    columns = ((last_val, ".2f"), (paired_score, ".2f"), (last_cos_sim, ".3f"))
    rows = []
    for arm in dict.fromkeys((c.norm, c.variant.label, c.depth) for c in PRESET.cells()):
        found = [seeds.get(seed, {}).get(arm) for seed in PRESET.seeds]
        done = [cell for cell in found if cell is not None and last_val(cell) is not None]
        if done:
            diverged = [c.seed for c in done if c.status == "diverged"]
            span = seed_span([c.seed for c in done]) + (f" ({seed_span(diverged)} diverged)" if diverged else "")
            rows.append([arm_name(arm), span, *(_spread(done, *c) for c in columns)])
            if mixed:
                rows[-1].append(_where_failed([c for c in done if c.seed in failed], len(failed)))
    test = "test accuracy (%; a diverged seed: its last val)"
    header = ["arm", "seeds", "val accuracy (%)", test, "last-layer cos_sim"]
    if mixed:
        header.append(
            f"where post-norm fails (seed{'s' * (len(failed) > 1)} {seed_span(failed)}): val accuracy (%) / cos_sim"
        )
    return markdown_table(header, rows) if rows else ""


def _where_failed(cells: list[CellResult], failed: int) -> str:
    """The means of validation accuracy and last-layer cos_sim over ``cells`` (an arm's cells on the
    ``failed`` seeds where post-norm fails that it has finished), with how many where not all."""
    if not cells:
        return "–"
    accuracy, cos_sim = _cell_means(cells)
    text = f"{accuracy:.2f} / " + ("–" if cos_sim is None else f"{cos_sim:.3f}")
    return text + (f" ({len(cells)} of {failed})" if len(cells) < failed else "")


def _spread(cells: list[CellResult], read, spec: str) -> str:
    """The mean ± SD of ``read`` over ``cells`` (one value: alone; none: –)."""
    return mean_sd([v for c in cells if (v := read(c)) is not None], spec)


def family_section(cells: list[CellResult]) -> list[str]:
    """The claims report's lines on the families: what they test, ``family_table``, the gate's
    margins (``gate_sentence``) and where post-norm fails (``failure_sentence``); their verdicts are
    records, in the fourth step's table of fresh tests."""
    table = family_table(cells)
    arms = (
        "; each arm's finished seeds, the mean ± SD over them (the test split decides nothing; a lower cos_sim "
        "counts for nothing where accuracy fell):"
        if table
        else "; no cell of theirs has finished yet."
    )
    return [
        f"Claims 4a, 4b and the depth-fix family where post-norm fails (preset `{PRESET.name}`, seeds "
        f"{seed_span(list(PRESET.seeds))}; section 6 of the registration): {CANDIDATE} at depths {SHALLOW} and "
        f"{DEEP}, decided on validation accuracy by two-sided paired t-tests; 4a and 4b one Holm family of two, the "
        f"{len(FIXES)} depth fixes against post-norm softmax at depth {DEEP} another of {len(FIXES)}; tested only "
        f"where pre-norm softmax trains at depth {DEEP} on every seed (plateaued within {PLATEAU_PP:g} pp by gate "
        f"(a), at least {100 * PRE_TRAINS_AT:.2f} % validation accuracy). Their verdicts are rows of the fresh "
        f"tests' table below{arms}",
        "",
        *([table, ""] if table else []),
        *([gate, ""] if (gate := gate_sentence(cells)) else []),
        *([failures, ""] if (failures := failure_sentence(cells)) else []),
    ]


def gate_sentence(cells: list[CellResult]) -> str:
    """The gate's margins, once pre-norm softmax at depth 96 has finished every registered seed and
    trained on each ('' before, and where it failed: ``pre_norm_gate`` says why in the records)."""
    seeds = group_cells(CLAIM_4A.question, cells)
    pre = [seeds.get(seed, {}).get(PRE) for seed in PRESET.seeds]
    if not all(has_finished(cell) for cell in pre) or pre_norm_gate(cells):
        return ""
    finals = [last_val(cell) for cell in pre]
    shortfalls = [plateau_shortfall(cell) for cell in pre]
    early = (
        ""
        if all(x is not None for x in shortfalls)
        else f"; –: its validation loss bottomed out at least {MIN_EPOCHS_BEFORE_END} epochs before the end"
    )
    return (
        f"The gate passed on every seed: pre-norm softmax at depth {DEEP} ends at {value_range(finals, '.2f')} % "
        f"validation accuracy (at least {100 * PRE_TRAINS_AT:.2f} %), short of the best of its last "
        f"{LAST_EVALUATIONS} evaluations by "
        + ", ".join("–" if x is None else f"{x:.2f}" for x in shortfalls)
        + f" pp (seeds {seed_span(list(PRESET.seeds))}; gate (a) allows {PLATEAU_PP:g} pp{early})."
    )
