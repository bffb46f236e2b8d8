/*
 * batchnorm.c — batch normalisation in training mode over an N × C input
 * (rows: the batch, N samples; columns: C channels), forward, running
 * statistics and backward, in PyTorch's formulas and order; and the eval
 * mode, which normalises with given running statistics.
 *
 * Forward (training), per channel c over the batch:
 *   mean_c, var_c (biased, ÷N), invstd_c = 1 / sqrt(var_c + eps)
 *   y_nc = ((gamma · (x_nc − mean_c)) · invstd_c) + beta
 * which is PyTorch's batch_norm_transform_input (aten/src/ATen/native/cuda/
 * Normalization.cuh: `gamma * (input - mean) * invstd + beta`, evaluated
 * left to right) with its InvStd functor (`1 / sqrt(var + eps)`: a square
 * root and a division, not an rsqrt). Variants (how mean and var are
 * computed), as layernorm's:
 *   twopass  mean = Σ x / N, then var = Σ (x − mean)² / N;
 *   welford  running mean and M2 (Welford 1962), entirely in the
 *            accumulator format, var = M2 / N;
 *   eval     no batch statistics: mean and var are the running statistics
 *            given as parameters (rmean, rvar), as model.eval() does.
 * Why eval is here. In training mode |y| < sqrt(N − 1) whatever the
 * variance (Samuelson's inequality: |x − mean| ≤ sqrt((N − 1)·var) for the
 * biased var), so a channel of tiny variance cannot push y past fp16's
 * 65504. It does in eval: a channel whose running variance is tiny has
 * invstd up to 1/sqrt(eps) (316 at eps 1e-5), and an input that strays
 * more than 65504/invstd from the running mean overflows the store.
 *
 * Running statistics (PyTorch's batch_norm_update_stats): with momentum m,
 *   running_mean = m · mean + (1 − m) · running_mean
 *   running_var  = m · var_unbiased + (1 − m) · running_var
 * where var_unbiased = M2 / (N − 1), the UNBIASED variance (the torch.nn.
 * BatchNorm1d documentation: the normalisation uses the biased estimator,
 * the running variance the unbiased one); N = 1 is refused, as PyTorch
 * refuses a training batch of one value per channel. Initial running
 * statistics: parameters rmean (default 0) and rvar (default 1), PyTorch's
 * initial buffers. They are buffers of the model: stored in the storage
 * format.
 *
 * Backward (PyTorch's batch_norm_backward_reduce and _elemt), with dy the
 * upstream gradient:
 *   sum_dy = Σ_n dy,  sum_dy_xmu = Σ_n dy · (x − mean)
 *   dbeta = sum_dy,  dgamma = sum_dy_xmu · invstd
 *   norm = 1/N,  mean_dy = sum_dy · norm
 *   factor_1 = ((invstd · invstd) · sum_dy_xmu) · norm,  factor_2 = gamma · invstd
 *   dx = ((dy − mean_dy) − (x − mean) · factor_1) · factor_2
 * eval: dx = dy · factor_2 (the statistics are constants), dgamma and dbeta
 * as above with the running mean.
 * dy is stored in the storage format (step "dy"): every element the value
 * of parameter dy, or by default ±1 with the sign from bit 0 of
 * emu_sr_bits(seed, n·C + c).
 *
 * Precision policy: x is loaded by emu_load (storage, the scaling recipe,
 * then the compute format); elementwise work and the per-channel scalars
 * are in the compute format; the sums and their divisions by N (and N − 1)
 * are in the accumulator format, sequential, then converted to the compute
 * format. eps, gamma, beta, momentum and the running statistics enter
 * through conversions into the compute format (eps = 1e-5 becomes
 * 168 · 2^-24 in fp16; 1e-8 would be 0).
 *
 * Element numbering (SR keys, the first failing operation): the per-channel
 * steps (the columns' conversions, squares and folds) number element (n, c)
 * as c·N + n; the elementwise steps over rows as n·C + c; the per-channel
 * scalars as c.
 *
 * Outputs: y and dx (N·C, storage), mean and var (C, compute; var biased),
 * running_mean and running_var (C, storage), dgamma and dbeta (C, storage:
 * the parameters' format). Parameter backward=0 runs the forward pass alone
 * (no dy, dx, dgamma, dbeta): a case that locates the forward's overflow
 * is not masked by the backward's (eval's dgamma = Σ dy·(x − mean)·invstd
 * overflows fp16 before y does).
 *
 * The order of operations is emu/kernels/batchnorm_rows.h, the one source
 * the GPU compiles too (gpu/kern.cu, one thread a channel, and
 * gpu/host_rows.c for the fake device, whose outputs tests/gpu/ compares
 * with this file's; docs/gpu.md). This file takes the parameters, loads the
 * inputs (x, dy and the per-channel parameters given as tensors) and calls
 * the row source's phases over every channel.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "emu/engine/krow.h"
#include "emu/kernels/batchnorm_rows.h"

static const char *const variants[] = {K_BATCHNORM_VARIANTS(K_VARIANT_NAME) NULL};

/* The steps' names (the row source declares them with their ids). */
static const char *const steps[S_END - EMU_STEP0] = {K_BATCHNORM_STEPS(K_STEP_NAME)};

