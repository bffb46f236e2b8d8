/*
 * rmsnorm.c — RMS normalisation over each row (LLaMA and most LLMs since),
 * forward and backward, with a weight g.
 *
 * Forward, per row of N values:
 *   y_j = x̂_j · g_j,   x̂_j = x_j · r,   r = rsqrt(mean(x²) + eps)
 * Variants (how the row statistic is computed, and where each breaks):
 *   plain      as written: x_j² in the compute format, converted to the
 *              accumulator format and summed sequentially there, ms = Σ / N,
 *              converted to the compute format, r = rsqrt(ms + eps). In fp16
 *              x² overflows for |x| ≥ 255.97 (65504 + 16 = 65520 rounds to
 *              inf), so a row of RMS ≥ 256 (whose max |x| is ≥ its RMS)
 *              always fails first at "square"; a row whose elements all stay
 *              below 255.97 but whose Σ x² passes 65520 fails at "sumsq".
 *   prescaled  the overflow-safe form: s = max_j |x_j| (EMU_OP_ABS map, then
 *              a sequential MAX fold from +0, compute format), x̃_j = x_j / s,
 *              ms = mean(x̃²) as in plain, e = (eps / s) / s, rt =
 *              rsqrt(ms + e), x̂_j = x̃_j · rt. In exact arithmetic
 *              x̃ · rsqrt(mean(x̃²) + eps/s²) = x · rsqrt(mean(x²) + eps): the
 *              same y. eps/s² is two divisions, never eps/(s·s), so s² cannot
 *              overflow (s ≥ 256 in fp16); the quotient overflows instead for
 *              s < sqrt(eps/max) (fp16, eps 1e-6: s below ~3.9e-6), where
 *              rsqrt(inf) = +0 and y = 0 (the truth is about x/√eps). A zero
 *              row (s = 0) is 0/0: x̃ is NaN (invalid, step "prescale") and
 *              so are y and dx; nothing special-cases it, as the division a
 *              kernel writes does not. rstd and ms are x̃'s (the statistic
 *              this variant forms); x's rstd is rstd / s.
 *   fp32stats  statistics in fp32 whatever the policy, as fused kernels
 *              (PyTorch's, Apex's) do for half inputs: x converted to fp32,
 *              squared, summed sequentially, divided by N (fp32), + eps
 *              (rounded into fp32), rsqrt in fp32; rstd and ms are held in
 *              fp32 (the saved statistics), and r is rstd converted into the
 *              compute format for x̂ = x · r. x² overflows fp32 only from
 *              |x| ≈ 1.8e19.
 * In plain and prescaled eps enters through a conversion into the compute
 * format, so eps = 1e-8 is 0 in fp16: a zero row then gives rsqrt(0) = inf
 * (divbyzero, step "rsqrt") in plain, and x̂ = 0 · inf = NaN.
 *
 * Precision policy: x is loaded by emu_load (storage format, the policy's
 * scaling recipe, then the compute format); the weights g (parameter `g`,
 * default 1, every element that value) are stored in the storage format
 * (step "g", without the scaling recipe) and converted to the compute
 * format; elementwise work (squares, x̃, x̂, y, the backward's products) is in
 * the compute format; sums and their division by N are in the accumulator
 * format, sequential, then converted to the compute format (fp32stats: its
 * statistics in fp32, as above); y and dx are stored in the storage format.
 *
 * Backward: the upstream gradient dy is stored in the storage format (step
 * "dy", as layernorm's: parameter `dy` gives every element that value; by
 * default dy_j = ±1 with the sign from bit 0 of emu_sr_bits(seed, r·N + j)).
 * With x̂ the compute-format x̂ of the forward pass,
 *   gdy_j = g_j · dy_j,   m = mean(gdy · x̂)   (Σ in the accumulator format)
 *   dx_j  = (gdy_j − x̂_j · m) · r             (prescaled: · rt, then / s)
 *   dg_j  = Σ_rows dy_j · x̂_j                  (accumulator format: each row's
 *           product converted there, then a sequential fold down column j,
 *           rows in order, a strided operand)
 * (the gradient of y = x · r · g, with dr/dx_j = −r³ x_j / N).
 *
 * Outputs: y and dx (rows·N, storage format), rstd and ms (one per row,
 * compute format; fp32 in fp32stats), dg (N, accumulator format).
 *
 * GPU counterpart: gpu/rows.h's `k_rmsnorm_row` and `k_rmsnorm_dg`, compiled by nvcc in
 * gpu/kern.cu and with the emulator's operations in gpu/host_rows.c for the fake device,
 * whose outputs tests/gpu/ compares with this file's (docs/gpu.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"

static const char *const variants[] = {"plain", "prescaled", "fp32stats", NULL};

enum { PLAIN, PRESCALED, FP32STATS };

/* The steps, each one operation site of the kernel. */
enum {
	S_N_ACCUM = EMU_STEP0,
	S_EPS,
	S_G,
	S_G_C,
	S_N_F32,
	S_EPS_F32,
	S_ABS,
	S_AMAX,
	S_PRESCALE,
	S_X_F32,
	S_SQUARE,
	S_SQ_ACCUM,
	S_SUMSQ,
	S_MEAN,
	S_MS_C,
	S_EPS_DIV1,
	S_EPS_DIV2,
	S_ADD_EPS,
	S_RSQRT,
	S_RSTD_C,
	S_NORM,
	S_SCALE_G,
	S_STORE,
	S_DY,
	S_DY_C,
	S_G_DY,
	S_GDY_XH,
	S_GDY_XH_ACCUM,
	S_DPROJ,
	S_DPROJ_DIV,
	S_DPROJ_C,
	S_DX_PROJ_MUL,
	S_DX_PROJ_SUB,
	S_DX,
	S_DX_UNSCALE,
	S_DX_STORE,
	S_DY_XH,
	S_DY_XH_ACCUM,
	S_DG,
	S_END
};
static const char *const steps[S_END - EMU_STEP0] = {
    [S_N_ACCUM - EMU_STEP0] = "to_accum",
    [S_EPS - EMU_STEP0] = "eps",
    [S_G - EMU_STEP0] = "g",
    [S_G_C - EMU_STEP0] = "to_compute",
    [S_N_F32 - EMU_STEP0] = "to_fp32",
    [S_EPS_F32 - EMU_STEP0] = "eps",
    [S_ABS - EMU_STEP0] = "abs",
    [S_AMAX - EMU_STEP0] = "amax",
    [S_PRESCALE - EMU_STEP0] = "prescale",
    [S_X_F32 - EMU_STEP0] = "to_fp32",
    [S_SQUARE - EMU_STEP0] = "square",
    [S_SQ_ACCUM - EMU_STEP0] = "to_accum",
    [S_SUMSQ - EMU_STEP0] = "sumsq",
    [S_MEAN - EMU_STEP0] = "mean",
    [S_MS_C - EMU_STEP0] = "to_compute",
    [S_EPS_DIV1 - EMU_STEP0] = "eps_scaled",
    [S_EPS_DIV2 - EMU_STEP0] = "eps_scaled",
    [S_ADD_EPS - EMU_STEP0] = "add_eps",
    [S_RSQRT - EMU_STEP0] = "rsqrt",
    [S_RSTD_C - EMU_STEP0] = "to_compute",
    [S_NORM - EMU_STEP0] = "norm",
    [S_SCALE_G - EMU_STEP0] = "scale_g",
    [S_STORE - EMU_STEP0] = "store",
    [S_DY - EMU_STEP0] = "dy",
    [S_DY_C - EMU_STEP0] = "to_compute",
    [S_G_DY - EMU_STEP0] = "g_dy",
    [S_GDY_XH - EMU_STEP0] = "gdy_xhat",
    [S_GDY_XH_ACCUM - EMU_STEP0] = "to_accum",
    [S_DPROJ - EMU_STEP0] = "dproj",
    [S_DPROJ_DIV - EMU_STEP0] = "dproj",
    [S_DPROJ_C - EMU_STEP0] = "to_compute",
    [S_DX_PROJ_MUL - EMU_STEP0] = "dx_proj",
    [S_DX_PROJ_SUB - EMU_STEP0] = "dx_proj",
    [S_DX - EMU_STEP0] = "dx",
    [S_DX_UNSCALE - EMU_STEP0] = "dx_unscale",
    [S_DX_STORE - EMU_STEP0] = "dx_store",
    [S_DY_XH - EMU_STEP0] = "dy_xhat",
    [S_DY_XH_ACCUM - EMU_STEP0] = "to_accum",
    [S_DG - EMU_STEP0] = "dg",
};

