#!/usr/bin/env bash
# The GPU measurements of docs/backends.md (GPU), one step per call so that each fits in
# ten minutes. Run from the repository root on the GPU machine with binaries built beforehand
# (`make gpu-binaries`, which needs the network for Go modules; the GPU machine may have none).
# Each step writes OUT/STEP.md (OUT defaults to out/gpu) and prints it.
#
#   bench/gpu/run.sh env       the CUDA plugin found, nvidia-smi
#   bench/gpu/run.sh loglik    `nioc-gpu loglik --backend xla` wall time (compile included) of
#                              each task (TASKS, default all five) on 50 simulated trials, and
#                              its value and gradient beside the Go backend's
#   bench/gpu/run.sh cache     reaching `loglik --backend xla` twice with a new NIOC_XLA_CACHE:
#                              compiled, then loaded from the cache (does the plugin serialize?)
#   bench/gpu/run.sh async     reaching (TASKS) per evaluation at ROWS (1,50) vectors with calls that
#                              wait for the device and calls that return once enqueued
#                              (NIOC_XLA_ASYNC=0, 1)
#   bench/gpu/run.sh cmdbuf    reaching (TASKS) per evaluation at ROWS (1,50) vectors with XLA's
#                              command buffers (CUDA graphs) as by default, off, and recording
#                              while loops and conditionals too
#   bench/gpu/run.sh calls     one evaluation call by call (NIOC_TRACE_CALLS): reaching (TASKS) at
#                              ROWS (1) vectors, calls that wait and calls that do not
#   bench/gpu/run.sh fused     reaching (TASKS) per evaluation at FUSED_ROWS (1,50) vectors with
#                              each map between recursions a program of its own and with each
#                              run of them one program (NIOC_FUSE_CALLS=off, on: the default)
#   bench/gpu/run.sh replay    reaching (TASKS) per evaluation at FUSED_ROWS (1,50) vectors on tapes,
#                              as replays of the first evaluation's calls (NIOC_REPLAY=off, on:
#                              the default since 2026-11-29), and as those calls linked into one
#                              program (program: one call an evaluation; timed once linked)
#   bench/gpu/run.sh compile   reaching (TASKS) at ROWS (50) vectors, compiled without the cache, with
#                              XLA's default flags and with its autotuners off (those flags the
#                              plugin knows): build+compile and per evaluation
#   bench/gpu/run.sh optlevel  reaching (TASKS) at ROWS (1,50) vectors compiled at XLA's default
#                              optimization level (3) and at 2 (the CPU plugin's since
#                              2026-11-29): build+compile and per evaluation
#   bench/gpu/run.sh fusion    reaching and cart-pole (TASKS) per evaluation at ROWS (1,50) vectors with
#                              XLA's own fusion (the GPU default) and with fusion barriers
#                              (NIOC_XLA_FUSION=xla, barriers; the CPU plugin's default)
#   bench/gpu/run.sh fit       SUBJECTS (100) reaching subjects (50 restarts × 50 trials,
#                              partially observable) through the subject queue (--queue QUEUE,
#                              default 0: by backend; -1: all at once), --max-batch MAX_BATCH
#                              (default auto: the default by backend; 125000: 2,500 rows a chunk,
#                              as before 2026-11-27): wall time, subjects per hour, accuracy
#                              (FIT_ARGS: more fit flags, e.g. "--uncertainty hessian
#                              --check-draws 0" for the estimates alone; FIT_S: a time limit in
#                              seconds, after which the subjects done are reported; under
#                              `all`, the step's time less 15 s; SIM_ARGS: more simulate
#                              flags, e.g. "--vary-length 30:50" for trials of their own
#                              length, whose agents plan and act on the device)
#   bench/gpu/run.sh lanes     LANES_SUBJECTS (20) pendulum subjects (50 restarts × 50 trials, Hessian
#                              only) fitted with trials as lanes off and on (NIOC_LANES; on the GPU
#                              they are off by default, never measured there): wall time and
#                              whether the estimates agree
#   bench/gpu/run.sh queue     QUEUE_SUBJECTS (3) reaching subjects (5 restarts, Hessian only) fitted
#                              together and each alone: whether each record equals its fit
#                              alone (issue 28: it must, to the bit)
#   bench/gpu/run.sh sweep     reaching, value + gradient per evaluation at 1 … 10,000 parameter
#                              vectors × 50 trials, up to the first size that fails
#   bench/gpu/run.sh tasks     every task at 1 and 50 vectors × 50 trials (ROWS=50: at 50 only)
#   bench/gpu/run.sh forward   reaching: reverse- against forward-mode gradients
#   bench/gpu/run.sh sample    posterior sampler speed: SAMPLE_SUBJECTS (10) subjects of
#                              SAMPLE_TASKS (reaching) sampled together (issue 28's case),
#                              SAMPLE_CHAINS (4) chains a subject (a list: 4,16 runs both), or
#                              SAMPLE_CONFIGS="4:150:100 16:150:100:x" (chains:warm-up:draws,
#                              :x for --cross-chain); a progress line every SAMPLE_PROGRESS
#                              (15s) with the pace so far, for a run cut short
#   bench/gpu/run.sh blocks    reaching and cart-pole with one step per program call and each
#                              recursion as one while loop (STEPS, default 1,all; numbers are
#                              blocks of steps): compile time, calls and time per evaluation, to
#                              check likelihood.DefaultStepsPerCall (all) for CUDA
#   bench/gpu/run.sh prepare   what the host does to put a chunk of 2,500 reaching rows (50
#                              subjects × 50 restarts) on the GPU: packed row by row and uploaded,
#                              or packed once per subject and gathered on the device
#                              (likelihood's BenchmarkPrepareChunk, bin/likelihood.test)
#   bench/gpu/run.sh all       the steps of STEPS_LIST (env fused calls async fit sample compile tasks) in one call,
#                              within BUDGET_S seconds (540; STEP:SECONDS caps a step), ROWS=50
#                              unless set
#   bench/gpu/run.sh jax       side by side on this GPU: the JAX reference's likelihood under
#                              jax.jit(jax.vmap(value_and_grad)) (bench/jaxref/vmapscale.py; REF
#                              names a checkout of RothkopfLab/nioc-neurips, .ref/nioc-neurips
#                              by default, and jaxopt comes from .whl/ where it is missing:
#                              bench/gpu/prepare-jax.sh REF prepares both)
#                              and nioc-gpu's, reaching, 50 trials, at ROWS vectors (1,50,500,5000)
#
# The plugin: $NIOC_PJRT if set, else `make xla-cuda`'s, else a jax_plugins xla_cuda13 or
# xla_cuda12 package of the machine's python3 (with the pip NVIDIA libraries it needs put on
# LD_LIBRARY_PATH). Compiling takes 4–28 s per task and batch shape on an H100 (2026-11-24, all
# programs of a shape compiled concurrently).
set -euo pipefail
step=${1:?usage: bench/gpu/run.sh env|loglik|cache|async|calls|fused|replay|cmdbuf|compile|optlevel|fusion|fit|lanes|queue|sweep|tasks|forward|sample|blocks|prepare|jax|all}
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
case $step in
all)
	# One call for a session whose device time is short: the steps of STEPS_LIST in order, each
	# under what is left of BUDGET_S seconds (STEP:SECONDS caps a step further); a step is
	# skipped when under 30 s are left.
	end=$(($(date +%s) + ${BUDGET_S:-540}))
	for s in ${STEPS_LIST:-env fused calls async fit sample compile tasks}; do
		left=$((end - $(date +%s)))
		if ((left < 30)); then
			echo "bench/gpu/run.sh all: $s skipped, ${left} s left of BUDGET_S=${BUDGET_S:-540}"
			continue
		fi
		if [[ $s == *:* ]]; then
			((${s#*:} < left)) && left=${s#*:}
			s=${s%%:*}
		fi
		# STEP_DEADLINE lets a long step (fit, sample) report what it did before the timeout.
		STEP_DEADLINE=$(($(date +%s) + left)) ROWS=${ROWS:-50} timeout "$left" "$0" "$s" || echo "bench/gpu/run.sh all: $s ended with exit $?"
	done
	exit 0
	;;
esac
if [[ (! -x bin/nioc-gpu || ! -x bin/likelihood.test) && -f bin/gpu-binaries.tar.gz ]]; then
	tar -C bin -xzf bin/gpu-binaries.tar.gz # make gpu-binaries' archive, for copies that leave bin/ out
fi
# per_setting VAR VALUE...: TASKS (reaching) per evaluation at FUSED_ROWS (1,50) vectors with VAR
# set to each VALUE in turn.
per_setting() {
	local var=$1 v
	shift
	for v in "$@"; do
		echo "## $var=$v"
		echo
		env "$var=$v" bin/bench-table -as-fit=false -tasks "${TASKS:-reaching}" -rows "${FUSED_ROWS:-1,50}" -fits=false -xla off || echo "failed: exit $?"
	done
}

# sum_compiles passes its input through, line by line as it comes (awk may wait for a block),
# but for NIOC_TRACE_CALLS=compiles' lines, whose count and seconds it prints at the end.
sum_compiles() {
	local line n=0 ms=0 f frac
	while IFS= read -r line; do
		if [[ $line == "nioc compile "* ]]; then
			f=${line% s}
			f=${f##* }
			((n++)) || true
			frac=${f#*.}000
			ms=$((ms + 10#${f%%.*} * 1000 + 10#${frac:0:3}))
		else
			echo "$line"
		fi
	done
	printf '\n%d programs compiled, %d.%d s of compiles (concurrent ones overlap)\n' "$n" $((ms / 1000)) $((ms % 1000 / 100))
}

for b in bin/nioc-gpu bin/bench-table bin/bench-sample; do
	[[ -x $b ]] || { echo "bench/gpu/run.sh: $b missing: run make gpu-binaries first" >&2; exit 2; }
done

if [[ -z ${NIOC_PJRT:-} ]]; then
	if [[ -f $HOME/.local/lib/go-xla/nvidia/pjrt_c_api_cuda_plugin.so ]]; then
		NIOC_PJRT=cuda
	else
		site=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true)
		for d in $site; do
			for v in 13 12; do
				if [[ -f $d/jax_plugins/xla_cuda$v/xla_cuda_plugin.so ]]; then
					NIOC_PJRT=$d/jax_plugins/xla_cuda$v/xla_cuda_plugin.so
					libs=$(find "$d/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null | paste -sd: -)
					export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
					break 2
				fi
			done
		done
	fi
fi
[[ -n ${NIOC_PJRT:-} ]] || { echo "bench/gpu/run.sh: no CUDA PJRT plugin found (make xla-cuda, or set NIOC_PJRT)" >&2; exit 2; }
export NIOC_PJRT NIOC_BACKEND=xla
# Every step compiles what it runs unless NIOC_XLA_CACHE names a directory to share: nioc-gpu's
# default cache (graph.XLACacheDir) would otherwise carry programs from step to step.
export NIOC_XLA_CACHE=${NIOC_XLA_CACHE-off}
if [[ -z ${XLA_FLAGS:-} && -d /usr/local/cuda ]]; then
	export XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda
fi

out=$OUT/$step.md
{
	echo "# bench/gpu/run.sh $step, $(date -u +%F' '%T) UTC"
	echo
	echo "NIOC_PJRT=$NIOC_PJRT XLA_FLAGS=${XLA_FLAGS:-} $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
	echo
	case $step in
	env)
		bin/nioc-gpu backend --check
		nvidia-smi || true
		;;
	loglik)
		for t in ${TASKS:-reaching navigation pendulum cartpole lightdark}; do
			bin/nioc-gpu simulate --task "$t" --trials 50 --seed 1 --force --out "$OUT/$t.csv" 2>/dev/null
			s=$(date +%s.%N)
			x=$(bin/nioc-gpu loglik --backend xla --task "$t" --data "$OUT/$t.csv")
			e=$(date +%s.%N)
			g=$(bin/nioc-gpu loglik --backend go --task "$t" --data "$OUT/$t.csv")
			awk -v t="$t" -v s="$s" -v e="$e" 'BEGIN { printf "%s: loglik --backend xla %.1f s wall, compile included\n", t, e - s }'
			echo "  xla: $x"
			echo "  go:  $g"
		done
		;;
	prepare)
		(cd likelihood && ../bin/likelihood.test -test.run TestDistinctBucket -test.bench BenchmarkPrepareChunk -test.benchtime 10x -test.count 2)
		;;
	cache)
		bin/nioc-gpu simulate --task reaching --trials 50 --seed 1 --force --out "$OUT/reaching.csv" 2>/dev/null
		dir=$(mktemp -d)
		for run in cold warm; do
			s=$(date +%s.%N)
			x=$(NIOC_XLA_CACHE=$dir bin/nioc-gpu loglik --backend xla --task reaching --data "$OUT/reaching.csv")
			e=$(date +%s.%N)
			awk -v r="$run" -v s="$s" -v e="$e" 'BEGIN { printf "reaching: loglik --backend xla, %s cache: %.1f s wall\n", r, e - s }'
			echo "  $x"
		done
		NIOC_XLA_CACHE=$dir bin/nioc-gpu backend | tail -1
		rm -rf "$dir"
		;;
	async)
		# Both runs compile the same programs: the second loads them from the first's cache.
		[[ $NIOC_XLA_CACHE == off ]] && export NIOC_XLA_CACHE=$(mktemp -d)
		for a in 0 1; do
			echo "## NIOC_XLA_ASYNC=$a"
			echo
			NIOC_XLA_ASYNC=$a bin/bench-table -as-fit=false -tasks "${TASKS:-reaching}" -rows "${ROWS:-1,50}" -fits=false -xla off
		done
		;;
	cmdbuf)
		# XLA's command buffers (CUDA graphs) replay a program's kernels without launching each:
		# the while loops' bodies are hundreds of small kernels a step. XLA's default set, none,
		# and the default set with while loops and conditionals recorded too.
		strings "$NIOC_PJRT" 2>/dev/null | grep -E '^xla_gpu_(enable_command_buffer|graph_[a-z_]+)$' | sort -u | sed 's/^/flag in the plugin: /' || true
		for c in default "--xla_gpu_enable_command_buffer=" "--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,WHILE,CONDITIONAL --xla_gpu_graph_min_graph_size=1"; do
			flags=${XLA_FLAGS:-}
			[[ $c == default ]] || flags="${XLA_FLAGS:-} $c"
			echo "## XLA_FLAGS=$flags"
			echo
			XLA_FLAGS=$flags bin/bench-table -as-fit=false -tasks "${TASKS:-reaching}" -rows "${ROWS:-1,50}" -fits=false -xla off || echo "refused or failed: exit $?"
		done
		;;
	calls)
		# Where one evaluation's wall time goes, call by call (NIOC_TRACE_CALLS): the last
		# evaluation of bench-table's timing loop (its calls per evaluation, from the table),
		# reaching (TASKS) at ROWS (1) vectors, calls that wait and calls that do not
		# (NIOC_XLA_ASYNC=0, 1; their programs shared).
		[[ $NIOC_XLA_CACHE == off ]] && export NIOC_XLA_CACHE=$(mktemp -d)
		for a in 0 1; do
			echo "## NIOC_XLA_ASYNC=$a, the last evaluation's calls"
			echo
			trace=$(NIOC_XLA_ASYNC=$a NIOC_TRACE_CALLS=1 bin/bench-table -as-fit=false -tasks "${TASKS:-reaching}" -rows "${ROWS:-1}" -fits=false -xla off 2>&1) || echo "failed: exit $?"
			n=$(grep '^| ' <<<"$trace" | tail -n 1 | awk -F'|' '{ gsub(/ /, "", $7); print $7 }')
			grep '^nioc call' <<<"$trace" | tail -n "${CALLS:-${n:-23}}" | awk '{ print; ms += $(NF-1) } END { printf "sum %.3f ms\n", ms }'
			echo
		done
		;;
	fused)
		# The maps between recursions as a program each (NIOC_FUSE_CALLS=off: 20 calls an
		# evaluation for reaching, 21 for cart-pole) against each run of them as one (7 and 7),
		# at 1 and 50 vectors whatever ROWS says (issue 28's 10 ms is at 1 × 50).
		per_setting NIOC_FUSE_CALLS off on
		;;
	replay)
		# Evaluations on tapes against replays of the first evaluation's program calls
		# (NIOC_REPLAY=off, on: the default; docs/backends.md, "Replays"): the host's work between
		# calls that wait for the device; and replays linked into one program (program): one
		# wait an evaluation instead of 7. At 1 and 50 vectors whatever ROWS says.
		per_setting NIOC_REPLAY off on program
		;;
	compile)
		# What a GPU compile spends its 15-25 s a shape on: XLA's autotuners, with the flags
		# the plugin knows (an unknown flag aborts XLA). No cache: every run compiles.
		known=$(strings "$NIOC_PJRT" 2>/dev/null | grep -E '^xla_[a-z0-9_]+$' | sort -u || true)
		for c in default --xla_gpu_autotune_level=0 --xla_gpu_experimental_enable_fusion_autotuner=false \
			"--xla_gpu_autotune_level=0 --xla_gpu_experimental_enable_fusion_autotuner=false" --xla_gpu_enable_triton_gemm=false; do
			flags=${XLA_FLAGS:-}
			if [[ $c != default ]]; then
				missing=""
				for f in $c; do
					n=${f#--}
					grep -qx "${n%%=*}" <<<"$known" || missing="$missing ${n%%=*}"
				done
				if [[ -n $missing ]]; then
					echo "## $c: not in the plugin ($missing), skipped"
					continue
				fi
				flags="${XLA_FLAGS:-} $c"
			fi
			echo "## XLA_FLAGS=$flags"
			echo
			NIOC_XLA_CACHE= XLA_FLAGS=$flags bin/bench-table -as-fit=false -tasks "${TASKS:-reaching}" -rows "${ROWS:-50}" -fits=false -xla off || echo "failed: exit $?"
		done
		;;
	optlevel)
		# XLA's backend optimization level: 3 by default; level 2 made the CPU plugin's code
		# 6-24 % faster (docs/backends.md, "Optimization level 2"). Compile time and per
		# evaluation on this GPU, each level compiled afresh.
		for c in default --xla_backend_optimization_level=2; do
			flags=${XLA_FLAGS:-}
			[[ $c == default ]] || flags="${XLA_FLAGS:-} $c"
			echo "## XLA_FLAGS=$flags"
			echo
			NIOC_XLA_CACHE= XLA_FLAGS=$flags bin/bench-table -as-fit=false -tasks "${TASKS:-reaching}" -rows "${ROWS:-1,50}" -fits=false -xla off || echo "failed: exit $?"
		done
		;;
	fusion)
		for f in xla barriers; do
			echo "## NIOC_XLA_FUSION=$f"
			echo
			NIOC_XLA_FUSION=$f bin/bench-table -as-fit=false -tasks "${TASKS:-reaching,cartpole}" -rows "${ROWS:-1,50}" -fits=false -xla off
		done
		;;
	fit)
		n=${SUBJECTS:-100}
		bin/nioc-gpu simulate --task reaching --subjects "$n" --trials 50 --seed 7 ${SIM_ARGS:-} --force --out "$OUT/study.csv"
		( while sleep 10; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader; done ) > "$OUT/fit-gpu-usage.csv" 2>/dev/null &
		watch=$!
		rm -f "$OUT"/fit.jsonl "$OUT"/fit.csv "$OUT"/fit.jsonl.ckpt
		batch="--max-batch ${MAX_BATCH:-auto}"
		[[ ${MAX_BATCH:-auto} == auto ]] && batch="" # the default by backend (likelihood.MaxBatchFor)
		echo "nioc-gpu fit --task reaching --restarts 50 --seed 1 $batch --queue ${QUEUE:-0} ${FIT_ARGS:-} ($n subjects)"
		start=$(date +%s.%N)
		fit_s=${FIT_S:-0}
		if [[ -z ${FIT_S:-} && -n ${STEP_DEADLINE:-} ]]; then # under `all`: stop 15 s before the step's end, to report
			fit_s=$((STEP_DEADLINE - $(date +%s) - 15))
			((fit_s > 5)) || fit_s=5
			echo "(stops after $fit_s s, the time left to this step under bench/gpu/run.sh all)"
		fi
		timeout "$fit_s" bin/nioc-gpu fit --task reaching --data "$OUT/study.csv" --restarts 50 --seed 1 $batch --queue "${QUEUE:-0}" ${FIT_ARGS:-} --out "$OUT/fit.jsonl" --quiet || echo "fit stopped: exit $? after $(wc -l < "$OUT/fit.jsonl") subjects"
		end=$(date +%s.%N)
		kill $watch 2>/dev/null || true # gone already where nvidia-smi is missing (set -e ends the loop)
		awk -v s="$start" -v e="$end" -v n="$(grep -vc '"error"' "$OUT/fit.jsonl")" 'BEGIN { w = e - s; printf "%d subjects fitted in %.1f s wall: %.0f subjects per hour\n", n, w, 3600 * n / w }'
		bin/nioc-gpu compare --task reaching "$OUT/fit.jsonl" || true # against the task's defaults, the truth (none where no subject finished)
		echo "GPU utilization and memory every 10 s: $OUT/fit-gpu-usage.csv"
		;;
	lanes)
		n=${LANES_SUBJECTS:-20}
		bin/nioc-gpu simulate --task pendulum --subjects "$n" --trials 50 --seed 7 --force --out "$OUT/lanes.csv"
		for l in off on; do
			rm -f "$OUT/lanes-$l.jsonl" "$OUT/lanes-$l.csv" "$OUT/lanes-$l.jsonl.ckpt"
			NIOC_LANES=$l bin/nioc-gpu fit --task pendulum --data "$OUT/lanes.csv" --restarts 50 --seed 1 --uncertainty hessian --check-draws 0 --out "$OUT/lanes-$l.jsonl" --quiet >/dev/null 2>&1 # compiles
			rm -f "$OUT/lanes-$l.jsonl" "$OUT/lanes-$l.csv" "$OUT/lanes-$l.jsonl.ckpt"
			start=$(date +%s.%N)
			NIOC_LANES=$l bin/nioc-gpu fit --task pendulum --data "$OUT/lanes.csv" --restarts 50 --seed 1 --uncertainty hessian --check-draws 0 --out "$OUT/lanes-$l.jsonl" --quiet
			end=$(date +%s.%N)
			awk -v s="$start" -v e="$end" -v l="$l" -v n="$n" 'BEGIN { printf "NIOC_LANES=%s: %d pendulum subjects in %.1f s wall (programs compiled in a run before)\n", l, n, e - s }'
		done
		python3 - "$OUT/lanes-off.jsonl" "$OUT/lanes-on.jsonl" <<'PY' || echo "(no python3: compare $OUT/lanes-off.jsonl and $OUT/lanes-on.jsonl by hand)"
