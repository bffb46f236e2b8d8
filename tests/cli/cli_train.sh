#!/bin/sh
# tests/cli/cli_train.sh — `nanmap train`, end to end: the progress lines and
# the closing report, the per-step and per-layer CSV files (columns, one row a
# step, values that follow from the run: the scale halves on every skipped
# step, a NaN loss shows as nan), --compare's divergence line, the same run
# twice giving the same bytes, and every bad input (one stderr line, exit 2,
# nothing on stdout, no file written).
# Run from the repository root after the build: sh tests/cli/cli_train.sh
# NANMAP=path overrides the binary. Stops at the first failure.
set -u

T=cli_train
. tests/cli/cli_lib.sh

TINY="--layers 1 --d-model 8 --heads 2 --seq 4 --vocab 6 --batch 2 --warmup 1 --lr 0.01 --val-every 0"

# a fp32 run: progress lines, closing report, CSV files
run train $TINY --steps 4 --every 2 --csv "$tmp/a.csv" --layers-csv "$tmp/l.csv"
[ "$rc" -eq 0 ] || fail "fp32 run: exit status $rc"
[ ! -s "$tmp/err" ] || fail "fp32 run: wrote to stderr"
grep -q '^train: gpt2, 1 layers, d 8, 2 heads, seq 4, vocab 6, batch 2 x 1, 968 parameters; policy fp32; 4 steps on fast$' "$tmp/out" ||
	fail "fp32 run: header line"
[ "$(grep -c '^step ' "$tmp/out")" -eq 2 ] || fail "fp32 run: want 2 progress lines (--every 2)"
grep -q '^first failing operation: none' "$tmp/out" || fail "fp32 run: a failure reported"
grep -q '^first non-finite value: none$' "$tmp/out" || fail "fp32 run: non-finite reported"
pass=$((pass + 1))
[ "$(head -1 "$tmp/a.csv")" = "policy,step,loss,val_loss,grad_norm,lr,scale,skipped,overflow,underflow,invalid,nonfinite_params" ] ||
	fail "per-step CSV header: $(head -1 "$tmp/a.csv")"
[ "$(awk 'END { print NR }' "$tmp/a.csv")" -eq 5 ] || fail "per-step CSV: want 4 rows"
awk -F, 'NR > 1 && ($1 != "fp32" || $2 != NR - 1 || $4 != "" || $7 != 1 || $8 != 0 || $12 != 0) { exit 1 }' "$tmp/a.csv" ||
	fail "per-step CSV rows"
# lr: warm-up 1 step to 0.01, cosine to 1e-4 at the last step
awk -F, 'NR == 2 && $6 != 0.01 { exit 1 } NR == 5 && $6 != 0.0001 { exit 1 }' "$tmp/a.csv" ||
	fail "per-step CSV: learning rates"
[ "$(head -1 "$tmp/l.csv")" = "policy,step,layer,pass,ops,overflow,underflow,invalid,amax,nan,inf" ] ||
	fail "layer CSV header"
# 3 layers (emb, layer0, head) x 2 passes x 4 steps
[ "$(awk 'END { print NR }' "$tmp/l.csv")" -eq 25 ] || fail "layer CSV: want 24 rows"
awk -F, 'NR > 1 && ($5 <= 0 || $10 != 0 || $11 != 0) { exit 1 }' "$tmp/l.csv" || fail "layer CSV rows"
pass=$((pass + 1))

# the same run gives the same bytes
cp "$tmp/a.csv" "$tmp/a1.csv"
run train $TINY --steps 4 --every 0 --csv "$tmp/a.csv"
cmp -s "$tmp/a.csv" "$tmp/a1.csv" || fail "a second run differs"
pass=$((pass + 1))

# fp16-pure: AdamW's denom loses eps in fp16, inf weights at step 1, NaN after
run train $TINY --policy fp16-pure --steps 3 --every 0 --csv "$tmp/p.csv"
[ "$rc" -eq 0 ] || fail "fp16-pure: exit status $rc"
grep -q '^first failing operation: step 1, micro-batch 0, optimizer.step (div), .*: divbyzero$' "$tmp/out" ||
	fail "fp16-pure: first failing operation"
