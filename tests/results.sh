#!/bin/sh
# tests/results.sh — the closing line of make test. Every step of make test
# (the Check binary, each CLI script, the GPU build) appends one line
# "NAME<TAB>PASSED<TAB>FAILED<TAB>SKIPPED" to the file $NANMAP_RESULTS; this
# script runs the steps and sums the lines:
#
#   sh tests/results.sh run NAME CMD...   run one step; exit 0 even when it fails
#   sh tests/results.sh skip NAME REASON  a step not run: prints NAME: SKIPPED REASON
#   sh tests/results.sh total             the closing line; exit 1 when any failed
#
# A step that writes no line of its own (make gpu) counts as one check,
# passed or failed by its exit status; one that exits non-zero without
# recording a failure (a crash) gets one failure added, so make test still
# fails; the total names the failed steps. A step writes its lines to a file
# of its own ($NANMAP_RESULTS.d/NAME), added to $NANMAP_RESULTS when it
# ends, so steps may run side by side. Results are written only
# when NANMAP_RESULTS is set, so a script run by hand leaves no file. Each
# run step's wall time goes to $NANMAP_RESULTS.time, and the total prints
# them slowest first (what keeps make test within its budget); make test
# runs the Check binary beside the scripts, so they add up to more than
# its wall time.
set -u
R=${NANMAP_RESULTS:?tests/results.sh: NANMAP_RESULTS is not set}

case ${1:-} in
run)
	name=$2
	shift 2
	# the step's own counts go to a file of its own first, so that steps
	# running side by side (make test's two lanes) never count each other's
	mkdir -p "$R.d"
	own=$R.d/$name
	rm -f "$own"
	rc=0
	t0=$(date +%s.%N)
	NANMAP_RESULTS=$own "$@" || rc=$?
	t1=$(date +%s.%N)
	printf '%s\t%s\n' "$name" "$(echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }')" >>"$R.time"
	if [ "$rc" -eq 0 ] && [ ! -s "$own" ]; then
		printf '%s\t1\t0\t0\n' "$name" >>"$own"
	elif [ "$rc" -ne 0 ]; then
		failed=0
		[ -f "$own" ] && failed=$(awk -F'\t' '{ f += $3 } END { print f + 0 }' "$own")
		[ "$failed" -gt 0 ] || printf '%s\t0\t1\t0\n' "$name" >>"$own"
		echo "$name: FAILED (exit status $rc)"
	fi
	cat "$own" >>"$R"
	;;
skip)
	echo "$2: SKIPPED $3"
	printf '%s\t0\t0\t1\n' "$2" >>"$R"
	;;
total)
	[ -f "$R" ] || { echo "tests/results.sh: no results in $R" >&2; exit 1; }
	# where the time went: every step's wall seconds, slowest first
	[ -f "$R.time" ] && sort -t "$(printf '\t')" -k2,2 -g -r "$R.time" |
		awk -F'\t' '{ s += $2; l = l (NR > 1 ? ", " : "") $1 " " $2 " s" } END { printf "time: %.0f s in the steps (side by side in two lanes, so more than the wall time): %s\n", s, l }'

	awk -F'\t' '
		NF == 4 { p += $2; f += $3; s += $4; if ($3 > 0) bad = bad " " $1 }
		END {
			if (bad != "") print "failed:" bad
			printf "summary: %d passed, %d failed, %d skipped\n", p, f, s
			exit f > 0
		}' "$R"
	;;
*)
	echo "usage: tests/results.sh run NAME CMD... | skip NAME REASON | total" >&2
	exit 2
	;;
esac
