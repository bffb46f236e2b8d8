#!/bin/sh
# tests/gpu/cli_gpu.sh — the runner end to end on the fake device (the emulator
# standing in for the GPU, build/gpu/nanmap-gpu-fake: needs no nvcc), the
# same device built from a deliberately wrong gpu/rows.h, which must fail
# the kern and quant comparisons (build/gpu/nanmap-gpu-mutant), then
# bin/nanmap-gpu's contract where no GPU is usable: one
# line "nanmap-gpu: no CUDA device (<reason>)" on stderr, nothing on stdout,
# exit 77; bad arguments: one line, exit 2, before any device is touched;
# --help: the usage, exit 0. CUDA_VISIBLE_DEVICES is emptied so the check
# is the same on a machine that has a GPU (the full run is gpu/check.sh).
# Run from the repository root: sh tests/gpu/cli_gpu.sh (NANMAP_GPU overrides
# the binary). Skips, saying so, when the binary was not built.
set -u
export LC_ALL=C # the sorted kernel lists below are in byte order

G=${NANMAP_GPU:-bin/nanmap-gpu}
F=${NANMAP_GPU_FAKE:-build/gpu/nanmap-gpu-fake}
MUT=${NANMAP_GPU_MUTANT:-build/gpu/nanmap-gpu-mutant}
tmp=$(mktemp -d) || exit 1
pass=0
skipped=0
# the counts for make test's closing line (tests/results.sh)
trap 'st=$?; [ -z "${NANMAP_RESULTS:-}" ] || printf "cli_gpu\t%s\t%s\t%s\n" "$pass" "$((st != 0))" "$skipped" >>"$NANMAP_RESULTS"; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

fail() {
	printf 'cli_gpu: FAIL: %s\n' "$1" >&2
	printf 'cli_gpu: stdout was:\n' >&2
	cat "$tmp/out" >&2
	printf 'cli_gpu: stderr was:\n' >&2
	cat "$tmp/err" >&2
	exit 1
}

run() {
	rc=0
	CUDA_VISIBLE_DEVICES='' "$G" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}

# ---- the fake device: every step, small sizes ----
# The device is the emulator, so every row must be identical, except the
# cuBLASLt promotion search, where exactly the interval the fake uses (128,
# none with FAST_ACCUM) must match and every other candidate must not: that
# proves the crafted inputs tell the intervals apart. The fake's softmax_ce,
# layernorm, rmsnorm, bce, matmul, batchnorm, optimizer and backward are
# gpu/rows.h, the row bodies
# gpu/kern.cu compiles, built with the emulator's operations
# (gpu/host_rows.c), so identical kern rows for every kernel, variant and
# policy prove that the CUDA code keeps the order of emu/kernels/softmax.c,
# emu/kernels/layernorm.c, emu/kernels/rmsnorm.c, emu/kernels/bce.c, emu/kernels/matmul.c
# (seq, fma=0 and 1; tc:h200, the mma.sync GEMM then the store, where
# storage is fp16 or bf16), emu/kernels/batchnorm.c (twopass, welford, eval),
# emu/kernels/optimizer.c (sgd, adamw, adamw_kahan, adamw_sr: its SR draw
# included) and emu/kernels/backward.c.
[ -x "$F" ] || { echo "cli_gpu: $F not built (make $F)" >&2; exit 1; }
rc=0
"$F" --out "$tmp/fake" --quick --stride 16777259 --pairs 4096 --tc-vectors gpu/testdata/tcv \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 0 ] || fail "fake run: exit $rc"
csv=$tmp/fake/nanmap-gpu.csv
[ -f "$csv" ] || fail "fake run: no $csv"
head -n 1 "$csv" | grep -q '^step,kernel,format,mode,compared,identical,' || fail "fake run: CSV header"
rows=$(tail -n +2 "$csv" | wc -l)
[ "$rows" -eq 1470 ] || fail "fake run: $rows rows, want 1470 (14 conv, 13 tables, 6 arith, 4 tc, 10 gemm, 2 gemmex, 28 lt, 532 kern, 135 kern replay, 265 kern cr-fp32, 6 quant, 248 attn, 192 attn replay, 15 rules)"
[ "$(grep -c '^kern,[^,]* replay,' "$csv")" -eq 135 ] || fail "fake run: kern replay rows missing"
for step in conv tables arith tc gemm gemmex lt kern quant attn rules; do
	grep -q "^$step," "$csv" || fail "fake run: no $step rows"
