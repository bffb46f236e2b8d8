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
 * GPU counterpart: gpu/rows.h's `k_batchnorm_col` and `k_batchnorm_eval_col`, compiled by nvcc
 * in gpu/kern.cu and with the emulator's operations in gpu/host_rows.c for the fake device,
 * whose outputs tests/gpu/ compares with this file's (docs/gpu.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"

static const char *const variants[] = {"twopass", "welford", "eval", NULL};

enum { TWOPASS, WELFORD, EVAL };

/* The steps, each one operation site of the kernel. */
enum {
	S_N_ACCUM = EMU_STEP0,
	S_N1_ACCUM,
	S_EPS,
	S_GAMMA_C,
	S_BETA_C,
	S_MOM_C,
	S_ONE_MINUS_MOM,
	S_RMEAN_C,
	S_RVAR_C,
	S_K_ACCUM,
	S_X_ACCUM,
	S_SUM,
	S_MEAN,
	S_W_DELTA,
	S_W_MEAN_DIV,
	S_W_MEAN_ADD,
	S_W_DELTA2,
	S_W_M2_MUL,
	S_W_M2_ADD,
	S_MEAN_C,
	S_CENTER,
	S_SQUARE,
	S_SQ_ACCUM,
	S_SUMSQ,
	S_VAR_DIV,
	S_VAR_C,
	S_UVAR_DIV,
	S_UVAR_C,
	S_ADD_EPS,
	S_SQRT,
	S_INVSTD,
	S_GAMMA,
	S_NORM,
	S_BETA,
	S_STORE,
	S_RM_MOM,
	S_RM_KEEP,
	S_RM_ADD,
	S_RM_STORE,
	S_RV_MOM,
	S_RV_KEEP,
	S_RV_ADD,
	S_RV_STORE,
	S_DY,
	S_DY_C,
	S_DY_ACCUM,
	S_SUM_DY,
	S_DY_XMU,
	S_DYX_ACCUM,
	S_SUM_DY_XMU,
	S_NORM_FCT,
	S_NORM_C,
	S_SUM_DY_C,
	S_SUM_DYX_C,
	S_DBETA_STORE,
	S_DGAMMA,
	S_DGAMMA_STORE,
	S_MEAN_DY,
	S_F1_SQ,
	S_F1_MUL,
	S_F1_NORM,
	S_F2,
	S_DX_CENTER,
	S_DX_PROJ_MUL,
	S_DX_PROJ_SUB,
	S_DX,
	S_DX_STORE,
	S_END
};
static const char *const steps[S_END - EMU_STEP0] = {
    "to_accum",
    "to_accum",
    "eps",
    "gamma",
    "beta",
    "momentum",
    "momentum",
    "running_mean",
    "running_var",
    "to_accum",
    "to_accum",
    "sum",
    "mean",
    "welford_delta",
    "welford_mean",
    "welford_mean",
    "welford_delta2",
    "welford_m2",
    "welford_m2",
    "to_compute",
    "center",
    "square",
    "to_accum",
    "sumsq",
    "var",
    "to_compute",
    "var_unbiased",
    "to_compute",
    "add_eps",
    "sqrt",
    "invstd",
    "gamma",
    "norm",
    "beta",
    "store",
    "rm_momentum",
    "rm_keep",
    "rm_update",
    "rm_store",
    "rv_momentum",
    "rv_keep",
    "rv_update",
    "rv_store",
    "dy",
    "to_compute",
    "to_accum",
    "sum_dy",
    "dy_xmu",
    "to_accum",
    "sum_dy_xmu",
    "norm_fct",
    "to_compute",
    "to_compute",
    "to_compute",
    "dbeta_store",
    "dgamma",
    "dgamma_store",
    "mean_dy",
    "factor_1",
    "factor_1",
    "factor_1",
    "factor_2",
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
	       : !strcmp(variant, "welford") ? WELFORD
	       : !strcmp(variant, "eval")    ? EVAL
	                                     : -1;
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
	if (v < 0 || N == 0 || Ch == 0 || (v != EVAL && N < 2))
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
		vals[i] = !isnan(dyval) ? dyval : emu_sr_bits(in->seed, i) & 1 ? -1.0 : 1.0;
	return 0;
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
	if (in->cols == 0 || in->rows == 0 || (v != EVAL && in->rows < 2)) {
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
	emu_vec *kA = v == WELFORD ? emu_vec_new(be, N) : NULL; /* Welford's counts */
	emu_vec *t = emu_vec_new(be, 16);
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
	    !mdy || (v == WELFORD && !kA) || !t || !cv_ok ||
	    emu_load(be, pol, in->x, N, Ch, X) != 0) {
		emu_kinputs_free(&ki);
		snprintf(err, errlen, "batchnorm: out of memory");
		return -1;
	}
	enum { TMP, TMP2, NA, N1A, EPSC, GAMMA, BETA, MOM, OMM, RMEAN, RVAR, MA, XA, NORM, ONE };
	emu_ref tmp = emu_at(t, TMP), tmp2 = emu_at(t, TMP2), Na = emu_at(t, NA),
	        N1a = emu_at(t, N1A), epsc = emu_at(t, EPSC), gam = emu_at(t, GAMMA),
	        bet = emu_at(t, BETA), momc = emu_at(t, MOM), omm = emu_at(t, OMM),
	        rmc = emu_at(t, RMEAN), rvc = emu_at(t, RVAR), ma = emu_at(t, MA),
	        xa = emu_at(t, XA), norm = emu_at(t, NORM), one = emu_at(t, ONE);
	emu_ref W1 = emu_row(w1, 0), W2 = emu_row(w2, 0), ROW = emu_row(row, 0),
	        ROW2 = emu_row(row2, 0);
	emu_ref MEAN = emu_row(meanv, 0), VAR = emu_row(varv, 0), INVSTD = emu_row(invstd, 0),
	        SA = emu_row(sa, 0), SB = emu_row(sb, 0), UVAR = emu_row(uvar, 0),
	        F1 = emu_row(f1, 0), F2 = emu_row(f2, 0), MDY = emu_row(mdy, 0);

	/* ---- the constants: N and N − 1 in the accumulator format; eps, gamma,
	 * beta, momentum and the initial running statistics in the compute
	 * format (each rounded if it must be) ---- */
	const double cst[] = {(double)N, (double)N - 1, eps, gamma, beta, mom, rmean, rvar};
	const unsigned cstep[] = {S_N_ACCUM, S_N1_ACCUM, S_EPS,     S_GAMMA_C,
	                          S_BETA_C,  S_MOM_C,    S_RMEAN_C, S_RVAR_C};
	const emu_ref cdst[] = {Na, N1a, epsc, gam, bet, momc, rmc, rvc};
	const int chan_of[] = {-1, -1, -1, 0, 1, -1, 2, 3}; /* cst's per-channel ones */
	for (size_t i = 0; i < sizeof cst / sizeof cst[0]; i++) {
		if (chan_of[i] >= 0 && cv[chan_of[i]])
			continue; /* given as a tensor: below */
		emu_fill(be, tmp, cst[i], 1);
		emu_op1(be, cstep[i], EMU_OP_CVT, i < 2 ? A : C, cdst[i], tmp, EMU_NOREF, 0);
	}
	/* a per-channel parameter given as a tensor, channel by channel */
	emu_ref *chan_ref[NCHAN_PARAMS] = {&gam, &bet, &rmc, &rvc};
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
	emu_fill(be, one, 1, 1);
	emu_op1(be, S_ONE_MINUS_MOM, EMU_OP_SUB, C, omm, one, momc, 0);

	/* ---- mean (and, in Welford's recurrence, M2) per channel ---- */
	if (v == EVAL) {
		emu_copy(be, MEAN, rmc, Ch);
	} else if (v == WELFORD) {
		for (size_t j = 0; j < N; j++) /* the counts 1..N, in the accumulator format */
			emu_fill(be, emu_at(kA, j), (double)(j + 1), 1);
		emu_map(be, S_K_ACCUM, EMU_OP_CVT, A, emu_row(kA, 0), emu_row(kA, 0), EMU_NOREF,
		        EMU_NOREF, N, 0, NULL);
		for (size_t c = 0; c < Ch; c++) {
			size_t o = c * N;
			emu_ref m2 = emu_at(sb, c);
			emu_map(be, S_X_ACCUM, EMU_OP_CVT, A, W1, emu_strided(X, c, Ch), EMU_NOREF,
			        EMU_NOREF, N, o, NULL);
			emu_fill(be, ma, 0, 1);
			emu_fill(be, m2, 0, 1);
			for (size_t j = 0, i = o; j < N; j++, i++) {
				emu_copy(be, xa, emu_at(w1, j), 1);
				emu_op1(be, S_W_DELTA, EMU_OP_SUB, A, tmp, xa, ma, i);
				emu_op1(be, S_W_MEAN_DIV, EMU_OP_DIV, A, tmp2, tmp, emu_at(kA, j),
				        i);
				emu_op1(be, S_W_MEAN_ADD, EMU_OP_ADD, A, ma, ma, tmp2, i);
				emu_op1(be, S_W_DELTA2, EMU_OP_SUB, A, tmp2, xa, ma, i);
				emu_op1(be, S_W_M2_MUL, EMU_OP_MUL, A, tmp, tmp, tmp2, i);
				emu_op1(be, S_W_M2_ADD, EMU_OP_ADD, A, m2, m2, tmp, i);
			}
			emu_copy(be, emu_at(sa, c), ma, 1);
		}
		emu_map(be, S_MEAN_C, EMU_OP_CVT, C, MEAN, SA, EMU_NOREF, EMU_NOREF, Ch, 0, NULL);
	} else {
		for (size_t c = 0; c < Ch; c++) {
			size_t o = c * N;
			emu_map(be, S_X_ACCUM, EMU_OP_CVT, A, W1, emu_strided(X, c, Ch), EMU_NOREF,
			        EMU_NOREF, N, o, NULL);
			emu_fill(be, emu_at(sa, c), 0, 1);
			emu_fold(be, S_SUM, EMU_OP_ADD, A, EMU_ORDER_SEQ, emu_at(sa, c), W1,
			         EMU_NOREF, N, o);
		}
		emu_map(be, S_MEAN, EMU_OP_DIV, A, SA, SA, Na, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_MEAN_C, EMU_OP_CVT, C, MEAN, SA, EMU_NOREF, EMU_NOREF, Ch, 0, NULL);
	}
	/* ---- x − mean, kept for y, the second pass and the backward ---- */
	for (size_t n = 0; n < N; n++)
		emu_map(be, S_CENTER, EMU_OP_SUB, C, emu_row(xmu, n * Ch), emu_row(X, n * Ch), MEAN,
		        EMU_NOREF, Ch, n * Ch, NULL);
	/* ---- var (biased) and var_unbiased per channel, from M2 ---- */
	if (v == EVAL) {
		emu_copy(be, VAR, rvc, Ch);
	} else {
		if (v == TWOPASS)
			for (size_t c = 0; c < Ch; c++) {
				size_t o = c * N;
				emu_ref d = emu_strided(xmu, c, Ch);
				emu_map(be, S_SQUARE, EMU_OP_MUL, C, W2, d, d, EMU_NOREF, N, o,
				        NULL);
				emu_map(be, S_SQ_ACCUM, EMU_OP_CVT, A, W2, W2, EMU_NOREF, EMU_NOREF,
				        N, o, NULL);
				emu_fill(be, emu_at(sb, c), 0, 1);
				emu_fold(be, S_SUMSQ, EMU_OP_ADD, A, EMU_ORDER_SEQ, emu_at(sb, c),
				         W2, EMU_NOREF, N, o);
			}
		emu_map(be, S_VAR_DIV, EMU_OP_DIV, A, SA, SB, Na, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_VAR_C, EMU_OP_CVT, C, VAR, SA, EMU_NOREF, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_UVAR_DIV, EMU_OP_DIV, A, SB, SB, N1a, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_UVAR_C, EMU_OP_CVT, C, UVAR, SB, EMU_NOREF, EMU_NOREF, Ch, 0, NULL);
	}
	/* ---- invstd = 1 / sqrt(var + eps) ---- */
	emu_map(be, S_ADD_EPS, EMU_OP_ADD, C, INVSTD, VAR, epsc, EMU_NOREF, Ch, 0, NULL);
	emu_map(be, S_SQRT, EMU_OP_SQRT, C, INVSTD, INVSTD, EMU_NOREF, EMU_NOREF, Ch, 0, NULL);
	emu_map(be, S_INVSTD, EMU_OP_DIV, C, INVSTD, one, INVSTD, EMU_NOREF, Ch, 0, NULL);
	/* ---- y = ((gamma · (x − mean)) · invstd) + beta, stored ---- */
	for (size_t n = 0; n < N; n++) {
		size_t o = n * Ch;
		emu_map(be, S_GAMMA, EMU_OP_MUL, C, ROW, gam, emu_row(xmu, o), EMU_NOREF, Ch, o,
		        NULL);
		emu_map(be, S_NORM, EMU_OP_MUL, C, ROW, ROW, INVSTD, EMU_NOREF, Ch, o, NULL);
		emu_map(be, S_BETA, EMU_OP_ADD, C, ROW, ROW, bet, EMU_NOREF, Ch, o, NULL);
		emu_map(be, S_STORE, EMU_OP_CVT, S, emu_row(y, o), ROW, EMU_NOREF, EMU_NOREF, Ch, o,
		        NULL);
	}
	/* ---- running statistics: m · stat + (1 − m) · running, stored; eval
	 * leaves them as they were ---- */
	if (v == EVAL) {
		emu_map(be, S_RM_STORE, EMU_OP_CVT, S, emu_row(rmv, 0), rmc, EMU_NOREF, EMU_NOREF,
		        Ch, 0, NULL);
		emu_map(be, S_RV_STORE, EMU_OP_CVT, S, emu_row(rvv, 0), rvc, EMU_NOREF, EMU_NOREF,
		        Ch, 0, NULL);
	} else {
		emu_map(be, S_RM_MOM, EMU_OP_MUL, C, SA, momc, MEAN, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_RM_KEEP, EMU_OP_MUL, C, SB, omm, rmc, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_RM_ADD, EMU_OP_ADD, C, SA, SA, SB, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_RM_STORE, EMU_OP_CVT, S, emu_row(rmv, 0), SA, EMU_NOREF, EMU_NOREF,
		        Ch, 0, NULL);
		emu_map(be, S_RV_MOM, EMU_OP_MUL, C, SA, momc, UVAR, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_RV_KEEP, EMU_OP_MUL, C, SB, omm, rvc, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_RV_ADD, EMU_OP_ADD, C, SA, SA, SB, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_RV_STORE, EMU_OP_CVT, S, emu_row(rvv, 0), SA, EMU_NOREF, EMU_NOREF,
		        Ch, 0, NULL);
	}

	if (!bwd) { /* backward=0: the forward pass alone */
		emu_kinputs_free(&ki);
		return 0;
	}
	/* ---- backward: dy stored, then the two sums per channel ---- */
	emu_input(be, S_DY, S, emu_row(dyv, 0), emu_kinputs_find(&ki, "dy")->v, 1, N * Ch, 0, NULL);
	emu_map(be, S_DY_C, EMU_OP_CVT, C, emu_row(dyv, 0), emu_row(dyv, 0), EMU_NOREF, EMU_NOREF,
	        N * Ch, 0, NULL);
	for (size_t c = 0; c < Ch; c++) {
		size_t o = c * N;
		emu_ref dyc = emu_strided(dyv, c, Ch);
		emu_map(be, S_DY_ACCUM, EMU_OP_CVT, A, W1, dyc, EMU_NOREF, EMU_NOREF, N, o, NULL);
		emu_map(be, S_DY_XMU, EMU_OP_MUL, C, W2, dyc, emu_strided(xmu, c, Ch), EMU_NOREF, N,
		        o, NULL);
		emu_map(be, S_DYX_ACCUM, EMU_OP_CVT, A, W2, W2, EMU_NOREF, EMU_NOREF, N, o, NULL);
		emu_fill(be, emu_at(sa, c), 0, 1);
		emu_fill(be, emu_at(sb, c), 0, 1);
		emu_fold(be, S_SUM_DY, EMU_OP_ADD, A, EMU_ORDER_SEQ, emu_at(sa, c), W1, EMU_NOREF,
		         N, o);
		emu_fold(be, S_SUM_DY_XMU, EMU_OP_ADD, A, EMU_ORDER_SEQ, emu_at(sb, c), W2,
		         EMU_NOREF, N, o);
	}
	/* norm = 1/N in the accumulator format, then the compute format */
	emu_op1(be, S_NORM_FCT, EMU_OP_DIV, A, tmp, one, Na, 0);
	emu_op1(be, S_NORM_C, EMU_OP_CVT, C, norm, tmp, EMU_NOREF, 0);
	emu_map(be, S_SUM_DY_C, EMU_OP_CVT, C, SA, SA, EMU_NOREF, EMU_NOREF, Ch, 0, NULL);
	emu_map(be, S_SUM_DYX_C, EMU_OP_CVT, C, SB, SB, EMU_NOREF, EMU_NOREF, Ch, 0, NULL);
	/* dbeta = sum_dy, dgamma = sum_dy_xmu · invstd */
	emu_map(be, S_DBETA_STORE, EMU_OP_CVT, S, emu_row(db, 0), SA, EMU_NOREF, EMU_NOREF, Ch, 0,
	        NULL);
	emu_map(be, S_DGAMMA, EMU_OP_MUL, C, F1, SB, INVSTD, EMU_NOREF, Ch, 0, NULL);
	emu_map(be, S_DGAMMA_STORE, EMU_OP_CVT, S, emu_row(dg, 0), F1, EMU_NOREF, EMU_NOREF, Ch, 0,
	        NULL);
	/* the factors: mean_dy, factor_1 = ((invstd·invstd)·sum_dy_xmu)·norm,
	 * factor_2 = gamma·invstd */
	if (v != EVAL) { /* eval's statistics are constants: dx = dy · factor_2 */
		emu_map(be, S_MEAN_DY, EMU_OP_MUL, C, MDY, SA, norm, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_F1_SQ, EMU_OP_MUL, C, F1, INVSTD, INVSTD, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_F1_MUL, EMU_OP_MUL, C, F1, F1, SB, EMU_NOREF, Ch, 0, NULL);
		emu_map(be, S_F1_NORM, EMU_OP_MUL, C, F1, F1, norm, EMU_NOREF, Ch, 0, NULL);
	}
	emu_map(be, S_F2, EMU_OP_MUL, C, F2, gam, INVSTD, EMU_NOREF, Ch, 0, NULL);
	/* dx = ((dy − mean_dy) − (x − mean)·factor_1)·factor_2; eval: dy·factor_2 */
	for (size_t n = 0; n < N; n++) {
		size_t o = n * Ch;
		emu_ref dyr = emu_row(dyv, o);
		if (v != EVAL) {
			emu_map(be, S_DX_CENTER, EMU_OP_SUB, C, ROW, dyr, MDY, EMU_NOREF, Ch, o,
			        NULL);
			emu_map(be, S_DX_PROJ_MUL, EMU_OP_MUL, C, ROW2, emu_row(xmu, o), F1,
			        EMU_NOREF, Ch, o, NULL);
			emu_map(be, S_DX_PROJ_SUB, EMU_OP_SUB, C, ROW, ROW, ROW2, EMU_NOREF, Ch, o,
			        NULL);
			dyr = ROW;
		}
		emu_map(be, S_DX, EMU_OP_MUL, C, ROW, dyr, F2, EMU_NOREF, Ch, o, NULL);
		emu_map(be, S_DX_STORE, EMU_OP_CVT, S, emu_row(dx, o), ROW, EMU_NOREF, EMU_NOREF,
		        Ch, o, NULL);
	}
	emu_kinputs_free(&ki);
	return 0;
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
};
