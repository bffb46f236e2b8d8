/*
 * batchnorm_rows.h — batch normalisation's order of operations (emu/kernels/
 * batchnorm.c), written once (emu/engine/krow.h): emu/kernels/batchnorm.c
 * runs it on the engine's backends, gpu/kern.cu on the GPU (one thread a
 * channel) and gpu/host_rows.c on the fake device.
 *
 * The kernel works on an N × C input channel by channel, but its sums run
 * down the columns while its elementwise work runs along the rows, and the
 * engine keeps the phases apart: every channel's sums, then the
 * per-channel scalars of every channel, then row after row. So each phase
 * is a function of its own, over channel c alone (NAME_col), over the
 * channels c0 .. c0 + nc − 1 (the per-channel scalars), or over those
 * channels of row n: the engine calls each over every channel in its
 * order, a GPU thread calls them all for its one channel, in the same
 * order (k_batchnorm_channel). Between k_batchnorm_running and
 * k_batchnorm_dy the engine stores dy (emu_input, step "dy"); on the GPU dy
 * arrives stored.
 *
 * A k_bn holds the formats, the vectors and the per-channel parameters'
 * references (gamma, beta and the running statistics: one scalar of t
 * broadcast, or a row of C values when given as tensors). The vectors of
 * C values (sums, invstd, var_unbiased, the factors, the row scratch) are
 * shared by the GPU's threads, each touching its own channel's element;
 * w1, w2, kA (N values each) and t (BN_NT scalars) are a thread's own.
 */
#ifndef NANMAP_BATCHNORM_ROWS_H
#define NANMAP_BATCHNORM_ROWS_H

/* The steps, each one operation site of the kernel under a name of its
 * own (tests/engine/check_kernels.c checks, docs/kernels-NAME.md lists them) */
