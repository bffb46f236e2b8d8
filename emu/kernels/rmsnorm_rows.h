/*
 * rmsnorm_rows.h — RMS normalisation's order of operations, forward and
 * backward, one row at a time, and the weight gradient one column at a
 * time, written once (emu/engine/krow.h): emu/kernels/rmsnorm.c runs it on
 * the engine's backends, gpu/kern.cu on the GPU (one thread a row, then one
 * a column) and gpu/host_rows.c on the fake device.
 *
 * Row r of X (R×N values of the compute format, row-major), with the
 * statistics in SA and SC (fp32 in fp32stats, else A and C):
 *   plain      ms = Σ x² / N, r = rsqrt(ms + eps), x̂ = x·r
 *   prescaled  s = max |x| from +0, x̃ = x / s, ms = Σ x̃² / N,
 *              rt = rsqrt(ms + (eps / s) / s), x̂ = x̃·rt
 *   fp32stats  x into fp32, the statistics there, r = C(rstd)
 * then y = x̂·g stored in S (k_rmsnorm_fwd). The backward (k_rmsnorm_bwd)
 * takes the row's dy as stored in S, converts it to C where it lies, and
 * gives dx = (g·dy − x̂·mean(g·dy·x̂))·r (prescaled: then / s) stored in S,
 * and row r of Q, dy·x̂ in A. k_rmsnorm_dg then sums column j of Q down
 * the rows, in A. The engine stores g before the rows and dy between each
 * row's forward and backward (emu_input, their own steps); the GPU's
 * threads fill g with the stored weight, and their row of dy is the
 * input's.
 * t holds RN_NT scalars (the constants of k_rmsnorm_consts, then the row's
 * own); g, xh, w1, w2 hold N values each; xh keeps x̃ or fp32(x), then x̂,
 * from the forward to the backward.
 */
#ifndef NANMAP_RMSNORM_ROWS_H
#define NANMAP_RMSNORM_ROWS_H

/* The steps, each one operation site of the kernel under a name of its
 * own (tests/engine/check_kernels.c checks, docs/kernels-NAME.md lists them) */
#define K_RMSNORM_STEPS(X)                                                                         \
	X(S_N_ACCUM, "n_to_accum")                                                                 \
	X(S_EPS, "eps")                                                                            \
	X(S_G, "g")                                                                                \
	X(S_G_C, "g_to_compute")                                                                   \
	X(S_N_F32, "n_to_fp32")                                                                    \
	X(S_EPS_F32, "eps_fp32")                                                                   \
	X(S_ABS, "abs")                                                                            \
	X(S_AMAX, "amax")                                                                          \
	X(S_PRESCALE, "prescale")                                                                  \
	X(S_X_F32, "x_to_fp32")                                                                    \
	X(S_SQUARE, "square")                                                                      \
	X(S_SQ_ACCUM, "sq_to_accum")                                                               \
	X(S_SUMSQ, "sumsq")                                                                        \
	X(S_MEAN, "mean")                                                                          \
	X(S_MS_C, "ms_to_compute")                                                                 \
	X(S_EPS_DIV1, "eps_div_s")                                                                 \
	X(S_EPS_DIV2, "eps_scaled")                                                                \
	X(S_ADD_EPS, "add_eps")                                                                    \
	X(S_RSQRT, "rsqrt")                                                                        \
	X(S_RSTD_C, "rstd_to_compute")                                                             \
	X(S_NORM, "norm")                                                                          \
	X(S_SCALE_G, "scale_g")                                                                    \
	X(S_STORE, "store")                                                                        \
	X(S_DY, "dy")                                                                              \
	X(S_DY_C, "dy_to_compute")                                                                 \
	X(S_G_DY, "g_dy")                                                                          \
	X(S_GDY_XH, "gdy_xhat")                                                                    \
	X(S_GDY_XH_ACCUM, "gdy_xhat_to_accum")                                                     \
	X(S_DPROJ, "dproj")                                                                        \
	X(S_DPROJ_DIV, "dproj_div")                                                                \
	X(S_DPROJ_C, "dproj_to_compute")                                                           \
	X(S_DX_PROJ_MUL, "dx_proj")                                                                \
	X(S_DX_PROJ_SUB, "dx_proj_sub")                                                            \
	X(S_DX, "dx")                                                                              \
	X(S_DX_UNSCALE, "dx_unscale")                                                              \
	X(S_DX_STORE, "dx_store")                                                                  \
	X(S_DY_XH, "dy_xhat")                                                                      \
	X(S_DY_XH_ACCUM, "dy_xhat_to_accum")                                                       \
	X(S_DG, "dg")
