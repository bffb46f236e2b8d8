#!/bin/sh
# tests/cli/cli_gemm.sh — `nanmap gemm`, end to end: known answers worked out
# in docs/gemm.md (all-ones operands whose quantisation and accumulation
# are exact), both models, the CSV and JSON layouts, determinism, and the
# error convention (one stderr line, exit 2, nothing on stdout).
# Run from the repository root after the build: sh tests/cli/cli_gemm.sh
# NANMAP=path overrides the binary. Stops at the first failure.
set -u

T=cli_gemm
. tests/cli/cli_lib.sh

succeeded() {
	[ "$rc" -eq 0 ] || fail "$1: exit status $rc"
	[ ! -s "$tmp/err" ] || fail "$1: wrote to stderr"
}

# has DESC LINE...: every LINE is a whole line of the last run's stdout.
has() {
	desc=$1
	shift
	for line in "$@"; do
		grep -qxF -- "$line" "$tmp/out" || fail "$desc: no line '$line'"
	done
	pass=$((pass + 1))
}

# ---- help ----
run gemm --help
succeeded "gemm --help"
grep -q '^usage: nanmap gemm --recipe R --model blackwell|hopper' "$tmp/out" || fail "gemm --help: usage"
pass=$((pass + 1))
run --help
grep -q 'nanmap gemm --recipe R' "$tmp/out" || fail "nanmap --help names gemm"
pass=$((pass + 1))

# ---- known answers ----
# K = 32 ones with A scaled by 2^3: MXFP8 stores A as 256·2^-5 and B as
# 256·2^-8, one kind::mxf8f6f4 instruction sums 32 products of 2^16 with
# scale exponents -13: exactly 32·2^3 = 256 per output.
run gemm --recipe mxfp8 --model blackwell --m 2 --n 3 --k 32 --gen ones --scale 8 --scale-b 1 --csv
succeeded "mxfp8 ones"
has "mxfp8 ones" "instruction,\"tcgen05 kind::mxf8f6f4, ue8m0 per 32\"" "quant_sqnr_db_a,inf" \
	"max_rel_vs_exact,0" "sqnr_db_vs_exact,inf" "outputs,6" "outputs_inf,0" "outputs_nan,0" \
	"d[0],256" "d[5],256"
# every one of the six outputs is 256
[ "$(grep -c '^d\[[0-9]\],256$' "$tmp/out")" -eq 6 ] || fail "mxfp8 ones: six outputs of 256"
pass=$((pass + 1))

# K = 100 (three full instructions and a padded fourth), A = 0.5, B = -3: -150
run gemm --recipe mxfp8 --model blackwell --m 1 --n 2 --k 100 --gen ones --scale 0.5 --scale-b -3 --csv
succeeded "mxfp8 K tail"
has "mxfp8 K tail" "d[0],-150" "d[1],-150" "max_rel_vs_exact,0"

# NVFP4 with amax 5.25: S_enc = 2688/5.25 = 2^9, so t_A, t_B and alpha are
# exact; 64 products of 5.25² = 1764
run gemm --recipe nvfp4 --model blackwell --m 1 --n 1 --k 64 --gen ones --scale 5.25 --csv
succeeded "nvfp4 ones"
has "nvfp4 ones" "instruction,\"tcgen05 kind::mxf4nvf4, ue4m3 per 16\"" "d[0],1764" \
	"max_rel_vs_dequantised,0"

# Hopper, power-of-two DeepSeek scales: 256 ones, two 128-chunks promoted
run gemm --recipe deepseek:pow2 --model hopper --m 2 --n 2 --k 256 --gen ones --csv
succeeded "hopper ones"
has "hopper ones" "instruction,\"wgmma fp8 h100, promoted every 128\"" "d[0],256" "d[3],256"
run gemm --recipe deepseek:pow2 --model hopper --m 2 --n 2 --k 256 --gen ones --fma --csv
succeeded "hopper ones --fma"
has "hopper ones --fma" "d[0],256"

