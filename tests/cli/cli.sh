#!/bin/sh
# tests/cli/cli.sh — the command line's contract, end to end: exact CSV for known
# cases (each one a fact from docs/numerics.md), stdin modes, and the error
# convention (one stderr line, exit 2, nothing on stdout) on every error path.
# Run from the repository root after the build: sh tests/cli/cli.sh
# NANMAP=path overrides the binary. Stops at the first failure.
set -u

T=cli
. tests/cli/cli_lib.sh

# run_in INPUT ARGS...: the same with INPUT (printf %b escapes) on stdin.
run_in() {
	input=$1
	shift
	rc=0
	printf '%b' "$input" | "$N" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}

# expect DESC WANT: the last run succeeded, quietly, and printed WANT.
expect() {
	[ "$rc" -eq 0 ] || fail "$1: exit status $rc"
	[ ! -s "$tmp/err" ] || fail "$1: wrote to stderr"
	got=$(cat "$tmp/out")
	if [ "$got" != "$2" ]; then
		printf 'cli: got:\n%s\ncli: want:\n%s\n' "$got" "$2" >&2
		fail "$1: wrong output"
	fi
	pass=$((pass + 1))
}

# ok DESC WANT ARGS...
ok() {
	desc=$1
	want=$2
	shift 2
	run "$@"
	expect "$desc" "$want"
}

# ok_in DESC INPUT WANT ARGS...
ok_in() {
	desc=$1
	input=$2
	want=$3
	shift 3
	run_in "$input" "$@"
	expect "$desc" "$want"
}

# bad_in DESC MESSAGE INPUT ARGS...
bad_in() {
	desc=$1
	msg=$2
	input=$3
	shift 3
	run_in "$input" "$@"
	if [ -n "$msg" ]; then expect_err "$desc" "$msg"; else expect_err "$desc"; fi
}

R='format,input,bits,value,class,flags'
O='format,op,a,b,c,bits,value,class,flags'

# ---- help, version, sweep ----
# ok_grep DESC REGEX ARGS...: success, and a line of stdout matches REGEX.
ok_grep() {
	desc=$1
	re=$2
	shift 2
	run "$@"
	[ "$rc" -eq 0 ] || fail "$desc: exit status $rc"
	grep -q "$re" "$tmp/out" || fail "$desc: no line matches $re"
	pass=$((pass + 1))
}

ok_grep "--help" '^usage: nanmap' --help
ok_grep "help" 'nanmap op OP' help
ok_grep "-h after a command" '^usage: nanmap' round -h
ok_grep "--version" '^nanmap [0-9][0-9.]*$' --version
# (the sweep itself: tests/sweep/cli_sweep.sh)
ok_grep "sweep --help" '^usage: nanmap sweep' sweep --help
bad "sweep without a PATH" "nanmap: sweep needs a PATH (a .case file or a directory, e.g. cases)" sweep

# ---- formats ----
run formats --csv
[ "$rc" -eq 0 ] || fail "formats --csv: exit $rc"
[ "$(head -n 1 "$tmp/out")" = \
	"name,bits,precision,bias,emin,emax,max,min_normal,min_subnormal,epsilon,has_inf,nan" ] ||
	fail "formats --csv: header"
grep -qx 'fp16,16,11,15,-14,15,65504,6.103515625e-05,5.9604644775390625e-08,0.0009765625,yes,ieee' \
	"$tmp/out" || fail "formats --csv: fp16 row"
grep -qx 'e4m3,8,4,7,-6,8,448,0.015625,0.001953125,0.125,no,fn' "$tmp/out" ||
	fail "formats --csv: e4m3 row"
grep -qx 'tf32,19,11,127,-126,127,3.4011621342146535e+38,1.1754943508222875e-38,1.1479437019748901e-41,0.0009765625,yes,ieee' \
	"$tmp/out" || fail "formats --csv: tf32 row"
pass=$((pass + 1))
ok "formats of a custom spec (quoted: it has commas)" \
"name,bits,precision,bias,emin,emax,max,min_normal,min_subnormal,epsilon,has_inf,nan
\"p=4,emax=8,nan=fn\",8,4,7,-6,8,448,0.015625,0.001953125,0.125,no,fn" \
	formats --csv p=4,emax=8,nan=fn
ok_grep "formats table" '^name  *bits  *precision  *bias' formats

# ---- round: overflow thresholds (numerics.md, Overflow) ----
ok "fp16 65519.99 rounds to max, 65520 overflows" "$R
fp16,65519.99,0x7bff,65504,normal,inexact
fp16,65520,0x7c00,inf,inf,overflow|inexact" \
	round -f fp16 --csv 65519.99 65520
ok "fp16 --sat and rtz keep max" "$R
fp16,65520,0x7bff,65504,normal,overflow|inexact" \
	round -f fp16 --sat --csv 65520
