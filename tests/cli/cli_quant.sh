#!/bin/sh
# tests/cli/cli_quant.sh — `nanmap quant`, end to end: known answers worked out
# by hand in docs/quant.md (the OCP floor's saturation at 957, TE's 960,
# NVFP4's E2M1 rounding boundaries and its scales), zero, NaN and empty
# tensors, a .safetensors checkpoint with F32, F16, BF16 and a skipped I64
# tensor, the CSV and JSON layouts, streaming in parts against one part,
# determinism of the seeds, and the error convention (one stderr line,
# exit 2, nothing on stdout, no file left) on every error path.
# Run from the repository root after the build: sh tests/cli/cli_quant.sh
# NANMAP=path overrides the binary. Stops at the first failure.
set -u

T=cli_quant
. tests/cli/cli_lib.sh

succeeded() {
	[ "$rc" -eq 0 ] || fail "$1: exit status $rc"
	[ ! -s "$tmp/err" ] || fail "$1: wrote to stderr"
	pass=$((pass + 1))
}

# enc FMT VALUE...: the values' encodings in FMT as little-endian printf %b
# escapes (the bits from nanmap round, so no other tool writes binary).
enc() {
	fmt=$1
	shift
	"$N" round -f "$fmt" --csv -- "$@" | awk -F, '
	NR > 1 {
		h = tolower(substr($3, 3))
		for (i = length(h) - 1; i >= 1; i -= 2) {
			hi = index("0123456789abcdef", substr(h, i, 1)) - 1
			lo = index("0123456789abcdef", substr(h, i + 1, 1)) - 1
			printf "\\0%o", hi * 16 + lo
		}
	}'
}