static int parse_variant(const char *variant)
{
	return emu_variant_index(variants, variant);
}

/* The per-channel parameters a tensor each, in the order of their
 * conversions into the compute format. */
static const struct {
	const char *role, *param;
	unsigned step;
} chan_params[] = {{"gamma", "gamma", S_GAMMA_C},
                   {"beta", "beta", S_BETA_C},
                   {"running_mean", "rmean", S_RMEAN_C},
                   {"running_var", "rvar", S_RVAR_C}};
#define NCHAN_PARAMS (sizeof chan_params / sizeof chan_params[0])

/* x; gamma, beta, running_mean and running_var (C each, converted into the
 * compute format: by default the parameters', one value converted once for
 * every channel); with backward=1 the upstream gradient dy (N × C, stored at
 * step "dy"): parameter `dy` everywhere, else ±1 from bit 0 of
 * emu_sr_bits(seed, n·C + c). */
static int inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                  char *err, size_t errlen)
{
	int v = parse_variant(variant);
	size_t N = in->rows, Ch = in->cols;
	emu_kinput *t;
	double dyval, bwd, *vals;

	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	if (v < 0 || N == 0 || Ch == 0 || (v != BN_EVAL && N < 2))
		return 0; /* the run refuses them */
	for (size_t k = 0; k < NCHAN_PARAMS; k++) {
		double val, lo = k == 3 ? 0 : -INFINITY, dflt = k == 0 || k == 3 ? 1 : 0;
		if (!emu_kparam_real(in, "batchnorm", chan_params[k].param, lo, INFINITY, 0, dflt,
		                     &val, err, errlen) ||
		    emu_kinputs_add(ki, in, "batchnorm", chan_params[k].role, 1, Ch, false, &t,
		                    &vals, err, errlen) != 0)
			return -1;
		t->fmt = &pol->compute;
		t->step = chan_params[k].step;
		t->bcast = !t->given;
		for (size_t c = 0; vals && c < Ch; c++)
			vals[c] = val;
	}
	if (!emu_kparam_real(in, "batchnorm", "dy", -INFINITY, INFINITY, 0, NAN, &dyval, err,
	                     errlen) ||
	    !emu_kparam_int(in, "batchnorm", "backward", 0, 1, 1, &bwd, err, errlen))
		return -1;
	if (!bwd)
		return 0;
	if (emu_kinputs_add(ki, in, "batchnorm", "dy", N, Ch, false, &t, &vals, err, errlen) != 0)
		return -1;
	t->fmt = &pol->storage;
	t->step = S_DY;
	for (size_t i = 0; vals && i < N * Ch; i++) /* the default: ±1 from the seed */
		vals[i] = !isnan(dyval) ? dyval : emu_draw_sign(in->seed, i);
	return 0;
}

/* A phase of the row source over channels or rows, which the GPU's
 * threads run one each: a part of them (emu_rows) on be, with its own
 * scratch w1, w2, row, row2 and t (t a copy of the constants; Welford's
 * counts kA are read only). */
