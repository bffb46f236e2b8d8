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
 * The order of operations is emu/kernels/layernorm_rows.h, the one source
 * the GPU compiles too (gpu/kern.cu, one thread a row, and gpu/host_rows.c
 * for the fake device, whose outputs tests/gpu/ compares with this file's;
 * docs/gpu.md). This file draws the inputs, loads x and stores each row's
 * dy between the row's forward and backward.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "emu/engine/krow.h"
#include "emu/kernels/layernorm_rows.h"

static const char *const variants[] = {K_LAYERNORM_VARIANTS(K_VARIANT_NAME) NULL};

/* The steps' names (the row source declares them with their ids). */
static const char *const steps[S_END - EMU_STEP0] = {K_LAYERNORM_STEPS(K_STEP_NAME)};

static int parse_variant(const char *variant)
{
	return emu_variant_index(variants, variant);
}


/* x, and the upstream gradient dy (rows × N, stored at step "dy";
 * parameter `dy`, else the seed's ±1: emu_kinput_signs, which a kernel's own run
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
		emu_kinput_signs(in->seed, dyval, 0, R * N, dy);
	return 0;
}

/* what the row loop's parts share (emu_rows): the policy's formats, the
 * kernel's vectors and constants, dy given or drawn */
typedef struct {
	int v;
	const emu_format *S, *C, *A;
	size_t N;
	uint64_t seed;
	double dyval;
	const double *dyin;
	emu_vec *X, *kA, *t, *y, *dx, *rstd, *var;
} ln_rows;

/* rows r0 .. r1 − 1, forward then backward, on be's own scratch (t a copy
 * of the constants) */
static int ln_part(emu_be *be, size_t r0, size_t r1, void *arg)
{
	const ln_rows *k = arg;
	size_t N = k->N;
	emu_vec *yc = emu_vec_new(be, N), *dy = emu_vec_new(be, N);
	emu_vec *w1 = emu_vec_new(be, N), *w2 = emu_vec_new(be, N);
	emu_vec *t = emu_vec_new(be, LN_NT);
	double *dyraw = k->dyin ? NULL : malloc(N * sizeof *dyraw);
	if (!yc || !dy || !w1 || !w2 || !t || (!k->dyin && !dyraw)) {
		free(dyraw);
		return -1;
	}
	emu_copy(be, emu_row(t, 0), emu_row(k->t, 0), LN_NT);
	/* the row source, emu/kernels/layernorm_rows.h: the GPU's threads run
	 * these rows one each, dy's row as stored between forward and backward */
	for (size_t r = r0; r < r1; r++) {
		size_t o = r * N;
		k_layernorm_fwd(be, k->v, k->S, k->C, k->A, k->X, N, r, k->kA, t, yc, w1, w2, k->y,
		                k->rstd, k->var);
		if (!k->dyin)
			emu_kinput_signs(k->seed, k->dyval, o, N, dyraw);
		emu_input(be, S_DY, k->S, emu_row(dy, 0), k->dyin ? k->dyin + o : dyraw, 1, N, o,
		          NULL);
		k_layernorm_bwd(be, k->S, k->C, k->A, dy, 0, N, r, t, yc, w1, w2, k->rstd, k->dx);
	}
	free(dyraw);
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
	emu_steps(be, steps, S_END - EMU_STEP0);
	ln_rows k = {v,    S,    C,    A,    N,    in->seed, dyval, emu_kinputs_find(&ki, "dy")->v,
	             NULL, NULL, NULL, NULL, NULL, NULL,     NULL};
	k.y = emu_kout_vec(be, out, "y", R * N, S);
	k.dx = emu_kout_vec(be, out, "dx", R * N, S);
	k.rstd = emu_kout_vec(be, out, "rstd", R, C);
	k.var = emu_kout_vec(be, out, "var", R, C);
	k.X = emu_vec_new(be, R * N);
	k.kA = v == LN_WELFORD ? emu_vec_new(be, N) : NULL; /* Welford's counts */
	k.t = emu_vec_new(be, LN_NT);
	int rc = -1;
	if (k.y && k.dx && k.rstd && k.var && k.X && (v != LN_WELFORD || k.kA) && k.t &&
	    emu_load(be, pol, in->x, R, N, k.X) == 0) {
		k_layernorm_consts(be, v, C, A, N, eps, k.t, k.kA);
		rc = emu_rows(be, R, 16 * (uint64_t)N, ln_part, &k);
	}
	emu_kinputs_free(&ki);
	if (rc != 0)
		snprintf(err, errlen, "layernorm: out of memory");
	return rc;
}

const emu_kernel emu_kernel_layernorm = {
    "layernorm",
    variants,
    "eps=E (default 1e-5, rounded into the compute format); dy=D (every upstream gradient D; "
    "default ±1 from the seed)",
    run,
    inputs,
    steps,
    S_END - EMU_STEP0,
};
