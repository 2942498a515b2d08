#!/usr/bin/env bash
# Run the studies of the claims protocol one after the other, one cell at a time, resuming from
# results/ (cells archived there are skipped), then write docs/results/report.md.
# Hours, not minutes: about 19 CPU-hours on one core (docs/studies.md has the plan).
#
#   scripts/run_claims.sh [PRESET ...]      default: the protocol's order (STUDIES below)
#
# PY (default .venv/bin/python) runs oversmooth; JOBS (default 1) cells at once. A study whose
# cells fail (a killed train process) is started again, up to 3 times: cells resume from their
# checkpoints. With COMMIT_RESULTS=1, newly archived cells are committed to git as they arrive
# (scripts/commit_results.sh, every 5 minutes and after each study).
STUDIES="postnorm-pilot fmnist-vit austen-lm fmnist-featscale"

main() {
    set -u
    cd "$(dirname "$0")/.." || exit 2
    local py="${PY:-.venv/bin/python}" jobs="${JOBS:-1}" watcher=""
    local presets=("$@")
    [ ${#presets[@]} -gt 0 ] || read -r -a presets <<< "$STUDIES"
    if [ "${COMMIT_RESULTS:-0}" = 1 ]; then
        ( while sleep 300; do scripts/commit_results.sh; done ) &
        watcher=$!
    fi
    for preset in "${presets[@]}"; do
        for attempt in 1 2 3; do
            echo "$(date -Is) study $preset (attempt $attempt)"
            "$py" -m oversmooth study "$preset" --out "runs/studies/$preset" --results results --jobs "$jobs" && break
        done
        [ -z "$watcher" ] || scripts/commit_results.sh
    done
    [ -z "$watcher" ] || kill "$watcher"
    local archived=()
    for preset in $STUDIES; do
        [ -f "results/$preset/study.json" ] && archived+=("results/$preset")
    done
    "$py" -m oversmooth report "${archived[@]}" --out docs/results --title "oversmooth: the claims protocol at CPU scale"
}

main "$@"
