#!/bin/sh
# tests/sweep/mpi_sweep.sh — make test-mpi: tests/data/sweep_tiny.case (and
# sweep_train.case, whole training runs) swept by 2 MPI
# ranks (build/mpi/nanmap under mpirun) must write every file byte for byte
# as one process does (bin/nanmap), first run and resumed run alike.
# Run from the repository root after make bin/nanmap build/mpi/nanmap.
# MPIRUN overrides the launcher (default mpirun). Stops at the first failure.
set -u

N=${NANMAP:-bin/nanmap}
M=${NANMAP_MPI:-build/mpi/nanmap}
MPIRUN=${MPIRUN:-mpirun}
CASE=tests/data/sweep_tiny.case
for b in "$N" "$M"; do
	[ -x "$b" ] || { echo "mpi_sweep: $b not built (run make test-mpi)" >&2; exit 1; }
done
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "mpi_sweep: $MPIRUN not found (apt-get install openmpi-bin)" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
# Open MPI refuses root unless told; --oversubscribe: 2 ranks on 1 core is fine
asroot=
[ "$(id -u)" = 0 ] && asroot=--allow-run-as-root

fail() {
	printf 'mpi_sweep: FAIL: %s\n' "$1" >&2
	[ -s "$tmp/err" ] && cat "$tmp/err" >&2
	exit 1
}

# same A B DESC: the trees A and B hold the same files with the same bytes
# (but for results/.state/, the sweep's bookkeeping: search timings and all).
same() {
	(cd "$1" && find . -type f ! -path './results/.state/*' | sort) >"$tmp/la"
	(cd "$2" && find . -type f ! -path './results/.state/*' | sort) >"$tmp/lb"
	cmp -s "$tmp/la" "$tmp/lb" || { diff "$tmp/la" "$tmp/lb" >&2; fail "$3: other files"; }
	n=0
	while read -r f; do
		cmp "$1/$f" "$2/$f" || fail "$3: $f differs"
		n=$((n + 1))
	done <"$tmp/la"
	echo "mpi_sweep: $3: $n files identical"
}

outdirs() { echo "--out $1/results --plots $1/plots --docs $1/docs"; }

# shellcheck disable=SC2046
"$N" sweep --quiet $(outdirs "$tmp/one") "$CASE" 2>"$tmp/err" || fail "single process"
# shellcheck disable=SC2046
"$MPIRUN" $asroot --oversubscribe -np 2 "$M" sweep --quiet $(outdirs "$tmp/two") "$CASE" \
	>"$tmp/out" 2>"$tmp/err" || fail "2 ranks"
same "$tmp/one" "$tmp/two" "2 ranks"

# interrupted on one process, finished by 2 ranks
# shellcheck disable=SC2046
NANMAP_SWEEP_INTERRUPT_AFTER=20 "$N" sweep --quiet -j 1 $(outdirs "$tmp/three") "$CASE" 2>/dev/null
# shellcheck disable=SC2046
"$MPIRUN" $asroot --oversubscribe -np 2 "$M" sweep --quiet $(outdirs "$tmp/three") "$CASE" \
	>"$tmp/out" 2>"$tmp/err" || fail "2 ranks resuming"
same "$tmp/one" "$tmp/three" "2 ranks resuming"

# whole training runs as points (docs/train.md): the same bytes on 2 ranks
T=tests/data/sweep_train.case
# shellcheck disable=SC2046
"$N" sweep --quiet $(outdirs "$tmp/t1") "$T" 2>"$tmp/err" || fail "training runs, single process"
# shellcheck disable=SC2046
"$MPIRUN" $asroot --oversubscribe -np 2 "$M" sweep --quiet $(outdirs "$tmp/t2") "$T" \
	>"$tmp/out" 2>"$tmp/err" || fail "training runs, 2 ranks"
same "$tmp/t1" "$tmp/t2" "training runs on 2 ranks"
echo "mpi_sweep: passed"