#define K_BATCHNORM_STEPS(X)                                                                       \
	X(S_N_ACCUM, "n_to_accum")                                                                 \
	X(S_N1_ACCUM, "n1_to_accum")                                                               \
	X(S_EPS, "eps")                                                                            \
	X(S_GAMMA_C, "gamma")                                                                      \
	X(S_BETA_C, "beta")                                                                        \
	X(S_MOM_C, "momentum")                                                                     \
	X(S_ONE_MINUS_MOM, "one_minus_momentum")                                                   \
	X(S_RMEAN_C, "running_mean")                                                               \
	X(S_RVAR_C, "running_var")                                                                 \
	X(S_K_ACCUM, "k_to_accum")                                                                 \
	X(S_X_ACCUM, "x_to_accum")                                                                 \
	X(S_SUM, "sum")                                                                            \
	X(S_MEAN, "mean")                                                                          \
	X(S_W_DELTA, "welford_delta")                                                              \
	X(S_W_MEAN_DIV, "welford_mean")                                                            \
	X(S_W_MEAN_ADD, "welford_mean_add")                                                        \
	X(S_W_DELTA2, "welford_delta2")                                                            \
	X(S_W_M2_MUL, "welford_m2")                                                                \
	X(S_W_M2_ADD, "welford_m2_add")                                                            \
	X(S_MEAN_C, "mean_to_compute")                                                             \
	X(S_CENTER, "center")                                                                      \
	X(S_SQUARE, "square")                                                                      \
	X(S_SQ_ACCUM, "sq_to_accum")                                                               \
	X(S_SUMSQ, "sumsq")                                                                        \
	X(S_VAR_DIV, "var")                                                                        \
	X(S_VAR_C, "var_to_compute")                                                               \
	X(S_UVAR_DIV, "var_unbiased")                                                              \
	X(S_UVAR_C, "var_unbiased_to_compute")                                                     \
	X(S_ADD_EPS, "add_eps")                                                                    \
	X(S_SQRT, "sqrt")                                                                          \
	X(S_INVSTD, "invstd")                                                                      \
	X(S_GAMMA, "gamma_mul")                                                                    \
	X(S_NORM, "norm")                                                                          \
	X(S_BETA, "beta_add")                                                                      \
	X(S_STORE, "store")                                                                        \
	X(S_RM_MOM, "rm_momentum")                                                                 \
	X(S_RM_KEEP, "rm_keep")                                                                    \
	X(S_RM_ADD, "rm_update")                                                                   \
	X(S_RM_STORE, "rm_store")                                                                  \
	X(S_RV_MOM, "rv_momentum")                                                                 \
	X(S_RV_KEEP, "rv_keep")                                                                    \
	X(S_RV_ADD, "rv_update")                                                                   \
	X(S_RV_STORE, "rv_store")                                                                  \
	X(S_DY, "dy")                                                                              \
	X(S_DY_C, "dy_to_compute")                                                                 \
	X(S_DY_ACCUM, "dy_to_accum")                                                               \
	X(S_SUM_DY, "sum_dy")                                                                      \
	X(S_DY_XMU, "dy_xmu")                                                                      \
	X(S_DYX_ACCUM, "dy_xmu_to_accum")                                                          \
	X(S_SUM_DY_XMU, "sum_dy_xmu")                                                              \
	X(S_NORM_FCT, "norm_fct")                                                                  \
	X(S_NORM_C, "norm_fct_to_compute")                                                         \
	X(S_SUM_DY_C, "sum_dy_to_compute")                                                         \
	X(S_SUM_DYX_C, "sum_dy_xmu_to_compute")                                                    \
	X(S_DBETA_STORE, "dbeta_store")                                                            \
	X(S_DGAMMA, "dgamma")                                                                      \
	X(S_DGAMMA_STORE, "dgamma_store")                                                          \
	X(S_MEAN_DY, "mean_dy")                                                                    \
	X(S_F1_SQ, "factor_1")                                                                     \
	X(S_F1_MUL, "factor_1_mul")                                                                \
	X(S_F1_NORM, "factor_1_norm")                                                              \
	X(S_F2, "factor_2")                                                                        \
	X(S_DX_CENTER, "dx_center")                                                                \
	X(S_DX_PROJ_MUL, "dx_proj")                                                                \
	X(S_DX_PROJ_SUB, "dx_proj_sub")                                                            \
	X(S_DX, "dx")                                                                              \
	X(S_DX_STORE, "dx_store")
#ifdef K_STEP_ENUM /* the engine's step ids (the loops drop them) */
enum { S_FIRST_ = K_STEP0 - 1, K_BATCHNORM_STEPS(K_STEP_ENUM) S_END };
#endif

/* the variants */
/* The variants, in the order of emu/kernels/batchnorm.c's list (the first
 * its default) */
#define K_BATCHNORM_VARIANTS(X)                                                                    \
	X(BN_TWOPASS, "twopass")                                                                   \
	X(BN_WELFORD, "welford")                                                                   \
	X(BN_EVAL, "eval")
enum { K_BATCHNORM_VARIANTS(K_VARIANT_ID) };

/* the scalars of t */
enum {
	BN_TMP,
	BN_TMP2,
	BN_NA,
	BN_N1A,
	BN_EPS,
	BN_GAMMA,
	BN_BETA,
	BN_MOM,
	BN_OMM,
	BN_RMEAN,
	BN_RVAR,
	BN_MA,
	BN_XA,
	BN_NORM,
	BN_ONE,
	BN_NT
};

typedef struct {
	int v;                /* BN_TWOPASS, BN_WELFORD, BN_EVAL */
	k_fmt S, C, A;        /* storage, compute, accumulator */
	size_t N, Ch;         /* rows (the batch), channels */
	k_vec X, xmu, dy;     /* N·Ch: x, x − mean and dy in C */
	k_vec y, dx;          /* N·Ch outputs, in S */
	k_vec mean, var;      /* Ch outputs, in C */
	k_vec rm, rv, dg, db; /* Ch outputs, in S */
	/* Ch each: the two sums, invstd, var_unbiased, the backward's
	 * factors, mean_dy, a row's two scratch values */
	k_vec sa, sb, invstd, uvar, f1, f2, mdy, row, row2;
	k_vec w1, w2, kA, t;      /* a thread's own: N, N, N (Welford's counts), BN_NT */
	k_ref gam, bet, rmc, rvc; /* gamma, beta, the running mean and variance in C */
} k_bn;

