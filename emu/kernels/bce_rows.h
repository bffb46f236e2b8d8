/*
 * bce_rows.h — binary cross-entropy with logits, one row at a time, written
 * once (emu/engine/krow.h): emu/kernels/bce.c runs it on the engine's
 * backends, gpu/kern.cu on the GPU (one thread a row) and gpu/host_rows.c
 * on the fake device.
 *
 * Row r of X (R×N logits, values of the compute format, row-major) and Y
 * (the targets, 0 or 1), in C:
 *   naive   p = 1/(1 + exp(−x)), loss = −(y·log p + (1 − y)·log(1 − p))
 *   stable  e = exp(−|x|), loss = (max(x, 0) − x·y) + log1p(e),
 *           σ = (x < 0 ? e : 1)/(1 + e)
 * then grad = (σ − y)/count, stored in S, and row r of L, each element's
 * loss (in C). k_bce_mean then converts all R·N of L to A, sums them
 * sequentially in A and divides by the count (a reduction over every row,
 * so it runs after them). t holds BCE_NT scalars (the constants of
 * k_bce_consts, then the sum); ve, vd, vu and vw hold N values each.
 */
#ifndef NANMAP_BCE_ROWS_H
#define NANMAP_BCE_ROWS_H

#include "emu/kernels/mean_rows.h"

/* The variants, in the order of emu/kernels/bce.c's list (the first
 * its default) */
#define K_BCE_VARIANTS(X)                                                                          \
	X(BCE_NAIVE, "naive")                                                                      \
	X(BCE_STABLE, "stable")
enum { K_BCE_VARIANTS(K_VARIANT_ID) };

/* The steps, each one operation site of the kernel under a name of its
 * own (tests/engine/check_kernels.c checks, docs/kernels-NAME.md lists them) */
#define K_BCE_STEPS(X)                                                                             \
	X(S_COUNT_C, "count_to_compute")                                                           \
	X(S_COUNT_A, "count_to_accum")                                                             \
	X(S_ABS, "abs")                                                                            \
	X(S_NEG, "neg")                                                                            \
	X(S_EXP, "exp")                                                                            \
	X(S_ONE_PLUS, "one_plus")                                                                  \
	X(S_SIGMOID, "sigmoid")                                                                    \
	X(S_LOG_P, "log_p")                                                                        \
	X(S_ONE_MINUS, "one_minus")                                                                \
	X(S_LOG_Q, "log_q")                                                                        \
	X(S_ONE_MINUS_Y, "one_minus_y")                                                            \
	X(S_Y_LOG_P, "y_log_p")                                                                    \
	X(S_Y_LOG_Q, "y_log_q")                                                                    \
	X(S_SUM_TERMS, "sum_terms")                                                                \
	X(S_LOSS_NEG, "loss_neg")                                                                  \
	X(S_LOG1P, "log1p")                                                                        \
	X(S_RELU, "relu")                                                                          \
	X(S_XY, "xy")                                                                              \
	X(S_SUB_XY, "sub_xy")                                                                      \
	X(S_LOSS, "loss")                                                                          \
	X(S_TO_ACCUM, "loss_to_accum")                                                             \
	X(S_SUM, "sum")                                                                            \
	X(S_MEAN, "mean")                                                                          \
	X(S_SUB_Y, "sub_y")                                                                        \
	X(S_SCALE, "grad_scale")                                                                   \
	X(S_STORE, "store")
#ifdef K_STEP_ENUM /* the engine's step ids (the loops drop them) */
enum { S_FIRST_ = K_STEP0 - 1, K_BCE_STEPS(K_STEP_ENUM) S_END };
#endif

/* the scalars of t */
enum { BCE_ONE, BCE_ZERO, BCE_CNT, BCE_CNT_C, BCE_CNT_A, BCE_SUM, BCE_NT };

/* 1, 0, and the element count T in C and in A (rounded if it must be) */
K_FN void k_bce_consts(k_ctx kc, k_fmt C, k_fmt A, size_t T, k_vec t)
{
	k_ref cnt = K_AT(t, BCE_CNT);
	K_FILL(K_AT(t, BCE_ONE), 1, 1);
	K_FILL(K_AT(t, BCE_ZERO), 0, 1);
	K_FILL(cnt, (double)T, 1);
	K_OP1(S_COUNT_C, CVT, C, K_AT(t, BCE_CNT_C), cnt, 0);
	K_OP1(S_COUNT_A, CVT, A, K_AT(t, BCE_CNT_A), cnt, 0);
}

