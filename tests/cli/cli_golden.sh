#!/bin/sh
# tests/cli/cli_golden.sh — `nanmap golden` and `nanmap check`, end to end:
# update is deterministic and reproduces golden/ (below the provenance
# header); export writes inputs that `nanmap run` turns into exactly the
# golden records; check passes the exact outputs (raw, hex, .npy) and
# catches a 1-ulp change, a flipped sign of zero, a NaN for a finite value,
# an inf for the largest finite value, a truncated file, a wrong length and
# dtype (exit 0/1/2 as docs/golden.md says); the C API examples compile
# against lib/libnanmap.a and agree; export --out writes every input a
# case's kernel consumes (dy, target, w, ...), and nanmap run handed them
# by role (--tensor) under another seed gives exactly the golden records.
# Run from the repository root after the build: sh tests/cli/cli_golden.sh
# NANMAP=path overrides the binary. Stops at the first failure.
set -u

T=cli_golden
. tests/cli/cli_lib.sh

# status WANT DESC LINE...: the last run exited WANT, wrote nothing on
# stderr, and every LINE is a whole line of its stdout.
status() {
	want=$1
	desc=$2
	shift 2
	[ "$rc" -eq "$want" ] || fail "$desc: exit status $rc, want $want"
	[ ! -s "$tmp/err" ] || fail "$desc: wrote to stderr"
	for line in "$@"; do
		grep -qxF -- "$line" "$tmp/out" || fail "$desc: no line '$line'"
	done
	pass=$((pass + 1))
}

# bad DESC PATTERN ARGS...: exit 2, no stdout, one stderr line matching the
# grep pattern.
# (replaces cli_lib.sh's bad: here the message is matched by a pattern)
bad() {
	desc=$1
	pat=$2
	shift 2
	run "$@"
	[ "$rc" -eq 2 ] || fail "$desc: exit status $rc, want 2"
	[ ! -s "$tmp/out" ] || fail "$desc: wrote to stdout"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$desc: want exactly one stderr line"
	grep -q -- "$pat" "$tmp/err" || fail "$desc: message '$(cat "$tmp/err")' lacks '$pat'"
	pass=$((pass + 1))
}

# records TARGET: the expected encodings of a golden output, one per line.
records() {
	kernel=${1%%.*}
	awk -v t="$1" '$1 == t && NF == 4 { print $3 }' "golden/$kernel.golden"
}

# raw BYTES: hex encodings on stdin -> little-endian bytes on stdout.
raw() {
	while read -r h; do
		v=$((h))
		j=0
		while [ "$j" -lt "$1" ]; do
			printf '%b' "\\0$(printf %o $(((v >> (8 * j)) & 255)))"
			j=$((j + 1))
		done
	done
}