done
bad=$(awk -F, 'NR > 1 && NF != 13' "$csv" | wc -l)
[ "$bad" -eq 0 ] || fail "fake run: $bad CSV rows without 13 fields"
bad=$(awk -F, 'NR > 1 && $1 != "lt" && $13 != "identical"' "$csv" | wc -l)
[ "$bad" -eq 0 ] || fail "fake run: $bad rows not identical outside lt"
lt_ok=$(awk -F, '$1 == "lt" && $13 == "identical" { print $2 "/" $4 }' "$csv" | sort | tr '\n' ' ')
want="cublasLt e4m3xe4m3 FAST_ACCUM=0/model promote=128 cublasLt e4m3xe4m3 FAST_ACCUM=1/model promote=0 cublasLt e4m3xe5m2 FAST_ACCUM=0/model promote=128 cublasLt e4m3xe5m2 FAST_ACCUM=1/model promote=0 "
[ "$lt_ok" = "$want" ] || fail "fake run: lt rows identical: '$lt_ok', want '$want'"
# every kernel and variant the GPU runs, each under the six policies
kernels="backward scale=1,backward scale=65536,batchnorm eval,batchnorm twopass,batchnorm welford,bce naive,bce stable,layernorm onepass,layernorm twopass,layernorm welford,matmul seq,matmul seq fma=1,matmul tc:h200,optimizer adamw,optimizer adamw_kahan,optimizer adamw_sr,optimizer sgd,rmsnorm fp32stats,rmsnorm plain,rmsnorm prescaled,softmax_ce lse,softmax_ce maxsub,softmax_ce naive,"
got=$(awk -F, '$1 == "kern" && $2 !~ / replay$/ && $2 !~ / cr-fp32$/ { print $2 }' "$csv" | sort -u | tr '\n' ',')
[ "$got" = "$kernels" ] || fail "fake run: kern kernels '$got', want '$kernels'"
# the second pass: the fp32-compute policies (fp16/fp32/fp32, bf16/fp32/fp32, fp32)
# again with correctly rounded fp32 functions on the device, every kernel
got=$(awk -F, '$1 == "kern" && $2 ~ / cr-fp32$/ { sub(/ cr-fp32$/, "", $2); print $2 }' "$csv" | sort -u | tr '\n' ',')
[ "$got" = "$kernels" ] || fail "fake run: kern cr-fp32 kernels '$got', want '$kernels'"
got=$(awk -F, '$1 == "kern" && $2 ~ / cr-fp32$/ { print $3 }' "$csv" | sort -u | tr '\n' ',')
[ "$got" = "bf16/fp32/fp32,fp16/fp32/fp32,fp32/fp32/fp32," ] || fail "fake run: kern cr-fp32 policies '$got'"
[ "$(grep -c '^kern,[^,]* cr-fp32,' "$csv")" -eq 265 ] || fail "fake run: kern cr-fp32 rows missing"
# the disputed Tensor Core rules: one row a case of gpu/tc-rules.txt, and the
# case table with the reading the (fake) GPU returned: the model's, every one
[ "$(grep -c '^rules,' "$csv")" -eq 15 ] || fail "fake run: rules rows"
[ -f "$tmp/fake/tc-rules.csv" ] || fail "fake run: no tc-rules.csv"
head -n 1 "$tmp/fake/tc-rules.csv" | grep -qx 'case,in,out,gpu,model,other,reading' || fail "fake run: tc-rules.csv header"
[ "$(grep -c ',model$' "$tmp/fake/tc-rules.csv")" -eq 15 ] || fail "fake run: tc-rules.csv readings"
n=$(awk -F, '$1 == "kern" && $2 !~ / replay$/ && $2 !~ / cr-fp32$/ { print $2 "/" $3 }' "$csv" | sort -u | wc -l)
[ "$n" -eq 137 ] || fail "fake run: $n kernel/policy pairs in kern, want 137 (22 kernels x 6 policies, matmul tc:h200 x the 5 with fp16 or bf16 storage)"
# the block quantisers (gpu/rows.h, compiled for the host) against emu_quantize:
# elements and scales of each recipe, every one identical (checked above)
got=$(awk -F, '$1 == "quant" { print $2 "/" $3 "/" $4 }' "$csv" | tr '\n' ',')
want="mxfp8/e4m3/elements rn-satfinite,mxfp8/e8m0/block scales,mxfp8:e5m2/e5m2/elements rn-satfinite,mxfp8:e5m2/e8m0/block scales,deepseek/e4m3/elements rn-satfinite,deepseek/fp32/block scales,"
[ "$got" = "$want" ] || fail "fake run: quant rows '$got', want '$want'"
# attention: naive, online and fp8 with :tc:h200-mma (the GEMMs on the mma.sync
# GEMM: the fake's is the h200-mma model) and without (sequential FMA folds), and
# naive:bwd, online:bwd and fp8:bwd, the rest gpu/rows.h; causal or not; four policies
# (:tc only where the mma.sync takes the formats), against the engine and,
# with the tables, against the host replay
attn="attention fp8,attention fp8 causal,attention fp8:bwd,attention fp8:bwd causal,attention fp8:tc:h200-mma,attention fp8:tc:h200-mma causal,attention naive,attention naive causal,attention naive:bwd,attention naive:bwd causal,attention naive:tc:h200-mma,attention naive:tc:h200-mma causal,attention online,attention online causal,attention online:bwd,attention online:bwd causal,attention online:tc:h200-mma,attention online:tc:h200-mma causal,"
got=$(awk -F, '$1 == "attn" && $2 !~ / replay$/ { print $2 }' "$csv" | sort -u | tr '\n' ',')
[ "$got" = "$attn" ] || fail "fake run: attn kernels '$got', want '$attn'"
n=$(awk -F, '$1 == "attn" && $2 !~ / replay$/ { print $2 "/" $3 }' "$csv" | sort -u | wc -l)
[ "$n" -eq 68 ] || fail "fake run: $n attn kernel/policy pairs, want 68"
n=$(awk -F, '$1 == "attn" && $2 ~ / replay$/ { print $2 "/" $3 }' "$csv" | sort -u | wc -l)
[ "$n" -eq 54 ] || fail "fake run: $n attn replay kernel/policy pairs, want 54"
[ "$(grep -c '^table ' "$tmp/fake/gpu-tables.txt")" -eq 12 ] || fail "fake run: gpu-tables.txt"
grep -q '^| conv | __float2half_rn | fp16 | rn |' "$tmp/fake/nanmap-gpu.md" || fail "fake run: report table"
grep -q 'tc: SKIPPED bf16->fp32' "$tmp/fake/nanmap-gpu.md" || fail "fake run: tc skip not reported"
pass=$((pass + 1))

