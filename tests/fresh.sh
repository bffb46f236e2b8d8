#!/bin/sh
# tests/fresh.sh — make test passes on a fresh clone with nothing built: a
# dry run of make test as if nothing were built (make -B -n) must build every
# file a step of it uses — both libraries (the Python package loads
# lib/libnanmap.so, tests/install.sh installs them), nanmap.pc, bin/nanmap,
# the Check binary, the fake and mutant GPU runners and every fuzz
# harness's replay (tests/fuzz/replay.sh). A file missing from the
# list fails here, where a built tree would hide it.
# Run from the repository root: sh tests/fresh.sh
set -u

T=fresh
. tests/cli/cli_lib.sh
MAKE=${MAKE:-make}
# a make of its own, not in make test's jobserver; the dry run's steps (a
# recursive make runs even under -n) write their counts to a file of ours
unset MAKEFLAGS MFLAGS
"$MAKE" -B -n --no-print-directory test RESULTS="$tmp/results.txt" NVCC=/nonexistent/nvcc \
	>"$tmp/out" 2>"$tmp/err" || fail "make -B -n test: exit status $?"
for f in lib/libnanmap.a lib/libnanmap.so.0.1.0 bin/nanmap build/tests/check_nanmap \
	build/gpu/nanmap-gpu-fake build/gpu/nanmap-gpu-mutant; do
	grep -q -- " -o $f\( \|\$\)\|ar rcs $f " "$tmp/out" || fail "make test on a fresh clone does not build $f"
	pass=$((pass + 1))
done
grep -q "> nanmap.pc\$" "$tmp/out" || fail "make test on a fresh clone does not build nanmap.pc"
pass=$((pass + 1))
grep -q "ln -sf libnanmap.so.0 lib/libnanmap.so" "$tmp/out" ||
	fail "make test on a fresh clone does not link lib/libnanmap.so"
pass=$((pass + 1))
for n in npy golden case plot gputab safetensors; do
	grep -q -- " -o build/fuzz/$n/replay " "$tmp/out" ||
		fail "make test does not link the fuzz harness's replay build/fuzz/$n/replay"
	pass=$((pass + 1))
done
echo "fresh: $pass checks passed"
