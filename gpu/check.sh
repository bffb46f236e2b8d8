#!/bin/sh
# gpu/check.sh [OUTDIR] [TC_VECTORS] — the whole GPU comparison in one go,
# for a machine with an NVIDIA GPU (target: H200, sm_90, CUDA 13), in under
# 8 minutes: builds bin/nanmap-gpu, runs every step of it in its own process
# under its own time limit, and after every step rewrites
#   OUTDIR/gpu-report.md       what ran, how long, every comparison row
#   OUTDIR/gpu-results.csv     one line per row (kernel, format, mode, counts)
#   OUTDIR/gpu-mismatches.csv  the first mismatches of every row
#   OUTDIR/gpu-tables.txt      hexp hlog hexp2 hrcp hrsqrt hsqrt, all fp16/bf16 inputs
#   OUTDIR/tc-rules.csv        the disputed Tensor Core rules (gpu/tc-rules.txt): which
#                              reading each case's mma.sync returned
#   OUTDIR/cpu-threads.csv     the CPUs, no GPU: bench tables 5, 5b, 6 and 12 (the
#                              kernels on every CPU against one thread, same bytes)
#   OUTDIR/check.log           everything the build and the steps printed
# so a run cut short still leaves a complete report of what finished. It
# never stops at a failed step: the report says which failed and why, and
# the script exits 0 (1 only when OUTDIR cannot be written).
#
# OUTDIR defaults to gpu-results. The Tensor Core hardware vectors are read
# from TC_VECTORS, else $NANMAP_TC_VECTORS, else ../shared/data/tensor-core-vectors;
# the tc step is skipped, saying so, when none is there.
# Environment: NANMAP_GPU_BUDGET (seconds for everything, default 450),
# NVCC (default /usr/local/cuda/bin/nvcc), JOBS (make -j, default: all CPUs),
# NANMAP_GPU_BIN (the runner, default bin/nanmap-gpu; the fake device's
# build/gpu/nanmap-gpu-fake rehearses this script without a GPU) and
# NANMAP_GPU_ARGS (more options for every step, e.g. --quick).
set -u

cd "$(dirname "$0")/.." || exit 1
OUT=${1:-gpu-results}
TCV=${2:-${NANMAP_TC_VECTORS:-../shared/data/tensor-core-vectors}}
BUDGET=${NANMAP_GPU_BUDGET:-450}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
RUNNER=${NANMAP_GPU_BIN:-bin/nanmap-gpu}
MORE=${NANMAP_GPU_ARGS:-}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd) || exit 1
PARTS=$(mktemp -d "${TMPDIR:-/tmp}/nanmap-gpu-parts.XXXXXX") || exit 1
LOG=$OUT/check.log
STATUS=$PARTS/status.md
T0=$(date +%s)
: >"$LOG"
: >"$STATUS"

log() { printf '%s\n' "$*" | tee -a "$LOG"; }
elapsed() { echo $(($(date +%s) - T0)); }

have_timeout=0
command -v timeout >/dev/null 2>&1 && have_timeout=1
# limit SECONDS CMD...: run with a time limit where timeout(1) exists
limit() {
	s=$1
	shift
	if [ "$have_timeout" = 1 ]; then
		timeout -k 5 "$s" "$@"
	else
		"$@"
	fi
}

# Rewrite the report from the status lines and every finished part.
assemble() {
	{
		echo "# nanmap GPU check"
		echo
		echo "Written by gpu/check.sh on $(date -u '+%Y-%m-%d %H:%M UTC'), $(elapsed) s after the start."
		echo
		echo "## Machine"
		echo
		echo '```'
		cat "$PARTS/machine.txt" 2>/dev/null
		echo '```'
		echo
		echo "## Steps"
		echo
		echo "| step | status | seconds | note |"
		echo "| --- | --- | ---: | --- |"
		cat "$STATUS"
		for d in "$PARTS"/step-*; do
			[ -f "$d/nanmap-gpu.md" ] || continue
			echo
			echo "## ${d##*/step-}"
			echo
			cat "$d/nanmap-gpu.md"
		done
		echo
		echo "Raw rows: gpu-results.csv; first mismatches: gpu-mismatches.csv; log: check.log."
	} >"$OUT/gpu-report.md.tmp" && mv "$OUT/gpu-report.md.tmp" "$OUT/gpu-report.md"
	hdr=0
	for d in "$PARTS"/step-*; do
		[ -f "$d/nanmap-gpu.csv" ] || continue
		if [ "$hdr" = 0 ]; then head -n 1 "$d/nanmap-gpu.csv"; hdr=1; fi
		tail -n +2 "$d/nanmap-gpu.csv"
	done >"$OUT/gpu-results.csv.tmp" && mv "$OUT/gpu-results.csv.tmp" "$OUT/gpu-results.csv"
	hdr=0
	for d in "$PARTS"/step-*; do
		[ -f "$d/nanmap-gpu-miss.csv" ] || continue
		if [ "$hdr" = 0 ]; then head -n 1 "$d/nanmap-gpu-miss.csv"; hdr=1; fi
		tail -n +2 "$d/nanmap-gpu-miss.csv"
	done >"$OUT/gpu-mismatches.csv.tmp" && mv "$OUT/gpu-mismatches.csv.tmp" "$OUT/gpu-mismatches.csv"
	if [ -f "$PARTS/step-tables/gpu-tables.txt" ]; then
		cp "$PARTS/step-tables/gpu-tables.txt" "$OUT/gpu-tables.txt"
	fi
	if [ -f "$PARTS/step-rules/tc-rules.csv" ]; then
		cp "$PARTS/step-rules/tc-rules.csv" "$OUT/tc-rules.csv"
	fi
}

status() { # step status seconds note
	printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" >>"$STATUS"
	assemble
}