import json, sys
a, b = ([json.loads(l) for l in open(f)] for f in sys.argv[1:3])
worst = max(abs(x["params"][k] - y["params"][k]) / abs(x["params"][k]) for x, y in zip(a, b) for k in x["params"])
print(f"largest relative difference of an estimate, lanes off against on: {worst:.1e}; evaluations {sum(x['evaluations'] for x in a)} against {sum(y['evaluations'] for y in b)}")
PY
		;;
	queue)
		# Issue 28's "fits with the subject queue equal per-subject fits exactly", on this
		# device: QUEUE_SUBJECTS (3) reaching subjects fitted together and each alone, Hessian
		# only; every field of every record but its seconds compared (on XLA's CPU plugin they
		# agree to the bit since 2026-11-29: docs/backends.md, "A row's place in its chunk").
		n=${QUEUE_SUBJECTS:-3}
		bin/nioc-gpu simulate --task reaching --subjects "$n" --trials 50 --seed 5 --force --out "$OUT/queue.csv"
		args=(--task reaching --restarts 5 --seed 1 --uncertainty hessian --check-draws 0 --quiet)
		rm -f "$OUT"/queue-*.jsonl "$OUT"/queue-*.jsonl.ckpt
		bin/nioc-gpu fit "${args[@]}" --data "$OUT/queue.csv" --out "$OUT/queue-all.jsonl"
		for s in $(seq 1 "$n"); do
			awk -F, -v s="$s" 'NR == 1 || $1 == s' "$OUT/queue.csv" >"$OUT/queue-data-$s.csv"
			bin/nioc-gpu fit "${args[@]}" --data "$OUT/queue-data-$s.csv" --out "$OUT/queue-$s.jsonl"
		done
		python3 - "$OUT" "$n" <<'PY' || echo "(no python3: compare $OUT/queue-all.jsonl with $OUT/queue-S.jsonl by hand)"
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
def records(f):
    return {r["subject"]: r for r in map(json.loads, open(f))}
