#!/usr/bin/env bash
# Run the second claims protocol (docs/studies.md) one study after the other, resuming from
# results/ (cells archived there are skipped), then write docs/results/report.md (oversmooth claims).
# docs/studies.md has the budget. A setting whose baseline fails its gate gets no method arms; the
# other steps still run.
#
#   scripts/run_claims.sh [STEP ...]      default: every step, in the protocol's order (STEPS below)
#
# PY (default .venv/bin/python) runs oversmooth; JOBS (default 2) cells at once. A study whose
# cells fail (a killed train process) is started again, up to 3 times: cells resume from their
# checkpoints. With COMMIT_RESULTS=1, newly archived results are committed to git as they arrive
# (scripts/commit_results.sh, every 5 minutes and after each step). STUDY_FLAGS is passed to every
# `oversmooth study`, e.g. STUDY_FLAGS="--executor slurm --wait --time 4:00:00" to run the cells on
# a Slurm cluster (docs/slurm.md; --wait, since each gate reads the results of the study before it).
STEPS="probes fmnist-p7 adaptations fmnist-p7-spectral depth-w32 austen-p3 claim3"
# A setting whose seeds a pilot fixes (claim 4) trains the pilot first; a gated setting trains its
# softmax cells and its 1.5x-epochs seed first, and skips its method arms if the claims' gate fails
# on them (oversmooth.claims.gathering.baseline_gate, the report's own check).

study() {  # PRESET [FLAGS...]: one study, started again (cells resume) if a cell failed
    local preset="$1"; shift
    for attempt in 1 2 3; do
        echo "$(date -Is) study $preset $* (attempt $attempt)"
        # shellcheck disable=SC2086  # STUDY_FLAGS is a list of words
        "$py" -m oversmooth study "$preset" --out "runs/studies/$preset" --results results --jobs "$jobs" \
            $study_flags "$@" && return
    done
}

gate() {  # PRESET: do its archived softmax cells pass the claims' gates?
    "$py" -c '
import sys
from oversmooth.claims.gathering import baseline_gate
from oversmooth.claims.evidence import read_folders
from oversmooth.claims.presets import CLAIMS_PRESETS
from oversmooth.study.presets import study_preset
failure = baseline_gate(study_preset(sys.argv[1], CLAIMS_PRESETS), read_folders(sys.argv[2:]).cells)
print(failure or "the baseline passed its gates")
sys.exit(1 if failure else 0)' "$1" $(archives)
}

before() {  # PRESET pilot|long: the study trained before the setting (oversmooth.claims.protocol.runs_before), or nothing
    "$py" -c 'import sys; from oversmooth.claims.protocol import runs_before; print(runs_before(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

archives() {  # the second protocol's archives under results/ (oversmooth.claims.evidence.PROTOCOL_ARCHIVES)
    "$py" -c 'from oversmooth.claims.evidence import protocol_archives; print(*protocol_archives())'
}

step() {  # STEP: one step of the protocol; non-zero when a failed gate skips its method arms
    local name="$1"
    case "$name" in
        adaptations) "$py" -m oversmooth.claims.adaptations --results results --threads 1 --jobs "$jobs" --train-starts ;;
        claim3) [ -f results/claim3/rounds.json ] || PYTHONPATH=src "$py" benchmarks/bench_claim3.py --out results/claim3 ;;
        probes) [ -f results/probes/probes.json ] || "$py" -m oversmooth.claims.probes --out results/probes ;;
        *)
            local pilot long
            pilot=$(before "$name" pilot) long=$(before "$name" long)
            if [ -n "$pilot" ]; then study "$pilot"; fi
            if [ -n "$long" ]; then
                study "$name" --methods softmax
                study "$long"
                [ -z "$watcher" ] || scripts/commit_results.sh
                if ! gate "$name"; then
                    echo "$(date -Is) $name: the softmax baseline did not pass its gate (failed, or not judged yet: the line above says which); see docs/studies.md before the rest"
                    return 1
                fi
            fi
            study "$name" ;;
    esac
}

main() {
    set -u
    cd "$(dirname "$0")/.." || exit 2
    py="${PY:-.venv/bin/python}" jobs="${JOBS:-2}" study_flags="${STUDY_FLAGS:-}" watcher=""
    local steps=("$@")
    [ ${#steps[@]} -gt 0 ] || read -r -a steps <<< "$STEPS"
    if [ "${COMMIT_RESULTS:-0}" = 1 ]; then
        ( while sleep 300; do scripts/commit_results.sh; done ) &
        watcher=$!
    fi
    for name in "${steps[@]}"; do
        step "$name" || echo "$(date -Is) $name: method arms skipped; the next step follows"
        [ -z "$watcher" ] || scripts/commit_results.sh
    done
    [ -z "$watcher" ] || kill "$watcher"
    PY="$py" scripts/claims_report.sh
}

main "$@"
