/*
 * backward_rows.h — the loss-scaled backward of a linear layer with softmax
 * cross-entropy, written once (emu/engine/krow.h): emu/kernels/backward.c
 * runs it on the engine's backends, gpu/kern.cu on the GPU and
 * gpu/host_rows.c on the fake device. X (R×D) and W (D×K) hold values of
 * the compute format (loaded: stored, then in compute), row-major.
 *
 *   k_bw_consts   1, R in C and in A, the loss scale in C and S/R in C
 *   k_bw_row      row r (one GPU thread): its K logits, each a sum of
 *                 products (products in C, converted to A, summed in A
 *                 from +0, stored in S, then in C); softmax (maxsub) and
 *                 the row's loss into LA[r] in A; the dlogits (p −
 *                 onehot(y))·S/R in C, stored in S, then in C (row r of
 *                 dl)
 *   k_bw_mean     LA's R values summed sequentially in A, divided by R in
 *                 A (a reduction over every row, so it runs after them)
 *   k_bw_grad     element i of the stored gradient G (one GPU thread): dW
 *                 (i < D·K) = Σ_r x[r][d]·dl[r][c], then dX = Σ_c
 *                 dl[r][c]·W[d][c], as the logits' sums, stored in S
 *   k_bw_unscale  GradScaler.unscale_ of n stored gradients from G[off]:
 *                 converted to fp32, times inv in fp32 unless inv is 1
 *
 * Elements: term j of the sum for output i (i = r·K + c for a logit, d·K +
 * c for dW, r·D + d for dX) is element i·n + j of its mul, to_accum and sum
 * steps (n = D, R, K), so every term has its own stochastic rounding draw;
 * every other operation is the element of what it computes. t holds BW_NT
 * scalars (the constants of k_bw_consts, then a row's own); z, e and ea
 * hold K values each, p the longest sum's n.
 */
#ifndef NANMAP_BACKWARD_ROWS_H
#define NANMAP_BACKWARD_ROWS_H

#include "emu/kernels/mean_rows.h"

/* The steps, each one operation site of the kernel under a name of its
 * own (tests/engine/check_kernels.c checks, docs/kernels-NAME.md lists them) */
#define K_BACKWARD_STEPS(X)                                                                        \
	X(S_ROWS_C, "rows_to_compute")                                                             \
	X(S_ROWS_A, "rows_to_accum")                                                               \
	X(S_SCALE_C, "scale_to_compute")                                                           \
	X(S_SR, "scale_per_row")                                                                   \
	X(S_MUL, "mul")                                                                            \
	X(S_MUL_ACCUM, "mul_to_accum")                                                             \
	X(S_SUM, "sum")                                                                            \
	X(S_STORE_LOGIT, "store_logit")                                                            \
	X(S_LOGIT_C, "logit_to_compute")                                                           \
	X(S_MAX, "max")                                                                            \
	X(S_SUB_MAX, "sub_max")                                                                    \
	X(S_EXP, "exp")                                                                            \
	X(S_E_ACCUM, "exp_to_accum")                                                               \
	X(S_SUM_EXP, "sum_exp")                                                                    \
	X(S_S_COMPUTE, "sum_to_compute")                                                           \
	X(S_LOG, "log")                                                                            \
	X(S_LOSS_ZM, "loss_target")                                                                \
	X(S_LOSS, "loss")                                                                          \
	X(S_LA_ACCUM, "loss_to_accum")                                                             \
	X(S_MEAN, "mean")                                                                          \
	X(S_DIV, "div")                                                                            \
	X(S_ONEHOT, "onehot")                                                                      \
	X(S_SCALE, "dlogit_scale")                                                                 \
	X(S_STORE_DLOGIT, "store_dlogit")                                                          \
	X(S_DLOGIT_C, "dlogit_to_compute")                                                         \
	X(S_MEAN_DIV, "mean_div")                                                                  \
	X(S_DW_MUL, "dW_mul")                                                                      \
	X(S_DW_ACCUM, "dW_to_accum")                                                               \
	X(S_DW_SUM, "dW_sum")                                                                      \
	X(S_STORE_DW, "store_dW")                                                                  \
	X(S_DX_MUL, "dX_mul")                                                                      \
	X(S_DX_ACCUM, "dX_to_accum")                                                               \
	X(S_DX_SUM, "dX_sum")                                                                      \
	X(S_STORE_DX, "store_dX")                                                                  \
	X(S_TO_FP32, "to_fp32")                                                                    \
	X(S_UNSCALE, "unscale")
