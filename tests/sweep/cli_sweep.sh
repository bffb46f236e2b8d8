#!/bin/sh
# tests/sweep/cli_sweep.sh — `nanmap sweep`, end to end, on tests/data/sweep_tiny.case
# (2 variants x 3 policies x 9 logit magnitudes): the CSV's header and rows,
# a rerun that finds everything up to date and changes no byte, an
# interrupted run (and a torn journal) that resumes to the same bytes, a
# journal of another case version ignored, --fresh, --quick, thread counts,
# and malformed case files: one error line naming file and line, exit 2,
# nothing written.
# Run from the repository root after the build: sh tests/sweep/cli_sweep.sh
# NANMAP=path overrides the binary. Stops at the first failure.
set -u

T=cli_sweep
. tests/cli/cli_lib.sh
. tests/sweep/sweep_lib.sh
CASE=tests/data/sweep_tiny.case

# ---- a whole run ----
sweep "$tmp/a" --quiet "$CASE"
status 0 "first run"
[ ! -s "$tmp/err" ] || fail "first run: --quiet wrote to stderr"
csv="$tmp/a/results/sweep_tiny.csv"
[ -f "$csv" ] || fail "first run: no $csv"
head -n 1 "$csv" >"$tmp/head"
printf '%s\n' "case,kernel,variant,policy,logit_max,backend,status,verdict,flushed,first_op,first_step,first_index,loss.max_ulp,loss.rel_err,loss.lost,loss.maxabs,loss.arith_max_ulp,loss.arith_rel_err,grad.max_ulp,grad.rel_err,grad.lost,grad.maxabs,grad.arith_max_ulp,grad.arith_rel_err" |
	cmp -s - "$tmp/head" || fail "first run: header is $(cat "$tmp/head")"
[ "$(wc -l <"$csv")" -eq 55 ] || fail "first run: $(wc -l <"$csv") lines, want 1 + 54"
# the policy with a comma is quoted; rows in (variant, policy, axis) order
sed -n 2p "$csv" | grep -q '^sweep_tiny,softmax_ce,naive,storage=fp16,1,fast,ok,' ||
	fail "first row: $(sed -n 2p "$csv")"
sed -n 20p "$csv" | grep -qF 'sweep_tiny,softmax_ce,naive,"storage=fp16,compute=fp32",1,fast,' ||
	fail "row 19: $(sed -n 20p "$csv")"
sed -n 55p "$csv" | grep -qF 'sweep_tiny,softmax_ce,lse,"storage=fp16,compute=fp32",10000,fast,' ||
	fail "last row: $(sed -n 55p "$csv")"
# naive fp16 softmax overflows between logit 3.16 and 10 (exp overflows at 11.09:
# uniform inputs scaled to max |x| = 10 sum past 65504 first)
sed -n 4p "$csv" | grep -q ',fast,inf,inaccurate,[0-9.e-]*,add,sum,' || fail "naive fp16 at 10: $(sed -n 4p "$csv")"
[ -f "$tmp/a/results/thresholds.csv" ] || fail "first run: no thresholds.csv"
[ -f "$tmp/a/docs/thresholds.md" ] || fail "first run: no thresholds.md"
[ ! -e "$tmp/a/results/.partial/sweep_tiny.journal" ] || fail "first run: journal left behind"
pass=$((pass + 1))

# ---- a rerun: up to date, not a byte changed ----
cp -R "$tmp/a" "$tmp/a0"
sweep "$tmp/a" "$CASE"
status 0 "rerun"
said "sweep: sweep_tiny up to date (54 points)" "rerun"
same "$tmp/a0" "$tmp/a" "rerun"

# ---- the thread count changes no byte ----
sweep "$tmp/j1" --quiet -j 1 "$CASE"
status 0 "-j 1"
sweep "$tmp/j3" --quiet -j 3 "$CASE"
status 0 "-j 3"
same "$tmp/a0" "$tmp/j1" "-j 1"
same "$tmp/a0" "$tmp/j3" "-j 3"