# npy FILE DESCR SHAPE: a .npy version 1.0 header, then stdin as the data.
npy() {
	h="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
	pad=$(((64 - (10 + ${#h} + 1) % 64) % 64))
	hlen=$((${#h} + pad + 1))
	{
		printf '\223NUMPY\001\000'
		printf '%b' "\\0$(printf %o $((hlen % 256)))\\0$(printf %o $((hlen / 256)))"
		printf '%s%*s\n' "$h" "$pad" ''
		cat
	} >"$1"
}

# ---- update: deterministic, and what golden/ holds ----
mkdir "$tmp/g1" "$tmp/g2"
run golden update --dir "$tmp/g1"
status 0 "golden update"
grep -q '^golden: [0-9]* cases, [0-9]* records in ' "$tmp/out" || fail "update: no summary line"
sed -n 's/^golden: /update: /p' "$tmp/out"
run golden update --dir "$tmp/g2"
status 0 "golden update again"
diff -r "$tmp/g1" "$tmp/g2" >/dev/null || fail "golden update twice: the files differ"
pass=$((pass + 1))
for f in golden/*.golden; do
	b=$(basename "$f")
	[ -f "$tmp/g1/$b" ] || fail "update wrote no $b"
	# the header names this machine's MPFR; the rest must be identical
	grep -v '^#' "$f" >"$tmp/want"
	grep -v '^#' "$tmp/g1/$b" >"$tmp/got"
	cmp -s "$tmp/want" "$tmp/got" || fail "$f differs from a fresh update (run nanmap golden update)"
	head -n 4 "$f" | grep -qx '# command: nanmap golden update' || fail "$f: no command line"
done
[ "$(ls "$tmp/g1"/*.golden | wc -l)" -eq "$(ls golden/*.golden | wc -l)" ] || fail "update: file count"
# and the training runs, byte for byte
[ "$(ls "$tmp/g1/train" | wc -l)" -eq "$(ls golden/train/*.safetensors | wc -l)" ] || fail "update: training-run count"
for f in golden/train/*.safetensors; do
	cmp -s "$f" "$tmp/g1/train/$(basename "$f")" || fail "$f differs from a fresh update (run nanmap golden update)"
done
ls "$tmp/g1" | grep -v '\.golden$' | grep -vx train | grep -q . && fail "update left other files behind"
ls "$tmp/g1/train" | grep -v '\.safetensors$' | grep -q . && fail "update left other files behind in train/"
pass=$((pass + 1))
bad "update into a missing folder" "$tmp/none/softmax_ce.golden" golden update --dir "$tmp/none"

# ---- update as a whole set; stale temporaries of dead updates removed ----
mkdir "$tmp/g4"
for f in golden/*.golden; do
	{ cat "$f"; echo "# old"; } >"$tmp/g4/$(basename "$f")"
done
cp -p "$tmp/g4/softmax_ce.golden" "$tmp/old_sm"
rm "$tmp/g4/gradscaler.golden"
mkdir "$tmp/g4/gradscaler.golden" # the last file cannot be replaced
bad "update with one file that cannot be replaced" "gradscaler.golden: not a regular file" \
	golden update --dir "$tmp/g4"
cmp -s "$tmp/old_sm" "$tmp/g4/softmax_ce.golden" ||
	fail "update replaced softmax_ce.golden although the set could not be written"
ls "$tmp/g4" | grep -q '\.tmp\.' && fail "failed update left temporaries"
rmdir "$tmp/g4/gradscaler.golden"
sh -c 'exit 0' &
dead=$!
wait "$dead"
: >"$tmp/g4/accum.golden.tmp.$dead.AbC123"
: >"$tmp/g4/accum.golden.tmp.$$.AbC123" # a live process's: kept
: >"$tmp/g4/notes.tmp.$dead.AbC123"     # not nanmap's pattern: kept
: >"$tmp/g4/dot.golden.tmp.$dead"        # nm_file_stage's name: removed
run golden update --dir "$tmp/g4"
[ "$rc" -eq 0 ] || fail "update after a killed one: exit $rc"
grep -q "removed $tmp/g4/dot.golden.tmp.$dead," "$tmp/err" || fail "stale staged temporary not reported"
[ ! -e "$tmp/g4/dot.golden.tmp.$dead" ] || fail "stale staged temporary of a dead update kept"
grep -q "removed $tmp/g4/accum.golden.tmp.$dead.AbC123" "$tmp/err" || fail "stale temporary not reported"
[ ! -e "$tmp/g4/accum.golden.tmp.$dead.AbC123" ] || fail "stale temporary of a dead update kept"
[ -e "$tmp/g4/accum.golden.tmp.$$.AbC123" ] || fail "a live update's temporary removed"
[ -e "$tmp/g4/notes.tmp.$dead.AbC123" ] || fail "a file of another pattern removed"
for f in golden/*.golden; do
	grep -v '^#' "$f" >"$tmp/want"
	grep -v '^#' "$tmp/g4/$(basename "$f")" >"$tmp/got"
	cmp -s "$tmp/want" "$tmp/got" || fail "update after a killed one: $f differs"
done
pass=$((pass + 1))

# ---- damaged golden files: exit 2 (bad input), never 1 (a mismatch) ----
L=softmax_ce.naive.fp16-fp16.safe/loss
records "$L" >"$tmp/l.txt"
{ echo "# nanmap golden file, format 99"; sed 1d golden/softmax_ce.golden; } >"$tmp/f99.golden"
bad "golden file of format 99" "$tmp/f99.golden:1: format 99, but this nanmap reads format 2" \
	check "$tmp/f99.golden:$L" "$tmp/l.txt"
# the record's bits and class edited together: the checksum catches it
awk -v t="$L" '$1 == t && $2 == 0 { $3 = "0x4144" } { print }' golden/softmax_ce.golden >"$tmp/ed.golden"
grep -q "^$L 0 0x4144 normal" "$tmp/ed.golden" || fail "the edit did not apply"
bad "consistent edit of a record" "its lines do not match its checksum" \
	check "$tmp/ed.golden:$L" "$tmp/l.txt"
bad "golden file from /dev/zero" "/dev/zero:1: not a golden file" check "/dev/zero:$L" "$tmp/l.txt"

# ---- streams: read with a limit, never whole ----
bad "actual from /dev/zero" "/dev/zero: larger than 2 bytes, the limit for $L" \
	check "$L" /dev/zero
mkfifo "$tmp/fifo"
yes 0x0000 >"$tmp/fifo" 2>/dev/null &
bad "actual from an endless pipe" "$tmp/fifo: larger than 2 bytes" check "$L" "$tmp/fifo"
wait
bad "run --input /dev/zero" "/dev/zero: bad magic: not a .npy file (it starts with" \
	run softmax_ce --policy storage=fp16 --input /dev/zero
yes 3f800000 >"$tmp/fifo" 2>/dev/null &
bad "dot from an endless pipe" "$tmp/fifo:16777217: more than 16777216 values" \
	dot --model h100 --in fp16 --out fp32 "$tmp/fifo" "$tmp/fifo"
wait

# ---- list and help ----
run golden list
status 0 "golden list" \
	"softmax_ce.naive.fp16-fp16.safe/grad fp16[32] input 2x16 status ok"
[ "$(wc -l <"$tmp/out")" -eq "$(grep -c '^output ' golden/*.golden | awk -F: '{ s += $2 } END { print s }')" ] ||
	fail "golden list: one line per output"
run golden --help
status 0 "golden --help"
run check --help
status 0 "check --help"
grep -q '^usage: nanmap check GOLDEN ACTUAL' "$tmp/out" || fail "check --help: usage"
run --help
grep -q 'nanmap check GOLDEN ACTUAL' "$tmp/out" || fail "nanmap --help names check"
pass=$((pass + 1))

# ---- export: the inputs reproduce the records ----
for id in softmax_ce.naive.fp16-fp16.safe layernorm.twopass.e4m3-fp32.near_underflow \
	accum.sum-seq.bf16-bf16.near_overflow; do
	run golden export "$id" --inputs "$tmp/in.npy"
	status 0 "export $id"
	kernel=${id%%.*}
	line=$(grep "^case $id " "golden/$kernel.golden")
	variant=$(echo "$line" | sed 's/.* variant=\([^ ]*\).*/\1/')
	policy=$(echo "$line" | sed 's/.* policy=\([^ ]*\).*/\1/')
	seed=$(echo "$line" | sed 's/.* seed=\([0-9]*\).*/\1/')
	run run "$kernel" --variant "$variant" --policy "$policy" --input "$tmp/in.npy" \
		--seed "$seed" --backend exact --no-truth --csv
	status 0 "run on the exported input of $id"
	awk -F, -v id="$id" '$1 == "exact" && $2 == "bits" {
		split($3, a, "["); sub("]", "", a[2]); print id "/" a[1], a[2], $4 }' "$tmp/out" >"$tmp/got"
	awk -v id="$id" 'index($1, id "/") == 1 && NF == 4 { print $1, $2, $3 }' \
		"golden/$kernel.golden" >"$tmp/want"
	[ -s "$tmp/want" ] || fail "export $id: no records"
	cmp -s "$tmp/want" "$tmp/got" || fail "export $id: nanmap run on the exported input differs from the golden records"
done
# the case line alone redraws the input (the generator's uniform draw)
id=layernorm.welford.bf16-fp32.near_underflow
line=$(grep "^case $id " golden/layernorm.golden)
scale=$(echo "$line" | sed 's/.* scale=\([^ ]*\).*/\1/')
seed=$(echo "$line" | sed 's/.* seed=\([0-9]*\).*/\1/')
run run layernorm --variant welford --policy storage=bf16,compute=fp32 --gen uniform --n 16 \
	--rows 2 --scale "$scale" --seed "$seed" --backend exact --no-truth --csv
status 0 "run --gen from the case line"
awk -F, '$1 == "exact" && $2 == "bits" { print $4 }' "$tmp/out" >"$tmp/got"
awk -v id="$id" 'index($1, id "/") == 1 && NF == 4 { print $3 }' golden/layernorm.golden >"$tmp/want"
[ "$(wc -l <"$tmp/want")" -eq 68 ] || fail "$id: 68 records"
cmp -s "$tmp/want" "$tmp/got" || fail "$id: --gen from the case line differs from the records"
run golden export softmax_ce.naive.e4m3-fp32.safe --inputs "$tmp/in.bin"
status 0 "export raw" \
	"$tmp/in.bin: softmax_ce.naive.e4m3-fp32.safe 2 x 16, e4m3 encodings, 1 byte each, little-endian"
[ "$(wc -c <"$tmp/in.bin")" -eq 32 ] || fail "export raw: 32 bytes"
run golden export softmax_ce.naive.fp16-fp32.safe --inputs "$tmp/in16.bin"
run golden export softmax_ce.naive.fp16-fp32.safe --inputs "$tmp/enc.npy" --encodings
status 0 "export --encodings .npy"
run golden export softmax_ce.naive.fp16-fp32.safe --inputs "$tmp/val.npy"
[ "$(wc -c <"$tmp/in16.bin")" -eq 64 ] || fail "export raw fp16: 64 bytes"
[ "$(tail -c 64 "$tmp/enc.npy" | od -An -tx1)" = "$(od -An -tx1 <"$tmp/in16.bin")" ] ||
	fail "export: the .npy encodings differ from the raw file"
pass=$((pass + 1))
bad "export unknown case" "no case 'softmax_ce.nope'" golden export softmax_ce.nope --inputs "$tmp/x.npy"
bad "export without --inputs" "needs --inputs" golden export softmax_ce.naive.fp16-fp16.safe
bad "export bad id" "bad case id" golden export nodot --inputs "$tmp/x.npy"

# ---- export --out: every input the kernel consumes reproduces the records ----
# One case of every kernel and variant: the tensors export writes (x, and dy,
# target, w, b, grad, gamma, ... as the kernel draws them), handed to nanmap run
# by role (--tensor) under seed 1, not the case's, so that nothing is
# re-derived from the seed, give every golden record of the case. (quant's
# cases consume x alone, and their recipes round stochastically by the seed.)
ncases=0
for id in $(awk '$1 == "case" && $2 ~ /\.fp16-fp32\.safe$/ { print $2 }' golden/*.golden); do
	kernel=${id%%.*}
	d="$tmp/out.$id"
	run golden export "$id" --out "$d"
	status 0 "export $id --out" "$d/x.npy: x $(awk -v id="$id" '$1 == "case" && $2 == id {
		sub("rows=", "", $6); sub("cols=", "", $7); print $6 "x" $7 }' "golden/$kernel.golden"), float64 values" \
		"$d/inputs.txt: $(grep -vc '^#' "$d/inputs.txt") tensors of $id"
	line=$(grep "^case $id " "golden/$kernel.golden")
	variant=$(echo "$line" | sed 's/.* variant=\([^ ]*\).*/\1/')
	policy=$(echo "$line" | sed 's/.* policy=\([^ ]*\).*/\1/')
	set -- run "$kernel" --variant "$variant" --policy "$policy" --input "$d/x.npy" --seed 1 \
		--backend exact --no-truth --csv
	for role in $(awk '!/^#/ && $1 != "x" { print $1 }' "$d/inputs.txt"); do
		[ -s "$d/$role.npy" ] || fail "export $id: no $role.npy"
		set -- "$@" --tensor "$role=$d/$role.npy"
	done
	run "$@"
	status 0 "run on every exported input of $id"
	awk -F, -v id="$id" '$1 == "exact" && $2 == "bits" {
		split($3, a, "["); sub("]", "", a[2]); print id "/" a[1], a[2], $4 }' "$tmp/out" >"$tmp/got"
	awk -v id="$id" 'index($1, id "/") == 1 && NF == 4 { print $1, $2, $3 }' \
		"golden/$kernel.golden" >"$tmp/want"
	[ -s "$tmp/want" ] || fail "export $id: no records"
	cmp -s "$tmp/want" "$tmp/got" ||
		fail "export $id: nanmap run on the exported inputs differs from the golden records"
	ncases=$((ncases + 1))
done
[ "$ncases" -ge 36 ] || fail "export --out: $ncases cases, want one per kernel and variant"
# a backward case: its upstream gradient is in the export, and the records
# need it (x alone under seed 1 gives another dx)
id=layernorm.twopass.fp16-fp32.safe
d="$tmp/out.$id"
grep -qx 'dy dy.npy <f8 2x16 fp16 -' "$d/inputs.txt" || fail "export $id: inputs.txt has no dy line"
run run layernorm --variant twopass --policy storage=fp16,compute=fp32 --input "$d/x.npy" \
	--seed 1 --backend exact --no-truth --csv
status 0 "run on x alone"
awk -F, '$1 == "exact" && $2 == "bits" && $3 ~ /^dx\[/ { print $4 }' "$tmp/out" >"$tmp/got"
awk -v t="$id/dx" '$1 == t && NF == 4 { print $3 }' golden/layernorm.golden >"$tmp/want"
! cmp -s "$tmp/want" "$tmp/got" || fail "x alone under another seed reproduces $id/dx"
pass=$((pass + 1))
# --encodings: the storage format's encodings, class indices as <u4
run golden export "$id" --out "$tmp/enc" --encodings
status 0 "export --out --encodings" "$tmp/enc/dy.npy: dy 2x16, fp16 encodings"
grep -qx 'dy dy.npy <u2 2x16 fp16 -' "$tmp/enc/inputs.txt" || fail "--encodings: dy line"
[ "$(tail -c 64 "$tmp/enc/dy.npy" | od -An -v -tx2 | tr -s ' ' '\n' | sed '/^$/d' | sort -u |
	tr '\n' ' ')" = "3c00 bc00 " ] || fail "--encodings: dy is not the fp16 encodings of ±1"
run golden export softmax_ce.naive.fp16-fp16.safe --out "$tmp/sm" --encodings
status 0 "export softmax_ce --out" "$tmp/sm/target.npy: target 2, class indices"
grep -qx 'target target.npy <u4 2 index -' "$tmp/sm/inputs.txt" || fail "target line"
[ "$(tail -c 8 "$tmp/sm/target.npy" | od -An -v -tu4 | tr -s ' ')" = " 0 1" ] ||
	fail "softmax_ce's labels are not 0 1"
# matmul's operands: a and b, read out of x
run golden export matmul.seq.bf16-bf16.safe --out "$tmp/mm"
grep -qx 'b b.npy <f8 8x4 bf16 x' "$tmp/mm/inputs.txt" || fail "matmul: b line"
pass=$((pass + 1))
printf 'x\n' >"$tmp/afile"
bad "export --out onto a file" "$tmp/afile: not a folder" \
	golden export "$id" --out "$tmp/afile"
bad "export --out and --inputs" "not both" \
	golden export "$id" --out "$tmp/o2" --inputs "$tmp/x.npy"
bad "export float64 x as encodings" "the kernel takes x as float64" \
	golden export quant.row.nvfp4-act --inputs "$tmp/q.bin"
bad "run --tensor without =" "bad --tensor 'dy'" \
	run layernorm --policy storage=fp16 --values 1,2 --tensor dy
bad "run --tensor, a missing file" "$tmp/none.npy" \
	run layernorm --policy storage=fp16 --values 1,2 --tensor "dy=$tmp/none.npy"
bad "run --tensor of no role" "layernorm: no tensor 'w' (its tensors: dy; x is its input)" \
	run layernorm --policy storage=fp16 --input "$d/x.npy" --tensor "w=$d/dy.npy"
bad "run --tensor of another shape" "layernorm: tensor dy is 2 x 16, the kernel takes 1 x 2" \
	run layernorm --policy storage=fp16 --values 1,2 --tensor "dy=$d/dy.npy"

# ---- check: the exact outputs pass ----
TGT=softmax_ce.naive.fp16-fp16.safe/grad
records "$TGT" >"$tmp/g.txt"
[ "$(wc -l <"$tmp/g.txt")" -eq 32 ] || fail "records $TGT"
raw 2 <"$tmp/g.txt" >"$tmp/g.bin"
npy "$tmp/g.npy" '<u2' '(2, 16)' <"$tmp/g.bin"
npy "$tmp/gf2.npy" '<f2' '(32,)' <"$tmp/g.bin"
npy "$tmp/gf4.npy" '<f4' '(16,)' <"$tmp/g.bin"
for a in g.txt g.bin g.npy gf2.npy; do
	run check "$TGT" "$tmp/$a"
	status 0 "check exact outputs ($a)" "checked 32, mismatched 0, max ulp 0"
done
run check "golden/softmax_ce.golden:$TGT" "$tmp/g.bin"
status 0 "check FILE:TARGET" "checked 32, mismatched 0, max ulp 0"

# a 1-ulp change: caught, and passed by --ulp 1
e5=$(sed -n 5p "$tmp/g.txt")
u5=$(printf '0x%04x' $((e5 + 1)))
sed "5s/.*/$u5/" "$tmp/g.txt" >"$tmp/u.txt"
run check "$TGT" "$tmp/u.txt"
status 1 "check a 1-ulp change" "checked 32, mismatched 1, max ulp 1"
grep -q "^grad\[4\]: expected $e5 (.*), actual $u5 (.*), ulp 1\$" "$tmp/out" || fail "1 ulp: mismatch line"
run check "$TGT" "$tmp/u.txt" --ulp 1
status 0 "check --ulp 1" "checked 32, mismatched 0, max ulp 1"
run check "$TGT" "$tmp/u.txt" --csv
[ "$rc" -eq 1 ] || fail "--csv: exit $rc"
head -n 1 "$tmp/out" | grep -qx 'index,expected,actual,ulp,expected_value,actual_value' || fail "--csv header"
grep -q "^4,$e5,$u5,1," "$tmp/out" || fail "--csv row"
grep -qx "checked 32, mismatched 1, max ulp 1" "$tmp/err" || fail "--csv: summary on stderr"
pass=$((pass + 1))

# a NaN where a finite value belongs, even with a large tolerance
sed '7s/.*/0x7e00/' "$tmp/g.txt" >"$tmp/n.txt"
run check "$TGT" "$tmp/n.txt" --ulp 100000
status 1 "check NaN for finite" "checked 32, mismatched 1, max ulp inf"
grep -q '^grad\[6\]: expected .*, actual 0x7e00 (nan), ulp inf$' "$tmp/out" || fail "NaN: mismatch line"

# a flipped sign of zero
Z=accum.dot-tc.bf16-bf16.near_underflow/result
records "$Z" >"$tmp/z.txt"
grep -qx 0x8000 "$tmp/z.txt" || fail "$Z: the golden output has no -0 any more (pick another case)"
sed 's/^0x8000$/0x0000/' "$tmp/z.txt" >"$tmp/z2.txt"
run check "$Z" "$tmp/z2.txt" --ulp 3
status 1 "check a flipped zero sign"
grep -q 'expected 0x8000 (-0), actual 0x0000 (0), ulp 0$' "$tmp/out" || fail "zero sign: mismatch line"

# an inf for the largest finite value (a saturation bug)
S=accum.gradacc.e5m2-e5m2.near_overflow/grad
records "$S" >"$tmp/s.txt"
grep -qx 0xfb "$tmp/s.txt" || fail "$S: the golden output has no max finite any more"
sed 's/^0xfb$/0xfc/' "$tmp/s.txt" >"$tmp/s2.txt"
raw 1 <"$tmp/s2.txt" >"$tmp/s2.bin"
run check "$S" "$tmp/s2.bin" --ulp 1
status 1 "check inf for max finite"
grep -q 'expected 0xfb (-57344), actual 0xfc (-inf), ulp inf$' "$tmp/out" || fail "saturation: mismatch line"

# NaN signs: ignored by default, compared with --nan-sign strict
Q=softmax_ce.naive.fp16-fp16.near_overflow/grad
records "$Q" >"$tmp/q.txt"
grep -qx 0x7e00 "$tmp/q.txt" || fail "$Q: no NaN in the golden output any more"
sed 's/^0x7e00$/0xffff/' "$tmp/q.txt" >"$tmp/q2.txt"
run check "$Q" "$tmp/q2.txt"
status 0 "check another NaN, ignore"
run check "$Q" "$tmp/q2.txt" --nan-sign strict
status 1 "check another NaN, strict"
sed 's/^0x7e00$/0x7fff/' "$tmp/q.txt" >"$tmp/q3.txt"
run check "$Q" "$tmp/q3.txt" --nan-sign=strict
status 0 "check another NaN payload, strict"

# ---- check: bad input, exit 2 with one line naming it ----
head -c 63 "$tmp/g.bin" >"$tmp/trunc.bin"
bad "truncated raw file" "$tmp/trunc.bin: 63 bytes" check "$TGT" "$tmp/trunc.bin"
head -c 62 "$tmp/g.bin" >"$tmp/short.bin"
bad "short raw file" "$tmp/short.bin: 31 elements, but $TGT has 32" check "$TGT" "$tmp/short.bin"
head -n 31 "$tmp/g.txt" >"$tmp/short.txt"
bad "short hex file" "$tmp/short.txt: 31 elements" check "$TGT" "$tmp/short.txt"
{ cat "$tmp/g.txt"; echo 0x3c00; } >"$tmp/long.txt"
bad "long hex file" "$tmp/long.txt: 33 elements" check "$TGT" "$tmp/long.txt"
bad "wrong dtype" "$tmp/gf4.npy: dtype <f4 does not hold fp16" check "$TGT" "$tmp/gf4.npy"
printf '0x3c00\nxyz\n' >"$tmp/junk.txt"
bad "junk hex" "$tmp/junk.txt:2: not an encoding" check "$TGT" "$tmp/junk.txt"
printf '0x13c00\n' >"$tmp/wide.txt"
bad "too wide" "$tmp/wide.txt:1: 0x13c00 is wider than fp16" check "$TGT" "$tmp/wide.txt"
printf 'junk' >"$tmp/junk.npy"
bad "junk .npy" "$tmp/junk.npy: " check "$TGT" "$tmp/junk.npy"
bad "unreadable actual" "$tmp/none.bin: cannot open" check "$TGT" "$tmp/none.bin"
bad "unknown target" "no output 'softmax_ce.nope/grad'" check softmax_ce.nope/grad "$tmp/g.bin"
bad "case with two outputs" "no output 'softmax_ce.naive.fp16-fp16.safe'" \
	check golden/softmax_ce.golden:softmax_ce.naive.fp16-fp16.safe "$tmp/g.bin"
bad "file with many outputs" "has [0-9]* outputs" check golden/softmax_ce.golden "$tmp/g.bin"
printf 'not golden\n' >"$tmp/x.golden"
bad "not a golden file" "$tmp/x.golden:1: not a golden file" check "$tmp/x.golden" "$tmp/g.bin"
bad "missing golden file" "$tmp/none.golden: cannot open" check "$tmp/none.golden" "$tmp/g.bin"
bad "bad --ulp" "bad --ulp '-1'" check "$TGT" "$tmp/g.bin" --ulp -1
bad "bad --nan-sign" "bad --nan-sign 'loose'" check "$TGT" "$tmp/g.bin" --nan-sign loose
bad "one argument" "check needs GOLDEN and ACTUAL" check "$TGT"
bad "unknown option" "unknown option '--x' for check" check "$TGT" "$tmp/g.bin" --x

# ---- the C API example, linked against the library ----
CC=${CC:-cc}
extra=""
if nm lib/libnanmap.a 2>/dev/null | grep -q __asan_init; then
	extra="-fsanitize=address,undefined"
fi
grep -q '^PUBLIC_H :=.*emu/io/nm_golden.h' Makefile || fail "nm_golden.h is not a public header"
# the static library with exactly what nanmap.pc says it links
private=$(sed -n 's/^Libs\.private: //p' emu/nanmap.pc.in)
[ -n "$private" ] || fail "nanmap.pc: no Libs.private (the libraries libnanmap.a needs)"
# shellcheck disable=SC2086
"$CC" -std=c11 -Wall -Wextra -Werror $extra -Iemu/io docs/examples/golden_check.c \
	lib/libnanmap.a $private -o "$tmp/golden_check" 2>"$tmp/err" ||
	fail "docs/examples/golden_check.c does not build with lib/libnanmap.a $private"
rc=0
"$tmp/golden_check" golden/softmax_ce.golden "$TGT" "$tmp/g.bin" >"$tmp/out" 2>"$tmp/err" || rc=$?
status 0 "example on the exact outputs" "$TGT: 32 checked, 0 mismatched"
rc=0
"$tmp/golden_check" golden/softmax_ce.golden "$TGT" "$tmp/u.txt" >"$tmp/out" 2>"$tmp/err" || rc=$?
status 1 "example on a 1-ulp change" "$TGT: 32 checked, 1 mismatched"
# the inputs example: every output of a backward case from the case's
# inputs (x and dy, as the kernel drew them), the kernel under seed 0
# shellcheck disable=SC2086
"$CC" -std=c11 -Wall -Wextra -Werror $extra -I. -Iemu/io -Iemu/engine docs/examples/golden_inputs.c \
	lib/libnanmap.a $private -o "$tmp/golden_inputs" 2>"$tmp/err" ||
	fail "docs/examples/golden_inputs.c does not build with lib/libnanmap.a $private"
for id in layernorm.twopass.fp16-fp32.safe attention.online-bwd.bf16-fp32.near_underflow \
	batchnorm.welford.e4m3-fp32.safe; do
	kernel=${id%%.*}
	rc=0
	"$tmp/golden_inputs" "golden/$kernel.golden" "$id" >"$tmp/out" 2>"$tmp/err" || rc=$?
	status 0 "inputs example on $id"
	n=$(grep -c "^$id/.*: [0-9]* checked, 0 mismatched\$" "$tmp/out")
	[ "$n" -eq "$(grep -c "^output $id/" "golden/$kernel.golden")" ] ||
		fail "inputs example on $id: $n outputs match"
done
grep -qxF "layernorm.twopass.fp16-fp32.safe: dy 2 x 16 (fp16)" "$tmp/out" ||
	grep -qxF "batchnorm.welford.e4m3-fp32.safe: dy 8 x 4 (e4m3)" "$tmp/out" ||
	fail "inputs example: no dy line"

echo "cli_golden: all $pass checks passed"
