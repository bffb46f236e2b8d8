# tests/cli/cli_lib.sh — what every CLI test script starts with, sourced after
# setting T (the script's name in messages): the binary N (NANMAP overrides
# it), a temporary directory tmp removed on exit, the pass and skipped
# counters, fail, skip and run. Each script adds its own checks on top.
# On exit the counts go to $NANMAP_RESULTS when make test set it
# (tests/results.sh sums them): a script that stops at a failure has 1 failed.

N=${NANMAP:-bin/nanmap}
[ -x "$N" ] || { echo "$T: $N not built (run make)" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
pass=0
skipped=0
cli_results() {
	[ -z "${NANMAP_RESULTS:-}" ] ||
		printf '%s\t%s\t%s\t%s\n' "$T" "$pass" "$(($1 != 0))" "$skipped" >>"$NANMAP_RESULTS"
}
trap 'cli_results $?; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

# skip N REASON: N checks not run; says so as "T: SKIPPED REASON".
skip() {
	skipped=$((skipped + $1))
	printf '%s: SKIPPED %s\n' "$T" "$2"
}

# fail DESC: say what failed, with the last run's stderr and the head of its
# stdout, and stop.
fail() {
	printf '%s: FAIL: %s\n' "$T" "$1" >&2
	if [ -s "$tmp/err" ]; then
		printf '%s: stderr was:\n' "$T" >&2
		cat "$tmp/err" >&2
	fi
	if [ -s "$tmp/out" ]; then
		printf '%s: stdout was:\n' "$T" >&2
		head -n 20 "$tmp/out" >&2
	fi
	exit 1
}

# run ARGS...: run the binary, keep stdout, stderr and the status.
run() {
	rc=0
	"$N" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}

# expect_err DESC [MESSAGE]: exit 2, no stdout, exactly one stderr line
# (equal to MESSAGE when given).
expect_err() {
	[ "$rc" -eq 2 ] || fail "$1: exit status $rc, want 2"
	[ ! -s "$tmp/out" ] || fail "$1: wrote to stdout"
	lines=$(awk 'END { print NR }' "$tmp/err")
	if [ "$lines" -ne 1 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
		fail "$1: want exactly one stderr line, got $lines"
	fi
	if [ $# -ge 2 ] && [ "$(cat "$tmp/err")" != "$2" ]; then
		fail "$1: message '$(cat "$tmp/err")', want '$2'"
	fi
	pass=$((pass + 1))
}

# bad DESC MESSAGE ARGS... (MESSAGE "" = any single line)
bad() {
	desc=$1
	msg=$2
	shift 2
	run "$@"
	if [ -n "$msg" ]; then expect_err "$desc" "$msg"; else expect_err "$desc"; fi
}

# npy FILE DESCR SHAPE DATA: a .npy version 1.0 file as NumPy writes it (the
# header padded with blanks so that 10 + its length is a multiple of 64);
# DATA are the little-endian bytes as printf %b escapes.
npy() {
	h="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
	pad=$(((64 - (10 + ${#h} + 1) % 64) % 64))
	hlen=$((${#h} + pad + 1))
	{
		printf '\223NUMPY\001\000'
		printf '%b' "\\0$(printf %o $((hlen % 256)))\\0$(printf %o $((hlen / 256)))"
		printf '%s%*s\n' "$h" "$pad" ''
		printf '%b' "$4"
	} >"$1"
}
