# rows-mutant.sed — gpu/rows.h with one operation per kernel moved into another
# format: the fake device built from it (build/gpu/nanmap-gpu-mutant) must not
# agree with the emulator (tests/cli_gpu.sh). The Makefile refuses the result
# unless exactly three lines changed, so a rewritten rows.h fails the build of
# the mutant instead of leaving it equal to the original.
#
# softmax_ce: the sum of the exponentials in C instead of A (all variants)
s/^\(\t*\)s = K_ADD(A, s, K_RND(A, e));$/\1s = K_ADD(C, s, K_RND(A, e));/
# layernorm backward: the sum of dy·ŷ in C instead of A (all variants)
s/^\(\t*\)s2 = K_ADD(A, s2, K_RND(A, K_MUL(C, dy, yc\[j\])));$/\1s2 = K_ADD(C, s2, K_RND(A, K_MUL(C, dy, yc[j])));/
# backward: the logits' dot products summed in C instead of A
s/^\(\t*\)acc = K_ADD(A, acc, K_RND(A, xw));$/\1acc = K_ADD(C, acc, K_RND(A, xw));/
