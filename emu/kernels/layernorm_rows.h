/*
 * layernorm_rows.h — layer normalisation's order of operations, forward and
 * backward, one row at a time, written once (emu/engine/krow.h):
 * emu/kernels/layernorm.c runs it on the engine's backends, gpu/kern.cu on
 * the GPU (one thread a row) and gpu/host_rows.c on the fake device.
 *
 * Row r of X (R×N values of the compute format, row-major):
 *   twopass  mean = Σ x / N (A), then var = Σ (x − mean)² / N (A)
 *   onepass  var = Σ x² / N − mean² (A)
 *   welford  the running mean and M2, element by element in A (the counts
 *            1..N in A: kA, from k_layernorm_consts)
 * then var and mean into C, rstd = rsqrt(var + eps), y = (x − mean)·rstd
 * stored in S (k_layernorm_fwd). The backward (k_layernorm_bwd) takes the
 * row's dy as stored in S, converts it to C where it lies, and gives
 * dx = rstd·(dy − mean(dy) − ŷ·mean(dy·ŷ)) stored in S. The engine stores
 * dy between the two (emu_input, its own step); the GPU's row of dy is
 * the input's.
 * t holds LN_NT scalars (the constants of k_layernorm_consts, then the
 * row's own); yc, w1, w2 (and kA, welford) hold N values each; yc keeps
 * x − mean, then ŷ, from the forward to the backward.
 */
#ifndef NANMAP_LAYERNORM_ROWS_H
#define NANMAP_LAYERNORM_ROWS_H

/* The steps, each one operation site of the kernel under a name of its
 * own (tests/engine/check_kernels.c checks, docs/kernels-NAME.md lists them) */
#define K_LAYERNORM_STEPS(X)                                                                       \
	X(S_N_ACCUM, "n_to_accum")                                                                 \
	X(S_EPS, "eps")                                                                            \
	X(S_K_ACCUM, "k_to_accum")                                                                 \
	X(S_X_ACCUM, "x_to_accum")                                                                 \
	X(S_W_DELTA, "welford_delta")                                                              \
	X(S_W_MEAN_DIV, "welford_mean")                                                            \
	X(S_W_MEAN_ADD, "welford_mean_add")                                                        \
	X(S_W_DELTA2, "welford_delta2")                                                            \
	X(S_W_M2_MUL, "welford_m2")                                                                \
	X(S_W_M2_ADD, "welford_m2_add")                                                            \
	X(S_W_VAR, "var")                                                                          \
	X(S_SUM, "sum")                                                                            \
	X(S_SQUARE1, "square")                                                                     \
	X(S_SQ_ACCUM1, "sq_to_accum")                                                              \
	X(S_SUMSQ1, "sumsq")                                                                       \
	X(S_MEAN, "mean")                                                                          \
	X(S_VAR_DIV1, "var_div")                                                                   \
	X(S_VAR_MUL, "var_mean_sq")                                                                \
	X(S_VAR_SUB, "var_sub")                                                                    \
	X(S_MEAN_C2, "twopass_mean_to_compute")                                                    \
	X(S_CENTER2, "center")                                                                     \
	X(S_SQUARE2, "square_centered")                                                            \
	X(S_SQ_ACCUM2, "sq_centered_to_accum")                                                     \
	X(S_SUMSQ2, "sumsq_centered")                                                              \
	X(S_VAR_DIV2, "var_centered")                                                              \
	X(S_MEAN_C, "mean_to_compute")                                                             \
	X(S_VAR_C, "var_to_compute")                                                               \
	X(S_ADD_EPS, "add_eps")                                                                    \
	X(S_RSQRT, "rsqrt")                                                                        \
	X(S_CENTER, "center_x")                                                                    \
	X(S_NORM, "norm")                                                                          \
	X(S_STORE, "store")                                                                        \
	X(S_DY, "dy")                                                                              \
	X(S_DY_C, "dy_to_compute")                                                                 \
	X(S_DY_ACCUM, "dy_to_accum")                                                               \
	X(S_DMEAN, "dmean")                                                                        \
	X(S_DY_Y, "dy_y")                                                                          \
	X(S_DYY_ACCUM, "dy_y_to_accum")                                                            \
	X(S_DPROJ, "dproj")                                                                        \
	X(S_DMEAN_DIV, "dmean_div")                                                                \
	X(S_DMEAN_C, "dmean_to_compute")                                                           \
	X(S_DPROJ_DIV, "dproj_div")                                                                \
	X(S_DPROJ_C, "dproj_to_compute")                                                           \
	X(S_DX_CENTER, "dx_center")                                                                \
	X(S_DX_PROJ_MUL, "dx_proj")                                                                \
	X(S_DX_PROJ_SUB, "dx_proj_sub")                                                            \
	X(S_DX, "dx")                                                                              \
	X(S_DX_STORE, "dx_store")