ok "e4m3 464 ties to 448, 465 is NaN" "$R
e4m3,464,0x7e,448,normal,inexact
e4m3,465,0x7f,nan,nan,overflow|inexact" \
	round -f e4m3 --csv 464 465
ok "e4m3 --sat 465 saturates" "$R
e4m3,465,0x7e,448,normal,overflow|inexact" \
	round -f e4m3 --sat --csv 465
ok "bf16 1+2^-8 ties to even (down), 1+3*2^-8 ties to even (up)" "$R
bf16,1.00390625,0x3f80,1,normal,inexact
bf16,1.01171875,0x3f82,1.015625,normal,inexact
bf16,0x1.01p0,0x3f80,1,normal,inexact" \
	round -f bf16 --csv 1.00390625 1.01171875 0x1.01p0
# strtod gives the halfway point 1.00146484375 itself: rounding through
# double would tie to 0x3c02; the exact decimal is below it.
ok "the decimal is rounded exactly, not through double" "$R
fp16,1.00146484374999999999999,0x3c01,1.0009765625,normal,inexact
fp16,1.00146484375,0x3c02,1.001953125,normal,inexact" \
	round -f fp16 --csv 1.00146484374999999999999 1.00146484375
ok "the default formats, input echoed as given" "$R
fp16,0X1.8P3,0x4a00,12,normal,-
bf16,0X1.8P3,0x4140,12,normal,-
e4m3,0X1.8P3,0x54,12,normal,-
e5m2,0X1.8P3,0x4a,12,normal,-" \
	round --csv 0X1.8P3
ok "inf, -inf, nan, -0 (every -f adds formats; rows go value by value)" "$R
fp16,-INF,0xfc00,-inf,inf,-
e4m3,-INF,0xff,nan,nan,overflow|inexact
fp16,nan,0x7e00,nan,nan,-
e4m3,nan,0x7f,nan,nan,-
fp16,-0,0x8000,-0,zero,-
e4m3,-0,0x80,-0,zero,-" \
	round -f fp16 --csv -INF nan -0 -f e4m3
ok "formats list with a custom spec, and tiny values" "$R
fp16,1e-99999,0x0000,0,zero,underflow|inexact
\"p=5,emax=16,nan=fn,nosub\",1e-99999,0x000,0,zero,underflow|inexact
e8m0,1e-99999,0x00,5.8774717541114375e-39,normal,underflow|inexact
fp16,-1e99999,0xfc00,-inf,inf,overflow|inexact
\"p=5,emax=16,nan=fn,nosub\",-1e99999,0x3ff,nan,nan,overflow|inexact
e8m0,-1e99999,0xff,nan,nan,invalid" \
	round --csv -f fp16,p=5,emax=16,nan=fn,nosub -f e8m0 1e-99999 -1e99999
ok "directed modes" "$R
fp16,0.1,0x2e67,0.10003662109375,normal,inexact
fp16,-0.1,0xae66,-0.0999755859375,normal,inexact" \
	round -f fp16 -r up --csv 0.1 -0.1
ok "ftz flushes a tiny result" "$R
fp16,0x1p-20,0x0000,0,zero,underflow|inexact" \
	round -f fp16 --ftz --csv 0x1p-20
ok "tf32 has 5 hex digits" "$R
tf32,1,0x1fc00,1,normal,-" \
	round -f tf32 --csv 1

# SR: (seed, index) decide; index counts values over args and stdin alike.
# 1+2^-8 lies halfway in bf16: each of the 16 draws is a coin flip.
h=1.00390625
sr16="$h $h $h $h $h $h $h $h $h $h $h $h $h $h $h $h"
# shellcheck disable=SC2086
run round -r sr --seed 42 --csv -f bf16 $sr16
[ "$rc" -eq 0 ] || fail "sr: exit $rc"
cp "$tmp/out" "$tmp/sr1"
grep -q 0x3f81 "$tmp/sr1" || fail "sr: never rounded up"
grep -q 0x3f80 "$tmp/sr1" || fail "sr: never rounded down"
pass=$((pass + 1))
# shellcheck disable=SC2086
run round -r sr --seed 42 --csv -f bf16 $sr16
cmp -s "$tmp/out" "$tmp/sr1" || fail "sr: not reproducible"
pass=$((pass + 1))
# shellcheck disable=SC2086
run_in "$h\n$h\n$h\n$h\n$h\n$h\n$h\n$h\n" round -r sr --seed=42 --csv -f bf16 $h $h - $h $h $h $h $h $h
cmp -s "$tmp/out" "$tmp/sr1" || fail "sr: stdin values do not continue the index"
pass=$((pass + 1))
# shellcheck disable=SC2086
run round -r sr --seed 43 --csv -f bf16 $sr16
cmp -s "$tmp/out" "$tmp/sr1" && fail "sr: the seed changes nothing"
pass=$((pass + 1))

# ---- round from stdin ----
ok_in "round -: one value per line, blanks and CRLF tolerated" \
	'1\n\n  2.5 \r\n-0x1p-24\n' "$R