grep -q '^first non-finite value: step 2: .* -> loss nan$' "$tmp/out" || fail "fp16-pure: the chain"
awk -F, 'NR == 2 && ($3 == "nan" || $12 == 0) { exit 1 } NR == 3 && $3 != "nan" { exit 1 }' "$tmp/p.csv" ||
	fail "fp16-pure: CSV loss and non-finite parameters"
pass=$((pass + 1))

# --replay: step 3 from the initial weights, fast against exact, and under
# bf16 from the same state; then from a checkpoint of step 2
run train $TINY --policy fp16-amp,bf16 --steps 4 --replay 3
[ "$rc" -eq 0 ] || fail "--replay: exit status $rc"
grep -q '^state: the initial weights, then steps 1 to 2 under fp16-amp on fast$' "$tmp/out" || fail "--replay: state line"
grep -q '^fp16-amp, exact: the same bits as fast (loss, gradient norm, scale, flag counts, first failing operation and 968 parameters)$' "$tmp/out" ||
	fail "--replay: fast against exact"
grep -q '^bf16: the state rounded to its formats (0 values changed)$' "$tmp/out" || fail "--replay: bf16 state"
grep '^fp16-amp, fast: loss' "$tmp/out" > "$tmp/r1"
run train $TINY --policy fp16-amp --steps 4 --stop-at 2 --every 0 --save "$tmp/r2.st"
run train $TINY --policy fp16-amp --steps 4 --replay 3 --resume "$tmp/r2.st"
grep -q "^state: $tmp/r2.st (after step 2)$" "$tmp/out" || fail "--replay --resume: state line"
grep '^fp16-amp, fast: loss' "$tmp/out" | cmp -s - "$tmp/r1" || fail "--replay --resume: another step than from the weights"
pass=$((pass + 1))
bad "replay past the steps" "nanmap: --replay 9: past --steps 4" train $TINY --steps 4 --replay 9
bad "replay with csv" "" train $TINY --steps 4 --replay 2 --csv "$tmp/x.csv"
bad "replay before the checkpoint" "" train $TINY --policy fp16-amp --steps 4 --replay 2 --resume "$tmp/r2.st"

# --arch llama: RMSNorm, SwiGLU (width 24 for d 8), no biases, an untied head:
# 6x8 + 4x8 + 8 + 3x64 + 64 + 8 + 48x8 + 8x24 + 8 + 6x8 = 984 parameters
run train $TINY --arch llama --steps 3 --every 0 --save "$tmp/ll.st" --dump "$tmp/lld"
[ "$rc" -eq 0 ] || fail "llama: exit status $rc"
grep -q '^train: llama, 1 layers, d 8, 2 heads, seq 4, vocab 6, batch 2 x 1, 984 parameters; policy fp32; 3 steps on fast$' "$tmp/out" ||
	fail "llama: header line"
grep -q '"head"' "$tmp/lld/init.safetensors" || fail "llama: dump without the head"
grep -q '"qkvb"' "$tmp/lld/init.safetensors" && fail "llama: dump with a bias"
run train $TINY --arch llama --steps 4 --every 0 --resume "$tmp/ll.st"
[ "$rc" -eq 0 ] || fail "llama: resume"
pass=$((pass + 1))
bad "resume gpt2 from llama" "" train $TINY --steps 4 --resume "$tmp/ll.st"
bad "unknown arch" "nanmap: unknown --arch 'bert' (gpt2 llama)" train --arch bert

# --flat: a near-constant batch at step 2 whose variance and eps are 0 in fp16
run train $TINY --policy fp16-pure --role state=fp32 --steps 2 --every 0 --flat 2:1e-9 --ln-eps 1e-8
[ "$rc" -eq 0 ] || fail "--flat: exit status $rc"
grep -q '^first failing operation: step 2, micro-batch 0, layer0.ln1.rsqrt (rsqrt), element 0: divbyzero$' "$tmp/out" ||
	fail "--flat: first failing operation"
run train $TINY --policy fp16-pure --role state=fp32 --steps 2 --every 0 --flat 2:1e-9 --ln-eps 1e-5
grep -q '^first failing operation: none' "$tmp/out" || fail "--flat: eps 1e-5 should survive"
pass=$((pass + 1))

