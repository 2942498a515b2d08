"""The claims report's opening: one row per claim, on one screen. A compact rendering of the rows
of ``claims.json`` (``Claim``), each number with its claim's unit (``Statement.unit``): nothing
is computed here that the claims table does not show."""

from __future__ import annotations

import re
from collections.abc import Sequence

from oversmooth.claims.claim import Claim
from oversmooth.claims.protocol import OVERSMOOTHS
from oversmooth.claims.statements import DEPTH_FIXES_ROW, FRESH_EFFECTS, FRESH_FLAGS, STATEMENTS
from oversmooth.claims.third_protocol import beside_claims, claims_by_verdict, fresh_tests
from oversmooth.claims.verdicts import NOT_TESTED
from oversmooth.utils.markdown import markdown_table

#: a parenthesis of a statement longer than this is its setting or its test in full, left to the
#: claims table below the summary
SHORT_ASIDE = 40


def interval_text(mean: float, low: float, high: float) -> str:
    """A mean and its interval to 3 significant figures, trailing zeros kept (a bare point dropped).

    >>> interval_text(0.3996, 0.3943, 0.4049), interval_text(57.3, -48.03, 163.1)
    ('+0.400 [+0.394, +0.405]', '+57.3 [-48.0, +163]')
    """
    return f"{_figures(mean)} [{_figures(low)}, {_figures(high)}]"


def _figures(x: float) -> str:
    """``x`` signed, to 3 significant figures with trailing zeros, never ending in a bare point."""
    return format(x, "+#.3g").removesuffix(".")


def effect_text(c: Claim, unit: str = "") -> str:
    """``+0.0236 [-0.131, +0.178] (98.75 %)``: the effect with its Holm-matched interval (in ``unit``)
    and level."""
    if c.effect is None:
        return "–"
    level = "" if c.ci_level is None else f" ({100 * c.ci_level:.4g} %)"
    return f"{interval_text(c.effect, *c.ci)}{f' {unit}' if unit else ''}{level}"


def _unit(c: Claim) -> str:
    """The unit of a tested claim's numbers ('' for a static claim: it has none)."""
    return STATEMENTS[c.id].unit


def short_statement(statement: str) -> str:
    """The statement less its long asides (a parenthesis, nested ones included, of more than
    ``SHORT_ASIDE`` characters).

    >>> short_statement("NeuTRENO (lam 0.6) lowers cos_sim (DeiT-tiny body (12 x 192, 3 heads), 16 test images)")
    'NeuTRENO (lam 0.6) lowers cos_sim'
    """
    kept, depth, start = [], 0, 0
    for match in re.finditer(r"[()]", statement):
        if match.group() == "(":
            if depth == 0:
                kept.append(statement[start : match.start()])
                start = match.start()
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                aside = statement[start : match.end()]
                kept.append("" if len(aside) - 2 > SHORT_ASIDE else aside)
                start = match.end()
    kept.append(statement[start:])
    return re.sub(r"\s+", " ", "".join(kept)).strip()


def _paper(c: Claim) -> str:
    """The paper's effect in the claim's measure, and carried to our baseline, where it states one:
    ``+0.84 pp (+0.343 pp carried to ours)``."""
    if c.paper_effect is None:
        return "–"
    unit = _unit(c)
    carried = "" if c.paper_transferred is None else f" ({c.paper_transferred:+.3g} {unit} carried to ours)"
    return f"{c.paper_effect:+.3g} {unit}{carried}"


def _ours(c: Claim) -> str:
    """The effect with its Holm-matched interval and n; a claim without one, what it measured."""
    if c.effect is None:
        return c.ours.split(";")[0]
    return f"{effect_text(c, _unit(c))}, n = {c.n}"


def _regime(c: Claim) -> str:
    """The softmax baseline's last-layer cos_sim beside its random-init null ('–': no trained model)."""
    if c.regime is None:
        return "–"
    if c.regime.cos_sim is None:
        return c.regime.text
    null = "no null" if c.regime.null_mean is None else f"{c.regime.null_mean:.3f}"
    return f"{c.regime.cos_sim:.3f} vs {null}" + (": oversmooths" if c.regime.oversmooths else "")


