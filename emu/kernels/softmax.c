/*
 * softmax.c — softmax cross-entropy, loss and gradient, mean over rows.
 *
 * Variants (what practitioners write, and where each breaks):
 *   naive  e_j = exp(x_j), s = Σ e_j, p_j = e_j / s, loss = log(s) − x_y
 *          (exp overflows as soon as exp(max x) exceeds the compute format)
 *   maxsub m = max x, e_j = exp(x_j − m), s = Σ e_j, p_j = e_j / s,
 *          loss = log(s) − (x_y − m)
 *   lse    m = max x, lse = m + log Σ exp(x_j − m), loss = lse − x_y,
 *          p_j = exp(x_j − lse)
 * Inputs are loaded by emu_load (storage format, scaling recipe, then the
 * compute format); sums run in the accumulator format, sequentially; the gradient
 * (p − onehot(y)) / rows is stored back in the storage format; the mean loss
 * is held in the accumulator format. Labels (tensor `target`, one class index
 * a row): parameter `label` for every row, else row r has label r mod cols.
 *
 * GPU counterpart: gpu/rows.h's `k_softmax_row` and `k_mean_loss`, compiled by nvcc in
 * gpu/kern.cu and with the emulator's operations in gpu/host_rows.c for the fake device,
 * whose outputs tests/gpu/ compares with this file's (docs/gpu.md).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"

static const char *const variants[] = {"naive", "maxsub", "lse", NULL};

/* The steps, each one operation site of the kernel. */
enum {
	S_ROWS_C = EMU_STEP0,
	S_ROWS_A,
	S_MAX,
	S_SUB_MAX,
	S_EXP,
	S_E_ACCUM,
	S_SUM,
	S_S_COMPUTE,
	S_LOG,
	S_LOSS_XM,
	S_LOSS,
	S_LSE,
	S_LA_ACCUM,
	S_MEAN,
	S_SUB_LSE,
	S_EXP_G,
	S_DIV,
	S_ONEHOT,
	S_SCALE,
	S_STORE,
	S_MEAN_DIV,
	S_END
};
static const char *const steps[S_END - EMU_STEP0] = {
    "to_compute", "to_accum", "max",  "sub_max", "exp",   "to_accum", "sum",
    "to_compute", "log",      "loss", "loss",    "lse",   "to_accum", "mean",
    "sub_lse",    "exp",      "div",  "onehot",  "scale", "store",    "mean",
};

static int parse_variant(const char *variant)
{
	return !variant                     ? 0
	       : !strcmp(variant, "naive")  ? 0
	       : !strcmp(variant, "maxsub") ? 1
	       : !strcmp(variant, "lse")    ? 2
	                                    : -1;
}

/* Row r's label: parameter `label` (lab >= 0), else r mod N. */
static size_t label_of(double lab, size_t r, size_t N)
{
	return lab >= 0 ? (size_t)lab : r % N;
}

/* x, and the label of each row (`target`; a kernel's own run takes them
 * from label_of as it goes). */
static int inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                  char *err, size_t errlen)
{
	size_t R = in->rows, N = in->cols;
	emu_kinput *t;
	double lab, *y;

	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	if (parse_variant(variant) < 0 || R == 0 || N == 0)
		return 0; /* the run refuses them */
	if (!emu_kparam_int(in, "softmax_ce", "label", 0, (double)(N - 1), -1, &lab, err, errlen) ||
	    emu_kinputs_add(ki, in, "softmax_ce", "target", 1, R, true, &t, &y, err, errlen) != 0)
		return -1;
	t->kind = EMU_KIN_INDEX;
	for (size_t r = 0; y && r < R; r++)
		y[r] = (double)label_of(lab, r, N);
	return emu_kinput_check_index(t, "softmax_ce", N, err, errlen);
}

