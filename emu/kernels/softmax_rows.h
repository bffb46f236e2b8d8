/*
 * softmax_rows.h — softmax cross-entropy's order of operations, one row at a
 * time, written once (emu/engine/krow.h): emu/kernels/softmax.c runs it on
 * the engine's backends, gpu/kern.cu on the GPU (one thread a row) and
 * gpu/host_rows.c on the fake device.
 *
 * Row r of X (R×N values of the compute format, row-major; label y):
 *   naive  e = exp(x), s = Σ e (A), loss = log s − x_y
 *   maxsub m = max x, e = exp(x − m), loss = log s − (x_y − m)
 *   lse    lse = m + log s, loss = lse − x_y, p = exp(x − lse)
 * then grad = (p − onehot(y)) / R, stored in S, and LA[r], the row's loss
 * in A. k_softmax_mean then sums LA sequentially in A and divides by R.
 * t holds SM_NT scalars (the constants of k_softmax_consts, then the row's
 * own); e and ea hold N values each.
 */
#ifndef NANMAP_SOFTMAX_ROWS_H
#define NANMAP_SOFTMAX_ROWS_H

#include "emu/kernels/mean_rows.h"

#ifndef K_MAP1
#error "softmax_rows.h: include emu/engine/krow.h (the engine) or gpu/krow_loops.h (the GPU) first"
#endif

/* The variants, in the order of emu/kernels/softmax.c's list (the first
 * its default) */
#define K_SOFTMAX_VARIANTS(X)                                                                      \
	X(SM_NAIVE, "naive")                                                                       \
	X(SM_MAXSUB, "maxsub")                                                                     \
	X(SM_LSE, "lse")
enum { K_SOFTMAX_VARIANTS(K_VARIANT_ID) };

/* The steps, each one operation site of the kernel under a name of its
 * own (tests/engine/check_kernels.c checks, docs/kernels-NAME.md lists them) */
#define K_SOFTMAX_STEPS(X)                                                                         \
	X(S_ROWS_C, "rows_to_compute")                                                             \
	X(S_ROWS_A, "rows_to_accum")                                                               \
	X(S_MAX, "max")                                                                            \
	X(S_SUB_MAX, "sub_max")                                                                    \
	X(S_EXP, "exp")                                                                            \
	X(S_E_ACCUM, "exp_to_accum")                                                               \
	X(S_SUM, "sum")                                                                            \
	X(S_S_COMPUTE, "sum_to_compute")                                                           \
	X(S_LOG, "log")                                                                            \
	X(S_LOSS_XM, "loss_target")                                                                \
	X(S_LOSS, "loss")                                                                          \
	X(S_LSE, "lse")                                                                            \
	X(S_LA_ACCUM, "loss_to_accum")                                                             \
	X(S_MEAN, "mean")                                                                          \
	X(S_SUB_LSE, "sub_lse")                                                                    \
	X(S_EXP_G, "exp_grad")                                                                     \
	X(S_DIV, "div")                                                                            \
	X(S_ONEHOT, "onehot")                                                                      \
	X(S_SCALE, "grad_scale")                                                                   \
	X(S_STORE, "store")                                                                        \
	X(S_MEAN_DIV, "mean_div")
#ifdef K_STEP_ENUM /* the engine's step ids (the loops drop them) */
enum { S_FIRST_ = K_STEP0 - 1, K_SOFTMAX_STEPS(K_STEP_ENUM) S_END };
#endif

/* the scalars of t */
enum { SM_M, SM_SUM, SM_LS, SM_TMP, SM_SUMLOSS, SM_RC, SM_ONE, SM_LA, SM_RA, SM_NT };

/* 1, and the row count R in C and in A (rounded if it must be: e4m3 holds
 * 16 but not 17) */
