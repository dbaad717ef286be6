#!/usr/bin/env bash
# slurm-check: the Slurm recipe of docs/guide.md ("Fitting many subjects"), run for real.
#
# Starts a one-node Slurm on localhost (munged, slurmctld and slurmd of Debian's slurm-wlm,
# configured and kept in a temporary directory, on free ports), simulates a small study,
# submits docs/guide.md's array job for it (--shard ${SLURM_ARRAY_TASK_ID}/N --resume
# --out fits/shard-${SLURM_ARRAY_TASK_ID}.jsonl, checkpointing every second), requeues one
# array task while it runs (once it has saved a checkpoint), waits for all tasks, merges the
# shards with `nioc-gpu merge` and requires the merged results to equal those of the same fit
# in a single process (every subject's line, byte for byte, but its run time `seconds`).
#
# Usage: bench/slurm/check.sh (or `make slurm-check`). Needs root (slurmd starts the jobs) and
# apt-get install slurm-wlm. About a minute on 2 cores. Settings (environment): NIOC_BIN
# (default bin/nioc-gpu, which `make slurm-check` builds), SLURM_CHECK_TASK (lightdark),
# SLURM_CHECK_SUBJECTS (6), _TRIALS (20), _RESTARTS (100), _SHARDS (3), _REQUEUE (the array
# task to requeue, 2), _REQUEUE_AFTER (seconds after its first checkpoint, 3), _TIMEOUT
# (seconds for the array job, 900), _KEEP=1 keeps the temporary directory (kept anyway on
# failure). Exit status 0: PASS, 1: FAIL, 2: cannot run here (Slurm missing, not root, ...).
set -uo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${NIOC_BIN:-$repo/bin/nioc-gpu}
TASK=${SLURM_CHECK_TASK:-lightdark}
SUBJECTS=${SLURM_CHECK_SUBJECTS:-6}
TRIALS=${SLURM_CHECK_TRIALS:-20}
RESTARTS=${SLURM_CHECK_RESTARTS:-100}
SHARDS=${SLURM_CHECK_SHARDS:-3}
REQUEUE=${SLURM_CHECK_REQUEUE:-2}
AFTER=${SLURM_CHECK_REQUEUE_AFTER:-3}
TIMEOUT=${SLURM_CHECK_TIMEOUT:-900}
export PATH="$PATH:/usr/sbin:/sbin"

t0=$SECONDS
say() { printf 'slurm-check [%3ds] %s\n' $((SECONDS - t0)) "$*"; }
fail() {
	say "FAIL: $*"
	failed=1
	exit 1
}
cannot() {
	say "cannot run: $*"
	exit 2
}

for c in munged mungekey slurmctld slurmd sbatch squeue sinfo scontrol scancel; do
	command -v "$c" >/dev/null || cannot "$c not found (apt-get install slurm-wlm)"
done
[ "$(id -u)" = 0 ] || cannot "needs root: slurmd starts the jobs (SlurmdUser=root)"
[ -x "$BIN" ] || cannot "$BIN not built (make build)"
[ "$REQUEUE" -ge 1 ] && [ "$REQUEUE" -le "$SHARDS" ] || cannot "SLURM_CHECK_REQUEUE=$REQUEUE not in 1..$SHARDS"

tmp=$(mktemp -d /tmp/nioc-slurm-check.XXXXXX) || cannot "mktemp"
chmod 0755 "$tmp"
failed=0
pids=()
jobid=
cleanup() {
	# Jobs still there (after a failure) are cancelled, and their slurmstepd given the time to
	# tell slurmctld they ended: one that cannot retries forever.
	if [ -n "$jobid" ] && [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
		scancel "$jobid" 2>/dev/null
		for _ in $(seq 60); do
			[ -z "$(squeue -h -o %i 2>/dev/null)" ] && ! compgen -G "$tmp/spool/localhost_*" >/dev/null && break
			sleep 0.5
		done
	fi
	# The daemons this script started, by their ids, newest first.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	# Any slurmstepd left of this check's slurmd (they carry its SLURM_CONF), by id.
	for p in $(pgrep -x slurmstepd); do
		if { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$tmp/slurm.conf"; then
			say "stopping slurmstepd $p left by this check"
			kill -9 "$p" 2>/dev/null
		fi
	done
	if [ "$failed" = 0 ] && [ "${SLURM_CHECK_KEEP:-}" != 1 ]; then
		rm -rf "$tmp"
	else
		say "kept $tmp (slurm logs: $tmp/log, study and job logs: $tmp/study)"
	fi
}
trap cleanup EXIT
trap 'failed=1; exit 130' INT TERM

# freeport VAR: sets VAR to a free TCP port on localhost, not one already picked.
picked=" "
freeport() {
	local p
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 30000))
		case "$picked" in *" $p "*) continue ;; esac
		if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
			picked="$picked$p "
			printf -v "$1" %s "$p"
			return
		fi
	done
	cannot "no free port"
}