# ---- the negative check: rows.h with one operation per kernel moved ----
# build/gpu/nanmap-gpu-mutant is the fake device compiled from gpu/rows.h as
# gpu/testdata/rows-mutant.sed edits it: softmax_ce's sum of exponentials,
# layernorm's backward sum of dy·ŷ, rmsnorm's backward sum of g·dy·x̂ and
# backward's logit sums in the compute format instead of the accumulator's,
# bce's loss terms finished in the accumulator's instead of the compute's,
# matmul's sum of products and its fused step, batchnorm's backward sum
# of dy·(x − mean) (training and eval) and matmul tc's output (rounded into
# it before the store) in the compute format, the optimizer's first moment
# (sgd's momentum product, adamw's addition) in the state format,
# adamw_kahan's increment stored in the weights' format before it is
# compensated, adamw_sr's update draw keyed by the element's index within
# the step instead of its number over the steps; the
# block quantisers' amax dropping
# a NaN element (fmaxf, as TE's kernels take it) and deepseek's stored scale
# as fp32(1/s). The comparison above must catch that: every kernel has a
# row that is not identical, while the policies whose compute and
# accumulator formats are the same (where the edit changes nothing) stay
# identical; every quantiser recipe has a row that is not identical, and
# deepseek's scales row is among them.
[ -x "$MUT" ] || { echo "cli_gpu: $MUT not built (make $MUT)" >&2; exit 1; }
rc=0
"$MUT" --out "$tmp/mutant" --quick --only kern,quant,attn >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 0 ] || fail "mutant run: exit $rc"
mcsv=$tmp/mutant/nanmap-gpu.csv
[ -f "$mcsv" ] || fail "mutant run: no $mcsv"
# (the cr-fp32 pass, the fp32-compute policies again, counts as its kernel)
got=$(awk -F, '$1 == "kern" && $13 != "identical" { sub(/ cr-fp32$/, "", $2); print $2 }' "$mcsv" | sort -u | tr '\n' ',')
[ "$got" = "$kernels" ] || fail "mutant run: kernels with a row not identical: '$got', want '$kernels'"
bad=$(awk -F, '$1 == "kern" && $13 != "identical" && $2 !~ /^optimizer / && $3 !~ /^(fp16\/fp16|bf16\/bf16)\/fp32$/' "$mcsv" | wc -l)
[ "$bad" -eq 0 ] || fail "mutant run: $bad rows not identical where compute = accumulator"
# the optimizer has no accumulator: its edit moves rows only where compute is wider than state
bad=$(awk -F, '$1 == "kern" && $13 != "identical" && $2 ~ /^optimizer / && $3 !~ /^(fp16|bf16)\/fp32\/fp32$/' "$mcsv" | wc -l)
[ "$bad" -eq 0 ] || fail "mutant run: $bad optimizer rows not identical where compute = state"
got=$(awk -F, '$1 == "quant" && $13 != "identical" { print $2 }' "$mcsv" | sort -u | tr '\n' ',')
[ "$got" = "deepseek,mxfp8,mxfp8:e5m2," ] || fail "mutant run: quant recipes with a row not identical: '$got'"
grep -q '^quant,deepseek,fp32,block scales,.*,MISMATCH$' "$mcsv" || fail "mutant run: deepseek's 1/s scale not caught"
# attention: l, the rescaled O, P·V's running sum and dV's sums rounded to C
# move every variant where C is narrower than A, and nothing where they are
# the same format
got=$(awk -F, '$1 == "attn" && $13 != "identical" { print $2 }' "$mcsv" | sort -u | tr '\n' ',')
[ "$got" = "$attn" ] || fail "mutant run: attn kernels with a row not identical: '$got', want '$attn'"
bad=$(awk -F, '$1 == "attn" && $13 != "identical" && $3 !~ /^(fp16\/fp16|bf16\/bf16)\/fp32$/' "$mcsv" | wc -l)
[ "$bad" -eq 0 ] || fail "mutant run: $bad attn rows not identical where compute = accumulator"
pass=$((pass + 1))