K_FN void k_softmax_consts(k_ctx kc, k_fmt C, k_fmt A, size_t R, k_vec t)
{
	k_ref tmp = K_AT(t, SM_TMP);
	K_FILL(K_AT(t, SM_ONE), 1, 1);
	K_FILL(tmp, (double)R, 1);
	K_OP1(S_ROWS_C, CVT, C, K_AT(t, SM_RC), tmp, 0);
	K_OP1(S_ROWS_A, CVT, A, K_AT(t, SM_RA), tmp, 0);
}

K_FN void k_softmax_row(k_ctx kc, int v, k_fmt S, k_fmt C, k_fmt A, k_vec X, size_t N, size_t r,
                        size_t y, k_vec e, k_vec ea, k_vec t, k_vec grad, k_vec LA)
{
	size_t o = r * N;
	k_ref x = K_ROW(X, o), xy = K_AT(X, o + y), E = K_ROW(e, 0), EA = K_ROW(ea, 0),
	      g = K_ROW(grad, o), gy = K_AT(grad, o + y);
	k_ref m = K_AT(t, SM_M), s = K_AT(t, SM_SUM), ls = K_AT(t, SM_LS), tmp = K_AT(t, SM_TMP),
	      la = K_AT(t, SM_LA);
	if (v != SM_NAIVE) { /* m = max x */
		K_COPY(m, x, 1);
		K_FOLD(S_MAX, MAX, C, m, K_ROW(X, o + 1), N - 1, o + 1);
		K_MAP2(S_SUB_MAX, SUB, C, E, x, m, N, o);
		K_MAP1(S_EXP, EXP, C, E, E, N, o);
	} else {
		K_MAP1(S_EXP, EXP, C, E, x, N, o);
	}
	/* their sum in the accumulator format */
	K_MAP1(S_E_ACCUM, CVT, A, EA, E, N, o);
	K_FILL(s, 0, 1);
	K_FOLD(S_SUM, ADD, A, s, EA, N, o);
	K_OP1(S_S_COMPUTE, CVT, C, s, s, r);
	K_OP1(S_LOG, LOG, C, ls, s, r);
	/* loss_r = log s − x_y, log s − (x_y − m), or lse − x_y */
	if (v == SM_NAIVE) {
		K_OP2(S_LOSS, SUB, C, la, ls, xy, r);
	} else if (v == SM_MAXSUB) {
		K_OP2(S_LOSS_XM, SUB, C, tmp, xy, m, r);
		K_OP2(S_LOSS, SUB, C, la, ls, tmp, r);
	} else {
		K_OP2(S_LSE, ADD, C, ls, m, ls, r); /* ls = lse */
		K_OP2(S_LOSS, SUB, C, la, ls, xy, r);
	}
	K_OP1(S_LA_ACCUM, CVT, A, K_AT(LA, r), la, r);
	/* gradient: (p_j − [j = y]) / R, stored */
	if (v == SM_LSE) {
		K_MAP2(S_SUB_LSE, SUB, C, g, x, ls, N, o);
		K_MAP1(S_EXP_G, EXP, C, g, g, N, o);
	} else {
		K_MAP2(S_DIV, DIV, C, g, E, s, N, o);
	}
	K_OP2(S_ONEHOT, SUB, C, gy, gy, K_AT(t, SM_ONE), o + y);
	K_MAP2(S_SCALE, DIV, C, g, g, K_AT(t, SM_RC), N, o);
	K_MAP1(S_STORE, CVT, S, g, g, N, o);
}

/* the mean loss: LA's R values summed sequentially in A, then divided by R
 * in A (t after k_softmax_consts) */
K_FN void k_softmax_mean(k_ctx kc, k_fmt A, k_vec LA, size_t R, k_vec t, k_vec loss)
{
	K_MEAN(S_MEAN, S_MEAN_DIV, A, K_ROW(LA, 0), R, K_AT(t, SM_SUMLOSS), K_AT(t, SM_RA),
	       K_AT(loss, 0));
}

#endif
