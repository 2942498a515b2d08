"""The fourth step's CPU-hours (docs/registrations/fourth-step.md, section 6): what each run spent
and what the rest would cost, from results/ (``oversmooth.claims.fourth_step_budget``). With
``--decide``: claim 2b's remaining fresh pairs run only if the budget holds them; the decision is
taken once, written to results/fourth-step/budget.json and read back after; exit 0 if they run,
1 if they are dropped.

    .venv/bin/python scripts/fourth_step_budget.py [--decide]
"""

from __future__ import annotations

import argparse
import sys

from oversmooth.claims.fourth_step_budget import decide_2b, tally, tally_table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decide", action="store_true", help="take (or read) 2b's decision; exit 1 if dropped")
    parser.add_argument("--results", default="results", help="the archives (default results)")
    args = parser.parse_args()
    print(tally_table(tally(args.results)))
    if not args.decide:
        return 0
    decision = decide_2b(args.results)
    when, total = decision.get("decided", "?"), decision["total"]
    print(f"2b's remaining pairs: {decision['2b']} (decided {when}; all {total:.2f} h against {decision['budget']:g})")
    return 0 if decision["2b"] == "run" else 1


if __name__ == "__main__":
    sys.exit(main())
