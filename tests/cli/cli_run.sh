#!/bin/sh
# tests/cli/cli_run.sh — `nanmap run`, end to end: exact results for small cases
# whose arithmetic is worked out in docs/run.md (softmax_ce's fp16 overflow
# boundary), the CSV and JSON layouts, the generator against its documented
# formula, .npy inputs, fast == exact, and the error convention (one stderr
# line, exit 2, nothing on stdout) on every error path.
# Run from the repository root after the build: sh tests/cli/cli_run.sh
# NANMAP=path overrides the binary. Stops at the first failure.
set -u

T=cli_run
. tests/cli/cli_lib.sh

# succeeded DESC: the last run exited 0 and wrote nothing on stderr.
succeeded() {
	[ "$rc" -eq 0 ] || fail "$1: exit status $rc"
	[ ! -s "$tmp/err" ] || fail "$1: wrote to stderr"
}

# ok DESC WANT ARGS...: success, and stdout is exactly WANT.
ok() {
	desc=$1
	want=$2
	shift 2
	run "$@"
	succeeded "$desc"
	got=$(cat "$tmp/out")
	if [ "$got" != "$want" ]; then
		printf 'cli_run: got:\n%s\ncli_run: want:\n%s\n' "$got" "$want" >&2
		fail "$desc: wrong output"
	fi
	pass=$((pass + 1))
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

# ok_has DESC 'ARGS' LINE...: run ARGS (split at blanks), success, has LINEs.
ok_has() {
	desc=$1
	args=$2
	shift 2
	# shellcheck disable=SC2086 # the arguments are split on purpose
	run $args
	succeeded "$desc"
	has "$desc" "$@"
}

P16=storage=fp16
SM="run softmax_ce --policy $P16 --variant naive"

# ---- help ----
run run --help
succeeded "run --help"
grep -q '^usage: nanmap run KERNEL' "$tmp/out" || fail "run --help: usage line"
grep -q '^  softmax_ce  *naive maxsub lse' "$tmp/out" || fail "run --help: kernel list"
pass=$((pass + 1))
run --help
grep -q 'nanmap run KERNEL' "$tmp/out" || fail "nanmap --help names run"
pass=$((pass + 1))

# ---- softmax_ce at fp16's exp overflow boundary (docs/run.md) ----
# exp(11.0859375) = 65247.1 rounds to 65248 < 65520: no overflow, but
# s = 65248 + 1 rounds back to 65248, so the loss log(s) - x_0 cancels to 0
# and grad[1] = 1/65248 is the fp16 subnormal 257 * 2^-24. The whole CSV:
ok "naive below the boundary, every row of the CSV" "backend,kind,key,value
,run,kernel,softmax_ce
,run,variant,naive
,run,policy,storage=fp16
,run,input,values
,run,rows,1
,run,cols,2
,run,seed,0
fast,status,status,ok
fast,meta,loss.format,fp16
fast,meta,loss.n,1
fast,meta,grad.format,fp16
fast,meta,grad.n,2
fast,output,loss[0],0
fast,bits,loss[0],0x0000
fast,output,grad[0],0
fast,bits,grad[0],0x0000
fast,output,grad[1],1.5318393707275391e-05
fast,bits,grad[1],0x0101
fast,stored,n,2
fast,stored,changed,0
fast,stored,overflow,0
fast,stored,flushed,0
fast,ops,cvt,12
fast,ops,add,3
fast,ops,sub,2
fast,ops,div,5
fast,ops,exp,2
fast,ops,log,1
fast,flags,add.inexact,1
fast,flags,div.underflow,1
fast,flags,div.inexact,1
fast,flags,exp.inexact,1
fast,flags,log.inexact,1" \
	run softmax_ce --policy storage=fp16 --variant naive --values 11.0859375,0 --no-truth --csv

# Against truth the same run loses the loss (1.53e-05 in truth, 0 here):
# status underflow, the loss's error is 257 ulps of fp16's subnormal quantum.
ok_has "naive below the boundary, with truth" "$SM --values 11.0859375,0 --csv" \
	'fast,status,status,underflow' 'fast,metric,loss.lost,1' 'fast,metric,grad.lost,1' \
	'fast,output,loss[0],0'
# One fp16 step up, exp(11.09375) = 65758 overflows: exp is the first
# operation that failed (element 0); e/s = inf/inf is NaN, so the status is
# nan (nan > inf > overflow) and the loss is inf.
ok_has "naive above the boundary" "$SM --values 11.09375,0 --csv" \
	'fast,status,status,nan' 'fast,first,op,exp' 'fast,first,step,exp' \
	'fast,first,index,0' 'fast,first,flags,overflow' 'fast,flags,exp.overflow,1' \
	'fast,flags,div.invalid,1' 'fast,output,loss[0],inf' 'fast,bits,loss[0],0x7c00' \
	'fast,output,grad[0],nan' 'fast,metric,loss.max_ulp,inf'
grep -q '^truth,' "$tmp/out" && fail "--backend fast printed the truth run"
ok_has "naive above the boundary, truth" "$SM --values 11.09375,0 --csv --backend truth" \
	'truth,status,status,ok' 'truth,output,loss[0],1.520695599584634e-05' \
	'truth,meta,loss.format,real'
grep -q '^fast,\|,metric,\|,bits,' "$tmp/out" && fail "--backend truth printed more"
ok_has "--no-truth: no truth run, no metrics" "$SM --values 11.09375,0 --csv --no-truth" \
	'fast,status,status,nan' 'fast,first,op,exp'
grep -q '^truth,\|,metric,' "$tmp/out" && fail "--no-truth printed truth or metrics"
# maxsub subtracts the max first: exp(0) and exp(-11.09375), no overflow;
# the loss log(1 + e^-11.09375) = 1.5e-05 is lost to 1 + tiny = 1 in fp16.
ok_has "maxsub does not overflow" "run softmax_ce --policy $P16 --variant maxsub --values 11.09375,0 --csv" \
	'fast,status,status,underflow' 'fast,output,loss[0],0' 'fast,metric,loss.lost,1'
grep -q ',first,' "$tmp/out" && fail "maxsub: an operation failed"
# The overflow status (an operation overflowed, the outputs are finite):
# with overflow=sat, storing 70000 into fp16 saturates to 65504 and raises
# overflow; lse's outputs stay finite. Truth stores its inputs the same way.
ok_has "overflow status: a saturated input" \
	"run softmax_ce --policy storage=fp16,overflow=sat --variant lse --values 70000,0 --csv --backend all" \
	'fast,status,status,overflow' 'fast,first,op,cvt' 'fast,first,step,input' \
	'fast,first,index,0' 'exact,status,status,overflow' ',agree,fast==exact,yes'
# lse keeps (60000, 0) finite: loss = 60000 + log(1 + e^-60000) - 60000 = 0.
# The gradient of class 1 is e^-60000: nonzero in truth (MPFR's exponent
# range holds it, a double does not), 0 in fp16, so the status is underflow.
ok_has "lse with 60000,0 is finite" \
	"run softmax_ce --policy $P16 --variant lse --values 60000,0 --csv --backend all" \
	'fast,status,status,underflow' 'fast,output,loss[0],0' 'fast,output,grad[0],0' \
	'fast,output,grad[1],0' 'fast,metric,grad.lost,1' 'exact,status,status,underflow' \
	'truth,status,status,ok' ',agree,fast==exact,yes'
ok_has "the default variant is the first (naive)" "run softmax_ce --policy $P16 --values 1 --csv" \
	',run,variant,naive'

# ---- the text report ----
ok "text report, fast and truth" "softmax_ce naive, policy storage=fp16, input 1 x 2 (values), seed 0

fast: nan
  loss  fp16[1]  inf
        max_ulp inf  rel_err inf
  grad  fp16[2]  nan 0
        max_ulp inf  rel_err inf  lost 1
  flags div   5 ops: invalid 1
        exp   2 ops: overflow 1, inexact 1
  first exp at step exp, element 0: overflow" \
	run softmax_ce --policy storage=fp16 --variant naive --values 11.09375,0
ok_has "--backend all says fast == exact" "$SM --values 11.09375,0 --backend all" \
	'fast == exact: yes' 'exact: nan' 'truth: ok'
ok_has "--backend all on generated data" \
	"run softmax_ce --policy storage=bf16,compute=fp32 --gen logspace --n 40 --rows 3 --seed 9 --backend all" \
	'fast == exact: yes'
ok_has "--backend all, --no-truth: fast and exact only" \
	"run softmax_ce --policy storage=e4m3,compute=fp32 --gen normal --n 20 --rows 2 --backend all --no-truth" \
	'fast == exact: yes'
grep -q '^truth:' "$tmp/out" && fail "--backend all --no-truth ran truth"
ok_has "a big output is summarised" "run softmax_ce --policy $P16 --gen ones --scale 0 --n 32 --no-truth" \
	'  grad  fp16[32]  min -0.96875  max 0.03125' \
	'                  first 8: -0.96875 0.03125 0.03125 0.03125 0.03125 0.03125 0.03125 0.03125'

# ---- JSON ----
run run softmax_ce --policy "$P16" --variant naive --values 11.09375,0 --json --backend all
succeeded "--json"
grep -q '"fast_equals_exact": true' "$tmp/out" || fail "--json: fast_equals_exact"
grep -q '"values": \["inf"\]' "$tmp/out" || fail "--json: inf as a string"
grep -q '"first": {"op": "exp", "step": "exp", "index": 0, "flags": "overflow"}' "$tmp/out" ||
	fail "--json: first"
pass=$((pass + 1))
if command -v python3 >/dev/null 2>&1; then
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["backends"]["fast"]["status"] == "nan"' \
		<"$tmp/out" || fail "--json does not parse"
	run run softmax_ce --policy 'storage={p=5,emax=15},compute=fp32' --gen normal --n 20 --json \
		--param label=3
	succeeded "--json, custom format"
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["backends"]["fast"]["outputs"][1]["values"]) == 20' \
		<"$tmp/out" || fail "--json with a custom format does not parse or lacks values"
	pass=$((pass + 2))