# st FILE HEADER DATA: a .safetensors file: the header's length as 8 bytes
# little-endian, the JSON header, then the data (printf %b escapes).
st() {
	len=${#2}
	{
		printf '%b' "\\0$(printf %o $((len % 256)))\\0$(printf %o $((len / 256)))"
		printf '%b' '\0\0\0\0\0\0'
		printf '%s' "$2"
		printf '%b' "$3"
	} >"$1"
}

# the last N bytes of a file as unsigned decimals, one line
tailbytes() {
	tail -c "$2" "$1" | od -An -tu1 -v | tr -s ' \n' '  ' | sed 's/^ //; s/ $//'
}

# field NAME: the column called NAME of the CSV row whose name is ROW
field() {
	awk -F, -v row="$1" -v col="$2" '
	NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
	$1 == row { print $c }' "$tmp/out"
}

# ---- --list and --help ----
run quant --list
succeeded "--list"
grep -q '^nvfp4  *NVFP4 as TE' "$tmp/out" || fail "--list: nvfp4 and its description"
grep -q '^mxfp8:floor  *OCP MX' "$tmp/out" || fail "--list: mxfp8:floor"
run quant --help
succeeded "--help"
grep -q '^usage: nanmap quant --recipe' "$tmp/out" || fail "--help: the usage line"
run --help
grep -q '^  nanmap quant --recipe' "$tmp/out" || fail "nanmap --help lists quant"
pass=$((pass + 1))

# ---- known answers: one 32-element block of amax 957 ----
v=957
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31; do
	v="$v 1"
done
# shellcheck disable=SC2086
npy "$tmp/m.npy" '<f4' '(32,)' "$(enc fp32 $v)"
# OCP floor: X = 2^(floor(log2 957) - 8) = 2, 957/2 = 478.5 clamps to 448: 896
run quant --recipe mxfp8:floor --input "$tmp/m.npy" --csv --out "$tmp/floor.npy"
succeeded "mxfp8:floor"
[ "$(field "$tmp/m.npy" saturated)" = 1 ] || fail "mxfp8:floor: saturated $(field "$tmp/m.npy" saturated), want 1"
[ "$(field "$tmp/m.npy" amax)" = 957 ] || fail "mxfp8:floor: amax"
run round -f fp32 --csv --input "$tmp/floor.npy"
[ "$(sed -n 2p "$tmp/out" | cut -d, -f4)" = 896 ] || fail "mxfp8:floor: 957 dequantises to $(sed -n 2p "$tmp/out" | cut -d, -f4), want 896"
[ "$(sed -n 3p "$tmp/out" | cut -d, -f4)" = 1 ] || fail "mxfp8:floor: 1 stays 1"
pass=$((pass + 1))
# TE: scale 2^ceil(log2(957/448)) = 4, 957/4 = 239.25 rounds to 240: 960
# a killed quant --out leaves NAME.tmp.PID: the next one into that name removes
# its own names' temporaries of dead processes (pid 999999999 is above any
# pid_max), and nothing else
mkdir -p "$tmp/stale"
for f in q.npy.tmp.999999999 q.scales.npy.tmp.999999999 q.npy.tmp.$$ other.npy.tmp.999999999 q.npy.tmp.x; do
	: >"$tmp/stale/$f"
done
run quant --recipe mxfp8 --input "$tmp/m.npy" --csv --out "$tmp/stale/q.npy"
[ "$rc" -eq 0 ] || fail "quant --out beside stale temporaries: exit status $rc"
[ ! -e "$tmp/stale/q.npy.tmp.999999999" ] && [ ! -e "$tmp/stale/q.scales.npy.tmp.999999999" ] ||
	fail "quant --out left a killed run's temporaries: $(ls "$tmp/stale")"
for f in q.npy.tmp.$$ other.npy.tmp.999999999 q.npy.tmp.x q.npy; do
	[ -e "$tmp/stale/$f" ] || fail "quant --out removed (or did not write) $f"
done
[ "$(grep -c '^nanmap: removed .*left by a quant --out that did not finish$' "$tmp/err")" = 2 ] ||
	fail "quant --out: the removals not said: $(cat "$tmp/err")"
pass=$((pass + 1))
run quant --recipe mxfp8 --input "$tmp/m.npy" --csv --out "$tmp/te.npy"
succeeded "mxfp8"
[ "$(field "$tmp/m.npy" saturated)" = 0 ] || fail "mxfp8: saturated, want 0"
run round -f fp32 --csv --input "$tmp/te.npy"
[ "$(sed -n 2p "$tmp/out" | cut -d, -f4)" = 960 ] || fail "mxfp8: 957 dequantises to $(sed -n 2p "$tmp/out" | cut -d, -f4), want 960"
pass=$((pass + 1))

# ---- NVFP4: the E2M1 boundaries in one 16-element block of amax 6 ----
npy "$tmp/nv.npy" '<f4' '(16,)' "$(enc fp32 0.25 0.75 1.25 1.75 2.5 3.5 5 5.5 6 0 0 0 0 0 0 0)"
run quant --recipe nvfp4 --input "$tmp/nv.npy" --out "$tmp/nvc.npy" --encodings --per-block 1 --json
succeeded "nvfp4 --encodings"
# codes: 0 0.5 1 1.5 2 3 4 6 are 0..7; 0.25->0 0.75->1 1.25->1 1.75->2 2.5->2 3.5->4 5->4 5.5->6
[ "$(tailbytes "$tmp/nvc.npy" 16)" = "0 2 2 4 4 6 6 7 7 0 0 0 0 0 0 0" ] ||
	fail "nvfp4: codes $(tailbytes "$tmp/nvc.npy" 16)"
# S_enc = 448 * 6 / 6 = 448; the block scale e4m3(6/6 * 448) = 448 = 0x7e; t = fp32(1/448)
[ "$(tailbytes "$tmp/nvc.scales.npy" 1)" = 126 ] || fail "nvfp4: block scale code, want 0x7e"
[ "$(tail -c 4 "$tmp/nvc.tensor_scale.npy" | od -An -tx4 | tr -d ' ')" = 3b124925 ] ||
	fail "nvfp4: tensor scale, want fp32(1/448) = 0x3b124925"
grep -q '"worst_blocks": \[{"block": 0, "row": 0, "col": 0, "amax": 6, "d": 448, "d_enc": "0x7e"' "$tmp/out" ||
	fail "nvfp4: --per-block shows amax 6, d 448 (0x7e)"
grep -q '"amax": 6, "saturated": 0, "saturated_frac": 0, "flushed": 1,' "$tmp/out" ||
	fail "nvfp4: amax 6, nothing saturated, 0.25 flushed"
pass=$((pass + 1))

# ---- zero, NaN and empty tensors ----
npy "$tmp/zero.npy" '<f4' '(2, 16)' "$(enc fp32 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0)"
for r in nvfp4 mxfp8 mxfp8:floor deepseek tensor; do
	run quant --recipe "$r" --input "$tmp/zero.npy" --csv
	succeeded "zero tensor, $r"
	[ "$(field "$tmp/zero.npy" sqnr_db)" = inf ] || fail "zero tensor, $r: sqnr_db $(field "$tmp/zero.npy" sqnr_db), want inf"
	sed 1d "$tmp/out" | tr ',' '\n' | grep -qx nan && fail "zero tensor, $r: a nan in the row"
	run quant --recipe "$r" --input "$tmp/zero.npy"
	succeeded "zero tensor, $r, table"
	sed 1d "$tmp/out" | grep -qw nan && fail "zero tensor, $r: a nan in the table"
done
# a NaN in the first block, a good second block: counted, statistics finite
v=nan
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31; do
	v="$v 1.3"
done
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32; do
	v="$v 0.$i"
done
# shellcheck disable=SC2086
npy "$tmp/nan.npy" '<f4' '(64,)' "$(enc fp32 $v)"
run quant --recipe mxfp8 --input "$tmp/nan.npy" --csv
succeeded "NaN input"
[ "$(field "$tmp/nan.npy" nan_in)" = 1 ] || fail "NaN input: nan_in, want 1"
# TE's fmaxf amax drops the NaN: the block keeps its scale
[ "$(field "$tmp/nan.npy" nan_scales)" = 0 ] || fail "NaN input: nan_scales, want 0 (fmaxf)"
for c in sqnr_db max_rel mean_rel bias bias_se; do
	case $(field "$tmp/nan.npy" $c) in
	nan | inf | -inf | "") fail "NaN input: $c is $(field "$tmp/nan.npy" $c), want finite" ;;
	esac