# --compare: fp16-pure against fp32 diverges at step 2 (NaN)
run train $TINY --policy fp16-pure --steps 3 --every 0 --compare fp32 --csv "$tmp/c.csv"
grep -q '^divergence from fp32: the loss first differs by more than 2x at step 2$' "$tmp/out" ||
	fail "--compare: divergence line"
[ "$(head -1 "$tmp/c.csv" | awk -F, '{ print $13 "," $14 }')" = "ref_loss,loss_ratio" ] ||
	fail "--compare: CSV columns"
run train $TINY --policy bf16 --steps 3 --every 0 --compare fp32
grep -q '^divergence from fp32: none (within 2x every step)$' "$tmp/out" || fail "--compare: bf16 within 2x"
pass=$((pass + 1))

# GradScaler from 2^40: the first steps skip, the scale halves each time
run train $TINY --policy fp16-amp --steps 30 --every 0 --scaler-init 1099511627776 --csv "$tmp/s.csv"
awk -F, 'NR == 2 { s = $7 } NR > 2 { r = $7 / s; if (prev_skip && (r < 0.4999999 || r > 0.5000001)) exit 1
	if (!prev_skip && r != 1) exit 1; s = $7 } NR > 1 { prev_skip = $8 }' "$tmp/s.csv" || fail "scaler: the scale halves exactly on skipped steps"
[ "$(awk -F, 'NR > 1 && $8 == 1' "$tmp/s.csv" | wc -l)" -ge 10 ] || fail "scaler: want >= 10 skips"
pass=$((pass + 1))

# a spike under fp16-pure with fp32 states: 1e6 is already inf in fp16
run train $TINY --policy fp16-pure --role state=fp32 --steps 2 --every 0 --spike 2:1e6
grep -q '^first failing operation: step 2, micro-batch 0, loss.spike (cvt), element 0: overflow$' "$tmp/out" ||
	fail "spike: first failing operation"
pass=$((pass + 1))

# several policies side by side, a plot, the JSON report
run train $TINY --policy fp32,bf16,fp16-pure --steps 3 --every 0 --csv "$tmp/m.csv" --json "$tmp/r.json" --plot "$tmp/l.svg"
[ "$rc" -eq 0 ] || fail "three policies: exit status $rc"
[ "$(grep -c '^train: gpt2' "$tmp/out")" -eq 3 ] || fail "three policies: three header lines"
grep -q '^fp16-pure: first failing operation: step 1, ' "$tmp/out" || fail "three policies: prefixed report"
[ "$(awk -F, 'NR > 1 { n[$1]++ } END { print n["fp32"] n["bf16"] n["fp16-pure"] }' "$tmp/m.csv")" = 333 ] ||
	fail "three policies: 3 rows each"
tail -c 20 "$tmp/l.svg" | grep -q '</svg>' || fail "plot: not a whole SVG"
grep -q '"policy": "fp16-pure"' "$tmp/r.json" && grep -q '"site": "optimizer.step"' "$tmp/r.json" ||
	fail "JSON report"
if command -v python3 >/dev/null 2>&1; then
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert len(r["runs"]) == 3' "$tmp/r.json" ||
		fail "JSON report: not JSON"
fi
pass=$((pass + 1))

# a run stopped and resumed ends in the same bytes as one run
run train $TINY --steps 6 --every 0 --save "$tmp/full.st"
run train $TINY --steps 6 --every 0 --stop-at 3 --save "$tmp/half.st"
grep -q '0 of 3 steps skipped' "$tmp/out" || fail "--stop-at 3: three steps"
run train $TINY --steps 6 --every 0 --resume "$tmp/half.st" --save "$tmp/resumed.st"
grep -q '^resumed from .* at step 3$' "$tmp/out" || fail "--resume: the line"
cmp -s "$tmp/full.st" "$tmp/resumed.st" || fail "--resume: the checkpoints differ"
bad "resume another model" "" train --layers 2 --d-model 8 --heads 2 --seq 4 --vocab 6 --batch 2 --steps 6 --resume "$tmp/half.st"
grep -q 'another run (layers 1 there, 2 here)' "$tmp/err" || fail "--resume: names the difference"
bad "resume another policy" "" train $TINY --policy bf16 --steps 6 --resume "$tmp/half.st"
bad "resume past the end" "" train $TINY --steps 2 --resume "$tmp/half.st"
bad "resume a file that is not a checkpoint" "" train $TINY --resume "$tmp/l.svg"
pass=$((pass + 1))