else
	echo "cli_run: python3 not found, skipping the JSON parse checks"
fi
ok_has "CSV quotes a policy with commas" \
	"run softmax_ce --policy storage=fp16,compute=fp32 --values 0,0 --csv --no-truth" \
	',run,policy,"storage=fp16,compute=fp32"'

# ---- inputs: --values --rows, --param, --gen ----
ok_has "--rows reshapes --values" "run softmax_ce --policy $P16 --values 1,2,3,4 --rows 2 --csv" \
	',run,rows,2' ',run,cols,2' 'fast,meta,grad.n,4'
# p = (1/2, 1/2); the label's gradient is p - 1, the other p.
ok_has "--param label" "run softmax_ce --policy $P16 --values 0,0 --param label=1 --csv --no-truth" \
	',param,label,1' 'fast,output,grad[0],0.5' 'fast,output,grad[1],-0.5' \
	'fast,output,loss[0],0.693359375'
# ones: p_j = 1/4, loss = log 4 rounded to fp16.
ok_has "--gen ones" "run softmax_ce --policy $P16 --gen ones --n 4 --csv --no-truth" \
	'fast,output,loss[0],1.38671875' 'fast,output,grad[0],-0.75' 'fast,output,grad[3],0.25'
# The generator is docs/run.md's formula: these --values are
# 2·((SplitMix64 output 2i+1 from state 7) >> 11)·2^-53 − 1, computed outside.
run run softmax_ce --policy storage=fp32 --gen uniform --n 4 --seed 7 --csv --backend truth
succeeded "--gen uniform"
grep ',output,' "$tmp/out" >"$tmp/gen"
run run softmax_ce --policy storage=fp32 --csv --backend truth \
	--values=-0.22034050321745702,0.8015213612137668,-0.09511620997706327,-0.0640939915542531
