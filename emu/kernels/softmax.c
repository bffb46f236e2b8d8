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
 * The order of operations is emu/kernels/softmax_rows.h, the one source the
 * GPU compiles too (gpu/kern.cu, one thread a row, and gpu/host_rows.c for
 * the fake device, whose outputs tests/gpu/ compares with this file's;
 * docs/gpu.md). This file draws the inputs and labels and loads them.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "emu/engine/krow.h"
#include "emu/kernels/softmax_rows.h"

static const char *const variants[] = {K_SOFTMAX_VARIANTS(K_VARIANT_NAME) NULL};

/* The steps' names (the row source declares them with their ids). */
static const char *const steps[S_END - EMU_STEP0] = {K_SOFTMAX_STEPS(K_STEP_NAME)};

static int parse_variant(const char *variant)
{
	return emu_variant_index(variants, variant);
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

/* what the row loop's parts share (emu_rows) */
typedef struct {
	int v;
	const emu_format *S, *C, *A;
	size_t N;
	double lab;
	const double *target; /* NULL: label_of */
	emu_vec *X, *t, *grad, *la;
} sm_rows;

/* rows r0 .. r1 − 1 on be's own scratch (t a copy of the constants) */
static int sm_part(emu_be *be, size_t r0, size_t r1, void *arg)
{
	const sm_rows *k = arg;
	size_t N = k->N;
	emu_vec *e = emu_vec_new(be, N), *ea = emu_vec_new(be, N), *t = emu_vec_new(be, SM_NT);
	if (!e || !ea || !t)
		return -1;
	emu_copy(be, emu_row(t, 0), emu_row(k->t, 0), SM_NT);
	for (size_t r = r0; r < r1; r++)
		k_softmax_row(be, k->v, k->S, k->C, k->A, k->X, N, r,
		              k->target ? (size_t)k->target[r] : label_of(k->lab, r, N), e, ea, t,
		              k->grad, k->la);
	return 0;
}

static int run_on(emu_be *be, const emu_policy *pol, int v, const emu_kin *in,
                  const emu_kinputs *ki, emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	size_t R = in->rows, N = in->cols;
	sm_rows k = {v, S, C, A, N, 0, emu_kinputs_find(ki, "target")->v, NULL, NULL, NULL, NULL};
	if (!emu_kparam_int(in, "softmax_ce", "label", 0, (double)(N - 1), -1, &k.lab, err, errlen))
		return -1;
	emu_steps(be, steps, S_END - EMU_STEP0);
	emu_vec *loss = emu_kout_vec(be, out, "loss", 1, A);
	k.grad = emu_kout_vec(be, out, "grad", R * N, S);
	k.X = emu_vec_new(be, R * N);
	k.t = emu_vec_new(be, SM_NT);
	k.la = emu_vec_new(be, R);
	if (!loss || !k.grad || !k.X || !k.t || !k.la || emu_load(be, pol, in->x, R, N, k.X) != 0)
		goto oom;
	/* the row source, emu/kernels/softmax_rows.h: the GPU's threads run
	 * these rows one each, and the mean after them */
	k_softmax_consts(be, C, A, R, k.t);
	if (emu_rows(be, R, 8 * (uint64_t)N, sm_part, &k) != 0)
		goto oom;
	k_softmax_mean(be, A, k.la, R, k.t, loss);
	return 0;
oom:
	snprintf(err, errlen, "softmax_ce: out of memory");
	return -1;
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
    "softmax_ce", variants,          "label=Y (default: row mod classes)", run, inputs,
    steps,        S_END - EMU_STEP0,
};