fp16,1,0x3c00,1,normal,-
fp16,2.5,0x4100,2.5,normal,-
fp16,-0x1p-24,0x8001,-5.9604644775390625e-08,subnormal,-" \
	round -f fp16 --csv -
ok "aligned table for people" "format  input     bits    value  class   flags
fp16    65519.99  0x7bff  65504  normal  inexact" \
	round -f fp16 65519.99

# ---- op ----
ok "op add --bits" "$O
fp16,add,0x3c00,0x3c00,,0x4000,2,normal,-" \
	op add -f fp16 --bits --csv 0x3c00 0x3c00
ok "a signaling NaN operand raises invalid and gives the quiet NaN" "$O
fp16,add,0x7c1b,0x3c00,,0x7e00,nan,nan,invalid" \
	op add --bits --csv 0x7c1b 0x3c00
ok "a quiet NaN operand raises nothing" "$O
fp16,add,0x7e00,0x3c00,,0x7e00,nan,nan,-" \
	op add --bits --csv 0x7e00 0x3c00
ok "min with a signaling NaN returns the number and raises invalid" "$O
fp16,min,0x7c1b,0x3c00,,0x3c00,1,normal,invalid" \
	op min --bits --csv 0x7c1b 0x3c00
ok "e5m2 fma with a signaling NaN addend" "$O
e5m2,fma,0x3c,0x3c,0x7d,0x7e,nan,nan,invalid" \
	op fma -f e5m2 --bits --csv 0x3c 0x3c 0x7d
ok "op div 1 0 is inf with divbyzero only" "$O
fp16,div,1,0,,0x7c00,inf,inf,divbyzero" \
	op div --csv 1 0
# fp16 exp overflows iff exp(z) >= 65520, i.e. z >= ln 65520 = 11.09011...:
# 11.0859375 is below (exp = 65247.14 -> 65248), 11.09375 the next value.
ok "op exp below and above the fp16 overflow threshold" "$O
fp16,exp,11.0859375,,,0x7bf7,65248,normal,inexact" \
	op exp --csv 11.0859375
ok "op exp overflow" "$O
fp16,exp,11.09375,,,0x7c00,inf,inf,overflow|inexact" \
	op exp -f fp16 --csv 11.09375
ok "op exp overflow with --sat" "$O
fp16,exp,11.09375,,,0x7bff,65504,normal,overflow|inexact" \
	op exp --sat --csv 11.09375
ok "op exp overflow toward zero" "$O
fp16,exp,11.09375,,,0x7bff,65504,normal,overflow|inexact" \
	op exp -r rtz --csv 11.09375
ok "op sqrt" "$O
fp16,sqrt,2,,,0x3da8,1.4140625,normal,inexact" \
	op sqrt --csv 2
ok "op fma exact zero is +0, or -0 rounding down" "$O
fp16,fma,2,3,-6,0x0000,0,zero,-" \
	op fma --csv 2 3 -6
ok "op fma -r down" "$O
fp16,fma,2,3,-6,0x8000,-0,zero,-" \
	op fma -r down --csv 2 3 -6
ok "op min: -0 < +0" "$O
fp16,min,-0,0,,0x8000,-0,zero,-" \
	op min --csv -- -0 0
ok "op max ignores a NaN" "$O
fp16,max,nan,1,,0x3c00,1,normal,-" \
	op max --csv nan 1
ok "op log 0" "$O
fp16,log,0,,,0xfc00,-inf,inf,divbyzero" \
	op log --csv 0
ok "op sub inf inf" "$O
fp16,sub,inf,inf,,0x7e00,nan,nan,invalid" \
	op sub --csv inf inf
ok "op rsqrt, exp2 exact" "$O
e4m3,exp2,3,,,0x50,8,normal,-" \
	op exp2 -f e4m3 --csv 3
ok "e4m3 448*448 is NaN; --sat 448" "$O
e4m3,mul,0x7e,0x7e,,0x7f,nan,nan,overflow|inexact" \
	op mul -f e4m3 --bits --csv 0x7e 0x7e
ok "e4m3 --sat" "$O
e4m3,mul,0x7e,0x7e,,0x7e,448,normal,overflow|inexact" \
	op mul -f e4m3 --bits --sat --csv 0x7e 0x7e
ok_in "op -: lines of operands" '1 2\n\n0x1p-14\t0x1p-24\n' "$O
fp16,mul,1,2,,0x4000,2,normal,-
fp16,mul,6.103515625e-05,5.9604644775390625e-08,,0x0000,0,zero,underflow|inexact" \
	op mul --csv -
ok_in "op - with --bits" '0x3c00 0x3c00\n0x7bff 0x7bff\n' "$O
fp16,add,0x3c00,0x3c00,,0x4000,2,normal,-
fp16,add,0x7bff,0x7bff,,0x7c00,inf,inf,overflow|inexact" \
	op add --bits --csv -