grep ',output,' "$tmp/out" | cmp -s - "$tmp/gen" || fail "--gen uniform is not the documented generator"
pass=$((pass + 1))
run run softmax_ce --policy storage=fp32 --gen logspace --n 3 --seed 5 --csv --no-truth
grep ',output,' "$tmp/out" >"$tmp/gen"
run run softmax_ce --policy storage=fp32 --csv --no-truth \
	--values=-0.08114114502223936,0.0026619391383339184,0.0009865801591892132
grep ',output,' "$tmp/out" | cmp -s - "$tmp/gen" || fail "--gen logspace is not the documented generator"
pass=$((pass + 1))
run run softmax_ce --policy "$P16" --gen normal --n 5 --rows 2 --seed 3 --csv
cp "$tmp/out" "$tmp/gen"
run run softmax_ce --policy "$P16" --gen normal --n 5 --rows 2 --seed 3 --csv
cmp -s "$tmp/out" "$tmp/gen" || fail "--gen normal is not reproducible"
run run softmax_ce --policy "$P16" --gen normal --n 5 --rows 2 --seed 4 --csv
cmp -s "$tmp/out" "$tmp/gen" && fail "--gen normal ignores --seed"
pass=$((pass + 1))

# ---- .npy inputs ----
npy "$tmp/f8.npy" '<f8' '(2,)' '\000\000\000\000\000\054\046\100\000\000\000\000\000\000\000\000'
npy "$tmp/f4.npy" '<f4' '(2, 2)' '\000\140\061\101\000\000\000\000\000\000\000\000\000\000\000\000'
npy "$tmp/f2.npy" '<f2' '(2,)' '\213\111\000\000'
npy "$tmp/u1.npy" '|u1' '(2,)' '\001\002'
npy "$tmp/f8x3.npy" '<f8' '(3,)' '\000\000\000\000\000\054\046\100\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000'
printf 'not an npy file\n' >"$tmp/junk.npy"
for f in f8 f2; do
	ok_has "--input float ${f#f}" "$SM --input $tmp/$f.npy --csv --no-truth" \
		'fast,status,status,ok' 'fast,output,grad[1],1.5318393707275391e-05' ',run,rows,1' \
		',run,cols,2'
