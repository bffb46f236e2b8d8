/*
 * quant.c — the policy's scaling recipe as a kernel: a tensor quantised and
 * dequantised, nothing else, so the sweep measures what a recipe alone does
 * to a tensor (docs/kernels-quant.md).
 *
 * Variants (the two copies a training step quantises, core/recipe.h):
 *   row  the row-wise copy: x loaded by emu_load's path (emu_load_copy,
 *        colwise false), the role's blocks along the rows;
 *   col  the column-wise copy (the weight-gradient GEMM's operand): the
 *        role's block shape transposed (1×16 becomes 16×1), blocks down
 *        the columns, and the RHT where the recipe applies it to that copy
 *        (NVFP4: act and grad).
 *   retile  the column-wise copy re-quantised from the dequantised row-wise
 *        one, as DeepSeek-V3's backward re-tiles 1×128 activations to
 *        128×1 (§3.3): two quantisations in a row; the second load numbers
 *        its elements after the first's, so SR draws differ.
 * Where the RHT was applied the load transforms the dequantised values back
 * (v · Hᵀ, each sum rounded once to fp32), so deq compares with x: the
 * effective operand of a GEMM whose other operand carries H too.
 *
 * Outputs:
 *   deq      rows·cols, compute format: each element as the dequantising
 *            load hands it over, C(fp32(fp32(q·d)·t)) (docs/recipes.md). Its
 *            end-to-end rel_err is ‖deq − x‖₂/‖x‖₂, so SQNR = −20·log10 of it.
 *   bias     fp32: the mean signed error in magnitude, Σ sign(x)·(deq − x)
 *            / (n · amax) over the elements whose x and deq are finite, amax
 *            the largest finite |x|: negative when the recipe rounds toward
 *            zero on average (n-bit SR's dither with too few bits). The sign
 *            folds the errors of negative elements onto the positive ones,
 *            so a symmetric input does not cancel a bias toward zero.
 *   bias_se  fp32: its standard error, sqrt(var / n) of the same terms
 *            (population variance), so a bias can be told from noise.
 *   clipped  fp32: the fraction of elements whose quantisation overflowed
 *            (saturated to ± the largest finite value, or became inf/NaN):
 *            the load's overflow count over rows·cols.
 * The three statistics are metadata of the load, computed in double from
 * the loaded values and the original x, then rounded once to fp32; on the
 * truth of the original inputs deq = x and all three are 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

static const char *const variants[] = {"row", "col", "retile", NULL};

/* The kernel's steps are the load's own (input, quantize, to_compute). */
static const char *const steps[1] = {"stats"};

static double fp32(double v)
{
	emu_env e = EMU_ENV_DEFAULT;
	const emu_format *f = emu_format_by_name("fp32");
	return emu_decode(f, emu_from_double(f, v, &e).bits);
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *C = &pol->compute, *F = emu_format_by_name("fp32");
	int v = !variant                   ? 0
	        : !strcmp(variant, "row")    ? 0
	        : !strcmp(variant, "col")    ? 1
	        : !strcmp(variant, "retile") ? 2
	                                     : -1;
	if (v < 0 || in->cols == 0 || in->rows == 0 || !F) {
		snprintf(err, errlen,
		         v < 0 ? "quant: unknown variant '%s' (row col retile)" : "quant: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	size_t R = in->rows, N = in->cols, T = R * N;
	emu_steps(be, steps, 1);
	emu_vec *deq = emu_kout_vec(be, out, "deq", T, C);
	emu_vec *bias = emu_kout_vec(be, out, "bias", 1, F);
	emu_vec *bias_se = emu_kout_vec(be, out, "bias_se", 1, F);
	emu_vec *clipped = emu_kout_vec(be, out, "clipped", 1, F);
	uint64_t overflowed = be->st.in_overflow;
	if (!deq || !bias || !bias_se || !clipped) {
		snprintf(err, errlen, "quant: out of memory");
		return -1;
	}
	if (v == 2) { /* row-wise, dequantised, then column-wise from those values */
		emu_vec *rw = emu_vec_new(be, T);
		double *vals = malloc(T * sizeof *vals);
		int rc = !rw || !vals || emu_load_copy(be, pol, in->x, R, N, false, rw) != 0;
		for (size_t i = 0; !rc && i < T; i++)
			vals[i] = emu_vget(be, rw, i);
		rc = rc || emu_load_copy_at(be, pol, vals, R, N, T, true, deq) != 0;
		free(vals);
		if (rc) {
			snprintf(err, errlen, "quant: out of memory");
			return -1;
		}
	} else if (emu_load_copy(be, pol, in->x, R, N, v == 1, deq) != 0) {
		snprintf(err, errlen, "quant: out of memory");
		return -1;
	}
	overflowed = be->st.in_overflow - overflowed;
	/* the statistics: sums in double in element order */
	double amax = 0, sum = 0, sum2 = 0;
	size_t n = 0;
	for (size_t i = 0; i < T; i++)
		if (isfinite(in->x[i]) && fabs(in->x[i]) > amax)
			amax = fabs(in->x[i]);
	for (size_t i = 0; i < T; i++) {
		double x = in->x[i], y = emu_vget(be, deq, i);
		if (!isfinite(x) || !isfinite(y) || amax == 0)
			continue;
		double e = (x < 0 ? x - y : y - x) / amax; /* sign(x)·(deq − x) / amax */
		sum += e;
		sum2 += e * e;
		n++;
	}
	double mean = n ? sum / (double)n : 0;
	double var = n ? fmax(sum2 / (double)n - mean * mean, 0) : 0;
	emu_fill(be, emu_at(bias, 0), fp32(mean), 1);
	emu_fill(be, emu_at(bias_se, 0), fp32(n ? sqrt(var / (double)n) : 0), 1);
	emu_fill(be, emu_at(clipped, 0), fp32((double)overflowed / (double)T), 1);
	return 0;
}

const emu_kernel emu_kernel_quant = {
    "quant",
    variants,
    "none (the policy's recipe and role choose the quantisation)",
    run,
};
