/*
 * layernorm.c — layer normalisation over each row, forward and backward,
 * without an affine part (γ = 1, β = 0: they only scale and shift y and dx
 * and do not change where the statistics break).
 *
 * Forward, per row of N values:
 *   y_j = (x_j − mean) · rstd,   rstd = rsqrt(var + eps)
 * Variants (how the row statistics are computed, and where each breaks):
 *   twopass  mean = Σ x_j / N, then var = Σ (x_j − mean)² / N. Stable; in a
 *            narrow compute format (x_j − mean)² underflows to 0 once the
 *            spread is below ~sqrt(min subnormal), and overflows (fp16) when
 *            |x_j − mean| ≥ 256.
 *   onepass  var = E[x²] − E[x]². Catastrophic cancellation: when the mean is
 *            large against the spread, E[x²] and E[x]² agree in all the bits
 *            the accumulator holds, and var comes out wrong by ~ulp(mean²),
 *            often negative, so rsqrt(var + eps) is NaN (invalid) or huge.
 *            x² also overflows fp16 for |x| ≥ 256 however small the spread.
 *   welford  running mean and M2 (Welford 1962): δ = x − m, m += δ/k,
 *            M2 += δ·(x − m), var = M2 / N. Stable like twopass in one pass;
 *            runs entirely in the accumulator format (its state is an
 *            accumulator), so k itself is rounded there (e4m3 holds 16, not 17).
 * In every variant eps enters through a conversion into the compute format,
 * so eps = 1e-8 is 0 in fp16, exactly as in a half-precision kernel; then a
 * variance that underflowed to 0 gives rsqrt(0) = inf (divbyzero) and the
 * outputs turn inf/NaN.
 *
 * Precision policy: x is loaded by emu_load (storage format, the policy's
 * scaling recipe, then the compute format); elementwise work (x − mean,
 * squares, products, rsqrt)
 * is in the compute format; sums and their division by N are in the
 * accumulator format, sequential, then converted to the compute format.
 *
 * Backward: the upstream gradient dy is stored in the storage format (step
 * "dy", without the scaling recipe: the default ±1 is exact in every storage
 * format, and a scale would only perturb it through scale_inv); parameter
 * `dy` gives every element that value (dy=1 is "ones", whose exact dx is 0);
 * by default dy_j = ±1 with the sign from bit 0 of emu_sr_bits(seed, r·N + j).
 * With ŷ the compute-format y,
 *   dx_j = rstd · (dy_j − mean(dy) − ŷ_j · mean(dy·ŷ))
 * (PyTorch's layer-norm backward with γ = 1: ŷ is recomputed from the saved
 * mean and rstd in the compute format), stored in the storage format.
 *
 * Outputs: y and dx (rows·N, storage format), rstd and var (one per row,
 * compute format: var shows onepass's negative variances).
 *
 * GPU counterpart: gpu/rows.h's `k_layernorm_row`, compiled by nvcc in gpu/kern.cu and with
 * the emulator's operations in gpu/host_rows.c for the fake device, whose outputs tests/gpu/
 * compares with this file's (docs/gpu.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"

static const char *const variants[] = {"twopass", "onepass", "welford", NULL};

enum { TWOPASS, ONEPASS, WELFORD };

/* The steps, each one operation site of the kernel. */
enum {
	S_N_ACCUM = EMU_STEP0,
	S_EPS,
	S_K_ACCUM,
	S_X_ACCUM,
	S_W_DELTA,
	S_W_MEAN_DIV,
	S_W_MEAN_ADD,
	S_W_DELTA2,
	S_W_M2_MUL,
	S_W_M2_ADD,
	S_W_VAR,
	S_SUM,
	S_SQUARE1,
	S_SQ_ACCUM1,
	S_SUMSQ1,
	S_MEAN,
	S_VAR_DIV1,
	S_VAR_MUL,
	S_VAR_SUB,
	S_MEAN_C2,
	S_CENTER2,
	S_SQUARE2,
	S_SQ_ACCUM2,
	S_SUMSQ2,
	S_VAR_DIV2,
	S_MEAN_C,
	S_VAR_C,
	S_ADD_EPS,
	S_RSQRT,
	S_CENTER,
	S_NORM,
	S_STORE,
	S_DY,
	S_DY_C,
	S_DY_ACCUM,
	S_DMEAN,
	S_DY_Y,
	S_DYY_ACCUM,
	S_DPROJ,
	S_DMEAN_DIV,
	S_DMEAN_C,
	S_DPROJ_DIV,
	S_DPROJ_C,
	S_DX_CENTER,
	S_DX_PROJ_MUL,
	S_DX_PROJ_SUB,
	S_DX,
	S_DX_STORE,
	S_END
};
static const char *const steps[S_END - EMU_STEP0] = {
    "to_accum",
    "eps",
    "to_accum",
    "to_accum",
    "welford_delta",
    "welford_mean",
    "welford_mean",
    "welford_delta2",
    "welford_m2",
    "welford_m2",
    "var",
    "sum",
    "square",
    "to_accum",
    "sumsq",
    "mean",
    "var",
    "var",
    "var",
    "to_compute",
    "center",
    "square",
    "to_accum",
    "sumsq",
    "var",
    "to_compute",
    "to_compute",
    "add_eps",
    "rsqrt",
    "center",
    "norm",
    "store",
    "dy",
    "to_compute",
    "to_accum",
    "dmean",
    "dy_y",
    "to_accum",
    "dproj",
    "dmean",
    "to_compute",
    "dproj",
    "to_compute",
    "dx_center",
    "dx_proj",
    "dx_proj",
    "dx",
    "dx_store",
};