#ifdef K_STEP_ENUM /* the engine's step ids (the loops drop them) */
enum { S_FIRST_ = K_STEP0 - 1, K_LAYERNORM_STEPS(K_STEP_ENUM) S_END };
#endif

/* the variants */
/* The variants, in the order of emu/kernels/layernorm.c's list (the first
 * its default) */
#define K_LAYERNORM_VARIANTS(X)                                                                    \
	X(LN_TWOPASS, "twopass")                                                                   \
	X(LN_ONEPASS, "onepass")                                                                   \
	X(LN_WELFORD, "welford")
enum { K_LAYERNORM_VARIANTS(K_VARIANT_ID) };

/* the scalars of t */
enum {
	LN_MEAN,
	LN_SUM,
	LN_SUM2,
	LN_TMP,
	LN_TMP2,
	LN_EPSC,
	LN_NA,
	LN_VE,
	LN_DMEAN,
	LN_DPROJ,
	LN_MA,
	LN_XA,
	LN_NT
};

/* N in A, eps in C (both rounded if they must be: eps = 1e-8 is 0 in
 * fp16), and for welford the counts 1..N in A (kA) */
K_FN void k_layernorm_consts(k_ctx kc, int v, k_fmt C, k_fmt A, size_t N, double eps, k_vec t,
                             k_vec kA)
{
	k_ref tmp = K_AT(t, LN_TMP);
	K_FILL(tmp, (double)N, 1);
	K_OP1(S_N_ACCUM, CVT, A, K_AT(t, LN_NA), tmp, 0);
	K_FILL(tmp, eps, 1);
	K_OP1(S_EPS, CVT, C, K_AT(t, LN_EPSC), tmp, 0);
	if (v == LN_WELFORD) {
		for (size_t j = 0; j < N; j++)
			K_FILL(K_AT(kA, j), (double)(j + 1), 1);
		K_MAP1(S_K_ACCUM, CVT, A, K_ROW(kA, 0), K_ROW(kA, 0), N, 0);
	}
}

/* the forward of row r: var[r] and rstd[r] (values of C), row r of y (S);
 * yc is left holding ŷ for k_layernorm_bwd */
K_FN void k_layernorm_fwd(k_ctx kc, int v, k_fmt S, k_fmt C, k_fmt A, k_vec X, size_t N, size_t r,
                          k_vec kA, k_vec t, k_vec yc, k_vec w1, k_vec w2, k_vec y, k_vec rstd,
                          k_vec var)
{
	size_t o = r * N;
	k_ref x = K_ROW(X, o), rs = K_AT(rstd, r), vr = K_AT(var, r);
	k_ref mean = K_AT(t, LN_MEAN), s = K_AT(t, LN_SUM), s2 = K_AT(t, LN_SUM2),
	      tmp = K_AT(t, LN_TMP), tmp2 = K_AT(t, LN_TMP2), epsc = K_AT(t, LN_EPSC),
	      Na = K_AT(t, LN_NA), ve = K_AT(t, LN_VE), ma = K_AT(t, LN_MA), xa = K_AT(t, LN_XA);
	k_ref YC = K_ROW(yc, 0), W1 = K_ROW(w1, 0), W2 = K_ROW(w2, 0);
	/* ---- the row statistics: mean and var in the compute format ---- */
	if (v == LN_WELFORD) { /* a recurrence: one element at a time */
		K_MAP1(S_X_ACCUM, CVT, A, W1, x, N, o);
		K_FILL(ma, 0, 1);
		K_FILL(s2, 0, 1); /* M2 */
		for (size_t j = 0, i = o; j < N; j++, i++) {
			K_COPY(xa, K_AT(w1, j), 1);
			K_OP2(S_W_DELTA, SUB, A, tmp, xa, ma, i);
			K_OP2(S_W_MEAN_DIV, DIV, A, tmp2, tmp, K_AT(kA, j), i);
			K_OP2(S_W_MEAN_ADD, ADD, A, ma, ma, tmp2, i);
			K_OP2(S_W_DELTA2, SUB, A, tmp2, xa, ma, i);
			K_OP2(S_W_M2_MUL, MUL, A, tmp, tmp, tmp2, i);
			K_OP2(S_W_M2_ADD, ADD, A, s2, s2, tmp, i);
		}
		K_OP2(S_W_VAR, DIV, A, s2, s2, Na, r);
	} else {
		K_FILL(s, 0, 1);
		K_FILL(s2, 0, 1);
		/* the elementwise work first, then the sums (Σ x² alongside in
		 * onepass) */
		K_MAP1(S_X_ACCUM, CVT, A, W1, x, N, o);
		if (v == LN_ONEPASS) {
			K_MAP2(S_SQUARE1, MUL, C, W2, x, x, N, o);
			K_MAP1(S_SQ_ACCUM1, CVT, A, W2, W2, N, o);
		}
		K_FOLD(S_SUM, ADD, A, s, W1, N, o);
		if (v == LN_ONEPASS)
			K_FOLD(S_SUMSQ1, ADD, A, s2, W2, N, o);
		K_OP2(S_MEAN, DIV, A, ma, s, Na, r);
		if (v == LN_ONEPASS) { /* E[x²] − E[x]² */
			K_OP2(S_VAR_DIV1, DIV, A, s2, s2, Na, r);
			K_OP2(S_VAR_MUL, MUL, A, tmp, ma, ma, r);
			K_OP2(S_VAR_SUB, SUB, A, s2, s2, tmp, r);
		} else { /* second pass: Σ (x − mean)², x − mean kept for y */
			K_OP1(S_MEAN_C2, CVT, C, mean, ma, r);
			K_MAP2(S_CENTER2, SUB, C, YC, x, mean, N, o);
			K_MAP2(S_SQUARE2, MUL, C, W2, YC, YC, N, o);
			K_MAP1(S_SQ_ACCUM2, CVT, A, W2, W2, N, o);
			K_FOLD(S_SUMSQ2, ADD, A, s2, W2, N, o);
			K_OP2(S_VAR_DIV2, DIV, A, s2, s2, Na, r);
		}
	}
	if (v != LN_TWOPASS) /* twopass converted it before its second pass */
		K_OP1(S_MEAN_C, CVT, C, mean, ma, r);
	K_OP1(S_VAR_C, CVT, C, vr, s2, r);
	K_OP2(S_ADD_EPS, ADD, C, ve, vr, epsc, r);
	K_OP1(S_RSQRT, RSQRT, C, rs, ve, r);
	/* ---- y = (x − mean) · rstd, stored ---- */
	if (v != LN_TWOPASS)
		K_MAP2(S_CENTER, SUB, C, YC, x, mean, N, o);
	K_MAP2(S_NORM, MUL, C, YC, YC, rs, N, o);
	K_MAP1(S_STORE, CVT, S, K_ROW(y, o), YC, N, o);
}