done
ok_has "--input 2-D float32" "$SM --input $tmp/f4.npy --csv --no-truth" \
	',run,rows,2' ',run,cols,2' 'fast,output,grad[1],7.62939453125e-06' 'fast,meta,grad.n,4'
ok_has "--input 1-D reshaped by --rows" "$SM --input $tmp/f8.npy --rows 2 --csv --no-truth" \
	',run,rows,2' ',run,cols,1'
bad "--input junk" "" run softmax_ce --policy "$P16" --input "$tmp/junk.npy"
grep -q "^nanmap: $tmp/junk.npy: " "$tmp/err" || fail "--input junk: the message names the file"
bad "--input integer dtype" "nanmap: $tmp/u1.npy: dtype |u1 (run takes float16, float32 or float64)" \
	run softmax_ce --policy "$P16" --input "$tmp/u1.npy"
bad "--input missing" "" run softmax_ce --policy "$P16" --input "$tmp/none.npy"
# a bad policy key names the valid ones
bad "unknown policy key" "nanmap: bad policy 'storage=fp16,frob=1': unknown policy key 'frob' (keys: storage compute accum round overflow subnormals seed scale role grad state)" \
	run softmax_ce --policy storage=fp16,frob=1 --values 1
bad "--input shape mismatch" \
	"nanmap: shape mismatch: 3 values do not make 2 equal rows (--rows)" \
	run softmax_ce --policy "$P16" --input "$tmp/f8x3.npy" --rows 2

# ---- errors: one line on stderr, exit 2, nothing on stdout ----
bad "no kernel" "" run --policy storage=fp16 --values 1
grep -q "^nanmap: run needs a KERNEL (kernels: .*softmax_ce" "$tmp/err" ||
	fail "no kernel: the message lists the kernels"
