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
 * Precision policy: x is loaded by emu_k_load (storage format, the policy's
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
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

static const char *const variants[] = {"twopass", "onepass", "welford", NULL};

enum { TWOPASS, ONEPASS, WELFORD };

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	int v = !variant                      ? TWOPASS
	        : !strcmp(variant, "twopass") ? TWOPASS
	        : !strcmp(variant, "onepass") ? ONEPASS
	        : !strcmp(variant, "welford") ? WELFORD
	                                      : -1;
	if (v < 0 || in->cols == 0 || in->rows == 0) {
		snprintf(err, errlen,
		         v < 0 ? "layernorm: unknown variant '%s' (twopass onepass welford)"
		               : "layernorm: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	size_t R = in->rows, N = in->cols;
	double eps, dyval; /* dyval NaN: the ±1 pattern */
	if (!emu_kparam_real(in, "layernorm", "eps", 0, INFINITY, 0, 1e-5, &eps, err, errlen) ||
	    !emu_kparam_real(in, "layernorm", "dy", -INFINITY, INFINITY, 0, NAN, &dyval, err,
	                     errlen))
		return -1;
	emu_val *y = emu_kout_add(be, out, "y", R * N, S);
	emu_val *dx = emu_kout_add(be, out, "dx", R * N, S);
	emu_val *rstd = emu_kout_add(be, out, "rstd", R, C);
	emu_val *var = emu_kout_add(be, out, "var", R, C);
	emu_val *X = emu_k_vec(be, R * N), *yc = emu_k_vec(be, N), *dy = emu_k_vec(be, N);
	emu_val *kA = v == WELFORD ? emu_k_vec(be, N) : NULL; /* Welford's counts */
	emu_val *t = emu_k_vec(be, 12);
	if (!y || !dx || !rstd || !var || !X || !yc || !dy || (v == WELFORD && !kA) || !t ||
	    emu_k_load(be, pol, in->x, R, N, X) != 0) {
		snprintf(err, errlen, "layernorm: out of memory");
		return -1;
	}
	emu_val *mean = &t[0], *s = &t[1], *s2 = &t[2], *tmp = &t[3], *tmp2 = &t[4], *epsc = &t[5],
	        *Na = &t[6], *ve = &t[7], *dmean = &t[8], *dproj = &t[9], *ma = &t[10],
	        *xa = &t[11];
	/* N in the accumulator format, eps in the compute format (both rounded
	 * if they must be: eps = 1e-8 is 0 in fp16) */
	emu_k_const(be, tmp, (double)N);
	emu_k_op(be, EMU_OP_CVT, Na, tmp, NULL, NULL, A, "to_accum", 0);
	emu_k_const(be, tmp, eps);
	emu_k_op(be, EMU_OP_CVT, epsc, tmp, NULL, NULL, C, "eps", 0);
	if (v == WELFORD) /* the counts 1..N, in the accumulator format */
		for (size_t j = 0; j < N; j++) {
			emu_k_const(be, tmp, (double)(j + 1));
			emu_k_op(be, EMU_OP_CVT, &kA[j], tmp, NULL, NULL, A, "to_accum", j);
		}
	for (size_t r = 0; r < R; r++) {
		size_t o = r * N;
		emu_val *x = &X[o];
		/* ---- the row statistics: mean and var in the compute format ---- */
		if (v == WELFORD) {
			emu_k_const(be, ma, 0);
			emu_k_const(be, s2, 0); /* M2 */
			for (size_t j = 0, i = o; j < N; j++, i++) {
				emu_k_op(be, EMU_OP_CVT, xa, &x[j], NULL, NULL, A, "to_accum", i);
				emu_k_op(be, EMU_OP_SUB, tmp, xa, ma, NULL, A, "welford_delta", i);
				emu_k_op(be, EMU_OP_DIV, tmp2, tmp, &kA[j], NULL, A, "welford_mean",
				         i);
				emu_k_op(be, EMU_OP_ADD, ma, ma, tmp2, NULL, A, "welford_mean", i);
				emu_k_op(be, EMU_OP_SUB, tmp2, xa, ma, NULL, A, "welford_delta2",
				         i);
				emu_k_op(be, EMU_OP_MUL, tmp, tmp, tmp2, NULL, A, "welford_m2", i);
				emu_k_op(be, EMU_OP_ADD, s2, s2, tmp, NULL, A, "welford_m2", i);
			}
			emu_k_op(be, EMU_OP_DIV, s2, s2, Na, NULL, A, "var", r);
		} else {
			emu_k_const(be, s, 0);
			emu_k_const(be, s2, 0);
			for (size_t j = 0, i = o; j < N; j++, i++) {
				emu_k_op(be, EMU_OP_CVT, tmp, &x[j], NULL, NULL, A, "to_accum", i);
				emu_k_op(be, EMU_OP_ADD, s, s, tmp, NULL, A, "sum", i);
				if (v == ONEPASS) { /* Σ x² alongside */
					emu_k_op(be, EMU_OP_MUL, tmp, &x[j], &x[j], NULL, C,
					         "square", i);
					emu_k_op(be, EMU_OP_CVT, tmp, tmp, NULL, NULL, A,
					         "to_accum", i);
					emu_k_op(be, EMU_OP_ADD, s2, s2, tmp, NULL, A, "sumsq", i);
				}
			}
			emu_k_op(be, EMU_OP_DIV, ma, s, Na, NULL, A, "mean", r);
			if (v == ONEPASS) { /* E[x²] − E[x]² */
				emu_k_op(be, EMU_OP_DIV, s2, s2, Na, NULL, A, "var", r);
				emu_k_op(be, EMU_OP_MUL, tmp, ma, ma, NULL, A, "var", r);
				emu_k_op(be, EMU_OP_SUB, s2, s2, tmp, NULL, A, "var", r);
			} else { /* second pass: Σ (x − mean)², x − mean kept for y */
				emu_k_op(be, EMU_OP_CVT, mean, ma, NULL, NULL, C, "to_compute", r);
				for (size_t j = 0, i = o; j < N; j++, i++) {
					emu_k_op(be, EMU_OP_SUB, &yc[j], &x[j], mean, NULL, C,
					         "center", i);
					emu_k_op(be, EMU_OP_MUL, tmp, &yc[j], &yc[j], NULL, C,
					         "square", i);
					emu_k_op(be, EMU_OP_CVT, tmp, tmp, NULL, NULL, A,
					         "to_accum", i);
					emu_k_op(be, EMU_OP_ADD, s2, s2, tmp, NULL, A, "sumsq", i);
				}
				emu_k_op(be, EMU_OP_DIV, s2, s2, Na, NULL, A, "var", r);
			}
		}
		if (v != TWOPASS) /* twopass converted it before its second pass */
			emu_k_op(be, EMU_OP_CVT, mean, ma, NULL, NULL, C, "to_compute", r);
		emu_k_op(be, EMU_OP_CVT, &var[r], s2, NULL, NULL, C, "to_compute", r);
		emu_k_op(be, EMU_OP_ADD, ve, &var[r], epsc, NULL, C, "add_eps", r);
		emu_k_op(be, EMU_OP_RSQRT, &rstd[r], ve, NULL, NULL, C, "rsqrt", r);
		/* ---- y = (x − mean) · rstd, stored ---- */
		for (size_t j = 0, i = o; j < N; j++, i++) {
			if (v != TWOPASS)
				emu_k_op(be, EMU_OP_SUB, &yc[j], &x[j], mean, NULL, C, "center", i);
			emu_k_op(be, EMU_OP_MUL, &yc[j], &yc[j], &rstd[r], NULL, C, "norm", i);
			emu_k_op(be, EMU_OP_CVT, &y[i], &yc[j], NULL, NULL, S, "store", i);
		}
		/* ---- backward: mean(dy) and mean(dy·ŷ) ---- */
		emu_k_const(be, s, 0);
		emu_k_const(be, s2, 0);
		for (size_t j = 0, i = o; j < N; j++, i++) {
			double d = dyval;
			if (isnan(d)) /* the default: ±1 from the seed */
				d = emu_sr_bits(in->seed, i) & 1 ? -1.0 : 1.0;
			emu_k_input(be, &dy[j], d, S, "dy", i);
			emu_k_op(be, EMU_OP_CVT, &dy[j], &dy[j], NULL, NULL, C, "to_compute", i);
			emu_k_op(be, EMU_OP_CVT, tmp, &dy[j], NULL, NULL, A, "to_accum", i);
			emu_k_op(be, EMU_OP_ADD, s, s, tmp, NULL, A, "dmean", i);
			emu_k_op(be, EMU_OP_MUL, tmp, &dy[j], &yc[j], NULL, C, "dy_y", i);
			emu_k_op(be, EMU_OP_CVT, tmp, tmp, NULL, NULL, A, "to_accum", i);
			emu_k_op(be, EMU_OP_ADD, s2, s2, tmp, NULL, A, "dproj", i);
		}
		emu_k_op(be, EMU_OP_DIV, s, s, Na, NULL, A, "dmean", r);
		emu_k_op(be, EMU_OP_CVT, dmean, s, NULL, NULL, C, "to_compute", r);
		emu_k_op(be, EMU_OP_DIV, s2, s2, Na, NULL, A, "dproj", r);
		emu_k_op(be, EMU_OP_CVT, dproj, s2, NULL, NULL, C, "to_compute", r);
		/* dx_j = rstd · (dy_j − mean(dy) − ŷ_j · mean(dy·ŷ)), stored */
		for (size_t j = 0, i = o; j < N; j++, i++) {
			emu_k_op(be, EMU_OP_SUB, tmp, &dy[j], dmean, NULL, C, "dx_center", i);
			emu_k_op(be, EMU_OP_MUL, tmp2, &yc[j], dproj, NULL, C, "dx_proj", i);
			emu_k_op(be, EMU_OP_SUB, tmp, tmp, tmp2, NULL, C, "dx_proj", i);
			emu_k_op(be, EMU_OP_MUL, tmp, tmp, &rstd[r], NULL, C, "dx", i);
			emu_k_op(be, EMU_OP_CVT, &dx[i], tmp, NULL, NULL, S, "dx_store", i);
		}
	}
	return 0;
}

const emu_kernel emu_kernel_layernorm = {
    "layernorm",
    variants,
    "eps=E (default 1e-5, rounded into the compute format); dy=D (every upstream gradient D; "
    "default ±1 from the seed)",
    run,
};