# ---- several cases at once (cases, their points and their threshold
# searches as tasks of one set of threads): the thread count changes no
# byte, and a run interrupted while cases run at once resumes to the same
# bytes ----
mkdir -p "$tmp/many"
cp tests/data/sweep_tiny.case tests/data/sweep_accuracy.case tests/data/sweep_train.case "$tmp/many/"
sweep "$tmp/m1" --quiet -j 1 "$tmp/many"
status 0 "cases, -j 1"
for j in 2 7; do
	sweep "$tmp/m$j" --quiet -j $j "$tmp/many"
	status 0 "cases, -j $j"
	same "$tmp/m1" "$tmp/m$j" "cases, -j $j"
done
NANMAP_SWEEP_INTERRUPT_AFTER=5 sweep "$tmp/mi" -j 2 "$tmp/many"
[ "$rc" -ne 0 ] || fail "cases interrupted: exit status 0"
sweep "$tmp/mi" -j 2 "$tmp/many"
status 0 "cases resumed"
grep -q '^sweep: sweep_[a-z]* [0-9]* points ([0-9]* computed, [1-9][0-9]* resumed) in ' "$tmp/err" ||
	fail "cases resumed: no case resumed its points"
same "$tmp/m1" "$tmp/mi" "cases resumed"
pass=$((pass + 1))

# ---- interrupted (SIGINT after 20 points), then resumed ----
NANMAP_SWEEP_INTERRUPT_AFTER=20 sweep "$tmp/b" -j 1 "$CASE"
[ "$rc" -ne 0 ] || fail "interrupted run: exit status 0"
[ ! -e "$tmp/b/results/sweep_tiny.csv" ] || fail "interrupted run: wrote the CSV"
j="$tmp/b/results/.partial/sweep_tiny.journal"
[ "$(wc -l <"$j")" -eq 21 ] || fail "interrupted run: journal has $(wc -l <"$j") lines, want 21"
sweep "$tmp/b" "$CASE"
status 0 "resumed run"
grep -q '^sweep: sweep_tiny 54 points (34 computed, 20 resumed) in ' "$tmp/err" ||
	fail "resumed run: did not resume 20 points"
same "$tmp/a0" "$tmp/b" "resumed run"

# ---- a torn last journal line is recomputed, the rest kept ----
NANMAP_SWEEP_INTERRUPT_AFTER=30 sweep "$tmp/c" -j 1 "$CASE"
j="$tmp/c/results/.partial/sweep_tiny.journal"
size=$(wc -c <"$j")
head -c $((size - 7)) "$j" >"$tmp/torn" && cp "$tmp/torn" "$j"
sweep "$tmp/c" "$CASE"
status 0 "torn journal"
grep -q '^sweep: sweep_tiny 54 points (25 computed, 29 resumed) in ' "$tmp/err" ||
	fail "torn journal: did not keep 29 points"
same "$tmp/a0" "$tmp/c" "torn journal"

# ---- a journal written for another version of the case is ignored ----
mkdir -p "$tmp/case"
cp "$CASE" "$tmp/case/sweep_tiny.case"
NANMAP_SWEEP_INTERRUPT_AFTER=10 sweep "$tmp/d" -j 1 "$tmp/case/sweep_tiny.case"
echo "; edited" >>"$tmp/case/sweep_tiny.case"
sweep "$tmp/d" "$tmp/case/sweep_tiny.case"
status 0 "edited case"
grep -q '^sweep: sweep_tiny 54 points (54 computed, 0 resumed) in ' "$tmp/err" ||
	fail "edited case: resumed from a stale journal"
cmp -s "$tmp/a0/results/sweep_tiny.csv" "$tmp/d/results/sweep_tiny.csv" ||
	fail "edited case: a comment changed the results"
pass=$((pass + 1))
# and a finished case whose file changed is run again
sweep "$tmp/a" "$tmp/case/sweep_tiny.case"
grep -q '^sweep: sweep_tiny 54 points (54 computed, 0 resumed) in ' "$tmp/err" ||
	fail "edited case: treated as up to date"
pass=$((pass + 1))

