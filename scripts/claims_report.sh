#!/usr/bin/env bash
# Write docs/results: the claims report of what results/ holds. `make results` (scripts/run_claims.sh)
# ends with it and scripts/commit_results.sh runs it with each result it commits;
# tests/test_claims_report.py checks that the committed docs/results is what it writes.
cd "$(dirname "$0")/.." || exit 2
exec "${PY:-.venv/bin/python}" -m oversmooth claims --out docs/results --force \
    --title "oversmooth: the claims protocol at CPU scale"