# Mixed operands (--recipe-b): B = 1.1 is 288·2^-8 = 1.125 in MXFP8's e4m3 but
# 32768·2^-15 = 1 in e5m2 (two fraction bits); 32 products with A = 1
run gemm --recipe mxfp8 --model blackwell --m 1 --n 2 --k 32 --gen ones --scale-b 1.1 --csv
succeeded "e4m3 x e4m3"
has "e4m3 x e4m3" "d[0],36" "d[1],36"
run gemm --recipe mxfp8 --recipe-b mxfp8:e5m2 --model blackwell --m 1 --n 2 --k 32 --gen ones \
	--scale-b 1.1 --csv
succeeded "e4m3 x e5m2"
has "e4m3 x e5m2" "recipe,mxfp8" "recipe_b,mxfp8:e5m2" "d[0],32" "d[1],32" \
	"max_rel_vs_dequantised,0"
run gemm --recipe deepseek:pow2 --recipe-b deepseek:pow2,elem=e5m2 --model hopper --m 1 --n 1 \
	--k 128 --gen ones --scale-b 1.1 --csv
succeeded "hopper e4m3 x e5m2"
has "hopper e4m3 x e5m2" "d[0],128" "max_rel_vs_dequantised,0"
run gemm --recipe mxfp8 --recipe-b mxfp8:e5m2 --model blackwell --m 1 --n 1 --k 32 --gen ones
has "mixed text" "gemm mxfp8 x mxfp8:e5m2 on blackwell (tcgen05 kind::mxf8f6f4, ue8m0 per 32): 1 x 1 x 32, gen ones (scale 1), seed 1"

# ---- the text and JSON reports ----
run gemm --recipe mxfp8 --model blackwell --m 2 --n 3 --k 32 --gen ones --scale 8 --scale-b 1
succeeded "text"
has "text" "outputs              6: inf 0, nan 0" \
	"first outputs        256 256 256 256 256 256"
run gemm --recipe mxfp8 --model blackwell --m 2 --n 3 --k 32 --gen ones --json
succeeded "json"
has "json" '  "quant_sqnr_db_a": "inf",' '  "d[0]": 32,' '  "outputs_nan": 0,'
[ "$(head -n 1 "$tmp/out")" = "{" ] && [ "$(tail -n 1 "$tmp/out")" = "}" ] || fail "json: braces"
pass=$((pass + 1))

# ---- random data: the accumulation error is far below the quantisation error ----
run gemm --recipe mxfp8 --model blackwell --m 16 --n 16 --k 256 --seed 7 --csv
succeeded "mxfp8 normal"
awk -F, '$1 == "sqnr_db_vs_exact" { e = $2 } $1 == "sqnr_db_vs_dequantised" { d = $2 }
	END { exit !(e > 20 && e < 40 && d > 120) }' "$tmp/out" ||
	fail "mxfp8 normal: SQNR vs exact in (20, 40) dB, vs dequantised above 120 dB"
pass=$((pass + 1))
# the 13-bit Hopper FP8 accumulator costs far more than Blackwell's 25 bits
run gemm --recipe deepseek --model hopper --m 16 --n 16 --k 1024 --seed 7 --csv
succeeded "hopper normal"
awk -F, '$1 == "sqnr_db_vs_dequantised" { d = $2 } END { exit !(d > 60 && d < 100) }' "$tmp/out" ||
	fail "hopper normal: SQNR vs dequantised in (60, 100) dB"
pass=$((pass + 1))

# ---- determinism: the same seed gives the same bytes, another seed does not ----
run gemm --recipe nvfp4 --model blackwell --m 8 --n 8 --k 128 --seed 3 --csv
cp "$tmp/out" "$tmp/a"
run gemm --recipe nvfp4 --model blackwell --m 8 --n 8 --k 128 --seed 3 --csv
cmp -s "$tmp/out" "$tmp/a" || fail "determinism: two runs differ"
run gemm --recipe nvfp4 --model blackwell --m 8 --n 8 --k 128 --seed 4 --csv
! cmp -s "$tmp/out" "$tmp/a" || fail "determinism: another seed gives the same report"
pass=$((pass + 1))