bad "unknown kernel" "" run softmax --policy storage=fp16 --values 1
grep -q "^nanmap: unknown kernel 'softmax' (kernels: .*softmax_ce" "$tmp/err" ||
	fail "unknown kernel: the message lists the kernels"
bad "unknown variant" "nanmap: unknown variant 'safe' for softmax_ce (variants: naive maxsub lse)" \
	run softmax_ce --policy "$P16" --variant safe --values 1
bad "no policy" "nanmap: run needs --policy SPEC (e.g. --policy storage=fp16,compute=fp32)" \
	run softmax_ce --values 1
bad "bad policy format" "nanmap: bad policy 'storage=fp17': unknown format 'fp17'" \
	run softmax_ce --policy storage=fp17 --values 1
bad "bad policy key" "" run softmax_ce --policy storage=fp16,colour=red --values 1
bad "policy key twice" \
	"nanmap: bad policy 'storage=fp16,compute=fp16,compute=bf16': policy key 'compute' given twice" \
	run softmax_ce --policy storage=fp16,compute=fp16,compute=bf16 --values 1
bad "policy seed=-3 (was 2^64 - 3)" \
	"nanmap: bad policy 'storage=fp16,seed=-3': bad seed '-3' in policy (an unsigned 64-bit integer)" \
	run softmax_ce --policy storage=fp16,seed=-3 --values 1
bad "policy seed beyond 64 bits" "" \
	run softmax_ce --policy storage=fp16,seed=18446744073709551616 --values 1
bad "policy without storage" "" run softmax_ce --policy compute=fp32 --values 1
bad "bad value" "nanmap: bad value '1.2.3' in --values (item 2)" \
	run softmax_ce --policy "$P16" --values 1,1.2.3
bad "empty value" "nanmap: bad value '' in --values (item 2)" run softmax_ce --policy "$P16" --values 1,,2
bad "no input" "nanmap: run needs an input: --input FILE, --values LIST or --gen DIST" \
	run softmax_ce --policy "$P16"
bad "two inputs" "nanmap: --values and --gen both give the input (use one)" \
	run softmax_ce --policy "$P16" --values 1 --gen ones --n 2
bad "unknown distribution" \
	"nanmap: unknown distribution 'gauss' (--gen normal uniform logspace ones)" \
	run softmax_ce --policy "$P16" --gen gauss --n 2
bad "--gen without --n" "nanmap: --gen needs --n N (elements per row)" \
	run softmax_ce --policy "$P16" --gen ones
bad "--n without --gen" "nanmap: --n goes with --gen (not with --values)" \
	run softmax_ce --policy "$P16" --values 1 --n 2
bad "--range without logspace" "nanmap: --range goes with --gen logspace (not --gen normal)" \
	run softmax_ce --policy "$P16" --gen normal --n 2 --range 1,2
bad "bad --range" "nanmap: bad --range '2,1' (want LO,HI with 0 < LO <= HI, finite)" \
	run softmax_ce --policy "$P16" --gen logspace --n 2 --range 2,1
bad "bad --n" "nanmap: bad --n '0': too small (at least 1)" run softmax_ce --policy "$P16" --gen ones --n 0
# one integer parser: it says whether a count is too large or not an integer
bad "--n 1e12 is too large" "nanmap: bad --n '1e12': too large (at most 2147483648)" \
	run softmax_ce --policy "$P16" --gen ones --n 1e12
bad "--n 2.5 is not an integer" \
	"nanmap: bad --n '2.5': not an integer (want an integer in [1, 2147483648])" \
	run softmax_ce --policy "$P16" --gen ones --n 2.5
bad "--n 1e30 is too large" "nanmap: bad --n '1e30': too large (at most 2147483648)" \
	run softmax_ce --policy "$P16" --gen ones --n 1e30
ok_has "--n 1e1 is ten" "$SM --gen ones --n 1e1 --no-truth" \
	'softmax_ce naive, policy storage=fp16, input 1 x 10 (gen ones), seed 0'