# ---- the machine ----
{
	echo "host: $(uname -n) $(uname -m), $JOBS CPUs"
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 ||
		echo "nvidia-smi: not available"
	"$NVCC" --version 2>&1 | tail -n 2 || echo "nvcc: not available at $NVCC"
	# the kernels' row bodies the runner was built from (kern.cu and the replay compile the same
	# files): one checksum over gpu/rows.h, the loops that expand the row sources and the row sources
	# shellcheck disable=SC2086
	rows="gpu/rows.h gpu/krow_loops.h emu/engine/krow.h $(ls emu/kernels/*_rows.h)"
	echo "source: $(git describe --always --dirty 2>/dev/null || echo 'not a git checkout'), row sources $(cat $rows | cksum | cut -d' ' -f1) ($(echo $rows | wc -w) files)"
	echo "tc vectors: $TCV"
} >"$PARTS/machine.txt" 2>&1
cat "$PARTS/machine.txt" >>"$LOG"
assemble

# ---- build ----
t=$(date +%s)
target=gpu
[ "$RUNNER" = bin/nanmap-gpu ] || target=$RUNNER
log "== build (make $target, -j$JOBS)"
# DEPS_INSTALL=no: a machine without the Debian packages (or a network) fails
# the build at once and falls back to a runner built elsewhere, never waits on apt
if limit 240 make -j"$JOBS" DEPS_INSTALL=no NVCC="$NVCC" "$target" >>"$LOG" 2>&1; then
	status build ok $(($(date +%s) - t)) "make $target"
elif [ -x "$RUNNER" ]; then
	why=$(grep '^deps: ' "$LOG" | tail -n 1 | tr '|' '/' | cut -c1-160)
	status build FAILED $(($(date +%s) - t)) "make $target failed (${why:-see check.log}); using the $RUNNER already there"
else
	status build FAILED $(($(date +%s) - t)) "make gpu failed; nothing can run (see check.log: $(tail -n 1 "$LOG" | tr '|' '/' | cut -c1-160))"
	log "check.sh: report in $OUT/gpu-report.md"
	rm -rf "$PARTS"
	exit 0
fi

# ---- the steps, in priority order: the disputed Tensor Core rules (seconds, and
# what no other source can settle), then the cheapest; conv (the exhaustive
# sweep) gets what is left ----
TCARG=""
if [ -d "$TCV/H200" ]; then
	TCARG="--tc-vectors $TCV"
fi
# threads: the kernels on every CPU against one (bench table 12), no GPU
threads_step() { # limit
	t=$(date +%s)
	rc=0
	limit "$1" sh -c "make -j$JOBS DEPS_INSTALL=no bench/nanmap-bench >>'$LOG' 2>&1 &&
		bench/nanmap-bench --kernels-only --quick >'$OUT/cpu-threads.csv' 2>>'$LOG'" || rc=$?
	dt=$(($(date +%s) - t))
	case $rc in
	0) status threads ok "$dt" "bench tables 5, 5b, 6, 12 on $(nproc) CPUs: cpu-threads.csv" ;;
	124 | 137) status threads TIMEOUT "$dt" "stopped after $1 s" ;;
	*) status threads FAILED "$dt" "exit $rc (see check.log)" ;;
	esac
}
for spec in rules:30 tables:40 tc:40 gemm:60 lt:60 gemmex:30 kern:60 quant:30 attn:60 arith:60 threads:60 conv:300; do
	step=${spec%%:*}
	max=${spec#*:}
	left=$((BUDGET - $(elapsed) - 10))
	if [ "$left" -lt 15 ]; then
		status "$step" SKIPPED 0 "time budget ($BUDGET s) spent"
		continue
	fi
	[ "$max" -gt "$left" ] && max=$left
	extra=""
	[ "$step" = arith ] && extra="--pairs 67108864"
	# the kern and attn steps replay the tables the tables step measured
	if { [ "$step" = kern ] || [ "$step" = attn ]; } && [ -f "$PARTS/step-tables/gpu-tables.txt" ]; then
		extra="--gpu-tables $PARTS/step-tables/gpu-tables.txt"
	fi
	if [ "$step" = threads ]; then
		log "== threads (limit $max s)"
		threads_step "$max"
		continue
	fi
	if [ "$step" = tc ] && [ -z "$TCARG" ]; then
		status tc SKIPPED 0 "no Tensor Core vectors at $TCV (pass TC_VECTORS or set NANMAP_TC_VECTORS)"
		continue
	fi
	mkdir -p "$PARTS/step-$step"
	log "== $step (limit $max s)"
	t=$(date +%s)
	rc=0
	# shellcheck disable=SC2086
	# cuBLASLt says why it refuses an algorithm only with its log on (errors only)
	lvl=0
	[ "$step" = lt ] && lvl=1
	limit "$max" env CUBLASLT_LOG_LEVEL=$lvl "$RUNNER" --out "$PARTS/step-$step" --only "$step" $TCARG $extra $MORE >>"$LOG" 2>&1 || rc=$?
	dt=$(($(date +%s) - t))
	case $rc in
	0) status "$step" ok "$dt" "" ;;
	77) status "$step" SKIPPED "$dt" "$(grep 'no CUDA device' "$LOG" | tail -n 1)" ;;
	124 | 137) status "$step" TIMEOUT "$dt" "stopped after $max s; the rows that finished are below" ;;
	*) status "$step" FAILED "$dt" "exit $rc: $(grep "nanmap-gpu: $step: " "$LOG" | tail -n 1 | tr '|' '/' | cut -c1-160)" ;;
	esac
done

assemble
log "check.sh: done in $(elapsed) s; report in $OUT/gpu-report.md"
rm -rf "$PARTS"
exit 0
