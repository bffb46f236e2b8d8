#!/bin/sh
# tests/sweep/faults_sweep.sh — `nanmap sweep` under faults, on tests/data/sweep_tiny.case:
# a full disk (a small tmpfs, and an LD_PRELOAD hook that fails the journal's
# writes with ENOSPC), SIGKILL at set moments then a rerun, a CSV cut short and
# a broken plot, two sweeps into one --out, a read-only results folder with
# nothing to do, a killed run's temporaries, a grid too big for memory and a
# binary case file. Every rerun must give the bytes of a run never disturbed.
# Mounting needs root (and a kernel that lets us); without it the tmpfs and
# read-only checks say SKIPPED and why.
# Run from the repository root after the build: sh tests/sweep/faults_sweep.sh
# NANMAP=path overrides the binary. Stops at the first failure.
set -u

T=faults_sweep
. tests/cli/cli_lib.sh
. tests/sweep/sweep_lib.sh
CASE=tests/data/sweep_tiny.case
# skip N REASON (where tests/cli/cli_lib.sh has none)
command -v skip >/dev/null 2>&1 || skip() { printf '%s: SKIPPED %s\n' "$T" "$2"; }

# Mounts and a stopped sweep must not outlive a failure: undo them before
# cli_lib.sh's own exit trap (which removes $tmp).
mounts=""
bgpid=""
faults_cleanup() {
	[ -z "$bgpid" ] || { kill -KILL "$bgpid" 2>/dev/null; wait "$bgpid" 2>/dev/null; }
	bgpid=""
	for m in $mounts; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	mounts=""
}
lib_trap=$(trap | sed -n "s/^trap -- '\(.*\)' EXIT\$/\1/p")
[ -n "$lib_trap" ] || lib_trap='rm -rf "$tmp"'
trap 'st=$?; faults_cleanup; (exit $st); eval "$lib_trap"' EXIT
trap 'exit 1' INT TERM

# can_mount: may this process mount a tmpfs? (why not: in $why)
can_mount() {
	mkdir -p "$tmp/probe"
	if mount -t tmpfs -o size=16k tmpfs "$tmp/probe" 2>"$tmp/why"; then
		umount "$tmp/probe"
		return 0
	fi
	why=$(head -n 1 "$tmp/why")
	[ -n "$why" ] || why="mount failed"
	return 1
}

# ---- the run every other must reproduce ----
sweep "$tmp/ref" --quiet "$CASE"
status 0 "reference run"

# kill_each REF DIR JPOINTS JSTEPS AFTER WHAT PATH...: SIGKILL at set moments,
# then a rerun, which must give REF's bytes: after AFTER journal lines (with
# the options JPOINTS), then just after each step that finishes a case
# (with JSTEPS, as the rerun); each run in DIR-MOMENT.
kill_each() {
	ref=$1 dir=$2 jp=$3 js=$4 after=$5 what=$6
	shift 6
	for at in points journal csv thresh state plot; do
		d="$dir-$at"
		# shellcheck disable=SC2086 # the -j options are words
		if [ "$at" = points ]; then
			NANMAP_SWEEP_INTERRUPT_AFTER=$after NANMAP_SWEEP_SIGNAL=KILL sweep "$d" $jp "$@"
		else
			NANMAP_SWEEP_KILL_AT=$at sweep "$d" $js "$@"
		fi
		[ "$rc" -eq 137 ] || fail "${what}kill -9 at $at: exit status $rc, want 137 (killed)"
		# shellcheck disable=SC2086
		sweep "$d" --quiet $js "$@"
		status 0 "${what}rerun after kill -9 at $at"
		same "$ref" "$d" "${what}rerun after kill -9 at $at"
	done
}

# ---- SIGKILL at set moments, then a rerun: the same bytes ----
kill_each "$tmp/ref" "$tmp/kill" "-j 1" "" 20 "" "$CASE"

# ---- the same with three cases run at once (-j 2): killed at each step of
# whichever case reaches it first, the others where they happened to be ----
mkdir -p "$tmp/many"
cp tests/data/sweep_tiny.case tests/data/sweep_accuracy.case tests/data/sweep_train.case "$tmp/many/"
sweep "$tmp/many-ref" --quiet -j 1 "$tmp/many"
status 0 "cases: reference run"
kill_each "$tmp/many-ref" "$tmp/many-kill" "-j 2" "-j 2" 5 "cases: " "$tmp/many"

# ---- a killed run's temporaries: removed by the next run, only those ----
d="$tmp/kill-journal"
NANMAP_SWEEP_KILL_AT=journal sweep "$d" --fresh "$CASE"
# pid_max is at most 2^22, so no process has pid 4194999
: >"$d/results/.partial/sweep_tiny.journal.tmp.4194999"
: >"$d/results/sweep_tiny.csv.tmp.4194999"
: >"$d/results/sweep_tiny.csv.tmp.$$"  # a live writer's: kept
: >"$d/results/notes.tmp.txt"         # not nanmap's pattern: kept
# the folders' writability probes of a killed run, and of a live one
mkdir -p "$d/docs" "$d/plots"
: >"$d/docs/.nanmap-probe.4194999.Ab12Cd"
: >"$d/plots/.nanmap-probe.4194999.Ab12Cd"
: >"$d/results/.nanmap-probe.4194999.Ab12Cd"
: >"$d/docs/.nanmap-probe.$$.Ab12Cd"
sweep "$d" --quiet "$CASE"
status 0 "rerun with stale temporaries"
for f in docs plots results; do
	[ ! -e "$d/$f/.nanmap-probe.4194999.Ab12Cd" ] || fail "a dead run's probe in $f was left"
