#!/usr/bin/env bash
# The fourth step's runs still to go, in the registration's order of value (docs/registrations/
# fourth-step.md, sections 6, 8 and 14), two processes at a time on a 2-core machine. Each step resumes
# or skips what results/ already holds, so a new session restarts this one command:
#   1. claim 4's family (preset postnorm-family, two cells at a time);
#   2. claim 8 on SmolLM2 fairly: seeds 20 then 21 on one core, seed 22 beside them on the other;
#   3. after seeds 20 and 21, on their core, claim 2b's remaining fresh pairs, if the budget's tally
#      leaves room for them (scripts/fourth_step_budget.py --decide: taken once, kept in
#      results/fourth-step/budget.json).
#
#   mkdir -p runs/logs && setsid nohup scripts/fourth_step_queue.sh > runs/logs/fourth-step-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.." || exit 2
mkdir -p runs
exec 9> runs/fourth-step-queue.lock
flock -n 9 || { echo "error: scripts/fourth_step_queue.sh is already running (runs/fourth-step-queue.lock)" >&2; exit 2; }
PY=.venv/bin/python
$PY -m oversmooth study postnorm-family --out runs/studies/postnorm-family --results results --jobs 2 \
    || { echo "claim 4's family failed: see runs/studies/postnorm-family" >&2; exit 1; }
scripts/smollm2_8_fair.sh 22 & last=$!
failed=0
if scripts/smollm2_8_fair.sh 20 21; then
    $PY scripts/fourth_step_budget.py --decide
    case $? in
        0) $PY -m oversmooth study austen-p3-fresh --out runs/studies/austen-p3-fresh --results results --jobs 1 || failed=1 ;;
        3) echo "2b's remaining pairs dropped for budget (results/fourth-step/budget.json)" ;;
        *) failed=1 ;;
    esac
else
    failed=1
fi
wait $last || failed=1
exit $failed