/* the constants: N and N − 1 in the accumulator format; eps, gamma, beta,
 * momentum and the initial running statistics in the compute format (each
 * rounded if it must be); given bit 1, 2, 4, 8: gamma, beta, the running
 * mean, the running variance given as tensors instead (converted by the
 * caller) */
K_FN void k_batchnorm_consts(k_ctx kc, const k_bn *bn, double eps, double gamma, double beta,
                             double mom, double rmean, double rvar, unsigned given)
{
	k_vec t = bn->t;
	k_ref tmp = K_AT(t, BN_TMP);
#define BN_CST(step, F, slot, x)                                                                   \
	do {                                                                                       \
		K_FILL(tmp, x, 1);                                                                 \
		K_OP1(step, CVT, F, K_AT(t, slot), tmp, 0);                                        \
	} while (0)
	BN_CST(S_N_ACCUM, bn->A, BN_NA, (double)bn->N);
	BN_CST(S_N1_ACCUM, bn->A, BN_N1A, (double)bn->N - 1);
	BN_CST(S_EPS, bn->C, BN_EPS, eps);
	if (!(given & 1))
		BN_CST(S_GAMMA_C, bn->C, BN_GAMMA, gamma);
	if (!(given & 2))
		BN_CST(S_BETA_C, bn->C, BN_BETA, beta);
	BN_CST(S_MOM_C, bn->C, BN_MOM, mom);
	if (!(given & 4))
		BN_CST(S_RMEAN_C, bn->C, BN_RMEAN, rmean);
	if (!(given & 8))
		BN_CST(S_RVAR_C, bn->C, BN_RVAR, rvar);
#undef BN_CST
}

/* 1, and 1 − momentum in the compute format */
K_FN void k_batchnorm_momentum(k_ctx kc, const k_bn *bn)
{
	K_FILL(K_AT(bn->t, BN_ONE), 1, 1);
	K_OP2(S_ONE_MINUS_MOM, SUB, bn->C, K_AT(bn->t, BN_OMM), K_AT(bn->t, BN_ONE),
	      K_AT(bn->t, BN_MOM), 0);
}

/* Welford's counts 1 .. N in the accumulator format */
K_FN void k_batchnorm_counts(k_ctx kc, const k_bn *bn)
{
	for (size_t j = 0; j < bn->N; j++)
		K_FILL(K_AT(bn->kA, j), (double)(j + 1), 1);
	K_MAP1(S_K_ACCUM, CVT, bn->A, K_ROW(bn->kA, 0), K_ROW(bn->kA, 0), bn->N, 0);
}

/* training: channel c's sum (twopass) into sa[c], or Welford's running
 * mean and M2 into sa[c] and sb[c], in the accumulator format */
K_FN void k_batchnorm_mean_col(k_ctx kc, const k_bn *bn, size_t c)
{
	k_fmt A = bn->A;
	size_t N = bn->N, o = c * N;
	k_ref W1 = K_ROW(bn->w1, 0), s = K_AT(bn->sa, c);
	K_MAP1(S_X_ACCUM, CVT, A, W1, K_STRIDED(bn->X, c, bn->Ch), N, o);
	if (bn->v == BN_WELFORD) {
		k_ref ma = K_AT(bn->t, BN_MA), xa = K_AT(bn->t, BN_XA), tmp = K_AT(bn->t, BN_TMP),
		      tmp2 = K_AT(bn->t, BN_TMP2), m2 = K_AT(bn->sb, c);
		K_FILL(ma, 0, 1);
		K_FILL(m2, 0, 1);
		for (size_t j = 0, i = o; j < N; j++, i++) {
			K_COPY(xa, K_AT(bn->w1, j), 1);
			K_OP2(S_W_DELTA, SUB, A, tmp, xa, ma, i);
			K_OP2(S_W_MEAN_DIV, DIV, A, tmp2, tmp, K_AT(bn->kA, j), i);
			K_OP2(S_W_MEAN_ADD, ADD, A, ma, ma, tmp2, i);
			K_OP2(S_W_DELTA2, SUB, A, tmp2, xa, ma, i);
			K_OP2(S_W_M2_MUL, MUL, A, tmp, tmp, tmp2, i);
			K_OP2(S_W_M2_ADD, ADD, A, m2, m2, tmp, i);
		}
		K_COPY(s, ma, 1);
	} else {
		K_FILL(s, 0, 1);
		K_FOLD(S_SUM, ADD, A, s, W1, N, o);
	}
}