bad "bad --rows" "nanmap: bad --rows 'x': not a number (want an integer in [1, 2147483648])" \
	run softmax_ce --policy "$P16" --values 1 --rows x
bad "--rows -2" "nanmap: bad --rows '-2': too small (at least 1)" \
	run softmax_ce --policy "$P16" --values 1 --rows -2
bad "bad --scale" "nanmap: bad --scale 'inf' (a finite number)" \
	run softmax_ce --policy "$P16" --gen ones --n 2 --scale inf
bad "bad seed" "nanmap: bad --seed '-1': too small (at least 0)" \
	run softmax_ce --policy "$P16" --values 1 --seed -1
bad "too many elements" \
	"nanmap: --n 100000 x --rows 100000 is too many elements (at most 2147483648)" \
	run softmax_ce --policy "$P16" --gen ones --n 100000 --rows 100000
bad "shape mismatch" "nanmap: shape mismatch: 3 values do not make 2 equal rows (--rows)" \
	run softmax_ce --policy "$P16" --values 1,2,3 --rows 2
bad "parameter without a value" "nanmap: bad parameter 'label' (want NAME=VALUE, e.g. eps=1e-5)" \
	run softmax_ce --policy "$P16" --values 1 --param label
bad "non-numeric parameter" "nanmap: bad value 'two' for parameter 'label' (a number)" \
	run softmax_ce --policy "$P16" --values 1 --param label=two
bad "unknown parameter" \
	"nanmap: unknown parameter 'lable' for softmax_ce (it reads: label=Y (default: row mod classes))" \
	run softmax_ce --policy "$P16" --values 1 --param lable=1
bad "parameter twice" "nanmap: parameter 'label' given twice" \
	run softmax_ce --policy "$P16" --values 1 --param label=1 --param label=0
bad "unknown backend" "nanmap: unknown backend 'gpu' (backends: fast exact truth all)" \
	run softmax_ce --policy "$P16" --values 1 --backend gpu
bad "--no-truth with --backend truth" "nanmap: --no-truth and --backend truth exclude each other" \
	run softmax_ce --policy "$P16" --values 1 --backend truth --no-truth
bad "option twice" "nanmap: option '--policy' given twice" \
	run softmax_ce --policy "$P16" --values 1 --policy storage=bf16
bad "--csv --json" "nanmap: --csv and --json exclude each other (give one)" \
	run softmax_ce --policy "$P16" --values 1 --csv --json
bad "--json --csv=" "" run softmax_ce --policy "$P16" --values 1 --json --csv
bad "two kernels" "nanmap: run takes one KERNEL, 'lse' is a second one" \
	run softmax_ce lse --policy "$P16" --values 1
bad "unknown option" "nanmap: unknown option '--frob' for run (try: nanmap run --help)" \
	run softmax_ce --policy "$P16" --values 1 --frob
bad "option without a value" "nanmap: option '--values' needs a value" \
	run softmax_ce --policy "$P16" --values

# --gpu-tables: the fast backend replays a table (here every fp16 hexp is
# 1.0, so exp(11.09375) no longer overflows); fast and exact are not compared
awk 'BEGIN { print "table hexp fp16 65536"; for (i = 0; i < 4096; i++) {
	for (j = 0; j < 16; j++) printf "3c00%s", j < 15 ? " " : "\n" } }' >"$tmp/gt.txt"
ok_has "--gpu-tables replays the table in fast" \
	"$SM --values 11.09375,0 --backend all --gpu-tables $tmp/gt.txt" \
	'fast: ok' 'exact: nan' 'fast == exact: not compared (--gpu-tables)'
bad "--gpu-tables, missing file" "nanmap: cannot read $tmp/none.txt: No such file or directory" \
	run softmax_ce --policy "$P16" --values 1 --gpu-tables "$tmp/none.txt"
head -n 3 "$tmp/gt.txt" >"$tmp/short.txt"
bad "--gpu-tables, short table" "nanmap: $tmp/short.txt:3: last table is short" \
	run softmax_ce --policy "$P16" --values 1 --gpu-tables "$tmp/short.txt"