together = records(f"{out}/queue-all.jsonl")
for s in range(1, n + 1):
    alone = records(f"{out}/queue-{s}.jsonl")[str(s)]
    both = together[str(s)]
    diff = sorted(k for k in set(alone) | set(both) if k != "seconds" and alone.get(k) != both.get(k))
    print(f"subject {s}: " + ("identical to its fit alone" if not diff else "differs from its fit alone in " + ", ".join(diff)))
PY
		;;
	sweep)
		bin/bench-table -as-fit=false -tasks reaching -rows "${ROWS:-1,50,500,2500,10000}" -fits=false -xla off
		;;
	tasks)
		bin/bench-table -rows "${ROWS:-1,50}" -fits=false -xla off
		;;
	forward)
		bin/bench-table -as-fit=false -tasks "" -forward reaching -forward-1="${FORWARD_1:-true}" -fits=false -xla off
		;;
	sample)
		# SAMPLE_CONFIGS: the sampler settings to measure, CHAINS:WARMUP:DRAWS with :x for
		# --cross-chain, e.g. "4:150:100 16:150:100:x"; by default SAMPLE_CHAINS (4, a
		# list: 4,16 runs both) chains a subject of 150 warm-up and 100 draws each. On a GPU more
		# chains cost little (40 and 500 rows 22 and 75 ms an evaluation on the H100 on
		# 2026-11-27): the table's "effective draws a call" is what they buy (docs/posterior.md,
		# "Many chains on a GPU").
		# A progress line every SAMPLE_PROGRESS (15s) says how far the chains have come and at
		# what pace, so that a run cut short (by `all`'s budget) still tells its speed.
		# Each program's compile is traced (NIOC_TRACE_CALLS=compiles) and their seconds summed:
		# the wall time holds them (the sampler's own shape compiles beside the climbs since
		# 2026-11-28, likelihood.Evaluator.Prebuild).
		configs=${SAMPLE_CONFIGS:-}
		if [[ -z $configs ]]; then
			chains=${SAMPLE_CHAINS:-4}
			for c in ${chains//,/ }; do configs+=" $c:150:100"; done
		fi
		for cfg in $configs; do
			IFS=: read -r c w d x <<<"$cfg"
			flags=(-chains "$c" -warmup "${w:-150}" -draws "${d:-100}")
			[[ $x == x ]] && flags+=(-cross-chain)
			echo "## ${flags[*]}"
			echo
			NIOC_TRACE_CALLS=compiles bin/bench-sample -tasks "${SAMPLE_TASKS:-reaching}" -subjects "${SAMPLE_SUBJECTS:-10}" -progress "${SAMPLE_PROGRESS:-15s}" "${flags[@]}" 2>&1 |
				sum_compiles || echo "failed: exit $?"
		done
		;;
	blocks)
		bin/bench-table -as-fit=false -tasks "" -blocks "${TASKS:-reaching,cartpole}" -steps "${STEPS:-1,all}" -fits=false -xla off
		;;
	jax)
		# REF: a checkout of RothkopfLab/nioc-neurips, by default .ref/nioc-neurips, with jaxopt
		# from .whl/ where the machine lacks it (bench/gpu/prepare-jax.sh puts both there).
		ref=${REF:-.ref/nioc-neurips}
		[[ -d $ref/nioc ]] || { echo "bench/gpu/run.sh jax: no reference at $ref: run bench/gpu/prepare-jax.sh REF where the network is, and carry .ref and .whl" >&2; exit 2; }
		if ! python3 -c 'import jaxopt' 2>/dev/null && compgen -G '.whl/jaxopt-*.whl' >/dev/null; then
			python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/jaxopt-*.whl
			export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
		fi
		bin/nioc-gpu simulate --task reaching --trials 50 --seed 1 --force --out "$OUT/jax-reaching.csv"
		echo "## JAX reference: jax.jit(jax.vmap(jax.value_and_grad(nll))), $(python3 -c 'import jax; print("jax", jax.__version__, jax.devices()[0].device_kind)')"
		echo
		JAX_PLATFORMS=${JAX_PLATFORMS:-cuda} PYTHONUNBUFFERED=1 python3 bench/jaxref/vmapscale.py --ref "$ref" --task reaching \
			--data "$OUT/jax-reaching.csv" --batches "${ROWS:-1,50,500,5000}" --json "$OUT/jax.json" || echo "(vmapscale.py failed: exit $?)"
		echo
		echo "## nioc-gpu on the same GPU"
		echo
		bin/bench-table -as-fit=false -tasks reaching -rows "${ROWS:-1,50,500,5000}" -fits=false -xla off
		;;
	*)
		echo "bench/gpu/run.sh: unknown step $step" >&2
		exit 2
		;;
	esac
} 2>&1 | tee "$out"