/* the means of channels c0 .. c0 + nc − 1 in the compute format: the sum
 * divided by N (twopass) or Welford's, then converted; eval's the running
 * mean */
K_FN void k_batchnorm_mean(k_ctx kc, const k_bn *bn, size_t c0, size_t nc)
{
	k_ref MEAN = K_ROW(bn->mean, c0), SA = K_ROW(bn->sa, c0);
	if (bn->v == BN_EVAL) {
		K_COPY(MEAN, K_SHIFT(bn->rmc, c0), nc);
		return;
	}
	if (bn->v == BN_TWOPASS)
		K_MAP2(S_MEAN, DIV, bn->A, SA, SA, K_AT(bn->t, BN_NA), nc, c0);
	K_MAP1(S_MEAN_C, CVT, bn->C, MEAN, SA, nc, c0);
}

/* x − mean, row n's channels c0 .. c0 + nc − 1: kept for y, the second
 * pass and the backward */
K_FN void k_batchnorm_center(k_ctx kc, const k_bn *bn, size_t n, size_t c0, size_t nc)
{
	size_t o = n * bn->Ch + c0;
	K_MAP2(S_CENTER, SUB, bn->C, K_ROW(bn->xmu, o), K_ROW(bn->X, o), K_ROW(bn->mean, c0), nc,
	       o);
}

/* twopass: channel c's sum of (x − mean)² (squares in C, summed in A) into
 * sb[c] */
K_FN void k_batchnorm_sumsq_col(k_ctx kc, const k_bn *bn, size_t c)
{
	size_t N = bn->N;
	k_ref d = K_STRIDED(bn->xmu, c, bn->Ch), W2 = K_ROW(bn->w2, 0), s = K_AT(bn->sb, c);
	K_MAP2(S_SQUARE, MUL, bn->C, W2, d, d, N, c * N);
	K_MAP1(S_SQ_ACCUM, CVT, bn->A, W2, W2, N, c * N);
	K_FILL(s, 0, 1);
	K_FOLD(S_SUMSQ, ADD, bn->A, s, W2, N, c * N);
}

/* var (biased) and var_unbiased from M2 (sb) by N and N − 1 in A, then in
 * C (eval: var is the running variance), and invstd = 1 / sqrt(var + eps),
 * channels c0 .. c0 + nc − 1 */
K_FN void k_batchnorm_var(k_ctx kc, const k_bn *bn, size_t c0, size_t nc)
{
	k_fmt C = bn->C, A = bn->A;
	k_ref VAR = K_ROW(bn->var, c0), SA = K_ROW(bn->sa, c0), SB = K_ROW(bn->sb, c0),
	      UVAR = K_ROW(bn->uvar, c0), INVSTD = K_ROW(bn->invstd, c0);
	if (bn->v == BN_EVAL) {
		K_COPY(VAR, K_SHIFT(bn->rvc, c0), nc);
	} else {
		K_MAP2(S_VAR_DIV, DIV, A, SA, SB, K_AT(bn->t, BN_NA), nc, c0);
		K_MAP1(S_VAR_C, CVT, C, VAR, SA, nc, c0);
		K_MAP2(S_UVAR_DIV, DIV, A, SB, SB, K_AT(bn->t, BN_N1A), nc, c0);
		K_MAP1(S_UVAR_C, CVT, C, UVAR, SB, nc, c0);
	}
	K_MAP2(S_ADD_EPS, ADD, C, INVSTD, VAR, K_AT(bn->t, BN_EPS), nc, c0);
	K_MAP1(S_SQRT, SQRT, C, INVSTD, INVSTD, nc, c0);
	K_MAP2(S_INVSTD, DIV, C, INVSTD, K_AT(bn->t, BN_ONE), INVSTD, nc, c0);
}