/* row r: v 0 naive, 1 stable (t after k_bce_consts) */
K_FN void k_bce_row(k_ctx kc, int v, k_fmt S, k_fmt C, k_fmt A, k_vec X, k_vec Y, size_t N,
                    size_t r, k_vec ve, k_vec vd, k_vec vu, k_vec vw, k_vec t, k_vec grad, k_vec L)
{
	(void)A; /* the mutant's edit (gpu/testdata/rows-mutant.sed) takes it for C */
	size_t o = r * N;
	k_ref x = K_ROW(X, o), y = K_ROW(Y, o), l = K_ROW(L, o), g = K_ROW(grad, o);
	k_ref E = K_ROW(ve, 0), D = K_ROW(vd, 0), U = K_ROW(vu, 0), W = K_ROW(vw, 0);
	k_ref one = K_AT(t, BCE_ONE);
	if (v == BCE_NAIVE) {
		/* p = 1/(1 + exp(−x)) in g, then the two logs */
		K_MAP1(S_NEG, NEG, C, E, x, N, o);
		K_MAP1(S_EXP, EXP, C, E, E, N, o);
		K_MAP2(S_ONE_PLUS, ADD, C, D, one, E, N, o);
		K_MAP2(S_SIGMOID, DIV, C, g, one, D, N, o);
		K_MAP1(S_LOG_P, LOG, C, U, g, N, o);
		K_MAP2(S_ONE_MINUS, SUB, C, W, one, g, N, o);
		K_MAP1(S_LOG_Q, LOG, C, W, W, N, o);
		/* −(y·log p + (1 − y)·log(1 − p)); 1 − y is exact, so E holds it */
		K_MAP2(S_Y_LOG_P, MUL, C, U, y, U, N, o);
		K_MAP2(S_ONE_MINUS_Y, SUB, C, E, one, y, N, o);
		K_MAP2(S_Y_LOG_Q, MUL, C, W, E, W, N, o);
		K_MAP2(S_SUM_TERMS, ADD, C, l, U, W, N, o);
		K_MAP1(S_LOSS_NEG, NEG, C, l, l, N, o);
	} else {
		/* e = exp(−|x|) <= 1 */
		K_MAP1(S_ABS, ABS, C, E, x, N, o);
		K_MAP1(S_NEG, NEG, C, E, E, N, o);
		K_MAP1(S_EXP, EXP, C, E, E, N, o);
		/* loss = (max(x, 0) − x·y) + log1p(e) */
		K_MAP1(S_LOG1P, LOG1P, C, U, E, N, o);
		K_MAP2(S_RELU, MAX, C, l, x, K_AT(t, BCE_ZERO), N, o);
		K_MAP2(S_XY, MUL, C, W, x, y, N, o);
		K_MAP2(S_SUB_XY, SUB, C, l, l, W, N, o);
		K_MAP2(S_LOSS, ADD, C, l, l, U, N, o);
		/* σ(x) = (x >= 0 ? 1 : e)/(1 + e): the numerator chosen by the
		 * loaded x's sign, which every backend shares */
		K_SEL_NEG(W, x, E, 1, N);
		K_MAP2(S_ONE_PLUS, ADD, C, D, one, E, N, o);
		K_MAP2(S_SIGMOID, DIV, C, g, W, D, N, o);
	}
	/* gradient: (σ − y)/count, stored */
	K_MAP2(S_SUB_Y, SUB, C, g, g, y, N, o);
	K_MAP2(S_SCALE, DIV, C, g, g, K_AT(t, BCE_CNT_C), N, o);
	K_MAP1(S_STORE, CVT, S, g, g, N, o);
}

/* the mean: every loss term of L (T values) into the accumulator, one
 * sequential fold in A, then the division by the count in A (t after
 * k_bce_consts) */
K_FN void k_bce_mean(k_ctx kc, k_fmt A, k_vec L, size_t T, k_vec t, k_vec loss)
{
	K_MAP1(S_TO_ACCUM, CVT, A, K_ROW(L, 0), K_ROW(L, 0), T, 0);
	K_MEAN(S_SUM, S_MEAN, A, K_ROW(L, 0), T, K_AT(t, BCE_SUM), K_AT(t, BCE_CNT_A),
	       K_AT(loss, 0));
}

#endif