# ---- --fresh recomputes everything ----
sweep "$tmp/a0" --fresh "$CASE"
status 0 "--fresh"
grep -q '^sweep: sweep_tiny 54 points (54 computed, 0 resumed) in ' "$tmp/err" ||
	fail "--fresh: did not recompute"
same "$tmp/j1" "$tmp/a0" "--fresh"

# ---- --quick: the coarse grid (list 1 100 1e4) ----
sweep "$tmp/q" --quick --quiet "$CASE"
status 0 "--quick"
[ "$(wc -l <"$tmp/q/results/sweep_tiny.csv")" -eq 19 ] || fail "--quick: want 1 + 18 lines"
cut -d, -f5 "$tmp/q/results/sweep_tiny.csv" | sed -n '2,4p' | tr '\n' ' ' | grep -qx '1 100 10000 ' ||
	fail "--quick: grid is not 1 100 10000"
pass=$((pass + 1))

# ---- malformed case files: one line FILE:LINE: ..., exit 2, nothing written ----
# bad NAME LINE TEXT WANT_ERROR: a copy of the tiny case with line LINE
# replaced by TEXT (LINE 0: TEXT appended) must fail with exactly WANT_ERROR.
# (replaces cli_lib.sh's bad: here the bad input is a case file)
bad() {
	mkdir -p "$tmp/bad"
	f="$tmp/bad/$1.case"
	awk -v n="$2" -v t="$3" 'NR == n { print t; next } { print } END { if (n == 0) print t }' \
		"$CASE" >"$f"
	sweep "$tmp/e" "$f"
	status 2 "$1"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$1: not one error line"
	printf 'nanmap: %s\n' "$4" | cmp -s - "$tmp/err" || fail "$1: error is $(cat "$tmp/err"), want $4"
	[ ! -e "$tmp/e" ] || fail "$1: wrote $(find "$tmp/e" | head -n 3)"
	rm -f "$f"
	pass=$((pass + 1))
}
sed -n 12p "$CASE" | grep -qx 'cols = 64' || fail "tests/data/sweep_tiny.case: line 12 is not 'cols = 64'"
B="$tmp/bad"
bad unknown_key 12 "colz = 64" "$B/unknown_key.case:12: key 'colz': unknown key in [input]"
bad bad_number 12 "scale = 1.5x" "$B/bad_number.case:12: key 'scale': bad number '1.5x'"
bad bad_count 12 "cols = -3" "$B/bad_count.case:12: key 'cols': bad count '-3' (an integer from 1 to 67108864)"
bad no_cols 12 "" "$B/no_cols.case: [input] needs cols (or an axis that sets cols)"
bad bad_section 12 "[inptu]" "$B/bad_section.case:12: unknown section '[inptu]' (sections: case input param axis NAME plot claim)"
bad twice 12 "gen = normal" "$B/twice.case:12: key 'gen': given twice (first on line 11)"
bad no_equals 12 "cols 64" "$B/no_equals.case:12: not a section header, key = value, or comment"
bad bad_kernel 5 "kernel = softmax" "$B/bad_kernel.case:5: key 'kernel': unknown kernel 'softmax' (kernels: softmax_ce layernorm accum backward gradscaler rmsnorm bce quant optimizer batchnorm matmul attention train)"
bad bad_variant 6 "variants = naive lse2" "$B/bad_variant.case:6: key 'variants': unknown variant 'lse2' for softmax_ce (variants: naive maxsub lse)"
bad bad_format 7 "formats = fp16 fp17" "$B/bad_format.case:7: key 'formats': unknown format 'fp17'"
bad bad_policy 9 "policy = storage=fp16,compute=fp33" "$B/bad_policy.case:9: key 'policy': bad policy 'storage=fp16,compute=fp33': unknown format 'fp33'"
bad bad_param 0 "[param]
lable = 1" "$B/bad_param.case:21: key 'lable': unknown parameter for softmax_ce (it reads: label=Y (default: row mod classes))"
bad bad_grid 0 "[axis n]
sets = cols
grid = lin 1 100" "$B/bad_grid.case:22: key 'grid': bad grid 'lin 1 100' (lin A B N, log A B N, list V..., pow2 A B)"
bad descending 17 "grid = list 1 10 5" "$B/descending.case:17: key 'grid': list values must be strictly ascending"
bad dup_axis 0 "[axis logit_max]" "$B/dup_axis.case:20: section 'axis logit_max': axis 'logit_max' given twice (first on line 15)"
bad three_axes 0 "[axis a]
sets = rows
grid = list 1 2
[axis b]
sets = param:label
grid = list 0 1" "$B/three_axes.case:23: section 'axis b': at most 2 axes"

