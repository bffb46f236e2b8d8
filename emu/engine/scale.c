/*
 * scale.c — loading an input tensor the way a mixed-precision framework
 * does: stored in the policy's storage format, through its scaling recipe,
 * and handed to the kernel dequantised in the compute format.
 *
 * Recipes (FACTS §5; Transformer Engine, OCP MX v1.0, DeepSeek-V3):
 *   none      q = S(x)                                  dequant: C(q)
 *   tensor    s = fp32(max_S / amax) (amax 0/inf/NaN: s = 1)
 *   delayed   s = fp32(max_S · 2^-margin / amax_hist), amax_hist the largest
 *             amax of the previous L rows (rows play the training steps;
 *             the first row has no history and uses s = 1, as TE starts)
 *   tile128   per 1×128 tile: s = 1 / fp32(amax / max_S)
 *   mx32      per block of 32: X = 2^(floor(log2 amax) − emax_S) (floor,
 *             the OCP rule) or 2^ceil(log2(amax / max_S)) (rceil, as TE and
 *             cuBLAS); elements saturate (OCP MX §6.3); s = 1/X
 * (the scales of these five come from emu/recipes/recipe.c: emu_recipe_block_scale).
 * Every other recipe (nvfp4, mxfp8, deepseek, ...; emu/recipes/recipe.h) is
 * quantised by emu_quantize and dequantised as load_recipe says.
 * With a scale, the source x is first held in fp32 (the high-precision
 * activation), q = S(fp32(x · s)) and the kernel sees C(q) · fp32(1/s)
 * (TE's scale_inv; exact for the power-of-two MX scales).
 * Scale arithmetic is metadata computed in double then rounded once to fp32.
 *
 * TRUTH loads in one of three ways: exact_inputs, the original inputs as
 * given (no storage, no recipe); range, the recipe's steps computed exactly
 * and judged against the formats' ranges; otherwise the stored inputs, the
 * very values the kernel's load gives (load_stored_truth).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"

static double amax_of(const double *x, size_t n)
{
	double a = 0;
	for (size_t i = 0; i < n; i++)
		if (!(fabs(x[i]) <= a)) /* NaN propagates */
			a = fabs(x[i]);
	return a;
}

static double fp32(double v)
{
	emu_env e = EMU_ENV_DEFAULT;
	const emu_format *f = emu_format_by_name("fp32");
	return emu_decode(f, emu_from_double(f, v, &e).bits);
}

/* The multiplier for a group with largest magnitude amax: the legacy
 * kinds' rules, from the recipe library (emu_recipe_block_scale). */
static double group_scale(const emu_policy *pol, double amax, double hist)
{
	double d, m;
	emu_bits code;
	emu_recipe_block_scale(&pol->recipe, amax, hist, pol->storage.max, 1, 1, &d, &m, &code);
	return m;
}

/* A recipe of emu/recipes/recipe.h on fast and exact: the library quantises
 * (proven against MPFR by tests/recipes/check_recipe.c), and the kernel receives
 * each element as fp32(fp32(q·d)·t) in the compute format, as a
 * dequantising load computes it; each element's quantisation is counted
 * as an operation of step quantize (its flags: saturation, flushes). */
static int load_recipe(emu_be *be, const emu_policy *pol, const double *x, size_t rows,
                       size_t cols, uint64_t e0, bool colwise, bool unrht, emu_vec *out)
{
	size_t n = rows * cols;
	emu_qtensor q;
	emu_qpart part = {0, rows, be->env.seed, NAN, e0};
	if (emu_quantize_part(&pol->recipe, pol->role, colwise, x, rows, cols, &part, &q))
		return -1;
	const emu_format *f32 = emu_format_by_name("fp32");
	double *v = malloc((n ? n : 1) * sizeof *v);
	uint8_t *fl = calloc(n ? n : 1, 1);
	if (!v || !fl) {
		free(v);
		free(fl);
		emu_qtensor_free(&q);
		return -1;
	}
	emu_env e = EMU_ENV_DEFAULT;
	for (size_t i = 0; i < n; i++) {
		size_t b = (i / cols / q.brows) * q.nbc + (i % cols) / q.bcols;
		double qd = emu_decode(f32, emu_from_double(f32, q.q[i] * q.d[b], &e).bits);
		v[i] = emu_decode(f32, emu_from_double(f32, qd * q.t, &e).bits);
		if (pol->recipe.rule == EMU_RSCALE_NONE)
			v[i] = q.q[i];
		emu_note(be, EMU_STEP_QUANTIZE, EMU_OP_CVT, q.flags[i], e0 + i);
	}
	if (unrht) /* back to the tensor before the transform (fp32 sums) */
		emu_recipe_unrht(&pol->recipe, pol->role, colwise, v, rows, cols);
	be->loading = true;
	emu_input(be, EMU_STEP_INPUT, f32, emu_row(out, 0), v, 1, n, e0, fl);
	be->loading = false;
	emu_map(be, EMU_STEP_TO_COMPUTE, EMU_OP_CVT, &pol->compute, emu_row(out, 0), emu_row(out, 0),
	        EMU_NOREF, EMU_NOREF, n, e0, fl);
	if (be->kind != EMU_BE_TRUTH)
		for (size_t i = 0; i < n; i++)
			emu_k_note_input(be, x[i], out->d[i], (q.flags[i] | fl[i]) & EMU_FLAG_OVERFLOW);
	free(v);
	free(fl);
	emu_qtensor_free(&q);
	return 0;
}

