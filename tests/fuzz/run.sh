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
# tokens: tests/fuzz/NAME.dict. Exit status 0 when every run ended without a
# crash, leak or timeout, nonzero otherwise.
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
TARGETS=${FUZZ_TARGETS:-${FUZZ_ONLY:-npy golden case plot gputab safetensors}}
for t in $TARGETS; do
	case "$t" in npy | golden | case | plot | gputab | safetensors) ;; *) echo "run.sh: unknown target '$t' in FUZZ_TARGETS (npy golden case plot gputab safetensors)" >&2; exit 2 ;; esac
done

# fuzz NAME WHAT MAXLEN SEEDS SOURCES... : build build/fuzz/NAME/fuzz and run it.
fuzz() {
	name=$1 what=$2 maxlen=$3 seeds=$4
	shift 4
	d=$OUT/$name
	mkdir -p "$d/corpus" "$d/artifacts"
	"$CC_FUZZ" -std=c11 -g -O1 -fno-omit-frame-pointer -ffp-contract=off \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-D_POSIX_C_SOURCE=200809L -Icore -Iengine -Ikernels -Iio -Icli -Isweep "$@" -o "$d/fuzz"
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
		echo "run.sh: FAILED (exit $rc); inputs in $d/artifacts/" >&2
		exit $rc
	fi
	echo "run.sh: no crash in ${SECS} s; corpus: $(find "$d/corpus" -type f | wc -l) inputs"
}

for t in $TARGETS; do
	case "$t" in
	npy) # the reader and the emulator files it reaches; no MPFR or OpenMP
		fuzz npy "the .npy reader" 4096 tests/fuzz/corpus \
			tests/fuzz/fuzz_npy.c io/nm_npy.c \
			core/format.c core/codec.c core/convert.c core/round.c -lm ;;
	golden) # checks operation names (core/apply.c): the library layers and MPFR
		# shellcheck disable=SC2046
		fuzz golden "the golden-file and actual-output readers" 8192 tests/fuzz/corpus_golden \
			tests/fuzz/fuzz_golden.c io/nm_golden.c io/nm_npy.c io/nm_parse.c \
			$(ls core/*.c engine/*.c kernels/*.c) -lmpfr -lgmp -lm ;;
	case) # names kernels and parses policies: the library layers, inih
		# shellcheck disable=SC2046
		fuzz case "the case-file reader" 4096 tests/fuzz/corpus_case \
			tests/fuzz/fuzz_case.c sweep/nm_case.c io/nm_parse.c cli/nm_gen.c \
			$(ls core/*.c engine/*.c kernels/*.c) -linih -lmpfr -lgmp -lm ;;
	plot) # the CSV against its case, whose kernel runs once for its columns
		# shellcheck disable=SC2046
		fuzz plot "the plot's results reader" 16384 tests/fuzz/corpus_plot \
			tests/fuzz/fuzz_plot.c sweep/nm_plot.c sweep/nm_point.c sweep/nm_case.c \
			io/nm_parse.c cli/nm_gen.c $(ls core/*.c engine/*.c kernels/*.c) -linih -lmpfr -lgmp -lm ;;
	gputab) # the loader and the format table it names formats by
		fuzz gputab "the GPU-tables reader" 4096 tests/fuzz/corpus_gputab \
			tests/fuzz/fuzz_gputab.c engine/gputab.c \
			core/format.c core/codec.c core/convert.c core/round.c -lm ;;
	safetensors) # the reader, the one atomic writer it links, the emulator's decoders
		fuzz safetensors "the .safetensors reader" 8192 tests/fuzz/corpus_safetensors \
			tests/fuzz/fuzz_safetensors.c io/nm_safetensors.c io/nm_file.c \
			core/format.c core/codec.c core/convert.c core/round.c -lm ;;
	esac
done