# a good and a bad file together: nothing runs
mkdir -p "$tmp/mix"
cp "$CASE" "$tmp/mix/a_good.case"
sed 's/^kernel = softmax_ce$/kernel = softmax/' "$CASE" >"$tmp/mix/b_bad.case"
mkdir -p "$tmp/mix/sub" && cp "$CASE" "$tmp/mix/sub/c_good.case"
sweep "$tmp/e" "$tmp/mix"
status 2 "a bad file beside a good one"
grep -q "^nanmap: $tmp/mix/b_bad.case:5: key 'kernel': unknown kernel 'softmax' (kernels: " "$tmp/err" ||
	fail "bad kernel: $(cat "$tmp/err")"
[ ! -e "$tmp/e" ] || fail "a bad file beside a good one: the good one ran"
pass=$((pass + 1))

# ---- a sweep of some cases changes only their rows of the docs ----
# (in a fresh clone, results/ is empty: --only and a case file of one's own
# used to rewrite docs/thresholds.md with their rows alone)
mkdir -p "$tmp/two" "$tmp/mine"
cp "$CASE" "$tmp/two/a.case"
sed 's/^formats = fp16 bf16$/formats = bf16/' "$CASE" >"$tmp/two/b.case"
cp "$CASE" "$tmp/mine/c.case"
sweep "$tmp/p" --quick --quiet "$tmp/two"
status 0 "two cases"
[ "$(grep -c '^## ' "$tmp/p/docs/thresholds.md")" -eq 2 ] || fail "two cases: not two sections"
cp -R "$tmp/p/docs" "$tmp/pd"
sweep "$tmp/p1" --docs "$tmp/pd" --quick --only b "$tmp/two"
status 0 "--only b, nothing else swept here"
said "nanmap: sweep: $tmp/pd/thresholds.md: kept the rows of 1 case not swept here" "--only b"
cmp -s "$tmp/p/docs/thresholds.md" "$tmp/pd/thresholds.md" || fail "--only b changed thresholds.md"
sweep "$tmp/p2" --docs "$tmp/pd" --quick --quiet "$tmp/mine"
status 0 "a case file of one's own"
grep '^## ' "$tmp/pd/thresholds.md" | tr '\n' ' ' >"$tmp/secs"
[ "$(cat "$tmp/secs")" = "## a ## b ## c " ] || fail "a case of one's own: sections $(cat "$tmp/secs")"
head -n "$(wc -l <"$tmp/p/docs/thresholds.md")" "$tmp/pd/thresholds.md" | cmp -s - "$tmp/p/docs/thresholds.md" ||
	fail "a case of one's own changed the other cases' rows"
# swept again with no status change, its rows go; the others' stay
sed 's/^grid = log 1 1e4 9$/grid = log 1 2 3/; s/^quick = .*$/quick = list 1 2/' "$tmp/mine/c.case" >"$tmp/c.case"
mv "$tmp/c.case" "$tmp/mine/c.case"
sweep "$tmp/p3" --docs "$tmp/pd" --quick --quiet "$tmp/mine"
status 0 "a case of one's own without thresholds"
cmp -s "$tmp/p/docs/thresholds.md" "$tmp/pd/thresholds.md" || fail "a case without thresholds left rows"
pass=$((pass + 1))

# command-line errors
sweep "$tmp/e"
status 2 "no PATH"
said "nanmap: sweep needs a PATH (a .case file or a directory, e.g. cases)" "no PATH"
sweep "$tmp/e" --only nosuch "$CASE"
status 2 "--only with an unknown case"
said "nanmap: --only nosuch: no such case" "--only"
[ ! -e "$tmp/e" ] || fail "command-line errors wrote files"
pass=$((pass + 1))

