#!/bin/sh
# tests/sweep/faults_plot.sh — plots under faults: a full disk while gnuplot writes
# (a 64 KiB tmpfs; gnuplot itself exits 0), read-only output folders, a
# [plot] y and a series the kernel does not have, kill -9 during gnuplot,
# damaged results CSVs for `nanmap plot`. Each is exit status 2 with one
# error line naming the file, and nothing broken or half-written is left.
#
# The full disk and the read-only folder are tmpfs mounts (root; a
# read-only mount, since root writes through chmod 555). Without mount
# permission the full-disk checks are SKIPPED (a line says why) and the
# read-only ones use chmod 555, which stops a user who is not root.
# Run from the repository root after the build: sh tests/sweep/faults_plot.sh
# NANMAP=path overrides the binary. Stops at the first failure.
set -u

T=faults_plot
. tests/cli/cli_lib.sh
. tests/sweep/sweep_lib.sh
sweep_opts=--quiet
mounts=""
cleanup() {
	for m in $mounts; do umount "$m" 2>/dev/null; done
	[ -n "${slow_pid:-}" ] && kill "$slow_pid" 2>/dev/null
	[ -n "${live_pid:-}" ] && kill "$live_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
GNUPLOT=$(command -v gnuplot) || { echo "$T: SKIPPED: gnuplot not found (apt-get install gnuplot-nox)"; exit 0; }

# A case of 6 points (1 variant x 2 policies x 3 logit magnitudes): its
# plots are about 31 KB (PNG) and 25 KB (SVG).
CASE=$tmp/fp.case
cat >"$CASE" <<'EOF'
[case]
kernel = softmax_ce
variants = naive
policy = storage=fp16
policy = storage=bf16
[input]
gen = uniform
cols = 16
seed = 7
maxabs = yes
[axis logit_max]
sets = scale
grid = list 1 100 1e4
EOF

# says DESC TEXT: one error line (exit 2) that contains TEXT.
says() {
	expect_err "$1"
	grep -qF -- "$2" "$tmp/err" || fail "$1: the error does not say '$2'"
}

# nothing_left DIR DESC: no temporary of the plots (a dot file) in DIR.
nothing_left() {
	left=$(ls -A "$1" | grep '^\.' | grep -v '^\.\.\?$' || true)
	[ -z "$left" ] || fail "$2: left in $1: $left"
	pass=$((pass + 1))
}

sweep "$tmp/a" "$CASE"
[ "$rc" -eq 0 ] || fail "the first sweep: exit status $rc"
csv=$tmp/a/results/fp.csv
[ -s "$tmp/a/plots/fp.png" ] && [ -s "$tmp/a/plots/fp.svg" ] || fail "the first sweep: no plots"
cp -R "$tmp/a" "$tmp/a0"
pass=$((pass + 1))

# ---- a full disk while gnuplot writes ----
m=$tmp/full
mkdir -p "$m"
if mount -t tmpfs -o size=64k tmpfs "$m" 2>"$tmp/mount.err"; then
	mounts="$m"
	# fill KiB DESC WHICH: leave 64 - KiB free, plot into it, want WHICH named
	fill() {
		rm -f "$m"/*
		[ "$1" -eq 0 ] || dd if=/dev/zero of="$m/fill" bs=1k count="$1" 2>/dev/null
		run plot "$CASE" --results "$tmp/a/results" --plots "$m"
		says "$2" "$m/$3: gnuplot's output is not whole"
		[ ! -e "$m/fp.png" ] && [ ! -e "$m/fp.svg" ] || fail "$2: a plot was renamed into place"
		nothing_left "$m" "$2"
	}
	fill 48 "plot, 16 KiB free: the PNG is cut" fp.png
	fill 0 "plot, 64 KiB free: the SVG is cut" fp.svg
	fill 16 "plot, 48 KiB free: the SVG is cut" fp.svg
	# the sweep: its points and CSV are fine, the plot is the error
	rm -f "$m"/*
	sweep "$tmp/b" --plots "$m" "$CASE"
	says "sweep, plots on a 64 KiB disk" "fp: plot: $m/fp.svg: gnuplot's output is not whole"
	nothing_left "$m" "sweep, plots on a 64 KiB disk"
	# not a byte of room: the data file for gnuplot fails to write
	rm -f "$m"/*
	dd if=/dev/zero of="$m/fill" bs=1k count=64 2>/dev/null
	run plot "$CASE" --results "$tmp/a/results" --plots "$m"
	says "plot on a full disk" "No space left on device"
	nothing_left "$m" "plot on a full disk"
	umount "$m" && mounts=""
else
	echo "$T: SKIPPED the full-disk checks: cannot mount a tmpfs ($(head -n 1 "$tmp/mount.err"))"
fi

# ---- read-only output folders: the error before any point runs ----
ro=$tmp/ro
mkdir -p "$ro"
if mount -t tmpfs -o ro,size=64k tmpfs "$ro" 2>"$tmp/mount.err"; then
	mounts="$ro"
	how="a read-only tmpfs"
elif [ "$(id -u)" != 0 ]; then
	chmod 555 "$ro"
	how="chmod 555"
else
	how=""
	echo "$T: SKIPPED the read-only checks: root, and cannot mount a tmpfs ($(head -n 1 "$tmp/mount.err"))"
fi
if [ -n "$how" ]; then
	for what in plots docs; do
		rm -rf "$tmp/c"
		sweep "$tmp/c" "--$what" "$ro" "$CASE"
		says "$what on $how" "$ro: not writable"
		[ ! -e "$tmp/c/results/fp.csv" ] || fail "$what on $how: points were computed and written first"
		[ ! -e "$tmp/c/results/.partial/fp.journal" ] || fail "$what on $how: a journal was started"
	done
fi

# ---- [plot] y and series the kernel does not have: before any point ----
{ cat "$CASE"; printf '[plot]\ny = frob\n'; } >"$tmp/y.case"
rm -rf "$tmp/d"
sweep "$tmp/d" "$tmp/y.case"
says "y = frob" "$tmp/y.case:"
grep -qF "key 'y': 'frob' is not a results column" "$tmp/err" || fail "y = frob: $(cat "$tmp/err")"
[ ! -e "$tmp/d/results/y.csv" ] || fail "y = frob: points were computed and written first"
sed 's/^variants = naive$/variants = naive\nseries = frob/' "$CASE" >"$tmp/s.case"
rm -rf "$tmp/d"
sweep "$tmp/d" "$tmp/s.case"
says "series = frob" "$tmp/s.case: key 'series': 'frob' is not an output of kernel softmax_ce (loss grad)"

# ---- kill -9 during gnuplot: the next run removes what it left ----
mkdir -p "$tmp/slow"
cat >"$tmp/slow/gnuplot" <<EOF
#!/bin/sh
echo \$\$ >"$tmp/slow/started"
sleep 30
exec "$GNUPLOT" "\$@"
EOF
chmod +x "$tmp/slow/gnuplot"
cp -R "$tmp/a0" "$tmp/k"
PATH="$tmp/slow:$PATH" "$N" plot "$CASE" --results "$tmp/k/results" --plots "$tmp/k/plots" \
	>/dev/null 2>&1 &
nm_pid=$!
i=0
while [ ! -s "$tmp/slow/started" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
[ -s "$tmp/slow/started" ] || fail "kill: gnuplot never started"
slow_pid=$(cat "$tmp/slow/started")
kill -9 "$nm_pid"
wait "$nm_pid" 2>/dev/null
kill "$slow_pid" 2>/dev/null
slow_pid=""
ls -A "$tmp/k/plots" | grep -q "^\.fp\.dat\.$nm_pid\." || fail "kill: no temporaries to clean (the test is void)"
# a live run's temporaries stay; so does a name nanmap does not make
sleep 60 &
live_pid=$!
touch "$tmp/k/plots/.fp.gp.$live_pid.AbC123" "$tmp/k/plots/.fp.dat.keep"
run plot "$CASE" --results "$tmp/k/results" --plots "$tmp/k/plots"
[ "$rc" -eq 0 ] || fail "the rerun after kill -9: exit status $rc"
left=$(ls -A "$tmp/k/plots" | grep '^\.' | sort | tr '\n' ' ')
[ "$left" = ".fp.dat.keep .fp.gp.$live_pid.AbC123 " ] || fail "after the rerun, left: $left"
kill "$live_pid" 2>/dev/null
live_pid=""
cmp -s "$tmp/k/plots/fp.png" "$tmp/a0/plots/fp.png" || fail "the rerun's PNG differs"
pass=$((pass + 1))
# the same in a sweep: killed while it draws, the case is up to date (its
# state is written before the plot) and its earlier plots are there, so the
# rerun draws nothing, and still removes the leftovers
rm -f "$tmp/slow/started"
cp -R "$tmp/a0" "$tmp/k2"
rm -f "$tmp/k2/results/.state/"*
PATH="$tmp/slow:$PATH" "$N" sweep --quiet --out "$tmp/k2/results" --plots "$tmp/k2/plots" \
	--docs "$tmp/k2/docs" "$CASE" >/dev/null 2>&1 &
nm_pid=$!
i=0
while [ ! -s "$tmp/slow/started" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -s "$tmp/slow/started" ] || fail "kill the sweep: gnuplot never started"
slow_pid=$(cat "$tmp/slow/started")
kill -9 "$nm_pid"
wait "$nm_pid" 2>/dev/null
kill "$slow_pid" 2>/dev/null
slow_pid=""
ls -A "$tmp/k2/plots" | grep -q "^\.fp\.gp\.$nm_pid\." || fail "kill the sweep: no temporaries (the test is void)"
sweep "$tmp/k2" "$CASE"
[ "$rc" -eq 0 ] || fail "the sweep's rerun after kill -9: exit status $rc"
nothing_left "$tmp/k2/plots" "the sweep's rerun after kill -9"

# ---- damaged results CSVs ----
mkdir -p "$tmp/e/results" "$tmp/e/plots"
# damaged DESC MESSAGE: nanmap plot on $tmp/e/results/fp.csv
damaged() {
	run plot "$CASE" --results "$tmp/e/results" --plots "$tmp/e/plots"
	expect_err "$1" "nanmap: $tmp/e/results/fp.csv:$2"
	[ ! -e "$tmp/e/plots/fp.png" ] || fail "$1: a plot was drawn"
}
head -n 4 "$csv" >"$tmp/e/results/fp.csv"
damaged "cut to 3 of 6 rows" "4: 3 rows, case fp's grid gives 6"
sed '2s/,fast,ok,/,fast,fine,/' "$csv" >"$tmp/e/results/fp.csv"
damaged "an unknown status" "2: status 'fine' is not ok, underflow, overflow, inf or nan"
sed '1s/,loss\.rel_err,/,loss.relerr,/' "$csv" >"$tmp/e/results/fp.csv"
damaged "a renamed column" "1: column 14 is 'loss.relerr', case fp's results have 'loss.rel_err'"
sed '5s/^fp,/other,/' "$csv" >"$tmp/e/results/fp.csv"
damaged "another case's name" "5: case 'other', expected 'fp'"
sed '2s/,fast,ok,\([a-z-]*\),\([^,]*\),,,,[^,]*,/,fast,ok,\1,\2,,,,1.5.3,/' "$csv" >"$tmp/e/results/fp.csv"
damaged "a number that does not parse" "2: loss.max_ulp '1.5.3' is not a number"
{ sed -n 1p "$csv"; sed -n 5p "$csv"; sed -n '2,4p;6,7p' "$csv"; } >"$tmp/e/results/fp.csv"
damaged "rows out of order" "2: policy 'storage=bf16', expected 'storage=fp16'"

echo "$T: $pass checks passed"