/* the backward of row r, after k_layernorm_fwd: dy's row, values of S from
 * dy[dyo], into C where it lies, then row r of dx (values of S) */
K_FN void k_layernorm_bwd(k_ctx kc, k_fmt S, k_fmt C, k_fmt A, k_vec dy, size_t dyo, size_t N,
                          size_t r, k_vec t, k_vec yc, k_vec w1, k_vec w2, k_vec rstd, k_vec dx)
{
	size_t o = r * N;
	k_ref DY = K_ROW(dy, dyo), YC = K_ROW(yc, 0), W1 = K_ROW(w1, 0), W2 = K_ROW(w2, 0),
	      rs = K_AT(rstd, r);
	k_ref s = K_AT(t, LN_SUM), s2 = K_AT(t, LN_SUM2), Na = K_AT(t, LN_NA),
	      dmean = K_AT(t, LN_DMEAN), dproj = K_AT(t, LN_DPROJ);
	/* ---- mean(dy) and mean(dy·ŷ) ---- */
	K_MAP1(S_DY_C, CVT, C, DY, DY, N, o);
	K_FILL(s, 0, 1);
	K_FILL(s2, 0, 1);
	K_MAP1(S_DY_ACCUM, CVT, A, W1, DY, N, o);
	K_MAP2(S_DY_Y, MUL, C, W2, DY, YC, N, o);
	K_MAP1(S_DYY_ACCUM, CVT, A, W2, W2, N, o);
	K_FOLD(S_DMEAN, ADD, A, s, W1, N, o);
	K_FOLD(S_DPROJ, ADD, A, s2, W2, N, o);
	K_OP2(S_DMEAN_DIV, DIV, A, s, s, Na, r);
	K_OP1(S_DMEAN_C, CVT, C, dmean, s, r);
	K_OP2(S_DPROJ_DIV, DIV, A, s2, s2, Na, r);
	K_OP1(S_DPROJ_C, CVT, C, dproj, s2, r);
	/* dx_j = rstd · (dy_j − mean(dy) − ŷ_j · mean(dy·ŷ)), stored */
	K_MAP2(S_DX_CENTER, SUB, C, W1, DY, dmean, N, o);
	K_MAP2(S_DX_PROJ_MUL, MUL, C, W2, YC, dproj, N, o);
	K_MAP2(S_DX_PROJ_SUB, SUB, C, W1, W1, W2, N, o);
	K_MAP2(S_DX, MUL, C, W1, W1, rs, N, o);
	K_MAP1(S_DX_STORE, CVT, S, K_ROW(dx, o), W1, N, o);
}

#endif