# waitfor SECONDS WHAT COMMAND...: polls COMMAND every 0.5 s until it succeeds.
waitfor() {
	local limit=$1 what=$2
	shift 2
	local end=$((SECONDS + limit))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || fail "timed out after ${limit}s waiting for $what"
		sleep 0.5
	done
}

mkdir -p "$tmp/munge" "$tmp/log" "$tmp/state" "$tmp/spool" "$tmp/study/fits" "$tmp/study/logs"
chmod 0700 "$tmp/munge"

# 1. munged with its own key and socket.
mungekey --create --keyfile="$tmp/munge/munge.key" >/dev/null 2>&1 || fail "mungekey --create"
chmod 0600 "$tmp/munge/munge.key"
sock=$tmp/munge/munge.socket
munged --foreground --force --socket="$sock" --key-file="$tmp/munge/munge.key" \
	--pid-file="$tmp/munge/munged.pid" --log-file="$tmp/log/munged.log" \
	--seed-file="$tmp/munge/munged.seed" >>"$tmp/log/munged.log" 2>&1 &
pids+=($!)
waitfor 20 "munged ($tmp/log/munged.log)" test -S "$sock"

# 2. slurm.conf: one node, localhost, all its CPUs, in the temporary directory.
cpus=$(nproc)
freeport ctldport
freeport slurmdport
export SLURM_CONF=$tmp/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=nioccheck
SlurmctldHost=localhost
SlurmctldPort=$ctldport
SlurmdPort=$slurmdport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also delays a requeued job's restart (default 120 s; 5 is the least).
AuthInfo=socket=$sock,cred_expire=5
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
JobRequeue=1
MinJobAge=3600
KillWait=5
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=check Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF

# 3. slurmctld and slurmd in the foreground of background shells, so that their ids are known.
slurmctld -D -i -f "$SLURM_CONF" >>"$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
waitfor 30 "slurmctld (see $tmp/log/slurmctld.log)" scontrol ping
slurmd -D -N localhost -f "$SLURM_CONF" >>"$tmp/log/slurmd.out" 2>&1 &
pids+=($!)
nodeidle() { sinfo -h -n localhost -o '%T' | grep -qx idle; }
waitfor 60 "node localhost idle (see $tmp/log/slurmd.log)" nodeidle
say "one-node Slurm up: $(sinfo --version), $cpus CPU(s), slurmctld :$ctldport, slurmd :$slurmdport, config $SLURM_CONF"

# 4. The study.
cd "$tmp/study" || fail "cd"
"$BIN" simulate --task "$TASK" --subjects "$SUBJECTS" --trials "$TRIALS" --seed 4 --out study.csv \
	>simulate.log 2>&1 || { cat simulate.log; fail "simulate"; }
say "simulated $SUBJECTS subjects × $TRIALS trials of $TASK: $tmp/study/study.csv"

# 5. docs/guide.md's array job, for this study. Each run of a task appends to its log
# (--open-mode=append), so a requeued task's log holds both runs.
cpt=$((cpus >= 2 ? 2 : 1))
fitargs=(--task "$TASK" --data study.csv --restarts "$RESTARTS" --seed 2)
cat >fit.sbatch <<EOF
#!/bin/bash
#SBATCH --array=1-$SHARDS
#SBATCH --cpus-per-task=$cpt
#SBATCH --time=00:30:00
#SBATCH --output=logs/shard-%a.out
#SBATCH --open-mode=append
echo "run \${SLURM_RESTART_COUNT:-0} of array task \${SLURM_ARRAY_TASK_ID} (job \${SLURM_JOB_ID}) on \$(hostname) at \$(date +%T)"
nioc-gpu fit ${fitargs[*]} --checkpoint-every 1s \\
  --shard \${SLURM_ARRAY_TASK_ID}/$SHARDS --resume --out fits/shard-\${SLURM_ARRAY_TASK_ID}.jsonl
EOF
say "job script $tmp/study/fit.sbatch:"
sed 's/^/    /' fit.sbatch
PATH="$(dirname "$BIN"):$PATH" sbatch --parsable fit.sbatch >sbatch.out 2>&1 || { cat sbatch.out; fail "sbatch"; }
jobid=$(cut -d';' -f1 sbatch.out)
say "submitted array job $jobid (tasks 1-$SHARDS)"

