"""The claims report's opening: one row per claim, on one screen. A compact rendering of the rows
of ``claims.json`` (``Claim``), each number with its claim's unit (``Statement.unit``): nothing
is computed here that the claims table does not show."""

from __future__ import annotations

import re
from collections.abc import Sequence

from oversmooth.claims.claim import Claim
from oversmooth.claims.protocol import OVERSMOOTHS
from oversmooth.claims.statements import STATEMENTS
from oversmooth.claims.third_protocol import fresh_tests
from oversmooth.utils.markdown import markdown_table

#: a parenthesis of a statement longer than this is its setting or its test in full, left to the
#: claims table below the summary
SHORT_ASIDE = 40


def interval_text(mean: float, low: float, high: float) -> str:
    """A mean and its interval to 3 significant figures, trailing zeros kept.

    >>> interval_text(0.3996, 0.3943, 0.4049)
    '+0.400 [+0.394, +0.405]'
    """
    return f"{mean:+#.3g} [{low:+#.3g}, {high:+#.3g}]"


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
    if any) and n, the paper's ``effect`` beside it, and the magnitude reading where it differs."""
    test, text = record.get("test", {}), f"{record['claim']}: **{record['verdict']}**"
    unit = f" {record['unit']}" if "unit" in record else ""
    if "mean" in test and "ci" in test:
        text += f", {interval_text(test['mean'], *test['ci'])}{unit}, n = {len(test['seeds'])}"
        text += f" (paper {record['effect']:+g}{unit})" if "effect" in record else ""
        text += f" (*{test['reading']}*)" if test.get("reading", record["verdict"]) != record["verdict"] else ""
    return text


def _verdict(c: Claim, records: Sequence[dict]) -> str:
    """The verdict, the third protocol's reading where it differs, and its fresh tests' (``_fresh``)."""
    fresh = "".join(f"; {_fresh(r)}" for r in fresh_tests(records, c.id))
    return f"**{c.verdict}**" + (f" (third protocol: *{c.reading}*)" if c.reading != c.verdict else "") + fresh


def summary_table(claims: list[Claim], records: Sequence[dict] = ()) -> str:
    """Markdown: a line on what the columns are, then one row per claim; ``records``: the third
    protocol's (``claims.third_protocol``), whose verdicts join their claims' rows."""
    lines = [
        "One row per claim (each in full below, with its test, gate and command): the paper's effect in the "
        "claim's measure where the paper states one (and carried to our baseline, "
        "docs/registrations/fourth-step.md); ours, with its "
        "Holm-matched interval and n (pp: percentage points of test accuracy); the regime, the softmax "
        "baseline's last-layer cos_sim after training vs the same architecture at random init (it oversmooths "
        f"at {OVERSMOOTHS:g} and above); the verdict, with the third protocol's exploratory reading where it "
        "differs and the verdicts of its fresh tests of the claim (on new seeds, passages or models, registered "
        "before they ran: their section below).",
        "",
        markdown_table(
            [
                "id",
                "claim",
                "paper's effect",
                "ours [Holm-matched CI]",
                "regime: softmax cos_sim vs random init",
                "verdict",
            ],
            [
                [c.id, short_statement(c.statement), _paper(c), _ours(c), _regime(c), _verdict(c, records)]
                for c in claims
            ],
        ),
    ]
    return "\n".join(lines)