# --dump: the initial weights and batch 0's gradients
run train $TINY --steps 1 --every 0 --dump "$tmp/dump"
[ -s "$tmp/dump/init.safetensors" ] && [ -s "$tmp/dump/grad.safetensors" ] || fail "--dump: files"
pass=$((pass + 1))

# a training run as a sweep point: the spike that makes fp16-pure's loss infinite
mkdir "$tmp/sw"
cp cases/train_spike.case "$tmp/sw/"
(cd "$tmp/sw" && "$OLDPWD/$N" sweep --quick train_spike.case >"$tmp/out" 2>"$tmp/err") ||
	fail "sweep of cases/train_spike.case"
grep -q '^train_spike,train,fp16-pure:state=fp32,storage=fp32,spike,inf,.*,add@loss.mean_sum$' "$tmp/sw/build/sweep-quick/results/thresholds.csv" ||
	fail "train_spike: fp16-pure's threshold (thresholds.csv: $(cat "$tmp/sw/build/sweep-quick/results/thresholds.csv"))"
[ "$(grep -c '^train_spike,train,' "$tmp/sw/build/sweep-quick/results/thresholds.csv")" -eq 1 ] ||
	fail "train_spike: only fp16-pure breaks"
pass=$((pass + 1))

# text data
printf 'the quick brown fox jumps over the lazy dog. %.0s' $(seq 1 20) >"$tmp/t.txt"
run train --text "$tmp/t.txt" --layers 1 --d-model 8 --seq 8 --batch 2 --steps 2 --every 0 --val-every 1
[ "$rc" -eq 0 ] || fail "--text: exit status $rc"
grep -q 'vocab 256' "$tmp/out" || fail "--text: vocab 256"
pass=$((pass + 1))

# bad input: one line, exit 2, nothing written
bad "unknown policy" "nanmap: unknown training policy 'fp17' (fp32 bf16 fp16-amp fp16-pure bf16-pure fp8-current fp8-delayed mxfp8 nvfp4)" train --policy fp17
bad "unknown role" "" train --role weights=fp16
bad "bad role format" "" train --role accum=fp99
bad "accum narrower than gemm" "nanmap: policy fp32+accum=fp16: accum (fp16) must hold every gemm value (fp32)" train --role accum=fp16
bad "heads" "nanmap: --heads 3 must divide --d-model 32" train --heads 3
bad "odd seq" "" train --seq 7
bad "zero steps" "" train --steps 0
bad "bad lr" "" train --lr abc
bad "bad spike" "" train --spike 3
bad "bad flat" "nanmap: bad --flat '2' (STEP:VARIANCE, e.g. 50:1e-7)" train --flat 2
bad "negative flat variance" "" train --flat 2:-1
bad "zero loss weight" "" train --loss-weight 0
bad "growth factor 1" "" train --scaler-growth 1
bad "backoff factor 1" "" train --scaler-backoff 1
bad "adam eps 1" "" train --adam-eps 1
bad "task and text" "" train --task copy --text /etc/hostname
bad "unknown task" "" train --task fly
bad "missing text" "" train --text "$tmp/none"
: >"$tmp/empty"
bad "empty text" "" train --text "$tmp/empty"
bad "an argument" "" train extra
bad "unknown backend" "" train --backend truth
bad "two policies and --save" "" train --policy fp32,bf16 --save "$tmp/x.st"
bad "a policy twice" "" train --policy fp32,fp32
bad "--stop-at without --save" "" train --stop-at 3
bad "plot of another kind" "" train $TINY --steps 1 --plot "$tmp/x.pdf"
run train --csv "$tmp/nodir/x.csv" $TINY --steps 1 --every 0
[ "$rc" -eq 2 ] || fail "unwritable --csv: exit status $rc"
[ ! -e "$tmp/nodir" ] || fail "unwritable --csv: created something"
pass=$((pass + 1))
[ ! -e "$tmp/none.csv" ] || fail "a file was written"

echo "$T: $pass checks passed"