ok "op table drops empty columns" "format  op   a  bits    value  class   flags
fp16    exp  0  0x3c00  1      normal  -" \
	op exp 0

# ---- a custom spec behaves exactly like the built-in it describes ----
vals='0 -0 0.001953125 0x1p-10 0x1.8p-10 1 3.14 448 464 465 -500 1e-9 inf -inf nan'
for m in rne rtz up down rna; do
	# shellcheck disable=SC2086
	run round -r "$m" --csv -f e4m3 $vals
	sed 1d "$tmp/out" | sed 's/^e4m3,//' >"$tmp/a"
	# shellcheck disable=SC2086
	run round -r "$m" --csv -f p=4,emax=8,nan=fn $vals
	sed 1d "$tmp/out" | sed 's/^"p=4,emax=8,nan=fn",//' >"$tmp/b"
	cmp -s "$tmp/a" "$tmp/b" || fail "p=4,emax=8,nan=fn differs from e4m3 in round -r $m"
	pass=$((pass + 1))
done
for o in "add 0x7e 0x08" "mul 0x7e 0x48" "div 0x38 0x00" "sqrt 0xb8" "exp 0x50" "sub 0x7f 0x38"; do
	# shellcheck disable=SC2086
	run op $o --bits --csv -f e4m3
	sed 1d "$tmp/out" | sed 's/^e4m3,//' >"$tmp/a"
	# shellcheck disable=SC2086
	run op $o --bits --csv -f p=4,emax=8,nan=fn
	sed 1d "$tmp/out" | sed 's/^"p=4,emax=8,nan=fn",//' >"$tmp/b"
	cmp -s "$tmp/a" "$tmp/b" || fail "p=4,emax=8,nan=fn differs from e4m3 in op $o"
	pass=$((pass + 1))
done

# ---- errors: one line on stderr, exit 2, nothing on stdout ----
bad "no command" "nanmap: missing command (try: nanmap --help)"
bad "unknown command" "nanmap: unknown command 'frob' (try: nanmap --help)" frob
bad "unknown format" "nanmap: unknown format 'fp17' (try: nanmap formats)" round -f fp17 1
bad "unknown format in a list" "nanmap: unknown format 'fp17' (try: nanmap formats)" \
	round -f fp16,fp17 1
bad "bad custom spec" "" round -f p=4,emax=9 1
bad "unknown format in formats" "nanmap: unknown format 'fp17' (try: nanmap formats)" formats fp17
bad "empty list item" "nanmap: bad format list 'fp16,,bf16' (an empty item)" round -f fp16,,bf16 1
bad "bad value" "nanmap: bad value '1.2.3'" round 1.2.3
bad "trailing garbage" "nanmap: bad value '1e'" round 1e
bad "blank in a value" "nanmap: bad value ' 1'" round ' 1'
bad "empty value" "nanmap: bad value ''" round ''
bad "infinity is not a word we take" "nanmap: bad value 'infinity'" round infinity
bad "no value" "nanmap: round needs a VALUE (or '-' to read stdin, or --input FILE.npy)" round
bad "unknown mode" "nanmap: unknown rounding mode 'rnd' (modes: rne rtz up down rna sr)" \
	round -r rnd 1
bad "bad seed" "nanmap: bad --seed '-1': too small (at least 0)" round --seed -1 1
bad "seed not an integer" \
	"nanmap: bad --seed '1.5': not an integer (want an integer in [0, 18446744073709551615])" \
	round --seed 1.5 1
bad "seed overflow" "nanmap: bad --seed '18446744073709551616': too large (at most 18446744073709551615)" \
	round --seed 18446744073709551616 1
bad "option without value" "nanmap: option '-f' needs a value" round 1 -f
bad "unknown option" "nanmap: unknown option '--frob' for round (try: nanmap round --help)" \
	round --frob 1
bad "--bits is op's" "nanmap: unknown option '--bits' for round (try: nanmap round --help)" \
	round --bits 1
bad "not representable" \
	"nanmap: 0.1 is not representable in fp16 (neighbours 0.0999755859375 0x2e66 and 0.10003662109375 0x2e67)" \
	op add 0.1 1
bad "not representable above max" \
	"nanmap: 70000 is not representable in fp16 (neighbours 65504 0x7bff and inf 0x7c00)" \
	op sqrt 70000
bad "not representable in e4m3 above max" \
	"nanmap: 500 is not representable in e4m3 (neighbours 448 0x7e and nothing above)" \
	op sqrt -f e4m3 500
bad "no inf in e4m3" "nanmap: inf is not representable in e4m3 (it has no infinities)" \
	op sqrt -f e4m3 inf
bad "no NaN in e2m1" "nanmap: nan is not representable in e2m1 (it has no NaN)" \
	op sqrt -f e2m1 nan
bad "no negatives in e8m0" "nanmap: -1 is not representable in e8m0 (it has no negative values)" \
	op sqrt -f e8m0 -1
