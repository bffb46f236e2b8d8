# rows-mutant.sed — the row sources (emu/kernels/*_rows.h, gpu/rows.h) with one operation per kernel moved into another
# format (for the block quantisers: the amax rule and the stored scale changed
# to plausible neighbours): the fake device built from it (build/gpu/nanmap-gpu-mutant) must not
# agree with the emulator (tests/gpu/cli_gpu.sh). The Makefile refuses the result
# unless exactly twenty-four lines changed, so a rewritten row source fails the build of
# the mutant instead of leaving it equal to the original.
#
# softmax_ce: the sum of the exponentials in C instead of A (all variants)
s/^\(\t*\)K_FOLD(S_SUM, ADD, A, s, EA, N, o);$/\1K_FOLD(S_SUM, ADD, C, s, EA, N, o);/
# layernorm backward: the sum of dy·ŷ in C instead of A (all variants)
s/^\(\t*\)K_FOLD(S_DPROJ, ADD, A, s2, W2, N, o);$/\1K_FOLD(S_DPROJ, ADD, C, s2, W2, N, o);/
# backward: the logits' dot products summed in C instead of A
s/^\(\t*\)K_DOTN_CVT_ST2(S_MUL, C, S_MUL_ACCUM, S_SUM, A, K_ROW(z, c), K_ROW(X, r \* D), 0,$/\1K_DOTN_CVT_ST2(S_MUL, C, S_MUL_ACCUM, S_SUM, C, K_ROW(z, c), K_ROW(X, r * D), 0,/
# rmsnorm backward: the sum of g·dy·x̂ in C instead of A (all variants)
s/^\(\t*\)K_FOLD(S_DPROJ, ADD, A, s, W2, N, o);$/\1K_FOLD(S_DPROJ, ADD, C, s, W2, N, o);/
# bce: each element's loss finished in A instead of C, so only the loss
# moves: naive's y·log p (log and product, redone from p, which g still
# holds, on the product's line) and the terms' sum and negation that take
# it (redone on the negation's line, so the sum in C between them, which
# takes a value of A, is discarded: no kept value is an operation of C on
# a value of A); the stable loss's last addition, of the log1p term
s/^\(\t*\)K_MAP2(S_Y_LOG_P, MUL, C, U, y, U, N, o);$/\1K_MAP1(S_LOG_P, LOG, A, U, g, N, o); K_MAP2(S_Y_LOG_P, MUL, A, U, y, U, N, o);/
s/^\(\t*\)K_MAP1(S_LOSS_NEG, NEG, C, l, l, N, o);$/\1K_MAP2(S_SUM_TERMS, ADD, A, l, U, W, N, o); K_MAP1(S_LOSS_NEG, NEG, A, l, l, N, o);/
s/^\(\t*\)K_MAP2(S_LOSS, ADD, C, l, l, U, N, o);$/\1K_MAP2(S_LOSS, ADD, A, l, l, U, N, o);/
# deepseek: the amax as fmaxf takes it (TE's kernels), a NaN element dropped
# instead of making the block's amax NaN (torch's amax)
s/^\(\t*\)if (!(v <= a))$/\1if (v > a)/
# mxfp8: exp2f_rcp's code 0 read as 2^127 instead of TE's 1
s/^\(\t*\)return code == 0 ? 1.0f : K_U2F((254u - code) << 23);$/\1return code == 0 ? 0x1p127f : K_U2F((254u - code) << 23);/
# deepseek: the stored scale as fp32(1 / s) instead of fp32(a' / fmax)
s/^\(\t*\)\*sc = K_F2U(K_DIV(F32, ac, fmax));$/\1*sc = K_F2U(K_DIV(F32, 1.0f, s));/
# matmul: the sum of the products in C instead of A, and (fma=1) the fused
# step in C
s/^\(\t*\)K_DOTN(S_MUL, A, S_SUM, A, s, a, 0, b, cb, P, k, m, o \* k, k);$/\1K_DOTN(S_MUL, A, S_SUM, C, s, a, 0, b, cb, P, k, m, o * k, k);/
s/^\(\t*\)K_FOLDN_FMA(S_FMA, A, s, a, 0, b, cb, k, m, o \* k, k);$/\1K_FOLDN_FMA(S_FMA, C, s, a, 0, b, cb, k, m, o * k, k);/
# batchnorm backward: the sum of dy·(x − mean) in C instead of A, every
# variant (training and eval share it): its additions, and the conversion
# of its terms that feeds them (an exact one either way, as the products are
# values of C; the two lines that were one sum in the training and the eval
# bodies)
s/^\(\t*\)K_FOLD(S_SUM_DY_XMU, ADD, A, sdyx, W2, N, c \* N);$/\1K_FOLD(S_SUM_DY_XMU, ADD, C, sdyx, W2, N, c * N);/
# optimizer: sgd's momentum product and adamw's first-moment addition in
# the state format instead of the compute format (it has no accumulator:
# only the policies whose compute format is wider than the state's move)
s/^\(\t*\)K_MAP2(S_BUF_MUL, MUL, C, r.m, r.xc, K_AT(t, OPT_MU), n, e);$/\1K_MAP2(S_BUF_MUL, MUL, T, r.m, r.xc, K_AT(t, OPT_MU), n, e);/
s/^\(\t*\)K_MAP2(S_LERP_ADD, ADD, C, r.m, r.xc, r.d, n, e);$/\1K_MAP2(S_LERP_ADD, ADD, T, r.m, r.xc, r.d, n, e);/
# attention: the row sum l in C instead of A, and fp8's block product
# joining O in C
s/^\(\t*\)K_FOLD(S_SUM, ADD, A, l, ab, nb, el);$/\1K_FOLD(S_SUM, ADD, C, l, ab, nb, el);/
s/^\(\t*\)K_MAP2(S_PV_ADD, ADD, A, o, o, pv, d, eb \* d);$/\1K_MAP2(S_PV_ADD, ADD, C, o, o, pv, d, eb * d);/
# attention's sequential variants: P·V's running sum in C (its FMAs; the
# GPU's loop hands the row source C for A), and the backward's dV sum in
# C likewise
s/^\(\t*\)k_attn_pv(kc, A, pa, VA, d, i, nk, j0, j1 - j0, later, v == ATT_FP8 ? pv : o);$/\1k_attn_pv(kc, C, pa, VA, d, i, nk, j0, j1 - j0, later, v == ATT_FP8 ? pv : o);/
s/^\(\t*\)k_attn_bwd_dv(kc, S, A, PA, DOA, d, nq, nk, j, i0, K_ROW(G, j \* d), K_ROW(DV, j \* d));$/\1k_attn_bwd_dv(kc, S, C, PA, DOA, d, nq, nk, j, i0, K_ROW(G, j * d), K_ROW(DV, j * d));/
s/^\(\t*\)K_MAP1(S_DYX_ACCUM, CVT, A, W2, W2, N, c \* N);$/\1K_MAP1(S_DYX_ACCUM, CVT, C, W2, W2, N, c * N);/
# adamw_kahan: the increment stored in the weights' format before it enters
# the compensated sum (a kernel that materialises it as a tensor of w's dtype)
s/^\(\t*\)K_MAP2(S_COMP_ADD, ADD, C, r.c, r.xc, r.u, n, e);$/\1K_MAP1(S_COMP_ADD, CVT, S, r.u, r.u, n, e); K_MAP2(S_COMP_ADD, ADD, C, r.c, r.xc, r.u, n, e);/
# adamw_sr: the weight's draws keyed by the element's index within the step
# instead of its number over the steps (every step draws the same bits)
s/^\(\t*\)K_MAP1_SR(step, S, r.w, r.w, seed, n, e);\( *\\\)$/\1K_MAP1_SR(step, S, r.w, r.w, seed, n, e % n);\2/
# matmul tc: the Tensor Core's output rounded into the compute format before
# the store (an epilogue in the compute dtype): only acc moves, and only where
# compute is narrower than the output
s/^\(\t*\)K_TAKE(O, K_ROW(acc, o), K_ROW(D, o), cnt);$/\1K_TAKE(C, K_ROW(acc, o), K_ROW(D, o), cnt);/
# fp8:bwd: dV's running sum in C (the GPU's loop hands the row source C
# for A)
s/^\(\t*\)k_attn8_bwd_dv(kc, S, A, P8A, DOA, t, d, nq, nk, j, i0, K_ROW(G, j \* d), K_ROW(DV, j \* d));$/\1k_attn8_bwd_dv(kc, S, C, P8A, DOA, t, d, nq, nk, j, i0, K_ROW(G, j * d), K_ROW(DV, j * d));/
