#!/bin/sh
# tests/fuzz/replay.sh — make test's part of the fuzzing: every harness,
# linked with tests/fuzz/replay.c from the plain build's objects
# (build/fuzz/NAME/replay, make fuzz-replay), is given each file of its seed
# directory. That links each harness's source list in the Makefile (a file
# missing from it fails here, not in make fuzz) and checks the harness's
# REQUIREs on every seed. The fuzzing itself, instrumented and for a bounded
# time, is make fuzz (tests/fuzz/run.sh). Run from the repository root.
set -u

T=fuzz_replay
N=${NANMAP:-bin/nanmap}
. tests/cli/cli_lib.sh
. tests/fuzz/seeds.sh

for n in $FUZZ_ALL; do
	r=build/fuzz/$n/replay
	[ -x "$r" ] || fail "$r not built (make fuzz-replay)"
	seeds=$(fuzz_seeds "$n")
	want=$(find "$seeds" -type f ! -name '.*' | wc -l)
	[ "$want" -gt 0 ] || fail "$n: no seeds in $seeds"
	rc=0
	"$r" "$seeds" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 0 ] || fail "$n: the harness failed on a seed of $seeds (exit status $rc)"
	grep -qx "replay: $want inputs" "$tmp/out" || fail "$n: want 'replay: $want inputs'"
	pass=$((pass + 1))
done

# a seed that cannot be read is one line and exit status 2, not a pass
rc=0
build/fuzz/npy/replay "$tmp/none" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "a missing seed: exit status $rc, want 2 and one line"
pass=$((pass + 1))
echo "$T: $pass checks passed"