# ---- kernel parameters: each checked against its range before any use ----
# (label=1e300 was converted to size_t first: undefined behaviour)
V2="--policy $P16 --values 1,2,3,4 --rows 2"
for lab in 5 -1 0.5 nan 1e300; do
	shown=$lab
	[ "$lab" = 1e300 ] && shown=1e+300
	bad "softmax_ce label=$lab" "nanmap: softmax_ce: label=$shown must be an integer in [0, 1]" \
		run softmax_ce $V2 --param label=$lab
done
ok_has "softmax_ce label=1 (in range)" "run softmax_ce $V2 --param label=1" 'fast: ok'
bad "layernorm eps=nan" "nanmap: layernorm: eps=nan must be finite and >= 0" \
	run layernorm $V2 --param eps=nan
bad "layernorm eps=-1" "nanmap: layernorm: eps=-1 must be finite and >= 0" \
	run layernorm $V2 --param eps=-1
bad "layernorm dy=inf" "nanmap: layernorm: dy=inf must be a finite number" \
	run layernorm $V2 --param dy=inf
bad "gradscaler init=nan" "nanmap: gradscaler: init=nan must be finite, in (0, 3.40282347e+38]" \
	run gradscaler $V2 --param init=nan
bad "gradscaler backoff=1" "nanmap: gradscaler: backoff=1 must be finite, in (0, 1)" \
	run gradscaler $V2 --param backoff=1
bad "gradscaler interval=2.5" \
	"nanmap: gradscaler: interval=2.5 must be an integer in [1, 2147483647]" \
	run gradscaler $V2 --param interval=2.5
bad "gradscaler gfmt=8" "nanmap: gradscaler: gfmt=8 must be 0, 16 or 32" \
	run gradscaler $V2 --param gfmt=8
bad "backward classes=0" "nanmap: backward: classes=0 must be an integer in [1, 4096]" \
	run backward $V2 --param classes=0
bad "backward scale=-1" "nanmap: backward: scale=-1 must be finite, in (0, 3.40282347e+38]" \
	run backward $V2 --param scale=-1
bad "accum k=nan" "nanmap: accum: k=nan must be an integer in [1, 1000000000000]" \
	run accum $V2 --param k=nan
bad "accum gradacc scale=0" "nanmap: accum: scale=0 must be finite and > 0" \
	run accum $V2 --variant gradacc --param scale=0

# ---- memory: a run that cannot fit is refused before it allocates ----
# (--n 2147483648 used to run for minutes and then say out of memory)
# (NANMAP_MEMORY stands for the machine's available memory, in bytes)
export NANMAP_MEMORY=24000000000
bad "--n 2^31 with truth" \
	"nanmap: --n 2147483648: the run needs about 1185 GB (input 17 GB, fast 69 GB, truth 1100 GB), more than the 24 GB of memory available (--no-truth skips truth)" \
	run softmax_ce --policy "$P16" --gen ones --n 2147483648
export NANMAP_MEMORY=24000000000
bad "--n 2^31 --no-truth" \
	"nanmap: --n 2147483648: the run needs about 86 GB (input 17 GB, fast 69 GB), more than the 24 GB of memory available" \
	run softmax_ce --policy "$P16" --gen ones --n 2147483648 --no-truth
export NANMAP_MEMORY=24000000000
bad "--n x --rows, fast and exact" \
	"nanmap: --n 65536 x --rows 32768: the run needs about 120 GB (input 17 GB, fast 52 GB, exact 52 GB), more than the 24 GB of memory available" \
	run layernorm --policy "$P16" --gen ones --n 65536 --rows 32768 --no-truth --backend all
export NANMAP_MEMORY=100
bad "--values checked too" \
	"nanmap: --values: the run needs about 2208 bytes (input 32 bytes, fast 128 bytes, truth 2048 bytes), more than the 100 bytes of memory available (--no-truth skips truth)" \
	run softmax_ce --policy "$P16" --values 1,2,3,4
export NANMAP_MEMORY=1000000
ok_has "a small run fits" "$SM --values 1,2" 'fast: ok'
unset NANMAP_MEMORY

