"""Claim 4's post-norm failure screen by its registered rule (docs/registrations/fourth-step.md,
section 1; ``oversmooth.claims.postnorm_screen``): the table of every recipe and depth, then the
candidate recipes in the registered order.

    python scripts/postnorm_screen.py [RESULTS]      # default: results/postnorm-screen
"""

import sys

from oversmooth.claims.postnorm_screen import candidates, screen_rows, screen_table
from oversmooth.study.results import read_studies

folder = sys.argv[1] if len(sys.argv) > 1 else "results/postnorm-screen"
rows = screen_rows(read_studies([folder])[0])
print(screen_table(rows))
found = candidates(rows)
print(f"\ncandidates at depth 96, in the registered order: {', '.join(found) if found else 'none (yet)'}")
