#!/bin/sh
# tests/cli/cli_metrics.sh — what `nanmap run` reports against truth
# (docs/run.md, "Errors"): a NaN or infinite output has error inf in the
# text, CSV and JSON; errors end to end and of the arithmetic alone; the
# stored inputs' counts and the status they give.
# Run from the repository root after the build: sh tests/cli/cli_metrics.sh
set -u

T=cli_metrics
. tests/cli/cli_lib.sh

# ok_has DESC LINE... after run: success, and every LINE is a line of stdout
ok_has() {
	desc=$1
	shift
	[ "$rc" -eq 0 ] || fail "$desc: exit status $rc"
	for line in "$@"; do
		grep -qxF -- "$line" "$tmp/out" || fail "$desc: no line '$line'"
	done
	pass=$((pass + 1))
}
# lacks DESC PATTERN: no line of stdout matches the grep pattern
lacks() {
	if grep -q -- "$2" "$tmp/out"; then fail "$1: a line matches '$2'"; fi
	pass=$((pass + 1))
}

# fp16 layernorm, eps 1e-8 (0 in fp16): y is NaN, the truth 0
run run layernorm --policy storage=fp16 --param eps=1e-8 --gen ones --n 64
ok_has "NaN output: text" 'fast: nan' '        max_ulp inf  rel_err inf'
run run layernorm --policy storage=fp16 --param eps=1e-8 --gen ones --n 64 --csv
ok_has "NaN output: CSV" 'fast,metric,y.rel_err,inf' 'fast,metric,y.max_ulp,inf' \
	'fast,metric,dx.rel_err,inf'
run run layernorm --policy storage=fp16 --param eps=1e-8 --gen ones --n 64 --json
grep -q '"name": "y", "format": "fp16", "n": 64, "max_ulp": "inf", "rel_err": "inf"' "$tmp/out" ||
	fail "NaN output: JSON"
pass=$((pass + 1))

# e4m3 sum that passes 448 (no inf in e4m3): NaN, error inf
run run accum --variant sum:seq --policy storage=e4m3 --values 400,400,-1 --csv
ok_has "e4m3 NaN sum" 'fast,status,status,nan' 'fast,metric,result.rel_err,inf'

# e4m3 storage flushes small inputs: underflow, the end-to-end error, and
# the fp32 arithmetic on the stored values exact (rel_err = 5/517: the lost
# 2^-10 + 2^-12 against the sum 2^-3 + 2^-10 + 2^-12)
run run accum --variant sum:seq --policy storage=e4m3,compute=fp32 \
	--values 0x1p-11,0x1p-11,0x1p-12,0x1p-3 --csv
ok_has "e4m3 storage flush (CSV)" 'fast,status,status,underflow' \
	'fast,stored,n,4' 'fast,stored,changed,3' 'fast,stored,flushed,3' 'fast,stored,overflow,0' \
	'fast,metric,result.arith_rel_err,0' 'fast,metric,result.rel_err,0.0096711798839458421'
run run accum --variant sum:seq --policy storage=e4m3,compute=fp32 \
	--values 0x1p-11,0x1p-11,0x1p-12,0x1p-3
ok_has "e4m3 storage flush (text)" 'fast: underflow' \
	'         arith_max_ulp 0  arith_rel_err 0' '  stored 4 inputs: flushed to zero 3'

# a whole tensor that becomes zero is underflow, not ok
run run accum --variant sum:seq --policy storage=e4m3,compute=fp32 --gen ones --n 16 \
	--scale 1e-4 --csv
ok_has "tensor flushed" 'fast,status,status,underflow' 'fast,stored,flushed,16' \
	'fast,metric,result.rel_err,1' 'fast,metric,result.lost,1'

# an input that saturates when stored: overflow
run run accum --variant sum:seq --policy storage=fp16,compute=fp32,overflow=sat \
	--values 1e5,1 --csv
ok_has "storage overflow" 'fast,status,status,overflow' 'fast,stored,overflow,1' \
	'fast,metric,result.arith_rel_err,0'

# inputs exact in storage: one line of errors, no arith line
run run accum --variant sum:seq --policy storage=fp16 --values 1,2,3
ok_has "exact inputs" 'fast: ok' '         max_ulp 0  rel_err 0'
lacks "exact inputs" 'arith_'

# fast and exact count the stored inputs alike
run run accum --variant sum:pairwise --policy storage=e5m2,compute=fp16 --gen normal --n 64 \
	--scale 1e-5 --backend all
ok_has "fast == exact with storage counts" 'fast == exact: yes'

echo "cli_metrics: $pass checks passed"
