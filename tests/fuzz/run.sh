#!/bin/sh
# tests/fuzz/run.sh — build the libFuzzer harnesses for the .npy reader and
# the case-file reader and run each for a bounded time. From the repository
# root (or anywhere):
#
#   sh tests/fuzz/run.sh                 # 60 s
#   FUZZ_SECONDS=600 sh tests/fuzz/run.sh
#
# Environment: FUZZ_SECONDS (default 60, per harness), FUZZ_CC (default clang;
# it needs libFuzzer: clang -fsanitize=fuzzer), FUZZ_ARGS (more libFuzzer
# flags), FUZZ_TARGETS (default "npy case").
# Output in build/fuzz/: the binary, the growing corpus (corpus/), crash
# inputs (artifacts/) and the log (fuzz.log). Seeds: tests/fuzz/corpus/ (files
# written by NumPy), tests/fuzz/corpus_case/ (case files); tokens:
# tests/fuzz/npy.dict, tests/fuzz/case.dict; the case harness's output is in
# build/fuzz/case/. Exit status 0 when every run ended without a crash, leak
# or timeout, nonzero otherwise.
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
TARGETS=${FUZZ_TARGETS:-npy case}
mkdir -p "$OUT/corpus" "$OUT/artifacts"

case " $TARGETS " in *" npy "*) ;; *) SKIP_NPY=1 ;; esac
if [ -z "${SKIP_NPY:-}" ]; then

# The reader and the emulator files it reaches (fp16/fp32 decode and
# rounding), all instrumented; no MPFR or OpenMP needed.
"$CC_FUZZ" -std=c11 -g -O1 -fno-omit-frame-pointer -ffp-contract=off \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-D_POSIX_C_SOURCE=200809L -Iemu -Iharness \
	tests/fuzz/fuzz_npy.c harness/nm_npy.c \
	emu/format.c emu/codec.c emu/convert.c emu/round.c -lm \
	-o "$OUT/fuzz_npy"

echo "run.sh: fuzzing the .npy reader for ${SECS} s (log: $OUT/fuzz.log)"
set +e
# shellcheck disable=SC2086
"$OUT/fuzz_npy" -max_total_time="$SECS" -max_len=4096 -timeout=10 \
	-dict=tests/fuzz/npy.dict -artifact_prefix="$OUT/artifacts/" \
	-print_final_stats=1 ${FUZZ_ARGS:-} "$OUT/corpus" tests/fuzz/corpus >"$OUT/fuzz.log" 2>&1
rc=$?
set -e
grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|Done )' "$OUT/fuzz.log" || true
if [ $rc -ne 0 ]; then
	tail -n 40 "$OUT/fuzz.log" >&2
	echo "run.sh: FAILED (exit $rc); inputs in $OUT/artifacts/" >&2
	exit $rc
fi
echo "run.sh: no crash in ${SECS} s; corpus: $(find "$OUT/corpus" -type f | wc -l) inputs"
fi

# The case-file reader: it names kernels and parses policies, so it links the
# whole emulator (and MPFR, GMP, inih), all instrumented but the libraries.
case " $TARGETS " in *" case "*) ;; *) exit 0 ;; esac
C=$OUT/case
mkdir -p "$C/corpus" "$C/artifacts"
# shellcheck disable=SC2046
"$CC_FUZZ" -std=c11 -g -O1 -fno-omit-frame-pointer -ffp-contract=off \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-D_POSIX_C_SOURCE=200809L -Iemu -Iharness \
	tests/fuzz/fuzz_case.c harness/nm_case.c harness/nm_parse.c harness/nm_gen.c \
	$(ls emu/*.c) -linih -lmpfr -lgmp -lm \
	-o "$C/fuzz_case"

echo "run.sh: fuzzing the case-file reader for ${SECS} s (log: $C/fuzz.log)"
set +e
# shellcheck disable=SC2086
"$C/fuzz_case" -max_total_time="$SECS" -max_len=4096 -timeout=10 \
	-dict=tests/fuzz/case.dict -artifact_prefix="$C/artifacts/" \
	-print_final_stats=1 ${FUZZ_ARGS:-} "$C/corpus" tests/fuzz/corpus_case >"$C/fuzz.log" 2>&1
rc=$?
set -e
grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|Done )' "$C/fuzz.log" || true
if [ $rc -ne 0 ]; then
	tail -n 40 "$C/fuzz.log" >&2
	echo "run.sh: FAILED (exit $rc); inputs in $C/artifacts/" >&2
	exit $rc
fi
echo "run.sh: no crash in ${SECS} s; corpus: $(find "$C/corpus" -type f | wc -l) inputs"