/* y = ((gamma · (x − mean)) · invstd) + beta, stored: row n's channels
 * c0 .. c0 + nc − 1 */
K_FN void k_batchnorm_y(k_ctx kc, const k_bn *bn, size_t n, size_t c0, size_t nc)
{
	k_fmt C = bn->C;
	size_t o = n * bn->Ch + c0;
	k_ref ROW = K_ROW(bn->row, c0);
	K_MAP2(S_GAMMA, MUL, C, ROW, K_SHIFT(bn->gam, c0), K_ROW(bn->xmu, o), nc, o);
	K_MAP2(S_NORM, MUL, C, ROW, ROW, K_ROW(bn->invstd, c0), nc, o);
	K_MAP2(S_BETA, ADD, C, ROW, ROW, K_SHIFT(bn->bet, c0), nc, o);
	K_MAP1(S_STORE, CVT, bn->S, K_ROW(bn->y, o), ROW, nc, o);
}

/* the running statistics, m · stat + (1 − m) · running, stored (eval
 * leaves them as they were): channels c0 .. c0 + nc − 1 */
K_FN void k_batchnorm_running(k_ctx kc, const k_bn *bn, size_t c0, size_t nc)
{
	k_fmt S = bn->S, C = bn->C;
	k_ref SA = K_ROW(bn->sa, c0), SB = K_ROW(bn->sb, c0), RM = K_ROW(bn->rm, c0),
	      RV = K_ROW(bn->rv, c0), rmc = K_SHIFT(bn->rmc, c0), rvc = K_SHIFT(bn->rvc, c0),
	      mom = K_AT(bn->t, BN_MOM), omm = K_AT(bn->t, BN_OMM);
	if (bn->v == BN_EVAL) {
		K_MAP1(S_RM_STORE, CVT, S, RM, rmc, nc, c0);
		K_MAP1(S_RV_STORE, CVT, S, RV, rvc, nc, c0);
		return;
	}
	K_MAP2(S_RM_MOM, MUL, C, SA, mom, K_ROW(bn->mean, c0), nc, c0);
	K_MAP2(S_RM_KEEP, MUL, C, SB, omm, rmc, nc, c0);
	K_MAP2(S_RM_ADD, ADD, C, SA, SA, SB, nc, c0);
	K_MAP1(S_RM_STORE, CVT, S, RM, SA, nc, c0);
	K_MAP2(S_RV_MOM, MUL, C, SA, mom, K_ROW(bn->uvar, c0), nc, c0);
	K_MAP2(S_RV_KEEP, MUL, C, SB, omm, rvc, nc, c0);
	K_MAP2(S_RV_ADD, ADD, C, SA, SA, SB, nc, c0);
	K_MAP1(S_RV_STORE, CVT, S, RV, SA, nc, c0);
}

/* backward: the stored dy into the compute format, cnt elements from off,
 * stride apart (the engine: all of them, in order; a GPU thread: its
 * channel's column) */
K_FN void k_batchnorm_dy(k_ctx kc, const k_bn *bn, size_t off, size_t stride, size_t cnt)
{
	k_ref d = K_STRIDED(bn->dy, off, stride);
	K_MAP1(S_DY_C, CVT, bn->C, d, d, cnt, off);
}

/* backward: channel c's two sums in A, Σ dy into sa[c] and Σ dy·(x − mean)
 * (products in C) into sb[c] */
