#!/bin/sh
# Peak memory and time of fits of long tracking trials (issue 33; docs/speed.md, "Long
# trials"): 120 trials of 200, 400, 800 and 1,200 steps simulated by our own agent
# (examples/tasks/tracking.toml), fitted with and without --max-memory 1.5GB.
# Usage: bench/memory/long_trials.sh BIN OUTDIR [RESTARTS] [MAXITER]
set -e
bin=$1; out=$2; restarts=${3:-5}; maxiter=${4:-20}
task=$(dirname "$0")/../../examples/tasks/tracking.toml
mkdir -p "$out"
echo "steps,budget,restarts,max_iter,seconds,peak_kb,evaluations,loglik" > "$out/memory.csv"
for steps in 200 400 800 1200; do
  "$bin" simulate --task-file "$task" --trials 120 --steps $steps --seed 1 --force --out "$out/t$steps.csv" 2>/dev/null
  for budget in 0 1.5GB; do
    r="$out/f$steps-$budget.jsonl"; rm -f "$r" "${r%.jsonl}.csv"
    /usr/bin/time -f "%e %M" -o "$out/time" "$bin" fit --task-file "$task" --data "$out/t$steps.csv" \
      --temperature task --restarts $restarts --max-iter $maxiter --seed 1 --check-draws 0 --quiet \
      --max-memory $budget --out "$r" 2>"$out/f$steps-$budget.log"
    python3 - "$r" "$out/time" $steps $budget $restarts $maxiter >> "$out/memory.csv" <<'PY'
import json, sys
rec = json.loads(open(sys.argv[1]).readline())
sec, kb = open(sys.argv[2]).read().split()
print(",".join([sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], sec, kb, str(rec.get("evaluations")), repr(rec["loglik"])]))
PY
  done
done
cat "$out/memory.csv"
