#!/usr/bin/env bash
# The fourth step's runs still to go, in the registration's order of value (docs/registrations/
# fourth-step.md, sections 6 and 8), two processes at a time on a 2-core machine. Each step resumes
# or skips what results/ already holds, so a new session restarts this one command:
#   1. claim 4's family (preset postnorm-family, two cells at a time);
#   2. claim 8 on SmolLM2 fairly: seeds 20 and 21 side by side, then 22;
#   3. beside seed 22, claim 2b's remaining fresh pairs, if the budget's tally leaves room for them
#      (scripts/fourth_step_budget.py --decide: taken once, kept in results/fourth-step/budget.json).
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
scripts/smollm2_8_fair.sh 20 & first=$!
scripts/smollm2_8_fair.sh 21 & second=$!
wait $first; a=$?
wait $second; b=$?
[ $a = 0 ] && [ $b = 0 ] || exit 1
scripts/smollm2_8_fair.sh 22 & last=$!
$PY scripts/fourth_step_budget.py --decide; decided=$?
failed=0
case $decided in
    0) $PY -m oversmooth study austen-p3-fresh --out runs/studies/austen-p3-fresh --results results --jobs 1 || failed=1 ;;
    3) echo "2b's remaining pairs dropped for budget (results/fourth-step/budget.json)" ;;
    *) failed=1 ;;
esac
wait $last || failed=1
exit $failed