#ifdef K_STEP_ENUM /* the engine's step ids (the loops drop them) */
enum { S_FIRST_ = K_STEP0 - 1, K_RMSNORM_STEPS(K_STEP_ENUM) S_END };
#endif

/* the variants */
/* The variants, in the order of emu/kernels/rmsnorm.c's list (the first
 * its default) */
#define K_RMSNORM_VARIANTS(X)                                                                      \
	X(RN_PLAIN, "plain")                                                                       \
	X(RN_PRESCALED, "prescaled")                                                               \
	X(RN_FP32STATS, "fp32stats")
enum { K_RMSNORM_VARIANTS(K_VARIANT_ID) };

/* the scalars of t */
enum { RN_SUM, RN_TMP, RN_EPSC, RN_NA, RN_NS, RN_VE, RN_DPROJ, RN_SMAX, RN_RC, RN_ES, RN_NT };

/* N in A (and in fp32, F, for fp32stats' mean), eps in the statistics'
 * compute format (both rounded if they must be: eps = 1e-8 is 0 in fp16) */
K_FN void k_rmsnorm_consts(k_ctx kc, int v, k_fmt C, k_fmt A, k_fmt F, size_t N, double eps,
                           k_vec t)
{
	k_fmt SC = v == RN_FP32STATS ? F : C;
	k_ref tmp = K_AT(t, RN_TMP), Na = K_AT(t, RN_NA), Ns = K_AT(t, RN_NS);
	K_FILL(tmp, (double)N, 1);
	K_OP1(S_N_ACCUM, CVT, A, Na, tmp, 0);
	if (v == RN_FP32STATS)
		K_OP1(S_N_F32, CVT, F, Ns, tmp, 0);
	else
		K_COPY(Ns, Na, 1);
	K_FILL(tmp, eps, 1);
	K_OP1(v == RN_FP32STATS ? S_EPS_F32 : S_EPS, CVT, SC, K_AT(t, RN_EPSC), tmp, 0);
}

/* the weights, stored in g (N values of S), into the compute format */
K_FN void k_rmsnorm_g(k_ctx kc, k_fmt C, k_vec g, size_t N)
{
	K_MAP1(S_G_C, CVT, C, K_ROW(g, 0), K_ROW(g, 0), N, 0);
}

/* the forward of row r: ms[r] and rstd[r] (values of SC), row r of y (S);
 * xh is left holding x̂ for k_rmsnorm_bwd */
K_FN void k_rmsnorm_fwd(k_ctx kc, int v, k_fmt S, k_fmt C, k_fmt A, k_fmt F, k_vec X, size_t N,
                        size_t r, k_vec g, k_vec t, k_vec xh, k_vec w1, k_vec y, k_vec rstd,
                        k_vec ms)
{
	k_fmt SA = v == RN_FP32STATS ? F : A, SC = v == RN_FP32STATS ? F : C;
	size_t o = r * N;
	k_ref x = K_ROW(X, o), rs = K_AT(rstd, r), m = K_AT(ms, r);
	k_ref s = K_AT(t, RN_SUM), epsc = K_AT(t, RN_EPSC), Ns = K_AT(t, RN_NS),
	      ve = K_AT(t, RN_VE), smax = K_AT(t, RN_SMAX), rc = K_AT(t, RN_RC),
	      es = K_AT(t, RN_ES);
	k_ref XH = K_ROW(xh, 0), G = K_ROW(g, 0), W1 = K_ROW(w1, 0);
	/* ---- the row statistic: ms and rstd ---- */
	k_ref xs = x; /* what is squared: x, x̃ or fp32(x) */
	if (v == RN_PRESCALED) {
		K_MAP1(S_ABS, ABS, C, W1, x, N, o);
		K_FILL(smax, 0, 1);
		K_FOLD(S_AMAX, MAX, C, smax, W1, N, o);
		K_MAP2(S_PRESCALE, DIV, C, XH, x, smax, N, o);
		xs = XH;
	} else if (v == RN_FP32STATS) {
		K_MAP1(S_X_F32, CVT, F, XH, x, N, o);
		xs = XH;
	}
	K_MAP2(S_SQUARE, MUL, SC, W1, xs, xs, N, o);
	if (v != RN_FP32STATS)
		K_MAP1(S_SQ_ACCUM, CVT, A, W1, W1, N, o);
	K_FILL(s, 0, 1);
	K_FOLD(S_SUMSQ, ADD, SA, s, W1, N, o);
	K_OP2(S_MEAN, DIV, SA, s, s, Ns, r);
	if (v == RN_FP32STATS)
		K_COPY(m, s, 1);
	else
		K_OP1(S_MS_C, CVT, C, m, s, r);
	if (v == RN_PRESCALED) { /* eps / s², as two divisions */
		K_OP2(S_EPS_DIV1, DIV, C, es, epsc, smax, r);
		K_OP2(S_EPS_DIV2, DIV, C, es, es, smax, r);
		K_OP2(S_ADD_EPS, ADD, C, ve, m, es, r);
	} else {
		K_OP2(S_ADD_EPS, ADD, SC, ve, m, epsc, r);
	}
	K_OP1(S_RSQRT, RSQRT, SC, rs, ve, r);
	if (v == RN_FP32STATS)
		K_OP1(S_RSTD_C, CVT, C, rc, rs, r);
	else
		K_COPY(rc, rs, 1);
	/* ---- x̂ = x · r (prescaled: x̃ · rt), y = x̂ · g, stored ---- */
	K_MAP2(S_NORM, MUL, C, XH, v == RN_PRESCALED ? XH : x, rc, N, o);
	K_MAP2(S_SCALE_G, MUL, C, W1, XH, G, N, o);
	K_MAP1(S_STORE, CVT, S, K_ROW(y, o), W1, N, o);
}