def _fresh(record: dict) -> str:
    """A fresh test's verdict; where its record holds a decided paired test (``test``: ``mean``,
    ``ci``, ``seeds``, ``reading``), its mean difference with the interval (in the record's ``unit``,
    if any) and n, the paper's ``effect`` beside it, and the magnitude reading where it differs; a
    flag (``FRESH_FLAGS``) where its verdict rests on a disclosed flaw."""
    test, text = record.get("test", {}), f"{record['claim']}: **{record['verdict']}**"
    unit = f" {record['unit']}" if "unit" in record else ""
    if "mean" in test and "ci" in test:
        text += f", {interval_text(test['mean'], *test['ci'])}{unit}, n = {len(test['seeds'])}"
        effect = paper_effect(record)
        text += f" (the paper's effect, carried to this measure: {effect:+.3g}{unit})" if effect is not None else ""
        text += f" (*{test['reading']}*)" if test.get("reading", record["verdict"]) != record["verdict"] else ""
    flag = FRESH_FLAGS.get(record["claim"])
    return text + (f" ⚑ *{flag}*" if flag else "")


def paper_effect(record: dict) -> float | None:
    """The paper's effect carried to a fresh test's measure (``FRESH_EFFECTS`` where its record holds another)."""
    return FRESH_EFFECTS.get(record["claim"], record.get("effect"))


def _registered(c: Claim) -> str:
    flag = STATEMENTS[c.id].flag
    return f"**{c.verdict}**" + (f" ⚑ *{flag}*" if flag else "")


def _exploratory(c: Claim) -> str:
    return f"*{c.reading}*" if c.reading != c.verdict else "same"


def summary_table(claims: list[Claim], records: Sequence[dict] = ()) -> str:
    """Markdown: one row per claim, its registered verdict (the second protocol's), its fresh tests'
    (``records``: the third protocol's and the fourth step's, registered before they ran) and the
    third protocol's exploratory reading in separate columns; ⚑ marks a verdict resting on a
    disclosed flaw; then a row of the fresh tests beside the claims (the depth fixes' family)."""
    lines = [
        markdown_table(
            [
                "id",
                "claim",
                "paper's effect",
                "ours [Holm-matched CI]",
                "regime: softmax cos_sim vs random init",
                "registered verdict",
                "fresh tests",
                "exploratory reading",
            ],
            [
                [
                    c.id,
                    short_statement(c.statement),
                    _paper(c),
                    _ours(c),
                    _regime(c),
                    _registered(c),
                    "; ".join(_fresh(r) for r in fresh_tests(records, c.id)) or "–",
                    _exploratory(c),
                ]
                for c in claims
            ]
            + _beside_row(records),
        ),
    ]
    return "\n".join(lines)


def _beside_row(records: Sequence[dict]) -> list[list[str]]:
    """The summary's row of the fresh tests beside the claims (``DEPTH_FIXES_ROW``), none without them."""
    beside = beside_claims(records)
    if not beside:
        return []
    row_id, statement, registered = DEPTH_FIXES_ROW
    return [[row_id, statement, "–", "–", "–", registered, "; ".join(_fresh(r) for r in beside), "–"]]


def listed(ids: Sequence[str]) -> str:
    """``["2a", "2b", "8"]`` -> ``"2a, 2b and 8"`` (``"none"`` for none)."""
    return ", ".join(ids[:-1]) + (" and " if len(ids) > 1 else "") + ids[-1] if ids else "none"


def grouped_by_case(names: Sequence[str]) -> list[str]:
    """Record names that share what sets them apart (the words in brackets) named once, in order.

    >>> grouped_by_case(["8 (SmolLM2)", "4a (post-norm fails)", "DeepNorm (post-norm fails)", "5a"])
    ['8 (SmolLM2)', '4a, DeepNorm (post-norm fails)', '5a']
    """
    groups: dict[str, list[str]] = {}
    for name in names:
        head, _, case = name.partition(" (")
        groups.setdefault(case, []).append(head)
    return [", ".join(heads) + (f" ({case}" if case else "") for case, heads in groups.items()]