enum { BN_MEAN_COL, BN_CENTER, BN_SUMSQ_COL, BN_Y, BN_DSUM_COL, BN_DX };
typedef struct {
	const k_bn *b;
	int phase;
} bn_phase;

static int bn_part(emu_be *be, size_t i0, size_t i1, void *arg)
{
	const bn_phase *ph = arg;
	k_bn b = *ph->b;
	b.w1 = emu_vec_new(be, b.N);
	b.w2 = emu_vec_new(be, b.N);
	b.row = emu_vec_new(be, b.Ch);
	b.row2 = emu_vec_new(be, b.Ch);
	b.t = emu_vec_new(be, BN_NT);
	if (!b.w1 || !b.w2 || !b.row || !b.row2 || !b.t)
		return -1;
	emu_copy(be, emu_row(b.t, 0), emu_row(ph->b->t, 0), BN_NT);
	for (size_t i = i0; i < i1; i++) {
		switch (ph->phase) {
		case BN_MEAN_COL:
			k_batchnorm_mean_col(be, &b, i);
			break;
		case BN_CENTER:
			k_batchnorm_center(be, &b, i, 0, b.Ch);
			break;
		case BN_SUMSQ_COL:
			k_batchnorm_sumsq_col(be, &b, i);
			break;
		case BN_Y:
			k_batchnorm_y(be, &b, i, 0, b.Ch);
			break;
		case BN_DSUM_COL:
			k_batchnorm_dsum_col(be, &b, i);
			break;
		default:
			k_batchnorm_dx(be, &b, i, 0, b.Ch);
		}
	}
	return 0;
}

/* phase over its channels (… _COL) or rows, per_item operations each */
static int bn_run(emu_be *be, const k_bn *b, int phase, uint64_t per_item)
{
	bn_phase ph = {b, phase};
	bool cols = phase == BN_MEAN_COL || phase == BN_SUMSQ_COL || phase == BN_DSUM_COL;
	return emu_rows(be, cols ? b->Ch : b->N, per_item, bn_part, &ph);
}

/* The forward pass after the constants, the row source's phases each over
 * every channel (the GPU's threads run them all, one channel each): the
 * mean (and, in Welford's recurrence, M2) per channel, then x − mean, var,
 * invstd, y and the running statistics. */
static int forward(emu_be *be, k_bn *b)
{
	size_t N = b->N, Ch = b->Ch;
	k_batchnorm_momentum(be, b);
	if (b->v == BN_WELFORD)
		k_batchnorm_counts(be, b);
	if (b->v != BN_EVAL && bn_run(be, b, BN_MEAN_COL, 6 * (uint64_t)N) != 0)
		return -1;
	k_batchnorm_mean(be, b, 0, Ch);
	if (bn_run(be, b, BN_CENTER, Ch) != 0)
		return -1;
	if (b->v == BN_TWOPASS && bn_run(be, b, BN_SUMSQ_COL, 3 * (uint64_t)N) != 0)
		return -1;
	k_batchnorm_var(be, b, 0, Ch);
	if (bn_run(be, b, BN_Y, 3 * (uint64_t)Ch) != 0)
		return -1;
	k_batchnorm_running(be, b, 0, Ch);
	return 0;
}

/* The backward pass, dy stored: dy into the compute format, the two sums
 * per channel, the per-channel factors and dx. */