#ifdef K_STEP_ENUM /* the engine's step ids (the loops drop them) */
enum { S_FIRST_ = K_STEP0 - 1, K_BACKWARD_STEPS(K_STEP_ENUM) S_END };
#endif

/* the sums a K_DOTN_CVT_ST call runs together (p holds BW_CHAINS times
 * the longest sum on the engine; the loops use its first sum's length) */
#define BW_CHAINS 16

/* the scalars of t */
enum {
	BW_M,
	BW_SUM,
	BW_LS,
	BW_TMP,
	BW_SUMLOSS,
	BW_RC,
	BW_ONE,
	BW_LA,
	BW_RA,
	BW_SC,
	BW_SR,
	BW_INV,
	BW_NT
};

/* 1, the row count R in C and in A (rounded if it must be), the loss
 * scale (an fp32 value) in C and SR = S/R in C, the gradient autograd
 * hands each row's loss */
K_FN void k_bw_consts(k_ctx kc, k_fmt C, k_fmt A, size_t R, double scale, k_vec t)
{
	k_ref tmp = K_AT(t, BW_TMP), Rc = K_AT(t, BW_RC), Sc = K_AT(t, BW_SC);
	K_FILL(K_AT(t, BW_ONE), 1, 1);
	K_FILL(tmp, (double)R, 1);
	K_OP1(S_ROWS_C, CVT, C, Rc, tmp, 0);
	K_OP1(S_ROWS_A, CVT, A, K_AT(t, BW_RA), tmp, 0);
	/* element 1, as when R and S shared one to_compute step: a run that
	 * overflows converting S still reports "to_compute 1" */
	K_FILL(tmp, scale, 1);
	K_OP1(S_SCALE_C, CVT, C, Sc, tmp, 1);
	K_OP2(S_SR, DIV, C, K_AT(t, BW_SR), Sc, Rc, 0);
}

/* row r, label y (t after k_bw_consts) */
K_FN void k_bw_row(k_ctx kc, k_fmt S, k_fmt C, k_fmt A, k_vec X, k_vec W, size_t D, size_t K,
                   size_t r, size_t y, k_vec p, k_vec z, k_vec e, k_vec ea, k_vec t, k_vec dl,
                   k_vec LA)
{
	size_t o = r * K;
	k_ref P = K_ROW(p, 0), Z = K_ROW(z, 0), E = K_ROW(e, 0), EA = K_ROW(ea, 0),
	      g = K_ROW(dl, o), gy = K_AT(dl, o + y);
	k_ref m = K_AT(t, BW_M), s = K_AT(t, BW_SUM), ls = K_AT(t, BW_LS), tmp = K_AT(t, BW_TMP),
	      la = K_AT(t, BW_LA);
	/* logits z_c = Σ_d x_d·W[d][c], stored, then in compute: BW_CHAINS
	 * classes' sums at a time, each in its own order */
	K_FILL(Z, 0, K);
	for (size_t c = 0; c < K; c += BW_CHAINS)
		K_DOTN_CVT_ST2(S_MUL, C, S_MUL_ACCUM, S_SUM, A, K_ROW(z, c), K_ROW(X, r * D), 0,
		               K_STRIDED(W, c, K), 1, P, D, K - c < BW_CHAINS ? K - c : BW_CHAINS,
		               (o + c) * D, D, S_STORE_LOGIT, S, S_LOGIT_C, C, o + c);
	/* softmax and loss (maxsub) */
	K_COPY(m, Z, 1);
	K_FOLD(S_MAX, MAX, C, m, K_ROW(z, 1), K - 1, o + 1);
	K_MAP2(S_SUB_MAX, SUB, C, E, Z, m, K, o);
	K_MAP1(S_EXP, EXP, C, E, E, K, o);
	K_MAP1(S_E_ACCUM, CVT, A, EA, E, K, o);
	K_FILL(s, 0, 1);
	K_FOLD(S_SUM_EXP, ADD, A, s, EA, K, o);
	K_OP1(S_S_COMPUTE, CVT, C, s, s, r);
	K_OP1(S_LOG, LOG, C, ls, s, r);
	K_OP2(S_LOSS_ZM, SUB, C, tmp, K_AT(z, y), m, r);
	K_OP2(S_LOSS, SUB, C, la, ls, tmp, r);
	K_OP1(S_LA_ACCUM, CVT, A, K_AT(LA, r), la, r);
	/* dlogits = (p − onehot)·S/R, stored, then in compute */
	K_MAP2(S_DIV, DIV, C, g, E, s, K, o);
	K_OP2(S_ONEHOT, SUB, C, gy, gy, K_AT(t, BW_ONE), o + y);
	K_MAP2(S_SCALE, MUL, C, g, g, K_AT(t, BW_SR), K, o);
	K_MAP1(S_STORE_DLOGIT, CVT, S, g, g, K, o);
	K_MAP1(S_DLOGIT_C, CVT, C, g, g, K, o);
}

