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
 * The order of operations is emu/kernels/bce_rows.h, the one source the GPU
 * compiles too (gpu/kern.cu, one thread a row, and gpu/host_rows.c for the
 * fake device, whose outputs tests/gpu/ compares with this file's;
 * docs/gpu.md). This file draws the targets and loads the inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "emu/engine/krow.h"
#include "emu/kernels/bce_rows.h"

static const char *const variants[] = {K_BCE_VARIANTS(K_VARIANT_NAME) NULL};

/* The steps' names (the row source declares them with their ids). */
static const char *const steps[S_END - EMU_STEP0] = {K_BCE_STEPS(K_STEP_NAME)};

static int parse_variant(const char *variant)
{
	return emu_variant_index(variants, variant);
}

/* Element j's target: parameter `target` (tgt >= 0), else bit 31 of
 * emu_sr_bits(seed, j). */
static double target_of(uint64_t seed, double tgt, size_t j)
{
	return tgt >= 0 ? tgt : (double)((uint32_t)(emu_draw64(seed, j) >> 32) >> 31); /* emu_sr_bits' bit */
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

/* what the row loop's parts share (emu_rows) */
typedef struct {
	int v;
	const emu_format *S, *C, *A;
	size_t N;
	emu_vec *X, *Y, *L, *t, *grad;
} bce_rows;

/* rows r0 .. r1 − 1 on be's own scratch (t a copy of the constants) */
static int bce_part(emu_be *be, size_t r0, size_t r1, void *arg)
{
	const bce_rows *k = arg;
	size_t N = k->N;
	emu_vec *e = emu_vec_new(be, N), *d = emu_vec_new(be, N), *u = emu_vec_new(be, N);
	emu_vec *w = emu_vec_new(be, N), *t = emu_vec_new(be, BCE_NT);
	if (!e || !d || !u || !w || !t)
		return -1;
	emu_copy(be, emu_row(t, 0), emu_row(k->t, 0), BCE_NT);
	for (size_t r = r0; r < r1; r++)
		k_bce_row(be, k->v, k->S, k->C, k->A, k->X, k->Y, N, r, e, d, u, w, t, k->grad,
		          k->L);
	return 0;
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
	bce_rows k = {v, S, C, A, N, NULL, NULL, NULL, NULL, NULL};
	k.grad = emu_kout_vec(be, out, "grad", T, S);
	k.X = emu_vec_new(be, T);
	k.Y = emu_vec_new(be, T);
	k.L = emu_vec_new(be, T);
	k.t = emu_vec_new(be, BCE_NT);
	if (!loss || !k.grad || !k.X || !k.Y || !k.L || !k.t ||
	    emu_load(be, pol, in->x, R, N, k.X) != 0) {
		emu_kinputs_free(&ki);
		snprintf(err, errlen, "bce: out of memory");
		return -1;
	}
	/* the row source, emu/kernels/bce_rows.h: the GPU's threads run these
	 * rows one each, and the mean over every element after them */
	k_bce_consts(be, C, A, T, k.t);
	double *y = target ? NULL : malloc(T * sizeof *y);
	if (!target && !y) {
		emu_kinputs_free(&ki);
		snprintf(err, errlen, "bce: out of memory");
		return -1;
	}
	for (size_t j = 0; !target && j < T; j++)
		y[j] = target_of(in->seed, tgt, j);
	emu_set(be, emu_row(k.Y, 0), target ? target : y, T);
	free(y);
	emu_kinputs_free(&ki);
	if (emu_rows(be, R, 12 * (uint64_t)N, bce_part, &k) != 0) {
		snprintf(err, errlen, "bce: out of memory");
		return -1;
	}
	k_bce_mean(be, A, k.L, T, k.t, loss);
	return 0;
}

const emu_kernel emu_kernel_bce = {
    "bce", variants,          "target=0|1 (default: drawn from the seed)", run, inputs,
    steps, S_END - EMU_STEP0,
};