bad "one exponent bit is refused" \
	"nanmap: format spec 'p=4,emax=0': emax must give 2..8 exponent bits (ieee/fnuz: emax = 2^k-1, fn/none: emax = 2^k, 1 <= k <= 7)" \
	formats p=4,emax=0
bad "one exponent bit is refused in round" "" round -f p=4,emax=0 --csv 1.875 1.9
bad "p=1 with nan=fn is refused" \
	"nanmap: format spec 'p=1,emax=2,nan=fn': p=1 with nan=fn leaves the top binade to the NaN (use nan=none or fnuz, or give ebits= and bias=)" \
	formats p=1,emax=2,nan=fn
bad "a spec key twice" "nanmap: format spec 'p=4,p=5,emax=7' gives 'p' twice" formats p=4,p=5,emax=7
# an explicit bias and unsigned formats: ml_dtypes' float8_e4m3b11fnuz and
# float8_e5m3fnu, and the one error line for each way a spec goes wrong
ok "a custom bias, an unsigned format, in a -f list" "$R
\"p=4,ebits=4,bias=11,nan=fnuz\",30,0x7f,30,normal,-
\"p=4,ebits=5,bias=15,unsigned,nan=fn\",30,0x9f,30,normal,-
e8m0,30,0x84,32,normal,inexact
\"p=4,ebits=4,bias=11,nan=fnuz\",-0x1p-30,0x00,0,zero,underflow|inexact
\"p=4,ebits=5,bias=15,unsigned,nan=fn\",-0x1p-30,0xff,nan,nan,invalid
e8m0,-0x1p-30,0xff,nan,nan,invalid" \
	round --csv -f p=4,ebits=4,bias=11,nan=fnuz,p=4,ebits=5,bias=15,unsigned,nan=fn,e8m0 30 -0x1p-30
bad "emax and ebits/bias together" \
	"nanmap: format spec 'p=4,emax=7,ebits=4,bias=7' gives emax= and ebits=/bias=: the exponent range is one or the other (emax= derives ebits and bias)" \
	formats p=4,emax=7,ebits=4,bias=7
bad "ebits without bias" "nanmap: format spec 'p=4,ebits=4': ebits= and bias= go together" \
	formats p=4,ebits=4
bad "no exponent range" \
	"nanmap: format spec 'p=4,nan=fn' has no exponent range (give emax=E, or ebits=K,bias=B)" \
	round -f p=4,nan=fn 1
bad "a bias out of range" \
	"nanmap: format spec 'p=4,ebits=4,bias=-120': bias -120 puts the exponents at 121..134, outside -127..128" \
	formats p=4,ebits=4,bias=-120
bad "unsigned fnuz" \
	"nanmap: format spec 'p=4,ebits=4,bias=8,unsigned,nan=fnuz': nan=fnuz needs a sign bit (its NaN is the would-be -0)" \
	formats p=4,ebits=4,bias=8,unsigned,nan=fnuz
bad "nozero with a sign" \
	"nanmap: format spec 'p=1,ebits=8,bias=127,nozero,nan=fn': nozero needs unsigned (a signed format without zero would need a sign for its zero results)" \
	formats p=1,ebits=8,bias=127,nozero,nan=fn
bad "a trailing comma in a spec" \
	"nanmap: format spec 'p=4,emax=7,' has an empty item (a stray comma)" formats p=4,emax=7,
# e8m0 has no zero: an accumulator's start 0 is code 0 = 2^-127 in both backends
ok_grep "e8m0 sum from 0: fast == exact" '^fast == exact: yes' \
	run accum --policy storage=e8m0 --values 0x1p-127 --backend all
ok_grep "e8m0 sum from 0 is 2^-126 (the start value counts)" '^  result e8m0\[1\]  1.1754943508222875e-38' \
	run accum --policy storage=e8m0 --values 0x1p-127 --backend fast
ok_grep "e8m0 1+2: the flag counts agree too" '^fast == exact: yes' \
	run accum --policy storage=e8m0 --values 1,2 --backend all
bad "missing op" "" op
bad "unknown op" \
	"nanmap: unknown op 'pow' (ops: add sub mul div sqrt fma exp log exp2 rsqrt min max log1p)" \
	op pow 1 2
bad "arity" "nanmap: add takes 2 operands, got 1" op add 1
bad "arity fma" "nanmap: fma takes 3 operands, got 4" op fma 1 2 3 4
bad "encoding too wide" "nanmap: encoding '0x10000' does not fit in fp16's 16 bits" \
	op add --bits 0x10000 0x0
bad "encoding without 0x" "nanmap: bad encoding '3c00' (want hex such as 0x3c00)" \
	op add --bits 3c00 0x0
bad "two formats for op" "nanmap: op takes one format, -f 'bf16' is a second one" \
	op add -f fp16 -f bf16 1 1