/* the backward of row r, after k_rmsnorm_fwd: dy's row, values of S from
 * dy[dyo], into C where it lies, then row r of dx (values of S) and of Q
 * (dy·x̂ in A, for k_rmsnorm_dg) */
K_FN void k_rmsnorm_bwd(k_ctx kc, int v, k_fmt S, k_fmt C, k_fmt A, k_vec dy, size_t dyo, size_t N,
                        size_t r, k_vec g, k_vec t, k_vec xh, k_vec w1, k_vec w2, k_vec dx, k_vec Q)
{
	size_t o = r * N;
	k_ref DY = K_ROW(dy, dyo), XH = K_ROW(xh, 0), G = K_ROW(g, 0), W1 = K_ROW(w1, 0),
	      W2 = K_ROW(w2, 0), q = K_ROW(Q, o);
	k_ref s = K_AT(t, RN_SUM), Na = K_AT(t, RN_NA), dproj = K_AT(t, RN_DPROJ),
	      smax = K_AT(t, RN_SMAX), rc = K_AT(t, RN_RC);
	/* ---- m = mean(g·dy·x̂) ---- */
	K_MAP1(S_DY_C, CVT, C, DY, DY, N, o);
	K_MAP2(S_G_DY, MUL, C, W1, G, DY, N, o);
	K_MAP2(S_GDY_XH, MUL, C, W2, W1, XH, N, o);
	K_MAP1(S_GDY_XH_ACCUM, CVT, A, W2, W2, N, o);
	K_FILL(s, 0, 1);
	K_FOLD(S_DPROJ, ADD, A, s, W2, N, o);
	K_OP2(S_DPROJ_DIV, DIV, A, s, s, Na, r);
	K_OP1(S_DPROJ_C, CVT, C, dproj, s, r);
	/* dx_j = (g_j·dy_j − x̂_j · m) · r, stored */
	K_MAP2(S_DX_PROJ_MUL, MUL, C, W2, XH, dproj, N, o);
	K_MAP2(S_DX_PROJ_SUB, SUB, C, W1, W1, W2, N, o);
	K_MAP2(S_DX, MUL, C, W1, W1, rc, N, o);
	if (v == RN_PRESCALED)
		K_MAP2(S_DX_UNSCALE, DIV, C, W1, W1, smax, N, o);
	K_MAP1(S_DX_STORE, CVT, S, K_ROW(dx, o), W1, N, o);
	/* dy·x̂ of this row, kept for dg's fold down the columns */
	K_MAP2(S_DY_XH, MUL, C, q, DY, XH, N, o);
	K_MAP1(S_DY_XH_ACCUM, CVT, A, q, q, N, o);
}

/* after every row: dg_j = Σ_r Q[r·N + j] in A, rows in order from +0
 * (column j of Q, a strided operand: element j·R + r of the step), for j
 * = j0 .. j0 + m − 1 (the columns' folds stepped together) */
K_FN void k_rmsnorm_dg(k_ctx kc, k_fmt A, k_vec Q, size_t R, size_t N, size_t j0, size_t m,
                       k_vec dg)
{
	k_ref d = K_ROW(dg, j0);
	K_FILL(d, 0, m);
	K_FOLDN(S_DG, ADD, A, d, K_STRIDED(Q, j0, N), 1, R, m, j0 * R, R);
}

#endif