# ---- errors: one line on stderr, exit 2, nothing on stdout ----
bad "no recipe" "nanmap: gemm needs --recipe R (e.g. --recipe mxfp8)" \
	gemm --model blackwell --m 1 --n 1 --k 32
bad "no model" "nanmap: gemm needs --model blackwell|hopper" gemm --recipe mxfp8 --m 1 --n 1 --k 32
bad "no sizes" "nanmap: gemm needs --m, --n and --k" gemm --recipe mxfp8 --model blackwell --m 1
bad "unknown model" "nanmap: unknown --model 'ampere' (blackwell hopper)" \
	gemm --recipe mxfp8 --model ampere --m 1 --n 1 --k 32
bad "unknown recipe" "" gemm --recipe mxfp9 --model blackwell --m 1 --n 1 --k 32
bad "bad --k" "" gemm --recipe mxfp8 --model blackwell --m 1 --n 1 --k 0
bad "bad --gen" "nanmap: unknown --gen 'cauchy' (normal uniform logspace ones)" \
	gemm --recipe mxfp8 --model blackwell --m 1 --n 1 --k 32 --gen cauchy
bad "bad --scale" "nanmap: bad --scale 'big' (a finite number)" \
	gemm --recipe mxfp8 --model blackwell --m 1 --n 1 --k 32 --scale big
bad "an argument" "" gemm --recipe mxfp8 --model blackwell --m 1 --n 1 --k 32 extra
bad "--csv and --json" "" gemm --recipe mxfp8 --model blackwell --m 1 --n 1 --k 32 --csv --json
bad "--fma on blackwell" \
	"nanmap: --fma is hopper's promotion; blackwell accumulates in the Tensor Core" \
	gemm --recipe mxfp8 --model blackwell --m 1 --n 1 --k 32 --fma
bad "fp32 scales on blackwell" "" gemm --recipe deepseek --model blackwell --m 1 --n 1 --k 128
grep -q "^nanmap: recipe deepseek: blackwell takes MX recipes" "$tmp/err" ||
	fail "fp32 scales on blackwell: the message names the recipe"
bad "FP4 on hopper" "nanmap: recipe nvfp4: hopper's FP8 wgmma takes e4m3 or e5m2 elements" \
	gemm --recipe nvfp4 --model hopper --m 1 --n 1 --k 64
bad "32-blocks on hopper" "" gemm --recipe mxfp8 --model hopper --m 1 --n 1 --k 256
bad "--recipe-b with other scales" \
	"nanmap: --recipe-b nvfp4: its scale format differs from --recipe mxfp8's (one instruction takes one kind of scale)" \
	gemm --recipe mxfp8 --recipe-b nvfp4 --model blackwell --m 1 --n 1 --k 64
bad "unknown --recipe-b" "" gemm --recipe mxfp8 --recipe-b mxfp9 --model blackwell --m 1 --n 1 --k 32
bad "too much work" "" gemm --recipe mxfp8 --model blackwell --m 65536 --n 65536 --k 32

# threads: the output elements and the exact products run on every thread;
# the report is the same bytes on 1, 2 and 7 (2^19 products, above the
# threshold at which the rows are cut into parts)
for th in 1 2 7; do
	OMP_NUM_THREADS=$th run gemm --recipe nvfp4 --model blackwell --m 64 --n 64 --k 128 --json
	succeeded "gemm on $th threads"
	mv "$tmp/out" "$tmp/th$th.json"
	OMP_NUM_THREADS=$th run gemm --recipe deepseek --model hopper --m 32 --n 64 --k 256 --csv
	succeeded "hopper gemm on $th threads"
	mv "$tmp/out" "$tmp/th$th.csv"
	[ "$th" = 1 ] && continue
	cmp -s "$tmp/th1.json" "$tmp/th$th.json" || fail "gemm: $th threads' report differs from one's"
	cmp -s "$tmp/th1.csv" "$tmp/th$th.csv" || fail "gemm: $th threads' hopper report differs"
	pass=$((pass + 1))
done

echo "cli_gemm: $pass checks passed"
