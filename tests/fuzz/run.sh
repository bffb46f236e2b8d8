#!/bin/sh
# tests/fuzz/run.sh — build the libFuzzer harnesses for the readers of outside
# input and run each for a bounded time: the .npy reader (npy), the
# golden-file and actual-output readers (golden), the case-file reader
# (case), the plot's results-CSV reader (plot), the GPU-tables reader
# (gputab) and the .safetensors reader (safetensors). From the repository
# root (or anywhere):
#
#   sh tests/fuzz/run.sh                          # 60 s each
#   FUZZ_SECONDS=600 sh tests/fuzz/run.sh
#   FUZZ_TARGETS=golden sh tests/fuzz/run.sh      # some of: npy golden case plot gputab safetensors
#
# Environment: FUZZ_SECONDS (default 60, per harness), FUZZ_CC (default clang;
# it needs libFuzzer: clang -fsanitize=fuzzer), FUZZ_ARGS (more libFuzzer
# flags), FUZZ_TARGETS (default "npy golden case plot gputab safetensors";
# FUZZ_ONLY is read too).
# Output in build/fuzz/NAME/: the binary, the growing corpus (corpus/), crash
# inputs (artifacts/) and the log (fuzz.log). Seeds: tests/fuzz/corpus/
# (files written by NumPy), tests/fuzz/corpus_golden/ (a first byte choosing
# the reader, see fuzz_golden.c), tests/fuzz/corpus_case/ (case files),
# tests/fuzz/corpus_plot/ (results CSVs, a first byte choosing the case);
# tests/fuzz/corpus_gputab/ (a first byte choosing the mode, see
# fuzz_gputab.c); tests/fuzz/corpus_safetensors/ (files nm_st_write wrote,
# and one with __metadata__);
# tokens: tests/fuzz/NAME.dict. Each harness's sources: FUZZ_SRC_NAME in the
# Makefile. Every target runs even after one fails; exit status 0 when every
# run ended without a crash, leak or timeout, nonzero otherwise.
set -eu
cd "$(dirname "$0")/../.."

CC_FUZZ=${FUZZ_CC:-clang}
SECS=${FUZZ_SECONDS:-60}
OUT=build/fuzz
case "$SECS" in '' | *[!0-9]*) echo "run.sh: FUZZ_SECONDS must be a whole number, got '$SECS'" >&2; exit 2 ;; esac
if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
	echo "run.sh: $CC_FUZZ not found (the fuzzer needs clang with libFuzzer; apt-get install clang)" >&2
	exit 2
fi
. tests/fuzz/seeds.sh
TARGETS=${FUZZ_TARGETS:-${FUZZ_ONLY:-$FUZZ_ALL}}
for t in $TARGETS; do
	case "$t" in npy | golden | case | plot | gputab | safetensors) ;; *) echo "run.sh: unknown target '$t' in FUZZ_TARGETS (npy golden case plot gputab safetensors)" >&2; exit 2 ;; esac
done

# The harnesses are built by make (build/fuzz/NAME/fuzz), from the one source
# list per harness in the Makefile that make test builds too; all of them
# first, so a harness that does not link stops the run before any fuzzing.
# shellcheck disable=SC2046 # the targets are words
${MAKE:-make} --no-print-directory FUZZ_CC="$CC_FUZZ" $(for t in $TARGETS; do printf '%s ' "$OUT/$t/fuzz"; done) >/dev/null

# fuzz NAME WHAT MAXLEN SEEDS : run build/fuzz/NAME/fuzz; every target runs,
# and the exit status is the first failure's.
status=0
fuzz() {
	name=$1 what=$2 maxlen=$3 seeds=$4
	d=$OUT/$name
	mkdir -p "$d/corpus" "$d/artifacts"
	echo "run.sh: fuzzing $what for ${SECS} s (log: $d/fuzz.log)"
	set +e
	# shellcheck disable=SC2086
	"$d/fuzz" -max_total_time="$SECS" -max_len="$maxlen" -timeout=10 \
		-dict="tests/fuzz/$name.dict" -artifact_prefix="$d/artifacts/" \
		-print_final_stats=1 ${FUZZ_ARGS:-} "$d/corpus" "$seeds" >"$d/fuzz.log" 2>&1
	rc=$?
	set -e
	grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|Done )' "$d/fuzz.log" || true
	if [ $rc -ne 0 ]; then
		tail -n 40 "$d/fuzz.log" >&2
		echo "run.sh: $name FAILED (exit $rc); inputs in $d/artifacts/" >&2
		[ $status -ne 0 ] || status=$rc
		return 0
	fi
	echo "run.sh: no crash in ${SECS} s; corpus: $(find "$d/corpus" -type f | wc -l) inputs"
}

for t in $TARGETS; do
	case "$t" in
	npy) fuzz npy "the .npy reader" 4096 "$(fuzz_seeds npy)" ;;
	golden) fuzz golden "the golden-file and actual-output readers" 8192 "$(fuzz_seeds golden)" ;;
	case) fuzz case "the case-file reader" 4096 "$(fuzz_seeds case)" ;;
	plot) fuzz plot "the plot's results reader" 16384 "$(fuzz_seeds plot)" ;;
	gputab) fuzz gputab "the GPU-tables reader" 4096 "$(fuzz_seeds gputab)" ;;
	safetensors) fuzz safetensors "the .safetensors reader" 8192 "$(fuzz_seeds safetensors)" ;;
	esac
done
exit $status