static int parse_variant(const char *variant)
{
	return !variant                      ? TWOPASS
	       : !strcmp(variant, "twopass") ? TWOPASS
	       : !strcmp(variant, "onepass") ? ONEPASS
	       : !strcmp(variant, "welford") ? WELFORD
	                                     : -1;
}

/* Upstream gradients i0 .. i0 + n − 1 (row-major): dyval everywhere, or
 * when it is NaN ±1 from bit 0 of emu_sr_bits(seed, i). */
static void dy_draw(uint64_t seed, double dyval, size_t i0, size_t n, double *dy)
{
	for (size_t j = 0; j < n; j++)
		dy[j] = !isnan(dyval) ? dyval : emu_sr_bits(seed, i0 + j) & 1 ? -1.0 : 1.0;
}

/* x, and the upstream gradient dy (rows × N, stored at step "dy";
 * parameter `dy`, else the seed's ±1: dy_draw, which a kernel's own run
 * calls row by row). */
static int inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                  char *err, size_t errlen)
{
	size_t R = in->rows, N = in->cols;
	emu_kinput *t;
	double dyval, *dy;

	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	if (parse_variant(variant) < 0 || R == 0 || N == 0)
		return 0; /* the run refuses them */
	if (!emu_kparam_real(in, "layernorm", "dy", -INFINITY, INFINITY, 0, NAN, &dyval, err,
	                     errlen) ||
	    emu_kinputs_add(ki, in, "layernorm", "dy", R, N, true, &t, &dy, err, errlen) != 0)
		return -1;
	t->fmt = &pol->storage;
	t->step = S_DY;
	if (dy)
		dy_draw(in->seed, dyval, 0, R * N, dy);
	return 0;
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	int v = parse_variant(variant);
	if (v < 0 || in->cols == 0 || in->rows == 0) {
		snprintf(err, errlen,
		         v < 0 ? "layernorm: unknown variant '%s' (twopass onepass welford)"
		               : "layernorm: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	size_t R = in->rows, N = in->cols;
	double eps, dyval; /* dyval NaN: the ±1 pattern */
	emu_kinputs ki;
	if (!emu_kparam_real(in, "layernorm", "eps", 0, INFINITY, 0, 1e-5, &eps, err, errlen) ||
	    !emu_kparam_real(in, "layernorm", "dy", -INFINITY, INFINITY, 0, NAN, &dyval, err,
	                     errlen) ||
	    emu_kinputs_take(&emu_kernel_layernorm, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	const double *dyin = emu_kinputs_find(&ki, "dy")->v; /* NULL: dy_draw, row by row */
	emu_steps(be, steps, S_END - EMU_STEP0);
	emu_vec *y = emu_kout_vec(be, out, "y", R * N, S);
	emu_vec *dx = emu_kout_vec(be, out, "dx", R * N, S);
	emu_vec *rstd = emu_kout_vec(be, out, "rstd", R, C);
	emu_vec *var = emu_kout_vec(be, out, "var", R, C);
	emu_vec *X = emu_vec_new(be, R * N), *yc = emu_vec_new(be, N), *dy = emu_vec_new(be, N);
	emu_vec *w1 = emu_vec_new(be, N), *w2 = emu_vec_new(be, N);
	emu_vec *kA = v == WELFORD ? emu_vec_new(be, N) : NULL; /* Welford's counts */
	emu_vec *t = emu_vec_new(be, 12);
	double *dyraw = dyin ? NULL : malloc(N * sizeof *dyraw);
	if (!y || !dx || !rstd || !var || !X || !yc || !dy || !w1 || !w2 || (v == WELFORD && !kA) ||
	    !t || (!dyin && !dyraw) || emu_load(be, pol, in->x, R, N, X) != 0) {
		free(dyraw);
		emu_kinputs_free(&ki);
		snprintf(err, errlen, "layernorm: out of memory");
		return -1;
	}
	enum { MEAN, SUM, SUM2, TMP, TMP2, EPSC, NA, VE, DMEAN, DPROJ, MA, XA };
	emu_ref mean = emu_at(t, MEAN), s = emu_at(t, SUM), s2 = emu_at(t, SUM2),
	        tmp = emu_at(t, TMP), tmp2 = emu_at(t, TMP2), epsc = emu_at(t, EPSC),
	        Na = emu_at(t, NA), ve = emu_at(t, VE), dmean = emu_at(t, DMEAN),
	        dproj = emu_at(t, DPROJ), ma = emu_at(t, MA), xa = emu_at(t, XA);
	emu_ref YC = emu_row(yc, 0), DY = emu_row(dy, 0), W1 = emu_row(w1, 0), W2 = emu_row(w2, 0);
	/* N in the accumulator format, eps in the compute format (both rounded
	 * if they must be: eps = 1e-8 is 0 in fp16) */
	emu_fill(be, tmp, (double)N, 1);
	emu_op1(be, S_N_ACCUM, EMU_OP_CVT, A, Na, tmp, EMU_NOREF, 0);
	emu_fill(be, tmp, eps, 1);
	emu_op1(be, S_EPS, EMU_OP_CVT, C, epsc, tmp, EMU_NOREF, 0);
	if (v == WELFORD) { /* the counts 1..N, in the accumulator format */
		for (size_t j = 0; j < N; j++)
			emu_fill(be, emu_at(kA, j), (double)(j + 1), 1);
		emu_map(be, S_K_ACCUM, EMU_OP_CVT, A, emu_row(kA, 0), emu_row(kA, 0), EMU_NOREF,
		        EMU_NOREF, N, 0, NULL);
	}
	for (size_t r = 0; r < R; r++) {
		size_t o = r * N;
		emu_ref x = emu_row(X, o), rs = emu_at(rstd, r);
		/* ---- the row statistics: mean and var in the compute format ---- */
		if (v == WELFORD) { /* a recurrence: one element at a time */
			emu_map(be, S_X_ACCUM, EMU_OP_CVT, A, W1, x, EMU_NOREF, EMU_NOREF, N, o,
			        NULL);
			emu_fill(be, ma, 0, 1);
			emu_fill(be, s2, 0, 1); /* M2 */
			for (size_t j = 0, i = o; j < N; j++, i++) {
				emu_copy(be, xa, emu_at(w1, j), 1);
				emu_op1(be, S_W_DELTA, EMU_OP_SUB, A, tmp, xa, ma, i);
				emu_op1(be, S_W_MEAN_DIV, EMU_OP_DIV, A, tmp2, tmp, emu_at(kA, j),
				        i);
				emu_op1(be, S_W_MEAN_ADD, EMU_OP_ADD, A, ma, ma, tmp2, i);
				emu_op1(be, S_W_DELTA2, EMU_OP_SUB, A, tmp2, xa, ma, i);
				emu_op1(be, S_W_M2_MUL, EMU_OP_MUL, A, tmp, tmp, tmp2, i);
				emu_op1(be, S_W_M2_ADD, EMU_OP_ADD, A, s2, s2, tmp, i);
			}
			emu_op1(be, S_W_VAR, EMU_OP_DIV, A, s2, s2, Na, r);
		} else {
			emu_fill(be, s, 0, 1);
			emu_fill(be, s2, 0, 1);
			/* the elementwise work first, then the sums (Σ x² alongside
			 * in onepass) */
			emu_map(be, S_X_ACCUM, EMU_OP_CVT, A, W1, x, EMU_NOREF, EMU_NOREF, N, o,
			        NULL);
			if (v == ONEPASS) {
				emu_map(be, S_SQUARE1, EMU_OP_MUL, C, W2, x, x, EMU_NOREF, N, o,
				        NULL);
				emu_map(be, S_SQ_ACCUM1, EMU_OP_CVT, A, W2, W2, EMU_NOREF,
				        EMU_NOREF, N, o, NULL);
			}
			emu_fold(be, S_SUM, EMU_OP_ADD, A, EMU_ORDER_SEQ, s, W1, EMU_NOREF, N, o);
			if (v == ONEPASS)
				emu_fold(be, S_SUMSQ1, EMU_OP_ADD, A, EMU_ORDER_SEQ, s2, W2,
				         EMU_NOREF, N, o);
			emu_op1(be, S_MEAN, EMU_OP_DIV, A, ma, s, Na, r);
			if (v == ONEPASS) { /* E[x²] − E[x]² */
				emu_op1(be, S_VAR_DIV1, EMU_OP_DIV, A, s2, s2, Na, r);
				emu_op1(be, S_VAR_MUL, EMU_OP_MUL, A, tmp, ma, ma, r);
				emu_op1(be, S_VAR_SUB, EMU_OP_SUB, A, s2, s2, tmp, r);
			} else { /* second pass: Σ (x − mean)², x − mean kept for y */
				emu_op1(be, S_MEAN_C2, EMU_OP_CVT, C, mean, ma, EMU_NOREF, r);
				emu_map(be, S_CENTER2, EMU_OP_SUB, C, YC, x, mean, EMU_NOREF, N, o,
				        NULL);
				emu_map(be, S_SQUARE2, EMU_OP_MUL, C, W2, YC, YC, EMU_NOREF, N, o,
				        NULL);
				emu_map(be, S_SQ_ACCUM2, EMU_OP_CVT, A, W2, W2, EMU_NOREF,
				        EMU_NOREF, N, o, NULL);
				emu_fold(be, S_SUMSQ2, EMU_OP_ADD, A, EMU_ORDER_SEQ, s2, W2,
				         EMU_NOREF, N, o);
				emu_op1(be, S_VAR_DIV2, EMU_OP_DIV, A, s2, s2, Na, r);
			}
		}
		if (v != TWOPASS) /* twopass converted it before its second pass */
			emu_op1(be, S_MEAN_C, EMU_OP_CVT, C, mean, ma, EMU_NOREF, r);
		emu_op1(be, S_VAR_C, EMU_OP_CVT, C, emu_at(var, r), s2, EMU_NOREF, r);
		emu_op1(be, S_ADD_EPS, EMU_OP_ADD, C, ve, emu_at(var, r), epsc, r);
		emu_op1(be, S_RSQRT, EMU_OP_RSQRT, C, rs, ve, EMU_NOREF, r);
		/* ---- y = (x − mean) · rstd, stored ---- */
		if (v != TWOPASS)
			emu_map(be, S_CENTER, EMU_OP_SUB, C, YC, x, mean, EMU_NOREF, N, o, NULL);
		emu_map(be, S_NORM, EMU_OP_MUL, C, YC, YC, rs, EMU_NOREF, N, o, NULL);
		emu_map(be, S_STORE, EMU_OP_CVT, S, emu_row(y, o), YC, EMU_NOREF, EMU_NOREF, N, o,
		        NULL);
		/* ---- backward: mean(dy) and mean(dy·ŷ) ---- */
		if (!dyin)
			dy_draw(in->seed, dyval, o, N, dyraw);
		emu_input(be, S_DY, S, DY, dyin ? dyin + o : dyraw, 1, N, o, NULL);
		emu_map(be, S_DY_C, EMU_OP_CVT, C, DY, DY, EMU_NOREF, EMU_NOREF, N, o, NULL);
		emu_fill(be, s, 0, 1);
		emu_fill(be, s2, 0, 1);
		emu_map(be, S_DY_ACCUM, EMU_OP_CVT, A, W1, DY, EMU_NOREF, EMU_NOREF, N, o, NULL);
		emu_map(be, S_DY_Y, EMU_OP_MUL, C, W2, DY, YC, EMU_NOREF, N, o, NULL);
		emu_map(be, S_DYY_ACCUM, EMU_OP_CVT, A, W2, W2, EMU_NOREF, EMU_NOREF, N, o, NULL);
		emu_fold(be, S_DMEAN, EMU_OP_ADD, A, EMU_ORDER_SEQ, s, W1, EMU_NOREF, N, o);
		emu_fold(be, S_DPROJ, EMU_OP_ADD, A, EMU_ORDER_SEQ, s2, W2, EMU_NOREF, N, o);
		emu_op1(be, S_DMEAN_DIV, EMU_OP_DIV, A, s, s, Na, r);
		emu_op1(be, S_DMEAN_C, EMU_OP_CVT, C, dmean, s, EMU_NOREF, r);
		emu_op1(be, S_DPROJ_DIV, EMU_OP_DIV, A, s2, s2, Na, r);
		emu_op1(be, S_DPROJ_C, EMU_OP_CVT, C, dproj, s2, EMU_NOREF, r);
		/* dx_j = rstd · (dy_j − mean(dy) − ŷ_j · mean(dy·ŷ)), stored */
		emu_map(be, S_DX_CENTER, EMU_OP_SUB, C, W1, DY, dmean, EMU_NOREF, N, o, NULL);
		emu_map(be, S_DX_PROJ_MUL, EMU_OP_MUL, C, W2, YC, dproj, EMU_NOREF, N, o, NULL);
		emu_map(be, S_DX_PROJ_SUB, EMU_OP_SUB, C, W1, W1, W2, EMU_NOREF, N, o, NULL);
		emu_map(be, S_DX, EMU_OP_MUL, C, W1, W1, rs, EMU_NOREF, N, o, NULL);
		emu_map(be, S_DX_STORE, EMU_OP_CVT, S, emu_row(dx, o), W1, EMU_NOREF, EMU_NOREF, N,
		        o, NULL);
	}
	free(dyraw);
	emu_kinputs_free(&ki);
	return 0;
}

const emu_kernel emu_kernel_layernorm = {
    "layernorm",
    variants,
    "eps=E (default 1e-5, rounded into the compute format); dy=D (every upstream gradient D; "
    "default ±1 from the seed)",
    run,
    inputs,
};
