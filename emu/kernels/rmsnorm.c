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
 * The order of operations is emu/kernels/rmsnorm_rows.h, the one source the
 * GPU compiles too (gpu/kern.cu, one thread a row, then one a column of dg,
 * and gpu/host_rows.c for the fake device, whose outputs tests/gpu/ compares
 * with this file's; docs/gpu.md). This file draws the inputs, loads x,
 * stores g before the rows and each row's dy between the row's forward and
 * backward.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "emu/engine/krow.h"
#include "emu/kernels/rmsnorm_rows.h"

static const char *const variants[] = {K_RMSNORM_VARIANTS(K_VARIANT_NAME) NULL};

/* The steps' names (the row source declares them with their ids). */
static const char *const steps[S_END - EMU_STEP0] = {K_RMSNORM_STEPS(K_STEP_NAME)};

static int parse_variant(const char *variant)
{
	return emu_variant_index(variants, variant);
}


/* x; the weights g (N, stored at step "g"): parameter `g` everywhere; the
 * upstream gradient dy (rows × N, stored at step "dy"; parameter `dy`, else
 * the seed's ±1: emu_kinput_signs, which a kernel's own run calls row by row). */
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
		emu_kinput_signs(in->seed, dyval, 0, R * N, dy);
	return 0;
}

/* what the row loop's parts share (emu_rows) */
typedef struct {
	int v;
	const emu_format *S, *C, *A, *F;
	size_t R, N;
	uint64_t seed;
	double dyval;
	const double *dyin; /* NULL: emu_kinput_signs, row by row */
	emu_vec *X, *Q, *g, *t, *y, *dx, *rstd, *ms, *dg;
} rn_rows;

/* rows r0 .. r1 − 1, forward then backward, on be's own scratch (t a copy
 * of the constants) */
static int rn_part(emu_be *be, size_t r0, size_t r1, void *arg)
{
	const rn_rows *k = arg;
	size_t N = k->N;
	emu_vec *xh = emu_vec_new(be, N), *dy = emu_vec_new(be, N);
	emu_vec *w1 = emu_vec_new(be, N), *w2 = emu_vec_new(be, N);
	emu_vec *t = emu_vec_new(be, RN_NT);
	double *raw = k->dyin ? NULL : malloc(N * sizeof *raw);
	if (!xh || !dy || !w1 || !w2 || !t || (!k->dyin && !raw)) {
		free(raw);
		return -1;
	}
	emu_copy(be, emu_row(t, 0), emu_row(k->t, 0), RN_NT);
	for (size_t r = r0; r < r1; r++) {
		size_t o = r * N;
		k_rmsnorm_fwd(be, k->v, k->S, k->C, k->A, k->F, k->X, N, r, k->g, t, xh, w1, k->y,
		              k->rstd, k->ms);
		if (!k->dyin)
			emu_kinput_signs(k->seed, k->dyval, o, N, raw);
		emu_input(be, S_DY, k->S, emu_row(dy, 0), k->dyin ? k->dyin + o : raw, 1, N, o,
		          NULL);
		k_rmsnorm_bwd(be, k->v, k->S, k->C, k->A, dy, 0, N, r, k->g, t, xh, w1, w2, k->dx,
		              k->Q);
	}
	free(raw);
	return 0;
}

/* dg's columns j0 .. j1 − 1, after every row */
static int rn_dg_part(emu_be *be, size_t j0, size_t j1, void *arg)
{
	const rn_rows *k = arg;
	k_rmsnorm_dg(be, k->A, k->Q, k->R, k->N, j0, j1 - j0, k->dg);
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
	/* dyin NULL: emu_kinput_signs, row by row */
	const double *gin = emu_kinputs_find(&ki, "g")->v, *dyin = emu_kinputs_find(&ki, "dy")->v;
	/* the statistics' compute format: fp32 in fp32stats, else the policy's */
	const emu_format *SC = v == RN_FP32STATS ? F : C;
	emu_steps(be, steps, S_END - EMU_STEP0);
	rn_rows k = {v,    S,    C,    A,    F,    R,    N,    in->seed, dyval, dyin,
	             NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,     NULL};
	k.y = emu_kout_vec(be, out, "y", R * N, S);
	k.dx = emu_kout_vec(be, out, "dx", R * N, S);
	k.rstd = emu_kout_vec(be, out, "rstd", R, SC);
	k.ms = emu_kout_vec(be, out, "ms", R, SC);
	k.dg = emu_kout_vec(be, out, "dg", N, A);
	k.X = emu_vec_new(be, R * N);
	k.Q = emu_vec_new(be, R * N);
	k.g = emu_vec_new(be, N);
	k.t = emu_vec_new(be, RN_NT);
	int rc = -1;
	if (k.y && k.dx && k.rstd && k.ms && k.dg && k.X && k.Q && k.g && k.t &&
	    emu_load(be, pol, in->x, R, N, k.X) == 0) {
		/* the row source, emu/kernels/rmsnorm_rows.h: the GPU's threads run
		 * these rows one each, dy's row as stored between forward and
		 * backward, then dg's columns one each */
		k_rmsnorm_consts(be, v, C, A, F, N, eps, k.t);
		emu_input(be, S_G, S, emu_row(k.g, 0), gin, 1, N, 0, NULL);
		k_rmsnorm_g(be, C, k.g, N);
		rc = emu_rows(be, R, 14 * (uint64_t)N, rn_part, &k);
		if (rc == 0)
			rc = emu_rows(be, N, R, rn_dg_part, &k);
	}
	emu_kinputs_free(&ki);
	if (rc != 0)
		snprintf(err, errlen, "rmsnorm: out of memory");
	return rc;
}

const emu_kernel emu_kernel_rmsnorm = {
    "rmsnorm",
    variants,
    "eps=E (default 1e-6, rounded into the compute format; fp32 in fp32stats); g=G (every "
    "weight G, default 1); dy=D (every upstream gradient D; default ±1 from the seed)",
    run,
    inputs,
    steps,
    S_END - EMU_STEP0,
};