done
pass=$((pass + 1))
# the OCP floor rule (microxcaling's torch amax) makes the NaN's block NaN
run quant --recipe mxfp8:floor --input "$tmp/nan.npy" --csv
succeeded "NaN input, floor"
[ "$(field "$tmp/nan.npy" nan_scales)" = 1 ] || fail "NaN input, floor: nan_scales, want 1"
pass=$((pass + 1))
npy "$tmp/empty.npy" '<f4' '(0,)' ''
run quant --recipe nvfp4 --input "$tmp/empty.npy" --csv
succeeded "empty input"
[ "$(field "$tmp/empty.npy" n)" = 0 ] || fail "empty input: n, want 0"
sed 1d "$tmp/out" | tr ',' '\n' | grep -qx nan && fail "empty input: a nan in the row"

# ---- a .safetensors checkpoint: F32, F16, BF16 and a skipped I64 ----
h='{"w.f32":{"dtype":"F32","shape":[2,16],"data_offsets":[0,128]},'
h=$h'"w.f16":{"dtype":"F16","shape":[16],"data_offsets":[128,160]},'
h=$h'"b.bf16":{"dtype":"BF16","shape":[2,2,8],"data_offsets":[160,224]},'
h=$h'"step":{"dtype":"I64","shape":[2],"data_offsets":[224,240]}}'
v32=""
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32; do
	v32="$v32 -$i.$i"
done
# shellcheck disable=SC2086
d="$(enc fp32 $v32)$(enc fp16 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1 2 3 4 5 6 700)$(enc bf16 $v32)"
st "$tmp/ck.safetensors" "$h" "$d\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0"
run quant --recipe nvfp4 --input "$tmp/ck.safetensors" --csv
succeeded "checkpoint, every tensor"
[ "$(cut -d, -f1,2 "$tmp/out" | tr '\n' ' ')" = "name,status w.f32,ok w.f16,ok b.bf16,ok step,skipped total,total " ] ||
	fail "checkpoint: the rows: $(cut -d, -f1,2 "$tmp/out" | tr '\n' ' ')"
[ "$(field step dtype)" = I64 ] || fail "checkpoint: the skipped tensor's dtype"
[ "$(field b.bf16 shape)" = 2x2x8 ] || fail "checkpoint: b.bf16's shape"
[ "$(field b.bf16 dtype),$(field w.f16 dtype),$(field w.f32 dtype)" = BF16,F16,F32 ] ||
	fail "checkpoint: dtypes"
