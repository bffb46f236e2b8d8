/*
 * bce.c — binary cross-entropy with logits, loss and gradient, mean over
 * every element.
 *
 * Variants (docs/kernels-bce.md):
 *   naive   p = 1/(1 + exp(−x)), loss_j = −(y·log p + (1 − y)·log(1 − p)),
 *           grad_j = p − y. Breaks both ways: for x ≫ 0, exp(−x) underflows,
 *           p = 1 and log(1 − p) = log 0 = −inf; for x ≪ 0, exp(−x)
 *           overflows, p = 0, log p = −inf and y·log p = 0·(−inf) = NaN.
 *   stable  PyTorch's binary_cross_entropy_with_logits:
 *           loss_j = max(x, 0) − x·y + log1p(exp(−|x|)), grad_j = σ(x) − y
 *           with σ(x) = 1/(1 + e) for x >= 0 and e/(1 + e) for x < 0,
 *           e = exp(−|x|) <= 1, so nothing overflows.
 * Elementwise work is in the compute format; the loss terms are converted to
 * the accumulator format and summed there in one sequential fold over all
 * elements (row-major), then divided by the count; the gradient is divided
 * by the count in the compute format and stored in the storage format.
 * Targets y_j ∈ {0, 1} (tensor `target`): parameter `target` for every
 * element, else bit 31 of emu_sr_bits(seed, j) (nanmap's one counter-based
 * draw).
 *
 * GPU counterpart: gpu/rows.h's `k_bce_row`, compiled by nvcc in gpu/kern.cu and with the
 * emulator's operations in gpu/host_rows.c for the fake device, whose outputs tests/gpu/
 * compares with this file's (docs/gpu.md).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"

static const char *const variants[] = {"naive", "stable", NULL};

/* The steps, each one operation site of the kernel. */
enum {
	S_COUNT_C = EMU_STEP0,
	S_COUNT_A,
	S_ABS,
	S_NEG,
	S_EXP,
	S_ONE_PLUS,
	S_SIGMOID,
	S_LOG_P,
	S_ONE_MINUS,
	S_LOG_Q,
	S_ONE_MINUS_Y,
	S_Y_LOG_P,
	S_Y_LOG_Q,
	S_SUM_TERMS,
	S_LOSS_NEG,
	S_LOG1P,
	S_RELU,
	S_XY,
	S_SUB_XY,
	S_LOSS,
	S_TO_ACCUM,
	S_SUM,
	S_MEAN,
	S_SUB_Y,
	S_SCALE,
	S_STORE,
	S_END
};
static const char *const steps[S_END - EMU_STEP0] = {
    "to_compute", "to_accum",  "abs",   "neg",         "exp",     "one_plus", "sigmoid",
    "log_p",      "one_minus", "log_q", "one_minus_y", "y_log_p", "y_log_q",  "sum_terms",
    "loss_neg",   "log1p",     "relu",  "xy",          "sub_xy",  "loss",     "to_accum",
    "sum",        "mean",      "sub_y", "scale",       "store",
};

static int parse_variant(const char *variant)
{
	return !variant ? 0 : !strcmp(variant, "naive") ? 0 : !strcmp(variant, "stable") ? 1 : -1;
}

/* Element j's target: parameter `target` (tgt >= 0), else bit 31 of
 * emu_sr_bits(seed, j). */
static double target_of(uint64_t seed, double tgt, size_t j)
{
	return tgt >= 0 ? tgt : (double)(emu_sr_bits(seed, j) >> 31);
}

/* x, and the targets y (rows × N, 0 or 1, used as they are; a kernel's own
 * run takes them from target_of as it goes). */