bad_in "bad value on stdin" "nanmap: bad value 'x' (stdin line 2)" '1\nx\n' round -
bad_in "two values on a round line" "nanmap: stdin line 1: one value per line, got 2 fields" \
	'1 2\n' round -
bad_in "NUL byte on stdin" "nanmap: stdin line 1: a NUL byte in the input" '1\00002\n' round -
bad_in "op line arity" "nanmap: stdin line 2: add takes 2 operands, got 1" '1 2\n3\n' op add -
# '-' with nothing to read is an error, as no VALUE is (it exited 0 with a header)
# stdin is read within bounds: a stream without end stops with one line
# (it once grew at 0.6 GB/s until the kernel killed it)
rc=0
timeout 20 "$N" round - </dev/zero >"$tmp/out" 2>"$tmp/err" || rc=$?
expect_err "round - < /dev/zero" "nanmap: stdin line 1: longer than 4096 bytes (one value a line)"
rc=0
yes 1 | timeout 60 "$N" op sqrt - >"$tmp/out" 2>"$tmp/err" || rc=$?
expect_err "op - < yes" "nanmap: stdin: more than 1048576 lines (give at most 1048576 operations at a time)"
# an argument's control bytes are shown as \xNN in the error line, never sent
bad "control bytes in an argument" "nanmap: bad value 'a\\x1b[2Jb\\x0a.'" round "$(printf 'a\033[2Jb\n.')"
bad_in "round, empty stdin" "nanmap: '-': stdin is empty (no value to read)" '' round -
bad_in "round, blank stdin" "nanmap: '-': stdin holds no value (2 lines, all blank)" '\n  \n' round -
bad_in "op, empty stdin" "nanmap: '-': stdin is empty (no operation to read)" '' op add -
bad_in "op stdin not representable" "" '1 0.1\n' op add -

# ---- .npy inputs: round and op read every element, exactly as typed values ----
npy "$tmp/h.npy" '<f2' '(3,)' '\000\074\377\173\146\056'          # 1 65504 0.0999755859375
npy "$tmp/h2.npy" '<f2' '(1, 3)' '\000\074\377\173\146\056'
npy "$tmp/d.npy" '<f8' '(1,)' '\232\231\231\231\231\231\271\077'  # the double nearest 0.1
npy "$tmp/u.npy" '|u1' '(1,)' '\001'
run round --csv 1 65504 0.0999755859375
want=$(cat "$tmp/out")
ok "round --input f2 = the same values typed" "$want" round --csv --input "$tmp/h.npy"
ok "round --input 2-D, C order" "$want" round --csv --input "$tmp/h2.npy"
run round --csv -r rtz -f fp16,bf16,e5m2 0.10000000000000001 1
want=$(cat "$tmp/out")
ok "round --input f8 then a value" "$want" \
	round --csv -r rtz -f fp16,bf16,e5m2 --input "$tmp/d.npy" 1
run op add --csv 1 1
want=$(cat "$tmp/out")
run op add --csv 65504 65504
want="$want
$(tail -n +2 "$tmp/out")"
run op add --csv 0.0999755859375 0.0999755859375
want="$want
$(tail -n +2 "$tmp/out")"
ok "op --input A --input B: element by element" "$want" \
	op add --csv --input "$tmp/h.npy" --input "$tmp/h.npy"
bad "op --input, one file for two operands" \
	"nanmap: add takes 2 operands, got 1 --input file" op add --input "$tmp/h.npy"
bad "op --input, shapes differ" \
	"nanmap: $tmp/h2.npy: shape (1, 3) differs from $tmp/h.npy's (3, 1)" \
	op add --input "$tmp/h.npy" --input "$tmp/h2.npy"
bad "op --input, element not in the format" \
	"nanmap: 0.10000000000000001 is not representable in fp16 (neighbours 0.0999755859375 0x2e66 and 0.10003662109375 0x2e67) ($tmp/d.npy element 0)" \
	op sqrt --input "$tmp/d.npy"
bad "op --input and operands" \
	"nanmap: sqrt: operands come from --input or from the command line, not both" \
	op sqrt --input "$tmp/h.npy" 1
bad "op --input with --bits" "nanmap: --bits and --input exclude each other (give one)" \
	op sqrt --bits --input "$tmp/h.npy"
bad "round --input integer dtype" \
	"nanmap: $tmp/u.npy: dtype |u1 (--input takes float16, float32 or float64)" \
	round --input "$tmp/u.npy"
bad "round --input missing file" "" round --input "$tmp/none.npy"

# ---- one option rule: a single-valued option given twice is refused ----
bad "round -r twice" "nanmap: option '-r' given twice" round -r rne -r up 1
bad "round --mode after -r" "nanmap: option '--mode' given twice" round -r rne --mode=up 1
bad "op --seed twice" "nanmap: option '--seed' given twice" op add --seed 1 --seed 2 1 1
bad "--csv --md" "nanmap: --csv and --md exclude each other (give one)" round --csv --md 1
bad "--md --csv" "nanmap: --md and --csv exclude each other (give one)" formats --md --csv
bad "dot --model twice" "nanmap: option '--model' given twice" \
	dot --model h100 --model a100 --in fp16 --out fp32 a b