[ "$(field total n)" = 80 ] || fail "checkpoint: total n $(field total n), want 80"
[ "$(field total blocks)" = 7 ] || fail "checkpoint: total blocks $(field total blocks), want 2 + 1 + 4"
# the total's counts are the sums of the tensors'
for c in n saturated flushed lost within blocks; do
	s=$(awk -F, -v col=$c 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) k = i; next }
		$2 == "ok" { s += $k } END { print s }' "$tmp/out")
	[ "$s" = "$(field total $c)" ] || fail "checkpoint: total $c $(field total $c), sum $s"
done
pass=$((pass + 1))
# every row has as many fields as the header (no field holds a comma here)
awk -F, 'NR == 1 { n = NF } NF != n { exit 1 }' "$tmp/out" || fail "checkpoint: CSV field counts"
run quant --recipe nvfp4 --input "$tmp/ck.safetensors" --tensor b.bf16 --tensor w.f16 --csv
succeeded "checkpoint, --tensor"
[ "$(cut -d, -f1 "$tmp/out" | tr '\n' ' ')" = "name b.bf16 w.f16 total " ] ||
	fail "checkpoint, --tensor: rows $(cut -d, -f1 "$tmp/out" | tr '\n' ' ')"
run quant --recipe nvfp4 --input "$tmp/ck.safetensors" --tensor w.f16 --csv
[ "$(awk 'END { print NR }' "$tmp/out")" = 2 ] || fail "one --tensor: no total row"
pass=$((pass + 1))
# a tensor's name with control bytes (an escape that clears the screen): the
# table, the CSV and the worst-blocks lines show them as \xNN, never send them
h2='{"w\u001b[2J\u0007":{"dtype":"F16","shape":[16],"data_offsets":[0,32]}}'
st "$tmp/esc.safetensors" "$h2" "$(enc fp16 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1 2 3 4 5 6 700)"
for how in --csv "--per-block 2" ""; do
	# shellcheck disable=SC2086
	run quant --recipe nvfp4 --input "$tmp/esc.safetensors" $how
	succeeded "a tensor name with control bytes, $how"
	! LC_ALL=C grep -q "$(printf '[\033\007]')" "$tmp/out" "$tmp/err" ||
		fail "a tensor name's control bytes reached the output ($how)"
	grep -qF 'w\x1b[2J\x07' "$tmp/out" || fail "the tensor's name not shown as w\\x1b[2J\\x07 ($how)"
done
pass=$((pass + 1))
run quant --recipe mxfp8 --input "$tmp/ck.safetensors" --json --per-block 2
succeeded "checkpoint, --json"
[ "$(grep -c '^  {"name": ' "$tmp/out")" = 5 ] || fail "--json: 5 objects"
grep -q '^  {"name": "step", "status": "skipped", "shape": \[2\], "dtype": "I64"}' "$tmp/out" ||
	fail "--json: the skipped tensor"
grep -q '^  {"name": "total", "status": "total", "shape": null,.* "n": 80,' "$tmp/out" ||
	fail "--json: the total"
grep -q '"shape": \[2, 2, 8\], "dtype": "BF16"' "$tmp/out" || fail "--json: b.bf16's shape"
[ "$(grep -c '"worst_blocks": \[{' "$tmp/out")" = 3 ] || fail "--json: worst blocks per tensor"
[ "$(sed -n 1p "$tmp/out")" = "[" ] && [ "$(sed -n '$p' "$tmp/out")" = "]" ] || fail "--json: an array"
pass=$((pass + 1))
# written back: every tensor dequantised as F64 under its name, then read again
run quant --recipe nvfp4 --input "$tmp/ck.safetensors" --out "$tmp/deq.safetensors" --csv
succeeded "--out .safetensors"
run quant --recipe nvfp4 --input "$tmp/deq.safetensors" --csv
succeeded "--out .safetensors read back"
[ "$(cut -d, -f1,2,3,4 "$tmp/out" | tr '\n' ' ')" = "name,status,shape,dtype w.f32,ok,2x16,F64 w.f16,ok,16,F64 b.bf16,ok,2x2x8,F64 total,total,, " ] ||
	fail "--out .safetensors: $(cut -d, -f1,2,3,4 "$tmp/out" | tr '\n' ' ')"