/* TRUTH from the stored inputs: the fast backend's load, its values exact. */
static int load_copy(emu_be *be, const emu_policy *pol, const double *x, size_t rows, size_t cols,
                     uint64_t e0, bool colwise, bool unrht, emu_vec *out);

static int load_stored_truth_vec(emu_be *be, const emu_policy *pol, const double *x, size_t rows,
                                 size_t cols, uint64_t e0, bool colwise, bool unrht,
                                 emu_vec *out)
{
	size_t n = rows * cols;
	emu_be fb;
	emu_be_init(&fb, EMU_BE_FAST, &be->env);
	emu_vec *v = emu_vec_new(&fb, n);
	int rc = v ? load_copy(&fb, pol, x, rows, cols, e0, colwise, unrht, v) : -1;
	if (rc == 0) {
		for (size_t i = 0; i < n; i++)
			emu_truth_set_d(&out->m[i], v->d[i]);
		emu_be_stats_add(&be->st, &fb.st);
	}
	emu_be_free(&fb);
	return rc;
}

int emu_load(emu_be *be, const emu_policy *pol, const double *x, size_t rows, size_t cols,
             emu_vec *out)
{
	return emu_load_at(be, pol, x, rows, cols, 0, out);
}

int emu_load_at(emu_be *be, const emu_policy *pol, const double *x, size_t rows, size_t cols,
                uint64_t e0, emu_vec *out)
{
	return load_copy(be, pol, x, rows, cols, e0, false, false, out);
}

/* The legacy kinds' blocks run along rows: a column-wise copy is the
 * row-wise load of the transpose, transposed back (element i of the
 * transpose is element e0 + i of the load's steps). */
static int load_colwise_legacy(emu_be *be, const emu_policy *pol, const double *x, size_t rows,
                               size_t cols, uint64_t e0, emu_vec *out)
{
	size_t n = rows * cols;
	double *xt = malloc((n ? n : 1) * sizeof *xt);
	emu_vec *t = emu_vec_new(be, n ? n : 1);
	if (!xt || !t) {
		free(xt);
		return -1;
	}
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			xt[c * rows + r] = x[r * cols + c];
	int rc = load_copy(be, pol, xt, cols, rows, e0, false, false, t);
	free(xt);
	if (rc == 0)
		for (size_t r = 0; r < rows; r++)
			for (size_t c = 0; c < cols; c++)
				emu_copy(be, emu_at(out, r * cols + c), emu_at(t, c * rows + r), 1);
	return rc;
}

int emu_load_copy(emu_be *be, const emu_policy *pol, const double *x, size_t rows, size_t cols,
                  bool colwise, emu_vec *out)
{
	return load_copy(be, pol, x, rows, cols, 0, colwise, true, out);
}

int emu_load_copy_at(emu_be *be, const emu_policy *pol, const double *x, size_t rows, size_t cols,
                     uint64_t e0, bool colwise, emu_vec *out)
{
	return load_copy(be, pol, x, rows, cols, e0, colwise, true, out);
}