bad "dot -m then --model" "nanmap: option '--model' given twice" \
	dot -m h100 --model=a100 --in fp16 --out fp32 a b
# mixed operands: B's own format, checked like A's
bad "dot --in-b unknown" "nanmap: dot: --in-b: unknown format 'e4m4'" \
	dot --model h200 --in e4m3 --in-b e4m4 --out fp32 tests/data/tc/a_e4m3.txt tests/data/tc/b_e5m2.txt
bad "dot --in-b no sign" "nanmap: dot: --model h200 with B in e8m0 -> fp32: the input format needs a sign and a zero" \
	dot --model h200 --in e4m3 --in-b e8m0 --out fp32 tests/data/tc/a_e4m3.txt tests/data/tc/b_e5m2.txt
bad "dot B not in --in-b" "nanmap: tests/data/tc/b_e5m2.txt:1: value 1 (0x37800000) is not exactly a value of e4m3" \
	dot --model h200 --in e4m3 --in-b e4m3 --out fp32 tests/data/tc/a_e4m3.txt tests/data/tc/b_e5m2.txt
# block scales through the Tensor Core model's block-scaled presets: known
# answers (32 ones at scales 2^3·2^0 are 256; 32 products -0.5 at 2^0·2^-1
# are -8; kind::mxf4nvf4 with one group's ue4m3 scale 2, B's signs dropped:
# 16·2 + 48 = 80), then the errors
ones32=$(printf '3f800000 %.0s' $(seq 32))
halves32=$(printf 'bf000000 %.0s' $(seq 32))
printf '%s\n%s\n' "$ones32" "$ones32" >"$tmp/sa.txt"
printf '%s\n%s\n' "$ones32" "$halves32" >"$tmp/sb.txt"
printf '82 7f\n7f 7e\n' >"$tmp/ss.txt"
printf '%s%s\n' "$ones32" "$ones32" >"$tmp/s4.txt"
printf '38 40 38 38 b8 b8 b8 b8\n' >"$tmp/ss4.txt"
ok "dot mxf8f6f4 with scales" "$(printf '0x43800000\n0xc1000000')" \
	dot --model b200-mxf8f6f4 --in e4m3 --out fp32 --bits --scales "$tmp/ss.txt" \
	--scale-fmt e8m0 "$tmp/sa.txt" "$tmp/sb.txt"
ok "dot mxf8f6f4 unscaled" "$(printf '0x42000000\n0xc1800000')" \
	dot --model b200-mxf8f6f4 --in e4m3 --out fp32 --bits "$tmp/sa.txt" "$tmp/sb.txt"
ok "dot mxf4nvf4 with ue4m3 scales" "0x42a00000" \
	dot --model rtx5090-mxf4nvf4 --in e2m1 --out fp32 --bits --scales "$tmp/ss4.txt" \
	--scale-fmt ue4m3 "$tmp/s4.txt" "$tmp/s4.txt"
bad "dot --scales without --scale-fmt" "nanmap: dot: --scales and --scale-fmt go together" \
	dot --model b200-mxf8f6f4 --in e4m3 --out fp32 --scales "$tmp/ss.txt" a b
bad "dot --block without --scales" "nanmap: dot: --block needs --scales" \
	dot --model h100 --in e4m3 --out fp32 --block 3 a b
bad "dot --scale-fmt e5m2" "nanmap: dot: --scale-fmt 'e5m2': e8m0 or ue4m3" \
	dot --model h100 --in e4m3 --out fp32 --scales "$tmp/ss.txt" --scale-fmt e5m2 a b
bad "dot scales with acc=fma" \
	"nanmap: dot: --model mi300x with e8m0 scales per 32: scales take acc=block" \
	dot --model mi300x --in fp32 --out fp32 --scales "$tmp/ss.txt" --scale-fmt e8m0 a b
bad "dot scale block not a multiple of gsum" \
	"nanmap: dot: --model b200-mxf4nvf4 with ue4m3 scales per 8: the scale block must be at least 1 and a multiple of gsum" \
	dot --model b200-mxf4nvf4 --in e2m1 --out fp32 --scales "$tmp/ss4.txt" --scale-fmt ue4m3 \
	--block 8 a b
bad "dot scales per line" \
	"nanmap: $tmp/ss4.txt: 1 cases of 8 scales, but $tmp/sa.txt has 2 cases of 32 values (1 scales for A, then 1 for B, per line)" \
	dot --model b200-mxf8f6f4 --in e4m3 --out fp32 --scales "$tmp/ss4.txt" --scale-fmt e8m0 \
	"$tmp/sa.txt" "$tmp/sb.txt"