run quant --recipe nvfp4 --input "$tmp/ck.safetensors" --tensor w.f32 --out "$tmp/enc.safetensors" --encodings
succeeded "--out .safetensors --encodings"
run quant --recipe nvfp4 --input "$tmp/enc.safetensors" --csv
[ "$(cut -d, -f1,2,4 "$tmp/out" | tr '\n' ' ')" = "name,status,dtype w.f32,ok,F64 w.f32.codes,skipped,U8 w.f32.scales,skipped,U8 w.f32.tensor_scale,ok,F32 total,total, " ] ||
	fail "--encodings .safetensors: $(cut -d, -f1,2,4 "$tmp/out" | tr '\n' ' ')"
[ "$(field w.f32.codes shape),$(field w.f32.scales shape)" = 2x16,2x1 ] || fail "--encodings: shapes"
pass=$((pass + 1))
# a --gen tensor with outliers written as a checkpoint and read back
run quant --recipe mxfp8 --gen normal --n 64 --rows 4 --outliers 1000:0.01 --out "$tmp/g.safetensors" --csv
succeeded "--gen --outliers --out"
run quant --recipe mxfp8 --input "$tmp/g.safetensors" --csv
[ "$(field gen:normal n)" = 256 ] || fail "--gen read back"
run quant --recipe mxfp8 --gen normal --n 64 --rows 4 --csv
succeeded "--gen without outliers"
a0=$(field gen:normal amax)
run quant --recipe mxfp8 --gen normal --n 64 --rows 4 --outliers 1000:0.01 --csv
a1=$(field gen:normal amax)
awk -v a="$a0" -v b="$a1" 'BEGIN { exit !(b > 100 * a) }' || fail "--outliers: amax $a1 against $a0"
run quant --recipe mxfp8 --gen normal --n 64 --rows 4 --outliers 1000:0 --csv
[ "$(field gen:normal amax)" = "$a0" ] || fail "--outliers K:0 is no outliers"
pass=$((pass + 1))

# ---- streaming: a tensor in two parts is the tensor in one, bit for bit ----
# row-wise 1x16 blocks do not see the row length, so 64 x 40960 (parts of
# 32768 rows) and 1 x 2621440 (one part) are the same blocks and SR indices
run quant --recipe nvfp4 --role grad --gen normal --n 64 --rows 40960 --csv --out "$tmp/p2.npy" --progress
[ "$rc" -eq 0 ] || fail "two parts: exit status $rc"
[ "$(grep -c '^quant: gen:normal  [0-9.]*/21.0 MB$' "$tmp/err")" = 2 ] || fail "--progress: one line per part"
cut -d, -f7- "$tmp/out" >"$tmp/p2.csv"
run quant --recipe nvfp4 --role grad --gen normal --n 2621440 --csv --out "$tmp/p1.npy"
succeeded "one part"
cut -d, -f7- "$tmp/out" | cmp -s - "$tmp/p2.csv" || fail "two parts and one differ in the statistics"
tail -c 20971520 "$tmp/p1.npy" >"$tmp/p1.bin"
tail -c 20971520 "$tmp/p2.npy" | cmp -s - "$tmp/p1.bin" || fail "two parts and one differ in the values"
rm -f "$tmp/p1.npy" "$tmp/p2.npy" "$tmp/p1.bin"

# ---- determinism ----
run quant --recipe nvfp4 --role grad --input "$tmp/ck.safetensors" --seed 7 --json --out "$tmp/s7a.safetensors"
cp "$tmp/out" "$tmp/s7a.json"
run quant --recipe nvfp4 --role grad --input "$tmp/ck.safetensors" --seed 7 --json --out "$tmp/s7b.safetensors"
cmp -s "$tmp/out" "$tmp/s7a.json" || fail "same seed, different report"
cmp -s "$tmp/s7a.safetensors" "$tmp/s7b.safetensors" || fail "same seed, different values"
run quant --recipe nvfp4 --role grad --input "$tmp/ck.safetensors" --seed 8 --json --out "$tmp/s8.safetensors"
cmp -s "$tmp/s7a.safetensors" "$tmp/s8.safetensors" && fail "another seed, the same SR values"
run quant --recipe nvfp4 --role act --input "$tmp/ck.safetensors" --seed 8 --out "$tmp/a8.safetensors"
run quant --recipe nvfp4 --role act --input "$tmp/ck.safetensors" --seed 9 --out "$tmp/a9.safetensors"
cmp -s "$tmp/a8.safetensors" "$tmp/a9.safetensors" || fail "RNE (act) depends on the seed"
pass=$((pass + 1))

