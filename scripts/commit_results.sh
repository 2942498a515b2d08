#!/usr/bin/env bash
# Commit whatever is new under results/ (archived study cells), with docs/results regenerated from
# it (scripts/claims_report.sh) so that the committed report stays the committed results'
# (tests/test_claims_report.py checks it). While src/ has uncommitted changes the report is left
# alone (it would show code that has not landed): results/ is committed by itself then.
main() {
    cd "$(dirname "$0")/.." || exit 2
    git add results || return 1
    if ! git diff --cached --quiet -- results; then
        local changed paths="results"
        changed=$(git diff --cached --name-only -- results | awk -F/ 'NF > 3 {print $2 "/" $3} NF <= 3 {print $2 "/" $NF}' | sort -u | paste -sd' ')
        if git diff --quiet HEAD -- src && scripts/claims_report.sh > /dev/null; then
            git add docs/results && paths="results docs/results"
        fi
        # shellcheck disable=SC2086  # two paths
        git commit -q -m "results: $changed" -- $paths
    fi
}
main "$@"
