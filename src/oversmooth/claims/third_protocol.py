"""The third protocol's tests on a pretrained model and its re-tests (docs/studies.md, "The third
protocol"): each one JSON record under ``results/third-protocol/``, written by the script that
ran it (``scripts/smollm2_1b.py``, ``scripts/smollm2_8.py``, ``scripts/retest_1b.py``) with the
claim, what it tested, its verdict by the registered rule and the one-line reason (a test on a
pretrained model adds its ``regime``: the baseline's last-layer cos_sim beside its random-init
null); the claims report tables them as they are."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from oversmooth.claims import verdicts
from oversmooth.claims.statements import STATEMENTS
from oversmooth.claims.verdicts import Decision
from oversmooth.errors import UsageError
from oversmooth.utils.markdown import markdown_table

NAME = "third-protocol"
FIELDS = ("claim", "model", "command", "verdict", "sentence")


def read_third_protocol(folder: Path) -> list[dict]:
    """Every record (``*.json``) in ``folder``, by file name; a damaged one is a UsageError."""
    records = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text())
            missing = [name for name in FIELDS if not isinstance(record.get(name), str)]
        except (OSError, ValueError) as error:
            missing, record = [str(error)], {}
        if missing:
            raise UsageError(
                f"{path} is damaged (missing or unreadable: {', '.join(missing)}); rerun the command that wrote it"
                + (f" ({record['command']})" if isinstance(record.get("command"), str) else "")
            )
        records.append(record)
    return records


def test_fields(decision: Decision, seeds: list[int]) -> dict:
    """A decided paired test as a record's ``test`` holds it: the seeds, the mean difference, the
    decision's (Holm-matched) interval, the unadjusted and Holm-adjusted two-sided p, and the
    smallest effect the design detects at its Holm level (``Decision.mde``)."""
    return {
        "seeds": seeds,
        "mean": decision.test.mean,
        "ci": [decision.ci_low, decision.ci_high],
        "p": decision.test.p_two_sided,
        "p_holm": decision.p_adjusted,
        "mde": decision.mde,
    }


#: the order verdicts are told in: what held, what held or fell short of the paper, what failed,
#: what could not say, what was not or not yet tested; another verdict after them, as it comes
VERDICT_ORDER = (
    verdicts.HELD,
    verdicts.HELD_SMALLER,
    verdicts.SMALLER,
    verdicts.CONTRADICTED,
    verdicts.INCONCLUSIVE,
    verdicts.NOT_SHOWN,
    verdicts.NOT_TESTED,
    "pending",
)


def claims_by_verdict(records: Sequence[dict]) -> dict[str, list[str]]:
    """``records``' claim names grouped by verdict, verdicts in ``VERDICT_ORDER``.

    >>> claims_by_verdict([{"claim": "8", "verdict": "pending"}, {"claim": "2b", "verdict": "held"},
    ...                    {"claim": "1b", "verdict": "held"}])
    {'held': ['2b', '1b'], 'pending': ['8']}
    """
    grouped: dict[str, list[str]] = {}
    for record in records:
        grouped.setdefault(record["verdict"], []).append(record["claim"])
    rank = {verdict: place for place, verdict in enumerate(VERDICT_ORDER)}
    return dict(sorted(grouped.items(), key=lambda item: rank.get(item[0], len(rank))))


def fresh_tests(records: Sequence[dict], claim_id: str | None = None) -> list[dict]:
    """The records that test claim ``claim_id`` (None: any claim) afresh: their ``claim`` is the id,
    then what sets them apart (``"1b (re-test)"``, ``"8 (SmolLM2)"``); a family's record names none."""
    wanted = set(STATEMENTS) if claim_id is None else {claim_id}
    return [r for r in records if r["claim"].split()[0] in wanted]


def beside_claims(records: Sequence[dict]) -> list[dict]:
    """The records of the family beside the papers' claims (their ``beside``: the depth fixes')."""
    return [r for r in records if "beside" in r]


def records_table(records: Sequence[dict]) -> list[str]:
    """The fresh tests' records as a Markdown table, one row each, as recorded."""
    rows = [
        [r["claim"], r["model"], r.get("regime", "–"), f"**{r['verdict']}**", r["sentence"], f"`{r['command']}`"]
        for r in records
    ]
    header = ["claim", "tested on", "regime: baseline cos_sim vs random init", "verdict", "why", "command"]
    return markdown_table(header, rows).splitlines()


def third_protocol_section(records: list[dict]) -> list[str]:
    """The claims report's section on them: one row per record, as recorded."""
    return [
        "## The third protocol: where the problem exists, and its re-tests",
        "",
        "Registered in docs/registrations/third-protocol.md before they ran; each row as its script recorded it "
        f"under results/{NAME}/ (a pending row says what it waits for). The regime, where the script records one (a "
        "test on a pretrained model), is its baseline's last-layer cos_sim beside the same architecture's at random "
        "init; a re-test on the second protocol's ViT has that setting's, in the summary:",
        "",
        *records_table(records),
        "",
    ]