# ---- --recompute: the kernel again under a second policy, compared ----
# fp32 compute holds exp(11.09375) = 65758.9; an fp16 recompute overflows it
# (docs/run.md's boundary), so loss and one gradient become inf/NaN there.
ok_has "--recompute in fp16 after an fp32 forward" \
	"run softmax_ce --variant naive --policy storage=fp16,compute=fp32 --recompute $P16 --values 11.09375,0 --no-truth" \
	'fast: ok' \
	'recompute fast, policy storage=fp16: nan' \
	'  loss  fp16[1]  differ 1 (first 0)  new inf/nan 1' \
	'  grad  fp16[2]  differ 2 (first 0)  new inf/nan 1' \
	'  first exp at step exp, element 0: overflow'
ok_has "--recompute under the same policy reproduces every bit" \
	"run layernorm --policy storage=bf16,round=sr,seed=7 --recompute storage=bf16,round=sr,seed=7 --gen normal --n 16 --rows 2 --no-truth" \
	'recompute fast, policy storage=bf16,round=sr,seed=7: ok' \
	'  y     bf16[32]  differ 0' \
	'  dx    bf16[32]  differ 0'
ok_has "--recompute with another SR seed differs" \
	"run layernorm --policy storage=bf16,round=sr,seed=7 --recompute storage=bf16,round=sr,seed=8 --gen normal --n 16 --rows 2 --no-truth --csv" \
	',recompute,policy,"storage=bf16,round=sr,seed=8"' \
	'fast,recompute,status,ok' \
	'fast,recompute,y.n,32' \
	'fast,recompute,y.new_nonfinite,0'
grep -q '^fast,recompute,y.differ,0$' "$tmp/out" && fail "another SR seed: y identical"
pass=$((pass + 1))
ok_has "--recompute on fast and exact, CSV" \
	"run softmax_ce --variant naive --policy storage=fp16,compute=fp32 --recompute $P16 --values 11.09375,0 --no-truth --backend all --csv" \
	'fast,recompute,loss.differ,1' \
	'fast,recompute,loss.new_nonfinite,1' \
	'exact,recompute,grad.new_nonfinite,1' \
	'exact,recompute,grad.gone_nonfinite,0' \
	',agree,fast==exact,yes'
ok_has "--recompute, JSON" \
	"run softmax_ce --variant naive --policy storage=fp16,compute=fp32 --recompute $P16 --values 11.09375,0 --no-truth --json" \
	'  "recompute": {"policy": "storage=fp16",' \
	'      {"name": "loss", "format": "fp16", "n": 1, "differ": 1, "new_nonfinite": 1, "gone_nonfinite": 0},'
bad "--recompute with a bad policy" "nanmap: bad --recompute policy 'storage=fp17': unknown format 'fp17'" \
	run softmax_ce --policy "$P16" --recompute storage=fp17 --values 1
bad "--recompute with truth alone" \
	"nanmap: --recompute compares fast or exact runs (not --backend truth alone)" \
	run softmax_ce --policy "$P16" --recompute "$P16" --backend truth --values 1
bad "--recompute given twice" "" \
	run softmax_ce --policy "$P16" --recompute "$P16" --recompute "$P16" --values 1

# ---- progress: on a terminal only, one line that the end erases ----
if command -v script >/dev/null 2>&1; then
	rc=0
	script -qc "$N run accum --policy $P16 --gen ones --n 4194304 --no-truth >/dev/null" \
		/dev/null >"$tmp/tty" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || fail "progress on a terminal: exit status $rc"
	tr '\r' '\n' <"$tmp/tty" | grep -q '^nanmap run: fast backend, [0-9.]* s elapsed' ||
		fail "progress on a terminal: no phase line"
	pass=$((pass + 1))
fi
run run accum --policy "$P16" --gen ones --n 4194304 --no-truth
succeeded "no progress line when stderr is not a terminal"
pass=$((pass + 1))

echo "cli_run: $pass checks passed"