static int run_on(emu_be *be, const emu_policy *pol, int v, const emu_kin *in,
                  const emu_kinputs *ki, emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	size_t R = in->rows, N = in->cols;
	const double *target = emu_kinputs_find(ki, "target")->v; /* NULL: label_of */
	double lab;
	if (!emu_kparam_int(in, "softmax_ce", "label", 0, (double)(N - 1), -1, &lab, err, errlen))
		return -1;
	emu_steps(be, steps, S_END - EMU_STEP0);
	emu_vec *loss = emu_kout_vec(be, out, "loss", 1, A);
	emu_vec *grad = emu_kout_vec(be, out, "grad", R * N, S);
	emu_vec *X = emu_vec_new(be, R * N), *e = emu_vec_new(be, N), *ea = emu_vec_new(be, N);
	emu_vec *t = emu_vec_new(be, 10);
	if (!loss || !grad || !X || !e || !ea || !t || emu_load(be, pol, in->x, R, N, X) != 0) {
		snprintf(err, errlen, "softmax_ce: out of memory");
		return -1;
	}
	enum { M, SUM, LS, TMP, SUMLOSS, RC, ONE, LA, RA };
	emu_ref m = emu_at(t, M), s = emu_at(t, SUM), ls = emu_at(t, LS), tmp = emu_at(t, TMP),
	        sumloss = emu_at(t, SUMLOSS), Rc = emu_at(t, RC), one = emu_at(t, ONE),
	        la = emu_at(t, LA), Ra = emu_at(t, RA);
	emu_fill(be, one, 1, 1);
	/* the row count in the compute and accumulator formats (rounded if it
	 * must be: e4m3 holds 16 but not 17) */
	emu_fill(be, tmp, (double)R, 1);
	emu_op1(be, S_ROWS_C, EMU_OP_CVT, C, Rc, tmp, EMU_NOREF, 0);
	emu_op1(be, S_ROWS_A, EMU_OP_CVT, A, Ra, tmp, EMU_NOREF, 0);
	for (size_t r = 0; r < R; r++) {
		size_t o = r * N, y = target ? (size_t)target[r] : label_of(lab, r, N);
		emu_ref x = emu_row(X, o), xy = emu_at(X, o + y), E = emu_row(e, 0),
		        EA = emu_row(ea, 0), g = emu_row(grad, o);
		if (v >= 1) { /* m = max x */
			emu_copy(be, m, x, 1);
			emu_fold(be, S_MAX, EMU_OP_MAX, C, EMU_ORDER_SEQ, m, emu_row(X, o + 1),
			         EMU_NOREF, N - 1, o + 1);
			emu_map(be, S_SUB_MAX, EMU_OP_SUB, C, E, x, m, EMU_NOREF, N, o, NULL);
			emu_map(be, S_EXP, EMU_OP_EXP, C, E, E, EMU_NOREF, EMU_NOREF, N, o, NULL);
		} else {
			emu_map(be, S_EXP, EMU_OP_EXP, C, E, x, EMU_NOREF, EMU_NOREF, N, o, NULL);
		}
		/* their sum in the accumulator format */
		emu_map(be, S_E_ACCUM, EMU_OP_CVT, A, EA, E, EMU_NOREF, EMU_NOREF, N, o, NULL);
		emu_fill(be, s, 0, 1);
		emu_fold(be, S_SUM, EMU_OP_ADD, A, EMU_ORDER_SEQ, s, EA, EMU_NOREF, N, o);
		emu_op1(be, S_S_COMPUTE, EMU_OP_CVT, C, s, s, EMU_NOREF, r);
		emu_op1(be, S_LOG, EMU_OP_LOG, C, ls, s, EMU_NOREF, r);
		/* loss_r = log s − x_y, log s − (x_y − m), or lse − x_y */
		if (v == 0) {
			emu_op1(be, S_LOSS, EMU_OP_SUB, C, la, ls, xy, r);
		} else if (v == 1) {
			emu_op1(be, S_LOSS_XM, EMU_OP_SUB, C, tmp, xy, m, r);
			emu_op1(be, S_LOSS, EMU_OP_SUB, C, la, ls, tmp, r);
		} else {
			emu_op1(be, S_LSE, EMU_OP_ADD, C, ls, m, ls, r); /* ls = lse */
			emu_op1(be, S_LOSS, EMU_OP_SUB, C, la, ls, xy, r);
		}
		emu_op1(be, S_LA_ACCUM, EMU_OP_CVT, A, tmp, la, EMU_NOREF, r);
		emu_op1(be, S_MEAN, EMU_OP_ADD, A, sumloss, sumloss, tmp, r);
		/* gradient: (p_j − [j = y]) / R, stored */
		if (v == 2) {
			emu_map(be, S_SUB_LSE, EMU_OP_SUB, C, g, x, ls, EMU_NOREF, N, o, NULL);
			emu_map(be, S_EXP_G, EMU_OP_EXP, C, g, g, EMU_NOREF, EMU_NOREF, N, o, NULL);
		} else {
			emu_map(be, S_DIV, EMU_OP_DIV, C, g, E, s, EMU_NOREF, N, o, NULL);
		}
		emu_op1(be, S_ONEHOT, EMU_OP_SUB, C, emu_at(grad, o + y), emu_at(grad, o + y), one,
		        o + y);
		emu_map(be, S_SCALE, EMU_OP_DIV, C, g, g, Rc, EMU_NOREF, N, o, NULL);
		emu_map(be, S_STORE, EMU_OP_CVT, S, g, g, EMU_NOREF, EMU_NOREF, N, o, NULL);
	}
	emu_op1(be, S_MEAN_DIV, EMU_OP_DIV, A, emu_at(loss, 0), sumloss, Ra, 0);
	return 0;
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	int v = parse_variant(variant);
	if (v < 0 || in->cols == 0 || in->rows == 0) {
		snprintf(err, errlen,
		         v < 0 ? "softmax_ce: unknown variant '%s' (naive maxsub lse)"
		               : "softmax_ce: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	emu_kinputs ki;
	if (emu_kinputs_take(&emu_kernel_softmax_ce, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	int rc = run_on(be, pol, v, in, &ki, out, err, errlen);
	emu_kinputs_free(&ki);
	return rc;
}

const emu_kernel emu_kernel_softmax_ce = {
    "softmax_ce", variants, "label=Y (default: row mod classes)", run, inputs,
};