printf '100 7f\n7f 7e\n' >"$tmp/ssbad.txt"
bad "dot scale code too wide" "nanmap: $tmp/ssbad.txt:1: scale 1 (0x100) is not a code of e8m0" \
	dot --model b200-mxf8f6f4 --in e4m3 --out fp32 --scales "$tmp/ssbad.txt" --scale-fmt e8m0 \
	"$tmp/sa.txt" "$tmp/sb.txt"
bad "sweep --out twice" "nanmap: option '--out' given twice" sweep --out a --out b cases
bad "sweep -j twice" "nanmap: option '-j' given twice" sweep -j 1 -j 2 cases
bad "sweep -j 0" "nanmap: bad -j '0': too small (at least 1)" sweep -j 0 cases
bad "plot --plots twice" "nanmap: option '--plots' given twice" plot --plots a --plots b x.case
bad "check --ulp twice" "nanmap: option '--ulp' given twice" check a b --ulp 1 --ulp=2
bad "golden --dir twice" "nanmap: option '--dir' given twice" golden list --dir a --dir b
bad "check --ulp 1e30" "nanmap: bad --ulp '1e30': too large (at most 18446744073709551615)" \
	check a b --ulp 1e30
bad "unknown option for golden" \
	"nanmap: unknown option '--frob' for golden list (try: nanmap golden --help)" \
	golden list --frob
run round --sat --sat -f fp16 -f bf16 1
[ "$rc" -eq 0 ] || fail "flags and -f may repeat: exit $rc"
pass=$((pass + 1))

# ---- each command has its own help ----
for c in formats round op check golden plot dot sweep run quant; do
	run "$c" --help
	[ "$rc" -eq 0 ] || fail "$c --help: exit status $rc"
	grep -q "^usage: nanmap $c" "$tmp/out" || fail "$c --help: not its own usage line"
	run help "$c"
	[ "$rc" -eq 0 ] || fail "help $c: exit status $rc"
	grep -q "^usage: nanmap $c" "$tmp/out" || fail "help $c: not its own usage line"
	pass=$((pass + 1))
done
# every command's help has an example (the README promises one), and the
# example runs: from a folder that links the repository's data, in the order
# below (plot draws what sweep wrote)
mkdir -p "$tmp/ex"
for f in tests golden; do ln -s "$PWD/$f" "$tmp/ex/$f"; done
for c in formats round op run quant dot gemm golden check sweep plot; do
	run "$c" --help
	grep -q '^Example: nanmap ' "$tmp/out" || fail "$c --help: no example"
	ex=$(awk '/^Example: nanmap / { sub(/^Example: nanmap /, ""); l = $0; next }
		l != "" && /^         / { sub(/^ +/, " "); l = l $0; next }
		l != "" { exit } END { print l }' "$tmp/out" | sed 's/ (after .*//')
	if [ "$c" = plot ] && ! command -v gnuplot >/dev/null 2>&1; then
		skip 1 "plot --help's example: gnuplot not found"
		continue
	fi
	rc=0
	# shellcheck disable=SC2086 # the example is words
	(cd "$tmp/ex" && "$OLDPWD/$N" $ex) >"$tmp/out" 2>"$tmp/err" || rc=$?
	# check's example shows a mismatch: exit status 1
	[ "$rc" -eq 0 ] || { [ "$c" = check ] && [ "$rc" -eq 1 ]; } ||
		fail "$c --help's example 'nanmap $ex': exit status $rc"
	pass=$((pass + 1))
done
run help --help
[ "$rc" -eq 0 ] || fail "help --help: exit status $rc"
grep -q '^usage: nanmap COMMAND' "$tmp/out" || fail "help --help: not the overview"
# the overview lists every option of sweep's usage
run --help
cp "$tmp/out" "$tmp/top"
run sweep --help
for o in $(sed -n '/^usage/,/^  PATH/p' "$tmp/out" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
	grep -q -- "$o" "$tmp/top" || fail "nanmap --help: sweep's $o missing"
done
pass=$((pass + 1))
bad "help for an unknown command" "nanmap: unknown command 'frob' (try: nanmap --help)" help frob

# The error line is one write(2) (it was three: "nanmap: ", the message and
# the newline, which another process writing the same pipe could split).
if command -v strace >/dev/null 2>&1; then
	rc=0
	# (LeakSanitizer cannot run under ptrace: off for this one run of an asan build)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -qq -e trace=write -o "$tmp/trace" "$N" round >/dev/null 2>"$tmp/err" || rc=$?
	expect_err "error line under strace" "nanmap: round needs a VALUE (or '-' to read stdin, or --input FILE.npy)"
	writes=$(grep -c '^[0-9]* *write(2,' "$tmp/trace")
	[ "$writes" -eq 1 ] || fail "the error line took $writes writes to fd 2, want 1"
	pass=$((pass + 1))
else
	skip 1 "the one-write check of the error line: strace not installed (check_parse tests the formatter)"
fi

echo "cli: $pass checks passed"
