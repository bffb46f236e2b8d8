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
 * Inputs are loaded by emu_k_load (storage format, scaling recipe, then the
 * compute format); sums run in the accumulator format, sequentially; the gradient
 * (p − onehot(y)) / rows is stored back in the storage format; the mean loss
 * is held in the accumulator format. Labels: parameter `label` for every row,
 * else row r has label r mod cols.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

static const char *const variants[] = {"naive", "maxsub", "lse", NULL};

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	int v = !variant ? 0 : !strcmp(variant, "naive") ? 0 : !strcmp(variant, "maxsub") ? 1 :
	                   !strcmp(variant, "lse")   ? 2 : -1;
	if (v < 0 || in->cols == 0 || in->rows == 0) {
		snprintf(err, errlen, v < 0 ? "softmax_ce: unknown variant '%s' (naive maxsub lse)" :
		                              "softmax_ce: empty input%s", v < 0 ? variant : "");
		return -1;
	}
	size_t R = in->rows, N = in->cols;
	double lab; /* -1: each row's label is its index mod N */
	if (!emu_kparam_int(in, "softmax_ce", "label", 0, (double)(N - 1), -1, &lab, err, errlen))
		return -1;
	emu_val *loss = emu_kout_add(be, out, "loss", 1, A);
	emu_val *grad = emu_kout_add(be, out, "grad", R * N, S);
	emu_val *X = emu_k_vec(be, R * N), *e = emu_k_vec(be, N);
	emu_val *t = emu_k_vec(be, 10);
	if (!loss || !grad || !X || !e || !t || emu_k_load(be, pol, in->x, R, N, X) != 0) {
		snprintf(err, errlen, "softmax_ce: out of memory");
		return -1;
	}
	emu_val *m = &t[0], *s = &t[1], *ls = &t[2], *tmp = &t[3], *sumloss = &t[4],
	        *Rc = &t[5], *one = &t[6], *la = &t[7], *Ra = &t[8];
	emu_k_const(be, sumloss, 0);
	emu_k_const(be, one, 1);
	/* the row count in the compute and accumulator formats (rounded if it
	 * must be: e4m3 holds 16 but not 17) */
	emu_k_const(be, tmp, (double)R);
	emu_k_op(be, EMU_OP_CVT, Rc, tmp, NULL, NULL, C, "to_compute", 0);
	emu_k_op(be, EMU_OP_CVT, Ra, tmp, NULL, NULL, A, "to_accum", 0);
	for (size_t r = 0; r < R; r++) {
		size_t y = lab >= 0 ? (size_t)lab : r % N;
		emu_val *x = &X[r * N];
		if (v >= 1) { /* m = max x */
			emu_k_copy(be, m, &x[0]);
			for (size_t j = 1; j < N; j++)
				emu_k_op(be, EMU_OP_MAX, m, m, &x[j], NULL, C, "max", r * N + j);
		}
		/* e_j and their sum in the accumulator format */
		emu_k_const(be, s, 0);
		for (size_t j = 0; j < N; j++) {
			if (v >= 1) {
				emu_k_op(be, EMU_OP_SUB, &e[j], &x[j], m, NULL, C, "sub_max", r * N + j);
				emu_k_op(be, EMU_OP_EXP, &e[j], &e[j], NULL, NULL, C, "exp", r * N + j);
			} else {
				emu_k_op(be, EMU_OP_EXP, &e[j], &x[j], NULL, NULL, C, "exp", r * N + j);
			}
			emu_k_op(be, EMU_OP_CVT, tmp, &e[j], NULL, NULL, A, "to_accum", r * N + j);
			emu_k_op(be, EMU_OP_ADD, s, s, tmp, NULL, A, "sum", r * N + j);
		}
		emu_k_op(be, EMU_OP_CVT, s, s, NULL, NULL, C, "to_compute", r);
		emu_k_op(be, EMU_OP_LOG, ls, s, NULL, NULL, C, "log", r);
		/* loss_r = log s − (x_y − m), or lse − x_y */
		if (v == 0) {
			emu_k_op(be, EMU_OP_SUB, la, ls, &x[y], NULL, C, "loss", r);
		} else if (v == 1) {
			emu_k_op(be, EMU_OP_SUB, tmp, &x[y], m, NULL, C, "loss", r);
			emu_k_op(be, EMU_OP_SUB, la, ls, tmp, NULL, C, "loss", r);
		} else {
			emu_k_op(be, EMU_OP_ADD, ls, m, ls, NULL, C, "lse", r); /* ls = lse */
			emu_k_op(be, EMU_OP_SUB, la, ls, &x[y], NULL, C, "loss", r);
		}
		emu_k_op(be, EMU_OP_CVT, tmp, la, NULL, NULL, A, "to_accum", r);
		emu_k_op(be, EMU_OP_ADD, sumloss, sumloss, tmp, NULL, A, "mean", r);
		/* gradient: (p_j − [j = y]) / R, stored */
		for (size_t j = 0; j < N; j++) {
			emu_val *g = &grad[r * N + j];
			if (v == 2) {
				emu_k_op(be, EMU_OP_SUB, g, &x[j], ls, NULL, C, "sub_lse", r * N + j);
				emu_k_op(be, EMU_OP_EXP, g, g, NULL, NULL, C, "exp", r * N + j);
			} else {
				emu_k_op(be, EMU_OP_DIV, g, &e[j], s, NULL, C, "div", r * N + j);
			}
			if (j == y)
				emu_k_op(be, EMU_OP_SUB, g, g, one, NULL, C, "onehot", r * N + j);
			emu_k_op(be, EMU_OP_DIV, g, g, Rc, NULL, C, "scale", r * N + j);
			emu_k_op(be, EMU_OP_CVT, g, g, NULL, NULL, S, "store", r * N + j);
		}
	}
	emu_k_op(be, EMU_OP_DIV, loss, sumloss, Ra, NULL, A, "mean", 0);
	return 0;
}

const emu_kernel emu_kernel_softmax_ce = {
	"softmax_ce", variants, "label=Y (default: row mod classes)", run,
};