done
[ -e "$d/docs/.nanmap-probe.$$.Ab12Cd" ] || fail "a live process's probe was removed"
rm -f "$d/docs/.nanmap-probe.$$.Ab12Cd"
[ ! -e "$d/results/.partial/sweep_tiny.journal.tmp.4194999" ] ||
	fail "a dead run's journal temporary was left"
[ ! -e "$d/results/sweep_tiny.csv.tmp.4194999" ] || fail "a dead run's CSV temporary was left"
[ -e "$d/results/sweep_tiny.csv.tmp.$$" ] || fail "a live process's temporary was removed"
[ -e "$d/results/notes.tmp.txt" ] || fail "a file not named as nanmap's temporaries was removed"
rm -f "$d/results/sweep_tiny.csv.tmp.$$" "$d/results/notes.tmp.txt"
same "$tmp/ref" "$d" "rerun with stale temporaries"

# ---- a CSV cut short, a plot broken: not up to date, redone ----
cp -R "$tmp/ref" "$tmp/cut"
csv="$tmp/cut/results/sweep_tiny.csv"
head -n 10 "$csv" >"$tmp/head" && cp "$tmp/head" "$csv"
sweep "$tmp/cut" "$CASE"
status 0 "CSV cut to 10 lines"
grep -q "^sweep: sweep_tiny: $csv does not match the state (.*); computing again\$" "$tmp/err" ||
	fail "CSV cut to 10 lines: not said which file did not match"
same "$tmp/ref" "$tmp/cut" "CSV cut to 10 lines"
png="$tmp/cut/plots/sweep_tiny.png"
head -c 1000 "$png" >"$tmp/head" && cp "$tmp/head" "$png"
sweep "$tmp/cut" "$CASE"
status 0 "PNG cut to 1000 bytes"
grep -q "^sweep: sweep_tiny: $png does not match the state (.*); plotting again\$" "$tmp/err" ||
	fail "PNG cut to 1000 bytes: not said which file did not match"
same "$tmp/ref" "$tmp/cut" "PNG cut to 1000 bytes"

# ---- the journal's writes fail (ENOSPC): the sweep stops there, exit 2 ----
if cc -shared -fPIC -o "$tmp/enospc.so" tests/faults/enospc.c -ldl 2>"$tmp/why"; then
	d="$tmp/hook"
	# the journal's first line and a few points, then the disk is full
	NANMAP_FAULT_PATH=sweep_tiny.journal NANMAP_FAULT_BYTES=3000 LD_PRELOAD="$tmp/enospc.so" \
		sweep "$d" -j 1 "$CASE"
	expect_err "journal append fails (LD_PRELOAD)" \
		"nanmap: cannot append to $d/results/.partial/sweep_tiny.journal: No space left on device"
	[ ! -e "$d/results/sweep_tiny.csv" ] || fail "journal append fails: wrote the CSV"
	sweep "$d" "$CASE"
	status 0 "rerun after the journal's ENOSPC (LD_PRELOAD)"
	grep -q '^sweep: sweep_tiny 54 points ([0-9]* computed, [1-9][0-9]* resumed) in ' "$tmp/err" ||
		fail "rerun after the journal's ENOSPC: resumed nothing"
	same "$tmp/ref" "$d" "rerun after the journal's ENOSPC (LD_PRELOAD)"
else
	skip 2 "the LD_PRELOAD write-failure hook: $(head -n 1 "$tmp/why")"
fi

