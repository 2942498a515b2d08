#!/usr/bin/env bash
# Commit whatever is new under results/ (archived study cells), with docs/results regenerated from
# it (scripts/claims_report.sh) so that the committed report stays the committed results'
# (tests/test_claims_report.py checks it). While src/ has uncommitted changes the report is left
# alone (it would show code that has not landed): results/ is committed by itself then.

# docs/results of exactly the results staged: written again whenever a result arrived meanwhile.
regenerate_report() {
    local staged
    while true; do
        staged=$(git ls-files -s results)
        scripts/claims_report.sh > /dev/null && git add results || return 1
        [ "$staged" = "$(git ls-files -s results)" ] && return 0
    done
}

main() {
    cd "$(dirname "$0")/.." || exit 2
    git add results || return 1
    git diff --cached --quiet -- results && return 0
    local changed paths="results"
    if git diff --quiet HEAD -- src && regenerate_report; then
        git add docs/results && paths="results docs/results"
    fi
    changed=$(git diff --cached --name-only -- results | awk -F/ '{print (NF > 2 ? $2 "/" $3 : $2)}' | sort -u | paste -sd' ')
    # shellcheck disable=SC2086  # two paths
    git commit -q -m "results: $changed" -- $paths
}
main "$@"