K_FN void k_batchnorm_dsum_col(k_ctx kc, const k_bn *bn, size_t c)
{
	k_fmt C = bn->C, A = bn->A;
	size_t N = bn->N;
	k_ref dyc = K_STRIDED(bn->dy, c, bn->Ch), W1 = K_ROW(bn->w1, 0), W2 = K_ROW(bn->w2, 0),
	      sdy = K_AT(bn->sa, c), sdyx = K_AT(bn->sb, c);
	K_MAP1(S_DY_ACCUM, CVT, A, W1, dyc, N, c * N);
	K_MAP2(S_DY_XMU, MUL, C, W2, dyc, K_STRIDED(bn->xmu, c, bn->Ch), N, c * N);
	K_MAP1(S_DYX_ACCUM, CVT, A, W2, W2, N, c * N);
	K_FILL(sdy, 0, 1);
	K_FILL(sdyx, 0, 1);
	K_FOLD(S_SUM_DY, ADD, A, sdy, W1, N, c * N);
	K_FOLD(S_SUM_DY_XMU, ADD, A, sdyx, W2, N, c * N);
}

/* backward, channels c0 .. c0 + nc − 1: norm = 1/N (in A, then C), the
 * sums in C, dbeta = sum_dy and dgamma = sum_dy_xmu · invstd stored, then
 * mean_dy = sum_dy · norm, factor_1 = ((invstd · invstd) · sum_dy_xmu) ·
 * norm (eval's statistics are constants: neither) and factor_2 = gamma ·
 * invstd */
K_FN void k_batchnorm_factors(k_ctx kc, const k_bn *bn, size_t c0, size_t nc)
{
	k_fmt S = bn->S, C = bn->C;
	k_ref SA = K_ROW(bn->sa, c0), SB = K_ROW(bn->sb, c0), INVSTD = K_ROW(bn->invstd, c0),
	      F1 = K_ROW(bn->f1, c0), tmp = K_AT(bn->t, BN_TMP), norm = K_AT(bn->t, BN_NORM);
	K_OP2(S_NORM_FCT, DIV, bn->A, tmp, K_AT(bn->t, BN_ONE), K_AT(bn->t, BN_NA), 0);
	K_OP1(S_NORM_C, CVT, C, norm, tmp, 0);
	K_MAP1(S_SUM_DY_C, CVT, C, SA, SA, nc, c0);
	K_MAP1(S_SUM_DYX_C, CVT, C, SB, SB, nc, c0);
	K_MAP1(S_DBETA_STORE, CVT, S, K_ROW(bn->db, c0), SA, nc, c0);
	K_MAP2(S_DGAMMA, MUL, C, F1, SB, INVSTD, nc, c0);
	K_MAP1(S_DGAMMA_STORE, CVT, S, K_ROW(bn->dg, c0), F1, nc, c0);
	if (bn->v != BN_EVAL) {
		K_MAP2(S_MEAN_DY, MUL, C, K_ROW(bn->mdy, c0), SA, norm, nc, c0);
		K_MAP2(S_F1_SQ, MUL, C, F1, INVSTD, INVSTD, nc, c0);
		K_MAP2(S_F1_MUL, MUL, C, F1, F1, SB, nc, c0);
		K_MAP2(S_F1_NORM, MUL, C, F1, F1, norm, nc, c0);
	}
	K_MAP2(S_F2, MUL, C, K_ROW(bn->f2, c0), K_SHIFT(bn->gam, c0), INVSTD, nc, c0);
}

/* dx = ((dy − mean_dy) − (x − mean)·factor_1)·factor_2 (eval: dy·factor_2),
 * stored: row n's channels c0 .. c0 + nc − 1 */
