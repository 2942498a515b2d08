"""The fourth step's CPU-hours (docs/registrations/fourth-step.md, sections 6 and 8): what each run
spent and what the rest would cost, from results/ (``oversmooth.claims.fourth_step_budget``). With
``--decide``: claim 2b's remaining fresh pairs run only if the budget holds them; the decision is
taken once (after claim 4's family and claim 8's seeds 20 and 21), written to
results/fourth-step/budget.json and read back after. Exit 0: they run; 3: they are dropped; 2:
bad input or too early (one line).

    .venv/bin/python scripts/fourth_step_budget.py [--decide]
"""

from __future__ import annotations

import argparse
import sys

from oversmooth.claims.fourth_step_budget import decide_2b, tally, tally_table
from oversmooth.errors import UsageError

DROPPED = 3  # the exit code of a decision that drops 2b's pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--decide", action="store_true", help=f"take (or read) 2b's decision; exit {DROPPED} if dropped"
    )
    parser.add_argument("--results", default="results", help="the archives (default results)")
    args = parser.parse_args()
    try:
        print(tally_table(tally(args.results)))
        if not args.decide:
            return 0
        decision = decide_2b(args.results)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    when, total = decision.get("decided", "?"), decision["total"]
    print(f"2b's remaining pairs: {decision['2b']} (decided {when}; all {total:.2f} h against {decision['budget']:g})")
    return 0 if decision["2b"] == "run" else DROPPED


if __name__ == "__main__":
    sys.exit(main())
