#!/usr/bin/env bash
# Run the studies of the claims protocol one after the other, one cell at a time, resuming from
# results/ (cells archived there are skipped), then write docs/results/report.md.
# Hours, not minutes: about 24 CPU-hours on one core (docs/studies.md has the plan), unless a
# baseline fails its gate: then it stops there (on the committed results/: fmnist-vit).
#
#   scripts/run_claims.sh [PRESET ...]      default: the protocol's order (STUDIES below)
#
# PY (default .venv/bin/python) runs oversmooth; JOBS (default 1) cells at once; STUDY_FLAGS go to
# every `oversmooth study`, e.g. STUDY_FLAGS="--executor slurm --wait --time 4:00:00" (docs/slurm.md).
# A study whose cells fail (a killed train process) is started again, up to 3 times: cells resume from their
# checkpoints. With COMMIT_RESULTS=1, newly archived cells are committed to git as they arrive
# (scripts/commit_results.sh, every 5 minutes and after each study).
STUDIES="postnorm-pilot postnorm-pilot-2 postnorm-deesc austen-lm fmnist-vit fmnist-featscale"
#: studies whose softmax baseline has a quality gate (oversmooth.study.protocol): their softmax
#: cells (every seed: the gate is a mean over the seeds in the test) train first, and the script
#: stops if they fail the gate.
GATED="austen-lm fmnist-vit"

study() {  # PRESET [FLAGS...]: one study, started again (cells resume) if a cell failed
    local preset="$1"; shift
    for attempt in 1 2 3; do
        echo "$(date -Is) study $preset $* (attempt $attempt)"
        "$py" -m oversmooth study "$preset" --out "runs/studies/$preset" --results results --jobs "$jobs" $study_flags "$@" && return
    done
}

gate() {  # PRESET: does its archived softmax baseline pass the claims' quality gates?
    "$py" -c '
import sys
from oversmooth.study.presets import study_preset
from oversmooth.study.claims import baseline_gate
from oversmooth.study.results import read_study
failure = baseline_gate(study_preset(sys.argv[1]), read_study(sys.argv[2]))
print(failure or "the baseline passed its gates")
sys.exit(1 if failure else 0)' "$1" "results/$1"
}

main() {
    set -u
    cd "$(dirname "$0")/.." || exit 2
    py="${PY:-.venv/bin/python}" jobs="${JOBS:-1}" study_flags="${STUDY_FLAGS:-}"
    local watcher=""
    local presets=("$@")
    [ ${#presets[@]} -gt 0 ] || read -r -a presets <<< "$STUDIES"
    if [ "${COMMIT_RESULTS:-0}" = 1 ]; then
        ( while sleep 300; do scripts/commit_results.sh; done ) &
        watcher=$!
    fi
    for preset in "${presets[@]}"; do
        if [[ " $GATED " == *" $preset "* ]]; then
            study "$preset" --methods softmax
            [ -z "$watcher" ] || scripts/commit_results.sh
            if ! gate "$preset"; then
                echo "$(date -Is) $preset: the softmax baseline failed its gate; revise the recipe (docs/studies.md) before the rest"
                break
            fi
        fi
        study "$preset"
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