if [ ! -x "$G" ]; then
	skipped=7 # the checks below: no device, five bad arguments, --help
	echo "cli_gpu: $pass checks passed; SKIPPED the other $skipped: $G not built (make gpu needs the CUDA toolkit)"
	exit 0
fi

# no device: exit 77 and exactly one line
run --out "$tmp/o"
[ "$rc" = 77 ] || fail "no device: exit $rc, want 77"
[ ! -s "$tmp/out" ] || fail "no device: something on stdout"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "no device: want one line on stderr"
grep -q '^nanmap-gpu: no CUDA device (..*)$' "$tmp/err" || fail "no device: wrong line"
[ ! -e "$tmp/o" ] || fail "no device: the output directory was created"
pass=$((pass + 1))

# bad arguments: exit 2, one line, checked before the device
for args in "--bogus" "--only nothing" "--stride 0" "--chunk-log2 40" "--out"; do
	# shellcheck disable=SC2086
	run $args
	[ "$rc" = 2 ] || fail "'$args': exit $rc, want 2"
	[ ! -s "$tmp/out" ] || fail "'$args': something on stdout"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$args': want one line on stderr"
	grep -q '^nanmap-gpu: ' "$tmp/err" || fail "'$args': no 'nanmap-gpu:' prefix"
	pass=$((pass + 1))
done

# help
run --help
[ "$rc" = 0 ] || fail "--help: exit $rc"
grep -q '^usage: nanmap-gpu' "$tmp/out" || fail "--help: no usage"
pass=$((pass + 1))

echo "cli_gpu: $pass checks passed"