# ---- errors: one line, exit 2, nothing on stdout, no file left ----
printf 'not an npy file\n' >"$tmp/junk.npy"
printf 'not a safetensors file\n' >"$tmp/junk.safetensors"
mkdir "$tmp/o"
O="$tmp/o/x.npy"
S="$tmp/o/x.safetensors"
CK="$tmp/ck.safetensors"
bade() {
	bad "$@"
	[ -z "$(ls -A "$tmp/o")" ] || fail "$1: left $(ls -A "$tmp/o")"
}
bade "unknown recipe" "nanmap: recipe 'bogus': unknown recipe 'bogus' (nanmap quant --list shows the built-ins; a custom recipe is KEY=VALUE,... as docs/recipes.md says)" \
	quant --recipe bogus --gen normal --n 4 --out "$O"
bade "missing file" "" quant --recipe nvfp4 --input "$tmp/none.npy" --out "$O"
grep -q "^nanmap: $tmp/none.npy: " "$tmp/err" || fail "missing file: the message names it"
bade "missing checkpoint" "" quant --recipe nvfp4 --input "$tmp/none.safetensors" --out "$S"
bade "corrupt .npy" "" quant --recipe nvfp4 --input "$tmp/junk.npy" --out "$O"
grep -q "^nanmap: $tmp/junk.npy: " "$tmp/err" || fail "corrupt .npy: the message names it"
bade "corrupt .safetensors" "" quant --recipe nvfp4 --input "$tmp/junk.safetensors" --out "$S"
grep -q "^nanmap: $tmp/junk.safetensors: " "$tmp/err" || fail "corrupt .safetensors: the message names it"
bade "--tensor not there" "nanmap: $CK: no tensor 'nope' (--tensor)" \
	quant --recipe nvfp4 --input "$CK" --tensor nope --out "$S"
bade "--tensor not decodable" "nanmap: $CK: tensor 'step' is I64, which quant cannot decode (--tensor)" \
	quant --recipe nvfp4 --input "$CK" --tensor step --out "$S"
bade "--tensor twice" "nanmap: --tensor 'w.f16' given twice" \
	quant --recipe nvfp4 --input "$CK" --tensor w.f16 --tensor w.f16
bade "--out .npy, several tensors" "nanmap: --out $O: a .npy holds one tensor, the input has 3 (write .safetensors, or pick one with --tensor)" \
	quant --recipe nvfp4 --input "$CK" --out "$O"
bade "--out other" "nanmap: --out '$tmp/o/x.bin': want a .npy or .safetensors file name" \
	quant --recipe nvfp4 --gen normal --n 4 --out "$tmp/o/x.bin"
bade "--out into a missing folder" "" quant --recipe nvfp4 --gen normal --n 4 --out "$tmp/o/no/x.npy"
bade "--input other" "nanmap: --input '$tmp/m.txt': want a .npy or .safetensors file" \
	quant --recipe nvfp4 --input "$tmp/m.txt"
bade "integer .npy" "" quant --recipe nvfp4 --input "$tmp/nvc.npy" --out "$O"
bade "--input and --gen" "nanmap: --input and --gen both give the input (use one)" \
	quant --recipe nvfp4 --input "$tmp/m.npy" --gen normal --n 4
bade "--csv and --json" "" quant --recipe nvfp4 --gen normal --n 4 --csv --json
bade "--n without --gen" "nanmap: --n goes with --gen (not with --input)" \
	quant --recipe nvfp4 --input "$tmp/m.npy" --n 4
bade "--outliers without --gen" "nanmap: --outliers goes with --gen (not with --input)" \
	quant --recipe nvfp4 --input "$tmp/m.npy" --outliers 10:0.1
bade "--gen without --n" "nanmap: --gen needs --n N (elements per row)" quant --recipe nvfp4 --gen normal
bade "bad --gen" "nanmap: unknown distribution 'cauchy' (--gen normal uniform logspace ones)" \
	quant --recipe nvfp4 --gen cauchy --n 4
