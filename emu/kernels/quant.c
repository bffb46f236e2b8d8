/*
 * quant.c — the policy's scaling recipe as a kernel: a tensor quantised and
 * dequantised, nothing else, so the sweep measures what a recipe alone does
 * to a tensor (docs/kernels-quant.md).
 *
 * Variants (the two copies a training step quantises, emu/recipes/recipe.h):
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
 *   bias_exact  fp32: bias's expectation over every SR draw, exact (no
 *            sampling, so it does not move with the tensor's size or seed):
 *            each element's expected value emu_round_sr_mean(E, fp32(x·m),
 *            sr_bits, saturating) times its block's d·t, in the recipe's own
 *            domain (after the RHT where the copy has it); with RNE the
 *            element itself. 0 for retile.
 *   bias_round  fp32: the same with the grid continued past the element
 *            format's largest value (no saturation): the rounding's own
 *            bias; bias_exact − bias_round is what saturation adds.
 * The statistics are metadata of the load, computed in double from
 * the loaded values and the original x, then rounded once to fp32; on the
 * truth of the original inputs deq = x and all are 0.
 *
 * GPU counterpart: gpu/rows.h's `k_quant_block` (with `k_block_amax*`, `k_e8m0_*`,
 * `k_mxfp8_block`, `k_deepseek_block`), compiled by nvcc in gpu/kern.cu and with the
 * emulator's operations in gpu/host_rows.c for the fake device, whose outputs tests/gpu/
 * compares with this file's (docs/gpu.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"

static const char *const variants[] = {"row", "col", "retile", NULL};

/* The kernel's steps are the load's own (input, quantize, to_compute). */
static const char *const steps[1] = {"stats"};

static double fp32(double v)
{
	emu_env e = EMU_ENV_DEFAULT;
	const emu_format *f = emu_format_by_name("fp32");
	return emu_decode(f, emu_from_double(f, v, &e).bits);
}

/* bias_exact and bias_round (out[0], out[1]): the recipe's quantisation of x
 * (its scales and elements, emu_quantize), each element replaced by its
 * expected value over the SR draws; sums in double in element order. */
static int exact_bias(const emu_policy *pol, const emu_kin *in, bool colwise, double out[2])
{
	const emu_recipe *r = &pol->recipe;
	emu_qtensor q;
	if (emu_quantize(r, pol->role, colwise, in->x, in->rows, in->cols, in->seed, &q) != 0)
		return -1;
	bool sr = r->elem_mode[pol->role] == EMU_SR;
	double amax = 0, sum[2] = {0, 0};
	size_t n = 0, T = q.rows * q.cols;
	for (size_t i = 0; i < T; i++)
		if (isfinite(q.x[i]) && fabs(q.x[i]) > amax)
			amax = fabs(q.x[i]);
	for (size_t i = 0; i < T && amax > 0; i++) {
		size_t b = (i / q.cols / q.brows) * q.nbc + (i % q.cols) / q.bcols;
		double x = q.x[i], dt = q.d[b] * q.t;
		if (!isfinite(x) || !isfinite(q.deq[i]))
			continue;
		double xs = r->rule == EMU_RSCALE_NONE   ? x
		            : r->apply == EMU_RAPPLY_DIV ? fp32(x / q.d[b])
		                                         : fp32(x * q.m[b]);
		for (int k = 0; k < 2; k++) {
			double e = !sr ? q.deq[i]
			           : r->rule == EMU_RSCALE_NONE
			               ? emu_round_sr_mean(&r->elem, xs, r->sr_bits, k == 0)
			               : emu_round_sr_mean(&r->elem, xs, r->sr_bits, k == 0) * dt;
			sum[k] += (x < 0 ? x - e : e - x) / amax;
		}
		n++;
	}
	emu_qtensor_free(&q);
	out[0] = n ? sum[0] / (double)n : 0;
	out[1] = n ? sum[1] / (double)n : 0;
	return 0;
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *C = &pol->compute, *F = emu_format_by_name("fp32");
	int v = emu_variant_index(variants, variant); /* 0 row, 1 col, 2 retile */
	if (v < 0 || in->cols == 0 || in->rows == 0 || !F) {
		snprintf(err, errlen,
		         v < 0 ? "quant: unknown variant '%s' (row col retile)" : "quant: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	emu_kinputs ki; /* x alone: a tensor given by role is refused */
	if (emu_kinputs_take(&emu_kernel_quant, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	emu_kinputs_free(&ki);
	size_t R = in->rows, N = in->cols, T = R * N;
	emu_steps(be, steps, 1);
	emu_vec *deq = emu_kout_vec(be, out, "deq", T, C);
	emu_vec *bias = emu_kout_vec(be, out, "bias", 1, F);
	emu_vec *bias_se = emu_kout_vec(be, out, "bias_se", 1, F);
	emu_vec *clipped = emu_kout_vec(be, out, "clipped", 1, F);
	emu_vec *bias_exact = emu_kout_vec(be, out, "bias_exact", 1, F);
	emu_vec *bias_round = emu_kout_vec(be, out, "bias_round", 1, F);
	uint64_t overflowed = be->st.in_overflow;
	if (!deq || !bias || !bias_se || !clipped || !bias_exact || !bias_round) {
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
	double exact[2] = {0, 0};
	if (v != 2 && exact_bias(pol, in, v == 1, exact) != 0) {
		snprintf(err, errlen, "quant: out of memory");
		return -1;
	}
	emu_fill(be, emu_at(bias_exact, 0), fp32(exact[0]), 1);
	emu_fill(be, emu_at(bias_round, 0), fp32(exact[1]), 1);
	return 0;
}

/* inputs NULL: x alone (emu_kinputs_x) */
const emu_kernel emu_kernel_quant = {
    "quant", variants, "none (the policy's recipe and role choose the quantisation)", run, NULL,
    steps,   1,
};