/* the mean loss (t after k_bw_consts) */
K_FN void k_bw_mean(k_ctx kc, k_fmt A, k_vec LA, size_t R, k_vec t, k_vec loss)
{
	K_MEAN(S_MEAN, S_MEAN_DIV, A, K_ROW(LA, 0), R, K_AT(t, BW_SUMLOSS), K_AT(t, BW_RA),
	       K_AT(loss, 0));
}

/* G[i .. i + cnt − 1], i < D·K + R·D: dW[d][c] (i = d·K + c), then dX[r][d]
 * (i = D·K + r·D + d), every row's dlogits dl (R×K, values of C) done: up
 * to BW_CHAINS sums at a time that share their left operand (one d of dW,
 * one r of dX), each in its own order */
K_FN void k_bw_grad(k_ctx kc, k_fmt S, k_fmt C, k_fmt A, k_vec X, k_vec W, k_vec dl, size_t R,
                    size_t D, size_t K, size_t i, size_t cnt, k_vec p, k_vec G)
{
	k_ref P = K_ROW(p, 0);
	for (size_t m = 0; cnt > 0; i += m, cnt -= m) {
		m = cnt < BW_CHAINS ? cnt : BW_CHAINS;
		if (i < D * K) { /* dW[d][c] = Σ_r x[r][d]·dl[r][c] */
			size_t d = i / K, c = i % K;
			m = m < K - c ? m : K - c;
			K_FILL(K_ROW(G, i), 0, m);
			K_DOTN_CVT_ST(S_DW_MUL, C, S_DW_ACCUM, S_DW_SUM, A, K_ROW(G, i),
			              K_STRIDED(X, d, D), 0, K_STRIDED(dl, c, K), 1, P, R, m, i * R,
			              R, S_STORE_DW, S, i);
		} else { /* dX[r][d] = Σ_c dl[r][c]·W[d][c] */
			size_t j = i - D * K, r = j / D, d = j % D;
			m = m < D - d ? m : D - d;
			K_FILL(K_ROW(G, i), 0, m);
			K_DOTN_CVT_ST(S_DX_MUL, C, S_DX_ACCUM, S_DX_SUM, A, K_ROW(G, i),
			              K_ROW(dl, r * K), 0, K_ROW(W, d * K), K, P, K, m, j * K, K,
			              S_STORE_DX, S, j);
		}
	}
}

/* unscale_: U[uo + k] = fp32(G[off + k]) · inv in fp32 (F32, the fp32
 * handle), k < n, the product skipped when inv is 1 (as PyTorch does);
 * inv = fp32(1/double(S)) */
K_FN void k_bw_unscale(k_ctx kc, k_fmt F32, k_vec G, size_t off, size_t n, k_vec U, size_t uo,
                       double inv, k_vec t)
{
	k_ref u = K_ROW(U, uo), iv = K_AT(t, BW_INV);
	K_FILL(iv, inv, 1);
	K_MAP1(S_TO_FP32, CVT, F32, u, K_ROW(G, off), n, off);
	if (inv != 1)
		K_MAP2(S_UNSCALE, MUL, F32, u, u, iv, n, off);
}

#endif