# 6. Requeue task REQUEUE midway: AFTER seconds after it saved its first checkpoint, before it
# is done. Slurm stops it (SIGTERM: the fit saves a checkpoint and exits), and starts it again
# about cred_expire seconds later.
task=${jobid}_$REQUEUE
out=fits/shard-$REQUEUE.jsonl
state() { squeue -h -j "$1" -o '%T' 2>/dev/null | head -1; }
running_with_ckpt() { [ "$(state "$task")" = RUNNING ] && [ -s "$out.ckpt" ]; }
waitfor "$TIMEOUT" "array task $task to run and checkpoint" running_with_ckpt
sleep "$AFTER" # into the task's work, which takes about 10 s on 2 cores
grep -q '^done:' "logs/shard-$REQUEUE.out" 2>/dev/null && fail "array task $task finished before it could be requeued (make the study bigger)"
subjects_before=$(grep -c . "$out" 2>/dev/null)
scontrol requeue "$task" || fail "scontrol requeue $task"
say "requeued array task $task while running: $out.ckpt saved, ${subjects_before:-0} subject(s) in $out"
sleep 1
say "  $task now: $(squeue -h -j "$task" -o '%T, reason %r' 2>&1)"

# 7. Wait for all array tasks.
pending() { [ -n "$(squeue -h -j "$jobid" -o '%i' 2>/dev/null)" ]; }
alldone() { ! pending; }
waitfor "$TIMEOUT" "array job $jobid to finish" alldone
say "array job $jobid finished"
scontrol -o show job "$jobid" >jobs.txt 2>&1
bad=0
for k in $(seq "$SHARDS"); do
	line=$(grep -E "ArrayTaskId=$k( |$)" jobs.txt)
	st=$(sed -nE 's/.* JobState=([A-Z_]+).*/\1/p' <<<"$line")
	ex=$(sed -nE 's/.* ExitCode=([0-9:]+).*/\1/p' <<<"$line")
	rs=$(sed -nE 's/.* Restarts=([0-9]+).*/\1/p' <<<"$line")
	say "  task ${jobid}_$k: $st, exit $ex, restarts ${rs:-?}"
	[ "$st" = COMPLETED ] && [ "$ex" = 0:0 ] || bad=1
	if [ "$k" = "$REQUEUE" ]; then [ "${rs:-0}" -ge 1 ] || fail "Slurm does not count a restart of ${jobid}_$k"; fi
done
[ "$bad" = 0 ] || { cat logs/*.out; fail "not every array task completed"; }

# 8. The requeued task ran twice, and the second run went on from the first's checkpoint.
log=logs/shard-$REQUEUE.out
say "log of the requeued task, $log:"
grep -v $'\r' "$log" | sed 's/^/    /'
runs=$(grep -c '^run [0-9]* of array task' "$log")
[ "$runs" -ge 2 ] || fail "$log shows $runs run(s) of the task, not 2"
grep -qE '^resuming from .*\([1-9][0-9]* evaluations kept\)' "$log" ||
	fail "the second run of ${jobid}_$REQUEUE did not resume from the checkpoint (no 'resuming from ... evaluations kept' in $log)"
[ ! -e "$out.ckpt" ] || fail "$out.ckpt left behind"

# 9. Merge the shards (docs/guide.md's command) and fit the same study in one process.
"$BIN" merge --out fits/all.jsonl fits/shard-*.jsonl >merge.log 2>&1 || { cat merge.log; fail "merge"; }
say "$(tail -1 merge.log)"
say "fitting the same study in a single process"
"$BIN" fit "${fitargs[@]}" --quiet --out single.jsonl >single.log 2>&1 || { cat single.log; fail "single-process fit"; }
say "$(tail -1 single.log)"

# 10. Equal: the same subjects, and each subject's line the same but for its run time.
norm() { sed -E 's/"seconds":[-+0-9.eE]+//' "$1" | sort; }
n1=$(grep -c . fits/all.jsonl)
n2=$(grep -c . single.jsonl)
[ "$n1" = "$SUBJECTS" ] && [ "$n2" = "$SUBJECTS" ] || fail "subjects: $n1 merged, $n2 single-process, want $SUBJECTS"
if ! diff <(norm fits/all.jsonl) <(norm single.jsonl) >diff.txt; then
	head -c 4000 diff.txt
	fail "merged results differ from the single-process fit (diff in $tmp/study/diff.txt)"
fi
say "merged fits/all.jsonl equals single.jsonl: $SUBJECTS subject lines identical but for 'seconds'"
say "PASS: docs/guide.md array job ($SHARDS tasks, task $REQUEUE requeued midway and resumed from its checkpoint) merged = single-process fit, $((SECONDS - t0))s"
