#!/usr/bin/env bash
# Commit whatever is new under results/ (archived study cells), and nothing else.
main() {
    cd "$(dirname "$0")/.." || exit 2
    git add results || return 1
    if ! git diff --cached --quiet -- results; then
        local cells
        cells=$(git diff --cached --name-only -- 'results/*/*/results.json' | awk -F/ '{print $2 "/" $3}' | paste -sd' ')
        git commit -q -m "results: ${cells:-updated files}" -- results
    fi
}
main "$@"