static int inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                  char *err, size_t errlen)
{
	size_t R = in->rows, N = in->cols;
	emu_kinput *t;
	double tgt, *y;

	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	if (parse_variant(variant) < 0 || R == 0 || N == 0)
		return 0; /* the run refuses them */
	if (!emu_kparam_int(in, "bce", "target", 0, 1, -1, &tgt, err, errlen) ||
	    emu_kinputs_add(ki, in, "bce", "target", R, N, true, &t, &y, err, errlen) != 0)
		return -1;
	for (size_t j = 0; y && j < R * N; j++)
		y[j] = target_of(in->seed, tgt, j);
	/* 0 or 1: the kernel holds them exactly, in any format */
	return emu_kinput_check_index(t, "bce", 2, err, errlen);
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	int v = parse_variant(variant);
	if (v < 0 || in->cols == 0 || in->rows == 0) {
		snprintf(err, errlen,
		         v < 0 ? "bce: unknown variant '%s' (naive stable)" : "bce: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	size_t R = in->rows, N = in->cols, T = R * N;
	double tgt; /* -1: drawn from the seed */
	emu_kinputs ki;
	if (!emu_kparam_int(in, "bce", "target", 0, 1, -1, &tgt, err, errlen) ||
	    emu_kinputs_take(&emu_kernel_bce, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	const double *target = emu_kinputs_find(&ki, "target")->v; /* NULL: target_of */
	emu_steps(be, steps, S_END - EMU_STEP0);
	emu_vec *loss = emu_kout_vec(be, out, "loss", 1, A);
	emu_vec *grad = emu_kout_vec(be, out, "grad", T, S);
	emu_vec *X = emu_vec_new(be, T), *Y = emu_vec_new(be, T), *L = emu_vec_new(be, T);
	emu_vec *e = emu_vec_new(be, N), *d = emu_vec_new(be, N), *u = emu_vec_new(be, N);
	emu_vec *w = emu_vec_new(be, N), *t = emu_vec_new(be, 8);
	if (!loss || !grad || !X || !Y || !L || !e || !d || !u || !w || !t ||
	    emu_load(be, pol, in->x, R, N, X) != 0) {
		emu_kinputs_free(&ki);
		snprintf(err, errlen, "bce: out of memory");
		return -1;
	}
	enum { ONE, ZERO, CNT, CNT_C, CNT_A, SUM };
	emu_ref one = emu_at(t, ONE), zero = emu_at(t, ZERO), cnt = emu_at(t, CNT),
	        cnt_c = emu_at(t, CNT_C), cnt_a = emu_at(t, CNT_A), sum = emu_at(t, SUM);
	emu_fill(be, one, 1, 1);
	emu_fill(be, zero, 0, 1);
	/* the element count in the compute and accumulator formats (rounded if
	 * it must be) */
	emu_fill(be, cnt, (double)T, 1);
	emu_op1(be, S_COUNT_C, EMU_OP_CVT, C, cnt_c, cnt, EMU_NOREF, 0);
	emu_op1(be, S_COUNT_A, EMU_OP_CVT, A, cnt_a, cnt, EMU_NOREF, 0);
	for (size_t j = 0; j < T; j++)
		emu_fill(be, emu_at(Y, j), target ? target[j] : target_of(in->seed, tgt, j), 1);
	emu_kinputs_free(&ki);
	for (size_t r = 0; r < R; r++) {
		size_t o = r * N;
		emu_ref x = emu_row(X, o), y = emu_row(Y, o), l = emu_row(L, o),
		        g = emu_row(grad, o);
		emu_ref E = emu_row(e, 0), D = emu_row(d, 0), U = emu_row(u, 0), W = emu_row(w, 0);
		if (v == 0) {
			/* p = 1/(1 + exp(−x)) in g, then the two logs */
			emu_map(be, S_NEG, EMU_OP_NEG, C, E, x, EMU_NOREF, EMU_NOREF, N, o, NULL);
			emu_map(be, S_EXP, EMU_OP_EXP, C, E, E, EMU_NOREF, EMU_NOREF, N, o, NULL);
			emu_map(be, S_ONE_PLUS, EMU_OP_ADD, C, D, one, E, EMU_NOREF, N, o, NULL);
			emu_map(be, S_SIGMOID, EMU_OP_DIV, C, g, one, D, EMU_NOREF, N, o, NULL);
			emu_map(be, S_LOG_P, EMU_OP_LOG, C, U, g, EMU_NOREF, EMU_NOREF, N, o, NULL);
			emu_map(be, S_ONE_MINUS, EMU_OP_SUB, C, W, one, g, EMU_NOREF, N, o, NULL);
			emu_map(be, S_LOG_Q, EMU_OP_LOG, C, W, W, EMU_NOREF, EMU_NOREF, N, o, NULL);
			/* −(y·log p + (1 − y)·log(1 − p)); 1 − y is exact, so E holds it */
			emu_map(be, S_Y_LOG_P, EMU_OP_MUL, C, U, y, U, EMU_NOREF, N, o, NULL);
			emu_map(be, S_ONE_MINUS_Y, EMU_OP_SUB, C, E, one, y, EMU_NOREF, N, o, NULL);
			emu_map(be, S_Y_LOG_Q, EMU_OP_MUL, C, W, E, W, EMU_NOREF, N, o, NULL);
			emu_map(be, S_SUM_TERMS, EMU_OP_ADD, C, l, U, W, EMU_NOREF, N, o, NULL);
			emu_map(be, S_LOSS_NEG, EMU_OP_NEG, C, l, l, EMU_NOREF, EMU_NOREF, N, o,
			        NULL);
		} else {
			/* e = exp(−|x|) <= 1 */
			emu_map(be, S_ABS, EMU_OP_ABS, C, E, x, EMU_NOREF, EMU_NOREF, N, o, NULL);
			emu_map(be, S_NEG, EMU_OP_NEG, C, E, E, EMU_NOREF, EMU_NOREF, N, o, NULL);
			emu_map(be, S_EXP, EMU_OP_EXP, C, E, E, EMU_NOREF, EMU_NOREF, N, o, NULL);
			/* loss = (max(x, 0) − x·y) + log1p(e) */
			emu_map(be, S_LOG1P, EMU_OP_LOG1P, C, U, E, EMU_NOREF, EMU_NOREF, N, o,
			        NULL);
			emu_map(be, S_RELU, EMU_OP_MAX, C, l, x, zero, EMU_NOREF, N, o, NULL);
			emu_map(be, S_XY, EMU_OP_MUL, C, W, x, y, EMU_NOREF, N, o, NULL);
			emu_map(be, S_SUB_XY, EMU_OP_SUB, C, l, l, W, EMU_NOREF, N, o, NULL);
			emu_map(be, S_LOSS, EMU_OP_ADD, C, l, l, U, EMU_NOREF, N, o, NULL);
			/* σ(x) = (x >= 0 ? 1 : e)/(1 + e): the numerator chosen by the
			 * stored x's sign, which every backend shares */
			for (size_t j = 0; j < N; j++) {
				if (emu_vget(be, X, o + j) < 0)
					emu_copy(be, emu_at(w, j), emu_at(e, j), 1);
				else
					emu_fill(be, emu_at(w, j), 1, 1);
			}
			emu_map(be, S_ONE_PLUS, EMU_OP_ADD, C, D, one, E, EMU_NOREF, N, o, NULL);
			emu_map(be, S_SIGMOID, EMU_OP_DIV, C, g, W, D, EMU_NOREF, N, o, NULL);
		}
		/* gradient: (σ − y)/count, stored */
		emu_map(be, S_SUB_Y, EMU_OP_SUB, C, g, g, y, EMU_NOREF, N, o, NULL);
		emu_map(be, S_SCALE, EMU_OP_DIV, C, g, g, cnt_c, EMU_NOREF, N, o, NULL);
		emu_map(be, S_STORE, EMU_OP_CVT, S, g, g, EMU_NOREF, EMU_NOREF, N, o, NULL);
	}
	/* the mean: every loss term into the accumulator, one sequential fold */
	emu_map(be, S_TO_ACCUM, EMU_OP_CVT, A, emu_row(L, 0), emu_row(L, 0), EMU_NOREF, EMU_NOREF,
	        T, 0, NULL);
	emu_fill(be, sum, 0, 1);
	emu_fold(be, S_SUM, EMU_OP_ADD, A, EMU_ORDER_SEQ, sum, emu_row(L, 0), EMU_NOREF, T, 0);
	emu_op1(be, S_MEAN, EMU_OP_DIV, A, emu_at(loss, 0), sum, cnt_a, 0);
	return 0;
}

const emu_kernel emu_kernel_bce = {
    "bce", variants, "target=0|1 (default: drawn from the seed)", run, inputs,
};