# ---- the accuracy verdict: ok is not accurate ----
# fp16 maxsub softmax_ce is ok at every class count, but its loss error
# passes the case's 1 % between 2048 and 4096 classes: the verdict column
# says so, and the sweep bisects the crossing like a status change
sweep "$tmp/acc" --quiet tests/data/sweep_accuracy.case
status 0 "accuracy run"
csv="$tmp/acc/results/sweep_accuracy.csv"
grep -q '^sweep_accuracy,softmax_ce,maxsub,storage=fp16,2048,fast,ok,accurate,0,' "$csv" ||
	fail "accuracy: 2048 classes: $(grep ',2048,' "$csv")"
grep -q '^sweep_accuracy,softmax_ce,maxsub,storage=fp16,131072,fast,ok,inaccurate,0,' "$csv" ||
	fail "accuracy: 131072 classes: $(grep ',131072,' "$csv")"
grep -qx 'sweep_accuracy,softmax_ce,maxsub,storage=fp16,classes,loss.rel_err>0.01,3096,3097,nan,-' \
	"$tmp/acc/results/thresholds.csv" || fail "accuracy: thresholds: $(cat "$tmp/acc/results/thresholds.csv")"
grep -q '| classes | loss.rel_err>0.01 | 3096 (3096) | 3097 (3097) |' "$tmp/acc/docs/thresholds.md" ||
	fail "accuracy: thresholds.md"
# a bad tolerance or accuracy output: one line, exit 2
sed 's/^tolerance = 0.01/tolerance = 0/' tests/data/sweep_accuracy.case >"$tmp/tol0.case"
sweep "$tmp/e2" "$tmp/tol0.case"
said "nanmap: $tmp/tol0.case:8: key 'tolerance': '0' is not a relative error > 0 (0.01 is 1 %)" "tolerance 0"
sed 's/^tolerance = 0.01/tolerance = 0.01\naccuracy = grad2/' tests/data/sweep_accuracy.case >"$tmp/acco.case"
sweep "$tmp/e2" "$tmp/acco.case"
said "nanmap: $tmp/acco.case: key 'accuracy': 'grad2' is not an output of kernel softmax_ce (loss grad)" "accuracy output"
pass=$((pass + 1))

# ---- a point that cannot fit in memory is refused before anything runs ----
# rmsnorm 4 x 2^26 needs about 198 GiB a point with truth; -j 2 doubles what
# the points of a case need at once. One line with the figures, exit 2, and
# not even the pre-run check's first point runs (it alone took 11.5 GB).
printf '[case]\nkernel = rmsnorm\npolicy = storage=fp16\n[input]\ngen = normal\nrows = 4\ncols = 67108864\n[axis s]\nsets = scale\ngrid = list 1 2\n' >"$tmp/big.case"
NANMAP_MEMORY=8000000000 sweep "$tmp/big" -j 2 "$tmp/big.case"
status 2 "big point"
unset NANMAP_MEMORY # a function's assignment may outlive its call
said "nanmap: $tmp/big.case: case big: a point of 4 x 67108864 inputs needs about 197.5 GiB of working memory (input 2.0 GiB, 1543503880 kernel values on fast and truth (twice)), x 2 threads = 395.0 GiB, more than the 7.5 GiB of memory available (-j 1 runs one point at a time)" "big point"
[ ! -e "$tmp/big" ] || fail "big point: wrote files"
# the same check counts -j: 131072 classes fit once in 100 MB, not twice
NANMAP_MEMORY=100000000 sweep "$tmp/acc2" -j 2 tests/data/sweep_accuracy.case
status 2 "-j 2 over memory"
unset NANMAP_MEMORY
grep -q "x 2 threads = 138.0 MiB, more than the 95.4 MiB of memory available" "$tmp/err" ||
	fail "-j 2 over memory: $(cat "$tmp/err")"
pass=$((pass + 1))

echo "cli_sweep: $pass checks passed"