static int parse_variant(const char *variant)
{
	return !variant                        ? PLAIN
	       : !strcmp(variant, "plain")     ? PLAIN
	       : !strcmp(variant, "prescaled") ? PRESCALED
	       : !strcmp(variant, "fp32stats") ? FP32STATS
	                                       : -1;
}

/* Upstream gradients i0 .. i0 + n − 1 (row-major): dyval everywhere, or
 * when it is NaN ±1 from bit 0 of emu_sr_bits(seed, i). */
static void dy_draw(uint64_t seed, double dyval, size_t i0, size_t n, double *dy)
{
	for (size_t j = 0; j < n; j++)
		dy[j] = !isnan(dyval) ? dyval : emu_sr_bits(seed, i0 + j) & 1 ? -1.0 : 1.0;
}

/* x; the weights g (N, stored at step "g"): parameter `g` everywhere; the
 * upstream gradient dy (rows × N, stored at step "dy"; parameter `dy`, else
 * the seed's ±1: dy_draw, which a kernel's own run calls row by row). */
static int inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                  char *err, size_t errlen)
{
	size_t R = in->rows, N = in->cols;
	emu_kinput *tg, *tdy;
	double gval, dyval, *g, *dy;

	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	if (parse_variant(variant) < 0 || R == 0 || N == 0)
		return 0; /* the run refuses them */
	if (!emu_kparam_real(in, "rmsnorm", "g", -INFINITY, INFINITY, 0, 1, &gval, err, errlen) ||
	    !emu_kparam_real(in, "rmsnorm", "dy", -INFINITY, INFINITY, 0, NAN, &dyval, err,
	                     errlen) ||
	    emu_kinputs_add(ki, in, "rmsnorm", "g", 1, N, false, &tg, &g, err, errlen) != 0 ||
	    emu_kinputs_add(ki, in, "rmsnorm", "dy", R, N, true, &tdy, &dy, err, errlen) != 0)
		return -1;
	tg->fmt = tdy->fmt = &pol->storage;
	tg->step = S_G;
	tdy->step = S_DY;
	for (size_t j = 0; g && j < N; j++)
		g[j] = gval;
	if (dy)
		dy_draw(in->seed, dyval, 0, R * N, dy);
	return 0;
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const emu_format *F = emu_format_by_name("fp32");
	int v = parse_variant(variant);
	if (v < 0 || in->cols == 0 || in->rows == 0 || !F) {
		snprintf(err, errlen,
		         v < 0 ? "rmsnorm: unknown variant '%s' (plain prescaled fp32stats)"
		         : !F  ? "rmsnorm: no fp32 format%s"
		               : "rmsnorm: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	size_t R = in->rows, N = in->cols;
	double eps, dyval; /* dyval NaN: the ±1 pattern */
	emu_kinputs ki;
	if (!emu_kparam_real(in, "rmsnorm", "eps", 0, INFINITY, 0, 1e-6, &eps, err, errlen) ||
	    !emu_kparam_real(in, "rmsnorm", "dy", -INFINITY, INFINITY, 0, NAN, &dyval, err,
	                     errlen) ||
	    emu_kinputs_take(&emu_kernel_rmsnorm, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	/* dyin NULL: dy_draw, row by row */
	const double *gin = emu_kinputs_find(&ki, "g")->v, *dyin = emu_kinputs_find(&ki, "dy")->v;
	/* the statistics' format: fp32 in fp32stats, else the policy's */
	const emu_format *SA = v == FP32STATS ? F : A, *SC = v == FP32STATS ? F : C;
	emu_steps(be, steps, S_END - EMU_STEP0);
	emu_vec *y = emu_kout_vec(be, out, "y", R * N, S);
	emu_vec *dx = emu_kout_vec(be, out, "dx", R * N, S);
	emu_vec *rstd = emu_kout_vec(be, out, "rstd", R, SC);
	emu_vec *ms = emu_kout_vec(be, out, "ms", R, SC);
	emu_vec *dg = emu_kout_vec(be, out, "dg", N, A);
	emu_vec *X = emu_vec_new(be, R * N), *Q = emu_vec_new(be, R * N);
	emu_vec *xh = emu_vec_new(be, N), *g = emu_vec_new(be, N), *dy = emu_vec_new(be, N);
	emu_vec *w1 = emu_vec_new(be, N), *w2 = emu_vec_new(be, N);
	emu_vec *t = emu_vec_new(be, 12);
	double *raw = dyin ? NULL : malloc(N * sizeof *raw);
	if (!y || !dx || !rstd || !ms || !dg || !X || !Q || !xh || !g || !dy || !w1 || !w2 || !t ||
	    (!dyin && !raw) || emu_load(be, pol, in->x, R, N, X) != 0) {
		free(raw);
		emu_kinputs_free(&ki);
		snprintf(err, errlen, "rmsnorm: out of memory");
		return -1;
	}
	enum { SUM, TMP, EPSC, NA, NS, VE, DPROJ, SMAX, RC, ES };
	emu_ref s = emu_at(t, SUM), tmp = emu_at(t, TMP), epsc = emu_at(t, EPSC),
	        Na = emu_at(t, NA), Ns = emu_at(t, NS), ve = emu_at(t, VE),
	        dproj = emu_at(t, DPROJ), smax = emu_at(t, SMAX), rc = emu_at(t, RC),
	        es = emu_at(t, ES);
	emu_ref XH = emu_row(xh, 0), G = emu_row(g, 0), DY = emu_row(dy, 0), W1 = emu_row(w1, 0),
	        W2 = emu_row(w2, 0);
	/* N in the accumulator format (and in fp32 for fp32stats' mean), eps in
	 * the statistics' compute format (both rounded if they must be: eps =
	 * 1e-8 is 0 in fp16) */
	emu_fill(be, tmp, (double)N, 1);
	emu_op1(be, S_N_ACCUM, EMU_OP_CVT, A, Na, tmp, EMU_NOREF, 0);
	if (v == FP32STATS)
		emu_op1(be, S_N_F32, EMU_OP_CVT, F, Ns, tmp, EMU_NOREF, 0);
	else
		emu_copy(be, Ns, Na, 1);
	emu_fill(be, tmp, eps, 1);
	emu_op1(be, v == FP32STATS ? S_EPS_F32 : S_EPS, EMU_OP_CVT, SC, epsc, tmp, EMU_NOREF, 0);
	/* the weights: stored, then in the compute format */
	emu_input(be, S_G, S, G, gin, 1, N, 0, NULL);
	emu_map(be, S_G_C, EMU_OP_CVT, C, G, G, EMU_NOREF, EMU_NOREF, N, 0, NULL);
	for (size_t r = 0; r < R; r++) {
		size_t o = r * N;
		emu_ref x = emu_row(X, o), rs = emu_at(rstd, r), m = emu_at(ms, r);
		/* ---- the row statistic: ms and rstd ---- */
		emu_ref xs = x; /* what is squared: x, x̃ or fp32(x) */
		if (v == PRESCALED) {
			emu_map(be, S_ABS, EMU_OP_ABS, C, W1, x, EMU_NOREF, EMU_NOREF, N, o, NULL);
			emu_fill(be, smax, 0, 1);
			emu_fold(be, S_AMAX, EMU_OP_MAX, C, EMU_ORDER_SEQ, smax, W1, EMU_NOREF, N,
			         o);
			emu_map(be, S_PRESCALE, EMU_OP_DIV, C, XH, x, smax, EMU_NOREF, N, o, NULL);
			xs = XH;
		} else if (v == FP32STATS) {
			emu_map(be, S_X_F32, EMU_OP_CVT, F, XH, x, EMU_NOREF, EMU_NOREF, N, o,
			        NULL);
			xs = XH;
		}
		emu_map(be, S_SQUARE, EMU_OP_MUL, SC, W1, xs, xs, EMU_NOREF, N, o, NULL);
		if (v != FP32STATS)
			emu_map(be, S_SQ_ACCUM, EMU_OP_CVT, A, W1, W1, EMU_NOREF, EMU_NOREF, N, o,
			        NULL);
		emu_fill(be, s, 0, 1);
		emu_fold(be, S_SUMSQ, EMU_OP_ADD, SA, EMU_ORDER_SEQ, s, W1, EMU_NOREF, N, o);
		emu_op1(be, S_MEAN, EMU_OP_DIV, SA, s, s, Ns, r);
		if (v == FP32STATS)
			emu_copy(be, m, s, 1);
		else
			emu_op1(be, S_MS_C, EMU_OP_CVT, C, m, s, EMU_NOREF, r);
		if (v == PRESCALED) { /* eps / s², as two divisions */
			emu_op1(be, S_EPS_DIV1, EMU_OP_DIV, C, es, epsc, smax, r);
			emu_op1(be, S_EPS_DIV2, EMU_OP_DIV, C, es, es, smax, r);
			emu_op1(be, S_ADD_EPS, EMU_OP_ADD, C, ve, m, es, r);
		} else {
			emu_op1(be, S_ADD_EPS, EMU_OP_ADD, SC, ve, m, epsc, r);
		}
		emu_op1(be, S_RSQRT, EMU_OP_RSQRT, SC, rs, ve, EMU_NOREF, r);
		if (v == FP32STATS)
			emu_op1(be, S_RSTD_C, EMU_OP_CVT, C, rc, rs, EMU_NOREF, r);
		else
			emu_copy(be, rc, rs, 1);
		/* ---- x̂ = x · r (prescaled: x̃ · rt), y = x̂ · g, stored ---- */
		emu_map(be, S_NORM, EMU_OP_MUL, C, XH, v == PRESCALED ? XH : x, rc, EMU_NOREF, N, o,
		        NULL);
		emu_map(be, S_SCALE_G, EMU_OP_MUL, C, W1, XH, G, EMU_NOREF, N, o, NULL);
		emu_map(be, S_STORE, EMU_OP_CVT, S, emu_row(y, o), W1, EMU_NOREF, EMU_NOREF, N, o,
		        NULL);
		/* ---- backward: m = mean(g·dy·x̂) ---- */
		if (!dyin)
			dy_draw(in->seed, dyval, o, N, raw);
		emu_input(be, S_DY, S, DY, dyin ? dyin + o : raw, 1, N, o, NULL);
		emu_map(be, S_DY_C, EMU_OP_CVT, C, DY, DY, EMU_NOREF, EMU_NOREF, N, o, NULL);
		emu_map(be, S_G_DY, EMU_OP_MUL, C, W1, G, DY, EMU_NOREF, N, o, NULL);
		emu_map(be, S_GDY_XH, EMU_OP_MUL, C, W2, W1, XH, EMU_NOREF, N, o, NULL);
		emu_map(be, S_GDY_XH_ACCUM, EMU_OP_CVT, A, W2, W2, EMU_NOREF, EMU_NOREF, N, o,
		        NULL);
		emu_fill(be, s, 0, 1);
		emu_fold(be, S_DPROJ, EMU_OP_ADD, A, EMU_ORDER_SEQ, s, W2, EMU_NOREF, N, o);
		emu_op1(be, S_DPROJ_DIV, EMU_OP_DIV, A, s, s, Na, r);
		emu_op1(be, S_DPROJ_C, EMU_OP_CVT, C, dproj, s, EMU_NOREF, r);
		/* dx_j = (g_j·dy_j − x̂_j · m) · r, stored */
		emu_map(be, S_DX_PROJ_MUL, EMU_OP_MUL, C, W2, XH, dproj, EMU_NOREF, N, o, NULL);
		emu_map(be, S_DX_PROJ_SUB, EMU_OP_SUB, C, W1, W1, W2, EMU_NOREF, N, o, NULL);
		emu_map(be, S_DX, EMU_OP_MUL, C, W1, W1, rc, EMU_NOREF, N, o, NULL);
		if (v == PRESCALED)
			emu_map(be, S_DX_UNSCALE, EMU_OP_DIV, C, W1, W1, smax, EMU_NOREF, N, o,
			        NULL);
		emu_map(be, S_DX_STORE, EMU_OP_CVT, S, emu_row(dx, o), W1, EMU_NOREF, EMU_NOREF, N,
		        o, NULL);
		/* dy·x̂ of this row, kept for dg's fold down the columns */
		emu_map(be, S_DY_XH, EMU_OP_MUL, C, emu_row(Q, o), DY, XH, EMU_NOREF, N, o, NULL);
		emu_map(be, S_DY_XH_ACCUM, EMU_OP_CVT, A, emu_row(Q, o), emu_row(Q, o), EMU_NOREF,
		        EMU_NOREF, N, o, NULL);
	}
	/* dg_j = Σ_r dy·x̂, rows in order: element j·R + r */
	for (size_t j = 0; j < N; j++)
		emu_fold(be, S_DG, EMU_OP_ADD, A, EMU_ORDER_SEQ, emu_at(dg, j),
		         emu_strided(Q, j, N), EMU_NOREF, R, j * R);
	free(raw);
	emu_kinputs_free(&ki);
	return 0;
}

const emu_kernel emu_kernel_rmsnorm = {
    "rmsnorm",
    variants,
    "eps=E (default 1e-6, rounded into the compute format; fp32 in fp32stats); g=G (every "
    "weight G, default 1); dy=D (every upstream gradient D; default ±1 from the seed)",
    run,
    inputs,
};