def why_not_tested(sentence: str) -> str:
    """A not-tested record's reason in a few words, for the opening: its ``sentence`` up to the first
    colon or bracket that explains it.

    >>> why_not_tested("the seed rule asks more seeds than the registered 12: pilot differences -0.28")
    'the seed rule asks more seeds than the registered 12'
    >>> why_not_tested("not tested: dropped for budget (sections 6 and 8; decided now)")
    'dropped for budget'
    """
    reason = sentence.removeprefix("not tested: ")
    cut = min((i for i in (reason.find(":"), reason.find(" (")) if i > 0), default=len(reason))
    return reason[:cut]


def _with_reasons(records: Sequence[dict], names: Sequence[str]) -> list[str]:
    """The not-tested records ``names`` grouped by case, each group with its reason in its bracket
    (``why_not_tested``), records of one reason together."""
    why = {r["claim"]: why_not_tested(r["sentence"]) for r in records if r["claim"] in names}
    by_reason: dict[str, list[str]] = {}
    for name in names:
        by_reason.setdefault(why[name], []).append(name)
    return [
        group[:-1] + f"; {reason})" if group.endswith(")") else f"{group} ({reason})"
        for reason, grouped in by_reason.items()
        for group in grouped_by_case(grouped)
    ]


def opening(claims: list[Claim], records: Sequence[dict], claim4: str) -> str:
    """At most five plain sentences: what held and failed under the registered rules, what the fresh
    tests found (⚑ on those resting on a disclosed flaw), what could not be tested and why, where
    claim 4 stands where post-norm fails (``claim4``, a clause), and where the problem exists."""
    tested = [c for c in claims if c.verdict != "not tested"]
    by = {v: [c.id for c in tested if c.verdict == v] for v in ("held", "contradicted", "inconclusive")}
    flagged = [c.id for c in claims if STATEMENTS[c.id].flag]
    sentences = [
        f"Under the rules registered before their data (the second protocol), {listed(by['held'])} held, "
        f"{listed(by['contradicted'])} {'was' if len(by['contradicted']) == 1 else 'were'} contradicted and "
        f"{listed(by['inconclusive'])} {'was' if len(by['inconclusive']) == 1 else 'were'} inconclusive, of "
        f"{len(claims)} claims; {listed(flagged)} rest on a disclosed flaw (⚑ in the table)."
    ]
    fresh = fresh_tests(records)
    decided = claims_by_verdict(fresh)
    if decided:
        parts = [
            f"{verdict}: "
            + listed(
                _with_reasons(fresh, names)
                if verdict == NOT_TESTED
                else grouped_by_case([f"{name} ⚑" if name in FRESH_FLAGS else name for name in names])
            )
            for verdict, names in decided.items()
        ]
        flags = (
            " (⚑: rests on a disclosed flaw, named in the table)"
            if any(r["claim"] in FRESH_FLAGS for r in fresh)
            else ""
        )
        sentences.append(f"Fresh tests, each registered before it ran{flags}: {'; '.join(parts)}.")
    not_tested = [c.id for c in claims if c.verdict == "not tested"]
    if not_tested:
        sentences.append(f"Not tested: {listed(not_tested)} (see their rows).")
    sentences.append(f"Claim 4 where post-norm fails: {claim4}.")
    strong = [c.id for c in claims if c.regime is not None and c.regime.oversmooths]
    strong += grouped_by_case([r["claim"] for r in records if r.get("oversmooths")])
    unread = grouped_by_case([r["claim"] for r in records if "oversmooths" in r and r["oversmooths"] is None])
    sentences.append(
        f"Where a softmax baseline oversmooths by the registered rule (last-layer cos_sim at least "
        f"{OVERSMOOTHS:g}): "
        + (f"{listed(strong)}; " if strong else "none; ")
        + (f"read on no trained baseline: {listed(unread)}; " if unread else "")
        + "every other claim with a measured regime was tested where its baseline does not."
    )
    return " ".join(sentences)
