#!/bin/sh
# tests/fuzz/run.sh — build the libFuzzer harnesses for the .npy reader
# (fuzz_npy) and for the golden-file and actual-output readers (fuzz_golden)
# and run each for a bounded time. From the repository root (or anywhere):
#
#   sh tests/fuzz/run.sh                 # 60 s each
#   FUZZ_SECONDS=600 sh tests/fuzz/run.sh
#   FUZZ_ONLY=golden sh tests/fuzz/run.sh   # one harness (npy or golden)
#
# Environment: FUZZ_SECONDS (default 60), FUZZ_CC (default clang; it needs
# libFuzzer: clang -fsanitize=fuzzer), FUZZ_ARGS (more libFuzzer flags).
# Output in build/fuzz/: the binaries, the growing corpora (corpus/,
# corpus_golden/), crash inputs (artifacts/) and the logs (fuzz.log,
# fuzz_golden.log). Seeds: tests/fuzz/corpus/ (files written by NumPy) and
# tests/fuzz/corpus_golden/ (a first byte choosing the reader, see
# fuzz_golden.c); tokens: tests/fuzz/npy.dict, tests/fuzz/golden.dict. Exit
# status 0 when every run ended without a crash, leak or timeout.
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
case "${FUZZ_ONLY:-}" in '' | npy | golden) ;; *) echo "run.sh: FUZZ_ONLY must be npy or golden" >&2; exit 2 ;; esac
mkdir -p "$OUT/corpus" "$OUT/corpus_golden" "$OUT/artifacts"

# The reader and the emulator files it reaches (fp16/fp32 decode and
# rounding), all instrumented; no MPFR or OpenMP needed.
"$CC_FUZZ" -std=c11 -g -O1 -fno-omit-frame-pointer -ffp-contract=off \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-D_POSIX_C_SOURCE=200809L -Iemu -Iharness \
	tests/fuzz/fuzz_npy.c harness/nm_npy.c \
	emu/format.c emu/codec.c emu/convert.c emu/round.c -lm \
	-o "$OUT/fuzz_npy"

if [ "${FUZZ_ONLY:-npy}" = npy ]; then
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
[ "${FUZZ_ONLY:-golden}" = golden ] || exit 0

# The golden reader checks operation names (emu/apply.c), which reaches every
# operation of the emulator and MPFR's Ziv fallback: link all of emu/.
"$CC_FUZZ" -std=c11 -g -O1 -fno-omit-frame-pointer -ffp-contract=off \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-D_POSIX_C_SOURCE=200809L -Iemu -Iharness \
	tests/fuzz/fuzz_golden.c harness/nm_golden.c harness/nm_npy.c harness/nm_parse.c \
	emu/*.c -lmpfr -lgmp -lm \
	-o "$OUT/fuzz_golden"

echo "run.sh: fuzzing the golden-file and actual-output readers for ${SECS} s (log: $OUT/fuzz_golden.log)"
set +e
# shellcheck disable=SC2086
"$OUT/fuzz_golden" -max_total_time="$SECS" -max_len=8192 -timeout=10 \
	-dict=tests/fuzz/golden.dict -artifact_prefix="$OUT/artifacts/golden-" \
	-print_final_stats=1 ${FUZZ_ARGS:-} "$OUT/corpus_golden" tests/fuzz/corpus_golden \
	>"$OUT/fuzz_golden.log" 2>&1
rc=$?
set -e
grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|Done )' "$OUT/fuzz_golden.log" || true
if [ $rc -ne 0 ]; then
	tail -n 40 "$OUT/fuzz_golden.log" >&2
	echo "run.sh: FAILED (exit $rc); inputs in $OUT/artifacts/golden-*" >&2
	exit $rc
fi
echo "run.sh: no crash in ${SECS} s; corpus: $(find "$OUT/corpus_golden" -type f | wc -l) inputs"