if can_mount; then
	# ---- a full disk: a 16 KiB tmpfs holds the journal of about 50 points ----
	d="$tmp/full"
	mkdir -p "$d"
	mount -t tmpfs -o size=16k tmpfs "$d" || fail "mount tmpfs"
	mounts="$d $mounts"
	sweep "$d" -j 1 "$CASE"
	expect_err "full disk (16 KiB tmpfs)" \
		"nanmap: cannot append to $d/results/.partial/sweep_tiny.journal: No space left on device"
	[ ! -e "$d/results/sweep_tiny.csv" ] || fail "full disk: wrote the CSV"
	mount -o remount,size=4m "$d" || fail "remount the tmpfs larger"
	sweep "$d" "$CASE"
	status 0 "rerun after the full disk"
	grep -q '^sweep: sweep_tiny 54 points ([0-9]* computed, [1-9][0-9]* resumed) in ' "$tmp/err" ||
		fail "rerun after the full disk: resumed nothing"
	same "$tmp/ref" "$d" "rerun after the full disk"

	# ---- a read-only results folder with nothing to do: succeeds ----
	# (root ignores chmod: a read-only bind mount is read-only for root too)
	cp -R "$tmp/ref" "$tmp/ro"
	mkdir -p "$tmp/ro/ro-results"
	mount --bind "$tmp/ro/results" "$tmp/ro/ro-results" || fail "bind mount"
	mounts="$tmp/ro/ro-results $mounts"
	mount -o remount,bind,ro "$tmp/ro/ro-results" || fail "remount read-only"
	if (: >"$tmp/ro/ro-results/probe") 2>/dev/null; then
		fail "the read-only bind mount is writable"
	fi
	rc=0
	"$N" sweep --out "$tmp/ro/ro-results" --plots "$tmp/ro/plots" --docs "$tmp/ro/docs" \
		"$CASE" >"$tmp/out" 2>"$tmp/err" || rc=$?
	status 0 "read-only results folder, up to date"
	said "sweep: sweep_tiny up to date (54 points)" "read-only results folder"
	faults_cleanup
	rmdir "$tmp/ro/ro-results"
	same "$tmp/ref" "$tmp/ro" "read-only results folder"
else
	skip 3 "the full-disk and read-only checks: cannot mount a tmpfs ($why)"
fi

# ---- two sweeps into one --out: the second is refused, naming the first ----
d="$tmp/two"
NANMAP_SWEEP_INTERRUPT_AFTER=10 NANMAP_SWEEP_SIGNAL=STOP \
	"$N" sweep --out "$d/results" --plots "$d/plots" --docs "$d/docs" -j 1 "$CASE" \
	>"$tmp/out1" 2>"$tmp/err1" &
bgpid=$!
i=0
until [ "$(awk '{ print $3 }' "/proc/$bgpid/stat" 2>/dev/null)" = T ]; do
	i=$((i + 1))
	[ "$i" -lt 500 ] || fail "two sweeps: the first never stopped after 10 points"
	sleep 0.02
done
cp "$d/results/.partial/sweep_tiny.journal" "$tmp/journal1"
sweep "$d" "$CASE"
expect_err "second sweep into one --out"
grep -qx "nanmap: $d/results is in use by another sweep (pid $bgpid, started [0-9-]* [0-9:]* UTC; lock $d/results/.state/lock)" "$tmp/err" ||
	fail "second sweep into one --out: the holder is not named"
cmp -s "$tmp/journal1" "$d/results/.partial/sweep_tiny.journal" ||
	fail "second sweep into one --out: touched the first one's journal"
kill -CONT "$bgpid"
rc=0
wait "$bgpid" || rc=$?
bgpid=""
status 0 "the first sweep, continued"
same "$tmp/ref" "$d" "the first sweep, continued"
sweep "$d" "$CASE"
status 0 "a sweep after the first ended"
said "sweep: sweep_tiny up to date (54 points)" "a sweep after the first ended"

# ---- a grid too big for memory: refused before anything runs ----
mkdir -p "$tmp/case"
cat >"$tmp/case/huge.case" <<'EOF'
[case]
title = two axes of 100000 values
kernel = softmax_ce
variants = naive
policy = storage=fp16
[input]
gen = uniform
seed = 1
[axis s]
sets = scale
grid = lin 1 100000 100000
[axis c]
sets = cols
grid = lin 1 100000 100000
EOF
sweep "$tmp/huge" "$tmp/case/huge.case"
expect_err "two axes of 100000 values"
grep -q "^nanmap: $tmp/case/huge.case: case huge has 10000000000 points (1 variants x 1 policies x 100000 x 100000), about [0-9.]* TiB of results ([0-9]* bytes a point), more than the limit of 8.0 GiB (--max-memory SIZE raises it)\$" "$tmp/err" ||
	fail "two axes of 100000 values: not the figures"
[ ! -e "$tmp/huge" ] || fail "two axes of 100000 values: wrote something"
sweep "$tmp/small" --max-memory 64K "$CASE"
expect_err "54 points over --max-memory 64K"
grep -q "more than the limit of 64.0 KiB" "$tmp/err" || fail "--max-memory 64K: not the limit"
bad "--max-memory 12Q" "nanmap: sweep: bad --max-memory '12Q' (bytes, or a number with K, M, G or T)" \
	sweep --max-memory 12Q "$CASE"

# ---- a binary case file: named as such, its bytes escaped ----
mkdir -p "$tmp/case"
printf '[\223\001\377]\nx = 1\n' >"$tmp/case/bin1.case"
bad "binary section name" \
	"nanmap: $tmp/case/bin1.case:1: unknown section '[\\x93\\x01\\xFF]' (sections: case input param axis NAME plot claim)" \
	sweep --out "$tmp/bin/results" "$tmp/case/bin1.case"
printf '[case]\n\211PNG\r\n\032\n\000\000\000\rIHDR\n' >"$tmp/case/bin2.case"
bad "a NUL byte" "nanmap: $tmp/case/bin2.case: not a text file (a NUL byte on line 4)" \
	sweep --out "$tmp/bin/results" "$tmp/case/bin2.case"

echo "$T: $pass checks passed"