static int load_copy(emu_be *be, const emu_policy *pol, const double *x, size_t rows, size_t cols,
                     uint64_t e0, bool colwise, bool unrht, emu_vec *out)
{
	const emu_format *S = &pol->storage, *C = &pol->compute;
	size_t n = rows * cols;
	if (be->kind == EMU_BE_TRUTH && be->exact_inputs) { /* the original inputs */
		emu_input(be, EMU_STEP_INPUT, S, emu_row(out, 0), x, 1, n, e0, NULL);
		return 0;
	}
	if (be->kind == EMU_BE_TRUTH && (!be->range || pol->scale == EMU_SCALE_RECIPE))
		return load_stored_truth_vec(be, pol, x, rows, cols, e0, colwise, unrht, out);
	if (pol->scale == EMU_SCALE_RECIPE)
		return load_recipe(be, pol, x, rows, cols, e0, colwise, unrht, out);
	if (colwise && pol->scale != EMU_SCALE_NONE)
		return load_colwise_legacy(be, pol, x, rows, cols, e0, out);
	if (pol->scale == EMU_SCALE_NONE) { /* stored, then in the compute format */
		emu_input(be, EMU_STEP_INPUT, S, emu_row(out, 0), x, 1, n, e0, NULL);
		emu_map(be, EMU_STEP_TO_COMPUTE, EMU_OP_CVT, C, emu_row(out, 0), emu_row(out, 0),
		        EMU_NOREF, EMU_NOREF, n, e0, NULL);
		return 0;
	}
	const emu_format *f32 = emu_format_by_name("fp32");
	size_t group = pol->scale == EMU_SCALE_MX32      ? 32
	               : pol->scale == EMU_SCALE_TILE128 ? 128
	                                                 : cols;
	if (group == 0)
		group = 1;
	if (group > cols)
		group = cols ? cols : 1;
	double *row_amax = NULL;
	if (pol->scale == EMU_SCALE_DELAYED &&
	    !(row_amax = calloc(rows ? rows : 1, sizeof *row_amax)))
		return -1;
	emu_vec *t = emu_vec_new(be, group), *si = emu_vec_new(be, group), *k = emu_vec_new(be, 2);
	uint8_t *fl = malloc(group);
	if (!t || !si || !k || !fl) {
		free(row_amax);
		free(fl);
		return -1;
	}
	for (size_t r = 0; r < rows; r++) {
		const double *xr = x + r * cols;
		if (row_amax)
			row_amax[r] = amax_of(xr, cols);
		for (size_t g0 = 0; g0 < cols; g0 += group) {
			size_t m = cols - g0 < group ? cols - g0 : group;
			size_t at = r * cols + g0;
			double hist = 0;
			if (row_amax)
				for (size_t q = r > (size_t)pol->delayed_len
				                    ? r - (size_t)pol->delayed_len
				                    : 0;
				     q < r; q++)
					hist = fmax(hist, row_amax[q]);
			double s = group_scale(pol, amax_of(xr + g0, m), hist);
			emu_ref T = emu_row(t, 0), O = emu_row(out, at), SI = emu_row(si, 0);
			memset(fl, 0, m);
			/* x held in fp32, scaled in fp32, cast to storage (MX: saturating) */
			be->loading = true;
			emu_input(be, EMU_STEP_INPUT, f32, T, xr + g0, 1, m, e0 + at, fl);
			be->loading = false;
			emu_fill(be, emu_at(k, 0), fp32(s), 1);
			emu_map(be, EMU_STEP_SCALE, EMU_OP_MUL, f32, T, T, emu_at(k, 0), EMU_NOREF,
			        m, e0 + at, fl);
			emu_env qenv = be->env; /* MX casts with satfinite */
			qenv.sat = qenv.sat || pol->scale == EMU_SCALE_MX32;
			emu_map_env(be, &qenv, EMU_STEP_QUANTIZE, EMU_OP_CVT, S, O, T, EMU_NOREF,
			            EMU_NOREF, m, e0 + at, fl);
			/* dequantised in the compute format: C(q) · C(fp32(1/s)) */
			emu_map(be, EMU_STEP_TO_COMPUTE, EMU_OP_CVT, C, O, O, EMU_NOREF, EMU_NOREF,
			        m, e0 + at, fl);
			emu_fill(be, emu_at(k, 1), fp32(1 / fp32(s)), 1);
			emu_map(be, EMU_STEP_SCALE_INV, EMU_OP_CVT, C, SI, emu_at(k, 1), EMU_NOREF,
			        EMU_NOREF, m, e0 + at, fl);
			emu_map(be, EMU_STEP_DEQUANTIZE, EMU_OP_MUL, C, O, O, SI, EMU_NOREF, m,
			        e0 + at, fl);
			/* each element as the kernel receives it */
			if (be->kind != EMU_BE_TRUTH)
				for (size_t j = 0; j < m; j++)
					emu_k_note_input(be, xr[g0 + j], out->d[at + j],
					                 fl[j] & EMU_FLAG_OVERFLOW);
		}
	}
	free(row_amax);
	free(fl);
	return 0;
}