bade "bad --outliers" "nanmap: bad --outliers '10:2' (want K:F, K finite, 0 <= F <= 1, e.g. 100:0.001)" \
	quant --recipe nvfp4 --gen normal --n 4 --outliers 10:2
bade "bad --role" "nanmap: unknown --role 'bias' (act weight grad)" quant --recipe nvfp4 --gen normal --n 4 --role bias
bade "--tensor with .npy" "nanmap: --tensor 'a' goes with a .safetensors --input" \
	quant --recipe nvfp4 --input "$tmp/m.npy" --tensor a
bade "--encodings without --out" "nanmap: --encodings goes with --out FILE" \
	quant --recipe nvfp4 --gen normal --n 4 --encodings
bade "--per-block with --csv" "" quant --recipe nvfp4 --gen normal --n 4 --per-block --csv
bade "--per-block 0" "" quant --recipe nvfp4 --gen normal --n 4 --per-block 0
bade "a stray argument" "nanmap: quant takes no arguments, 'x' is one (try: nanmap quant --help)" \
	quant --recipe nvfp4 --gen normal --n 4 x
bade "no recipe" "nanmap: quant needs --recipe NAME|SPEC (nanmap quant --list)" quant --gen normal --n 4
bade "no input" "nanmap: quant needs an input: --input FILE or --gen DIST --n N" quant --recipe nvfp4
bade "unknown option" "" quant --recipe nvfp4 --gen normal --n 4 --bogus
bade "--recipe twice" "" quant --recipe nvfp4 --recipe mxfp8 --gen normal --n 4
# --per-block K takes its K
run quant --recipe mxfp8 --gen normal --n 256 --per-block 3
succeeded "--per-block 3"
grep -q '^worst blocks of gen:normal (3 of 8, lowest SQNR first):$' "$tmp/out" || fail "--per-block 3: heading"

# ---- what cannot fit is refused up front, with the figures ----
# (NANMAP_MEMORY stands in for the machine's MemAvailable)
export NANMAP_MEMORY=8000000000
bade "--gen over memory" "nanmap: gen:normal: quantising 1 x 2147483648 values needs about 79 GB (37 bytes a value of a part of 1 row), more than the 8.0 GB of memory available" \
	quant --recipe nvfp4 --gen normal --n 2147483648
# a 2^31-element float32 .npy: its header is read, its 8.6 GB of data are not
# (a sparse file: no disk is used)
printf '\223NUMPY\001\000v\000{'"'"'descr'"'"': '"'"'<f4'"'"', '"'"'fortran_order'"'"': False, '"'"'shape'"'"': (2147483648,), }' >"$tmp/big.npy"
printf '%*s\n' $((128 - 10 - 1 - $(wc -c <"$tmp/big.npy") + 10)) '' >>"$tmp/big.npy"
truncate -s $((128 + 2147483648 * 4)) "$tmp/big.npy"
bade "a .npy over memory" "nanmap: $tmp/big.npy: 2147483648 values (8.6 GB of data) need about 34 GB to read (the data, then 12 bytes a value), more than the 8.0 GB of memory available" \
	quant --recipe nvfp4 --input "$tmp/big.npy" --out "$O"
unset NANMAP_MEMORY
rm -f "$tmp/big.npy"

# threads: the RHT's tiles run on every thread; the report and the
# encodings are the same bytes on 1, 2 and 7 (64 x 4096: 16384 tiles)
for th in 1 2 7; do
	OMP_NUM_THREADS=$th run quant --recipe nvfp4 --gen normal --n 4096 --rows 64 --colwise \
		--role grad --json --out "$tmp/th$th.npy" --encodings
	succeeded "quant on $th threads"
	mv "$tmp/out" "$tmp/th$th.json"
	[ "$th" = 1 ] && continue
	cmp -s "$tmp/th1.json" "$tmp/th$th.json" || fail "quant: $th threads' report differs from one's"
	cmp -s "$tmp/th1.npy" "$tmp/th$th.npy" || fail "quant: $th threads' codes differ from one's"
	pass=$((pass + 1))
done

echo "$T: $pass passed"