static int backward(emu_be *be, k_bn *b)
{
	size_t N = b->N, Ch = b->Ch;
	k_batchnorm_dy(be, b, 0, 1, N * Ch);
	if (bn_run(be, b, BN_DSUM_COL, 5 * (uint64_t)N) != 0)
		return -1;
	k_batchnorm_factors(be, b, 0, Ch);
	return bn_run(be, b, BN_DX, 5 * (uint64_t)Ch);
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	int v = parse_variant(variant);
	if (v < 0) {
		snprintf(err, errlen, "batchnorm: unknown variant '%s' (twopass welford eval)",
		         variant);
		return -1;
	}
	if (in->cols == 0 || in->rows == 0 || (v != BN_EVAL && in->rows < 2)) {
		snprintf(err, errlen,
		         in->cols == 0 || in->rows == 0
		             ? "batchnorm: empty input"
		             : "batchnorm: training needs a batch of at least 2 rows (the "
		               "unbiased variance divides by N - 1)");
		return -1;
	}
	size_t N = in->rows, Ch = in->cols;
	double eps, dyval, gamma, beta, mom, rmean, rvar, bwd; /* dyval NaN: the ±1 pattern */
	emu_kinputs ki;
	if (!emu_kparam_real(in, "batchnorm", "eps", 0, INFINITY, 0, 1e-5, &eps, err, errlen) ||
	    !emu_kparam_real(in, "batchnorm", "dy", -INFINITY, INFINITY, 0, NAN, &dyval, err,
	                     errlen) ||
	    !emu_kparam_real(in, "batchnorm", "gamma", -INFINITY, INFINITY, 0, 1, &gamma, err,
	                     errlen) ||
	    !emu_kparam_real(in, "batchnorm", "beta", -INFINITY, INFINITY, 0, 0, &beta, err,
	                     errlen) ||
	    !emu_kparam_real(in, "batchnorm", "momentum", 0, 1, 0, 0.1, &mom, err, errlen) ||
	    !emu_kparam_real(in, "batchnorm", "rmean", -INFINITY, INFINITY, 0, 0, &rmean, err,
	                     errlen) ||
	    !emu_kparam_real(in, "batchnorm", "rvar", 0, INFINITY, 0, 1, &rvar, err, errlen) ||
	    !emu_kparam_int(in, "batchnorm", "backward", 0, 1, 1, &bwd, err, errlen) ||
	    emu_kinputs_take(&emu_kernel_batchnorm, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	emu_steps(be, steps, S_END - EMU_STEP0);
	emu_vec *y = emu_kout_vec(be, out, "y", N * Ch, S);
	emu_vec *dx = bwd ? emu_kout_vec(be, out, "dx", N * Ch, S) : NULL;
	emu_vec *meanv = emu_kout_vec(be, out, "mean", Ch, C);
	emu_vec *varv = emu_kout_vec(be, out, "var", Ch, C);
	emu_vec *rmv = emu_kout_vec(be, out, "running_mean", Ch, S);
	emu_vec *rvv = emu_kout_vec(be, out, "running_var", Ch, S);
	emu_vec *dg = bwd ? emu_kout_vec(be, out, "dgamma", Ch, S) : NULL;
	emu_vec *db = bwd ? emu_kout_vec(be, out, "dbeta", Ch, S) : NULL;
	emu_vec *X = emu_vec_new(be, N * Ch), *xmu = emu_vec_new(be, N * Ch);
	emu_vec *dyv = emu_vec_new(be, N * Ch), *row = emu_vec_new(be, Ch),
	        *row2 = emu_vec_new(be, Ch);
	emu_vec *w1 = emu_vec_new(be, N), *w2 = emu_vec_new(be, N);
	/* per channel: the two sums, invstd, var_unbiased, the backward's factors */
	emu_vec *sa = emu_vec_new(be, Ch), *sb = emu_vec_new(be, Ch), *invstd = emu_vec_new(be, Ch),
	        *uvar = emu_vec_new(be, Ch), *f1 = emu_vec_new(be, Ch), *f2 = emu_vec_new(be, Ch),
	        *mdy = emu_vec_new(be, Ch);
	emu_vec *kA = v == BN_WELFORD ? emu_vec_new(be, N) : NULL; /* Welford's counts */
	emu_vec *t = emu_vec_new(be, BN_NT);
	/* the per-channel parameters given as tensors, converted channel by channel */
	emu_vec *cv[NCHAN_PARAMS];
	bool cv_ok = true;
	for (size_t k = 0; k < NCHAN_PARAMS; k++) {
		cv[k] =
		    emu_kinputs_find(&ki, chan_params[k].role)->given ? emu_vec_new(be, Ch) : NULL;
		cv_ok = cv_ok && (cv[k] || !emu_kinputs_find(&ki, chan_params[k].role)->given);
	}
	if (!y || (bwd && (!dx || !dg || !db)) || !meanv || !varv || !rmv || !rvv || !X || !xmu ||
	    !dyv || !row || !row2 || !w1 || !w2 || !sa || !sb || !invstd || !uvar || !f1 || !f2 ||
	    !mdy || (v == BN_WELFORD && !kA) || !t || !cv_ok ||
	    emu_load(be, pol, in->x, N, Ch, X) != 0) {
		emu_kinputs_free(&ki);
		snprintf(err, errlen, "batchnorm: out of memory");
		return -1;
	}
	k_bn b = {.v = v,
	          .S = S,
	          .C = C,
	          .A = A,
	          .N = N,
	          .Ch = Ch,
	          .X = X,
	          .xmu = xmu,
	          .dy = dyv,
	          .y = y,
	          .dx = dx,
	          .mean = meanv,
	          .var = varv,
	          .rm = rmv,
	          .rv = rvv,
	          .dg = dg,
	          .db = db,
	          .sa = sa,
	          .sb = sb,
	          .invstd = invstd,
	          .uvar = uvar,
	          .f1 = f1,
	          .f2 = f2,
	          .mdy = mdy,
	          .row = row,
	          .row2 = row2,
	          .w1 = w1,
	          .w2 = w2,
	          .kA = kA,
	          .t = t,
	          .gam = emu_at(t, BN_GAMMA),
	          .bet = emu_at(t, BN_BETA),
	          .rmc = emu_at(t, BN_RMEAN),
	          .rvc = emu_at(t, BN_RVAR)};

	/* the row source, emu/kernels/batchnorm_rows.h, each phase over every
	 * channel: the GPU's threads run them all, one channel each */
	/* ---- the constants (a per-channel parameter given as a tensor is
	 * converted below, channel by channel) ---- */
	unsigned given = 0;
	for (size_t k = 0; k < NCHAN_PARAMS; k++)
		given |= cv[k] ? 1u << k : 0;
	k_batchnorm_consts(be, &b, eps, gamma, beta, mom, rmean, rvar, given);
	emu_ref *chan_ref[NCHAN_PARAMS] = {&b.gam, &b.bet, &b.rmc, &b.rvc};
	for (size_t k = 0; k < NCHAN_PARAMS; k++) {
		if (!cv[k])
			continue;
		const double *val = emu_kinputs_find(&ki, chan_params[k].role)->v;
		for (size_t c = 0; c < Ch; c++)
			emu_fill(be, emu_at(cv[k], c), val[c], 1);
		emu_map(be, chan_params[k].step, EMU_OP_CVT, C, emu_row(cv[k], 0),
		        emu_row(cv[k], 0), EMU_NOREF, EMU_NOREF, Ch, 0, NULL);
		*chan_ref[k] = emu_row(cv[k], 0);
	}
	if (forward(be, &b) != 0)
		goto oom;
	if (!bwd) { /* backward=0: the forward pass alone */
		emu_kinputs_free(&ki);
		return 0;
	}
	/* ---- backward: dy stored, then the two sums per channel, the
	 * per-channel factors and dx ---- */
	emu_input(be, S_DY, S, emu_row(dyv, 0), emu_kinputs_find(&ki, "dy")->v, 1, N * Ch, 0, NULL);
	if (backward(be, &b) != 0)
		goto oom;
	emu_kinputs_free(&ki);
	return 0;
oom:
	emu_kinputs_free(&ki);
	snprintf(err, errlen, "batchnorm: out of memory");
	return -1;
}

const emu_kernel emu_kernel_batchnorm = {
    "batchnorm",
    variants,
    "eps=E (default 1e-5, rounded into the compute format); gamma=G, beta=B (every channel's; "
    "default 1, 0); momentum=M (default 0.1); rmean=R, rvar=V (the running statistics before "
    "the step, eval's statistics; default 0, 1); dy=D (every upstream gradient D; default ±1 "
    "from the seed); backward=0|1 (default 1; 0: the forward pass alone, no dx, dgamma, dbeta)",
    run,
    inputs,
    steps,
    S_END - EMU_STEP0,
};
