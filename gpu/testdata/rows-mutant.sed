# rows-mutant.sed — gpu/rows.h with one operation per kernel moved into another
# format (for the block quantisers: the amax rule and the stored scale changed
# to plausible neighbours): the fake device built from it (build/gpu/nanmap-gpu-mutant) must not
# agree with the emulator (tests/cli_gpu.sh). The Makefile refuses the result
# unless exactly five lines changed, so a rewritten rows.h fails the build of
# the mutant instead of leaving it equal to the original.
#
# softmax_ce: the sum of the exponentials in C instead of A (all variants)
s/^\(\t*\)s = K_ADD(A, s, K_RND(A, e));$/\1s = K_ADD(C, s, K_RND(A, e));/
# layernorm backward: the sum of dy·ŷ in C instead of A (all variants)
s/^\(\t*\)s2 = K_ADD(A, s2, K_RND(A, K_MUL(C, dy, yc\[j\])));$/\1s2 = K_ADD(C, s2, K_RND(A, K_MUL(C, dy, yc[j])));/
# backward: the logits' dot products summed in C instead of A
s/^\(\t*\)acc = K_ADD(A, acc, K_RND(A, xw));$/\1acc = K_ADD(C, acc, K_RND(A, xw));/
# the block quantisers' amax as fmaxf takes it (TE's MXFP8 kernels): a NaN
# element is dropped instead of making the block's amax NaN (mxfp8, deepseek)
s/^\(\t*\)if (!(v <= a))$/\1if (v > a)/
# deepseek: the stored scale as fp32(1 / s) instead of fp32(a' / fmax)
s/^\(\t*\)\*sc = K_F2U(K_DIV(F32, ac, fmax));$/\1*sc = K_F2U(K_DIV(F32, 1.0f, s));/