K_FN void k_batchnorm_dx(k_ctx kc, const k_bn *bn, size_t n, size_t c0, size_t nc)
{
	k_fmt C = bn->C;
	size_t o = n * bn->Ch + c0;
	k_ref dyr = K_ROW(bn->dy, o), ROW = K_ROW(bn->row, c0), ROW2 = K_ROW(bn->row2, c0);
	if (bn->v != BN_EVAL) {
		K_MAP2(S_DX_CENTER, SUB, C, ROW, dyr, K_ROW(bn->mdy, c0), nc, o);
		K_MAP2(S_DX_PROJ_MUL, MUL, C, ROW2, K_ROW(bn->xmu, o), K_ROW(bn->f1, c0), nc, o);
		K_MAP2(S_DX_PROJ_SUB, SUB, C, ROW, ROW, ROW2, nc, o);
		dyr = ROW;
	}
	K_MAP2(S_DX, MUL, C, ROW, dyr, K_ROW(bn->f2, c0), nc, o);
	K_MAP1(S_DX_STORE, CVT, bn->S, K_ROW(bn->dx, o), ROW, nc, o);
}

#ifndef K_STEP_ENUM
/* A GPU thread's work (gpu/kern.cu; gpu/host_rows.c): every phase above for
 * channel c of X and DY (N × Ch, values of C and S: dy arrives stored, and
 * is converted in place), in the engine's order. cst: eps, gamma, beta,
 * momentum and the running mean and variance, values of C already (their
 * conversions are exact). Writes column c of Y, DX and XMU, and MEAN[c],
 * VAR[c], RM[c], RV[c], DG[c], DB[c]; SH holds the 9·Ch values the
 * threads share (each its channel's), W the thread's own 3·N + BN_NT. */
K_FN void k_batchnorm_channel(k_ctx kc, int v, k_fmt S, k_fmt C, k_fmt A, float *X, float *DY,
                              size_t N, size_t Ch, size_t c, const float *cst, float *Y, float *DX,
                              float *MEAN, float *VAR, float *RM, float *RV, float *DG, float *DB,
                              float *XMU, float *SH, float *W)
{
	k_bn b;
	b.v = v;
	b.S = S;
	b.C = C;
	b.A = A;
	b.N = N;
	b.Ch = Ch;
	b.X = X;
	b.xmu = XMU;
	b.dy = DY;
	b.y = Y;
	b.dx = DX;
	b.mean = MEAN;
	b.var = VAR;
	b.rm = RM;
	b.rv = RV;
	b.dg = DG;
	b.db = DB;
	b.sa = SH;
	b.sb = SH + Ch;
	b.invstd = SH + 2 * Ch;
	b.uvar = SH + 3 * Ch;
	b.f1 = SH + 4 * Ch;
	b.f2 = SH + 5 * Ch;
	b.mdy = SH + 6 * Ch;
	b.row = SH + 7 * Ch;
	b.row2 = SH + 8 * Ch;
	b.w1 = W;
	b.w2 = W + N;
	b.kA = W + 2 * N;
	b.t = W + 3 * N;
	b.gam = K_AT(b.t, BN_GAMMA);
	b.bet = K_AT(b.t, BN_BETA);
	b.rmc = K_AT(b.t, BN_RMEAN);
	b.rvc = K_AT(b.t, BN_RVAR);
	k_batchnorm_consts(kc, &b, cst[0], cst[1], cst[2], cst[3], cst[4], cst[5], 0);
	k_batchnorm_momentum(kc, &b);
	if (v == BN_WELFORD)
		k_batchnorm_counts(kc, &b);
	if (v != BN_EVAL)
		k_batchnorm_mean_col(kc, &b, c);
	k_batchnorm_mean(kc, &b, c, 1);
	for (size_t n = 0; n < N; n++)
		k_batchnorm_center(kc, &b, n, c, 1);
	if (v == BN_TWOPASS)
		k_batchnorm_sumsq_col(kc, &b, c);
	k_batchnorm_var(kc, &b, c, 1);
	for (size_t n = 0; n < N; n++)
		k_batchnorm_y(kc, &b, n, c, 1);
	k_batchnorm_running(kc, &b, c, 1);
	k_batchnorm_dy(kc, &b, c, Ch, N);
	k_batchnorm_dsum_col(kc, &b, c);
	k_batchnorm_factors(kc, &b, c, 1);
	for (size_t n = 0; n < N; n++)
		k_batchnorm_dx(kc, &b, n, c, 1);
}
#endif

#endif
