/*
 * backward.c — a linear layer with softmax cross-entropy, forward and
 * backward under loss scaling, as a mixed-precision training step does it;
 * and GradScaler's scale over a run of steps.
 *
 * Kernel `backward` (variant "maxsub", the only one). Input X: rows = batch,
 * cols = features D. Parameters: classes C (8), wscale (1/sqrt(D)),
 * scale S (1). Generated from in->seed (tensors `w` and `target`):
 *   W[d][c] = wscale·u, u uniform on [−1, 1) (53 bits of SplitMix64 of
 *             seed ⊕ (d·C + c)·φ);
 *   label of row r = r mod C.
 * X and W (D rows of C) are loaded by emu_load: stored in the storage
 * format through the policy's scaling recipe, then in the compute format.
 * Forward, with the policy's formats as softmax.c uses them:
 *   logits = X·W: products in compute, converted to accum, summed in accum
 *            sequentially over d, stored in storage;
 *   softmax (maxsub) in compute with the sum in accum; loss = mean over rows
 *            of log s − (z_y − m), held in accum (output `loss`, unscaled).
 * Backward with loss scale S:
 *   S is first rounded to fp32 (GradScaler keeps its scale as an fp32
 *   scalar), then enters by CVT into the compute format (a constant, as R
 *   does in softmax.c); SR = S/R in compute is the gradient autograd hands
 *   the per-row loss (mean backward of S·loss);
 *   dlogits = (p − onehot(y))·SR in compute, stored in storage;
 *   dW = Xᵀ·dlogits (sum over rows), dX = dlogits·Wᵀ (sum over classes):
 *            products in compute, sums in accum, stored in storage. This
 *            store is where gradients underflow or overflow; output `grad`
 *            holds these scaled, stored values (dW then dX).
 * Unscale and check, as GradScaler.unscale_:
 *   inv = fp32(1/double(S)); each stored gradient is converted to fp32 and
 *   multiplied by inv in fp32 (skipped when inv == 1, as PyTorch does);
 *   outputs `dW` and `dX` are these fp32 values; `found_inf` is 1 when any
 *   unscaled element is inf or NaN. (PyTorch's kernel tests the scaled
 *   input; the two differ only when the unscale itself turns a finite value
 *   non-finite: S < 1 with a scaled gradient within a factor 1/S of the
 *   fp32 maximum, or inv = inf for S = 0 or S < 2^-128.)
 * Fractions (emu_backward_fractions, not an output: run.c would judge a
 * fraction like a value, so 0 here against 0.005 in truth would count as a
 * lost element): of the `grad` elements, [0] zero, [1] subnormal
 * (0 < |g| < 2^emin of storage), [2] lost (zero here, nonzero and finite in
 * truth; 0 without a TRUTH run) and [3] overflowed (inf, NaN or |g| >= max
 * of storage; with a TRUTH run only where truth is finite, and a value at
 * ±max counts only if truth is beyond max). On a TRUTH run itself they
 * classify the exact scaled gradients against the storage format's ranges.
 *
 * Written on the array-level engine (kern.h) in the order of the loops
 * above: row by row the logits, then the softmax, loss and dlogits as
 * maps over the row's classes (as softmax.c); then dW and dX output by
 * output; then unscale_ as maps over dW and over dX. A sum of products (a
 * logit, a dW or dX element) is its products as one map, their conversions
 * to accum as one map, then a sequential fold from +0: every term goes
 * through the same three roundings as in a scalar loop, but all products
 * of one sum run before its first addition, which can only change which
 * operation a run reports first when several fail. Elements: term j of the
 * sum for output i (i = r·C + c for a logit, d·C + c for dW, r·D + d for
 * dX) is element i·n + j of its mul, to_accum and sum steps (n = D, R, C),
 * so every term has its own stochastic rounding draw (keyed by seed, step
 * and element) and a failing sum names output ⌊e/n⌋, term e mod n; every
 * other operation is the element of what it computes (r·C + c in the
 * softmax and dlogits, r for a row's scalars, d·C + c or r·D + d for a
 * store, the index in `grad` for unscale_). emu_load numbers each tensor's
 * elements from 0, so under round=sr X[i] and W's element i are stored
 * with the same draw.
 *
 * Kernel `gradscaler`: emu/kernels/gradscaler.c's simulation of torch GradScaler.
 * The input, read row-major, is the largest |gradient| of each step (its
 * magnitude is used). Parameters: init (65536), growth (2), backoff (0.5),
 * interval (2000), gfmt (format of the backward's gradients: 0, the policy's
 * storage format; 16: fp16; 32: fp32), mfmt (.grad's format as unscale_ sees
 * it: 0, the same as gfmt; 16; 32), elems (1: only the largest element),
 * spread (6); the seed draws the elements below the largest. Outputs (fp32):
 * `scale`, the scale each step ran with; `skipped`, 1 when the step was
 * skipped; `lost`, the fraction of the step's nonzero gradient elements that
 * the scaled backward stored as 0 (rounded to fp32); `final`, the scale after
 * the last update. The simulation is scalar fp32
 * arithmetic through the emulator (RNE, the policy's rounding is not used);
 * all three backends run the same simulation and only store its results, so
 * TRUTH is not an independent reference for this kernel.
 *
 * The order of operations of `backward` is emu/kernels/backward_rows.h, the
 * one source the GPU compiles too (gpu/kern.cu: one thread a row, then one
 * a gradient element; gpu/host_rows.c for the fake device, whose outputs
 * tests/gpu/ compares with this file's; docs/gpu.md). This file draws the
 * weights, loads the inputs and checks the unscaled gradients for inf and
 * NaN.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "emu/engine/krow.h"
#include "emu/kernels/backward_rows.h"
#include "emu/kernels/gradscaler.h"

static const char *const variants[] = {"maxsub", NULL};

static const emu_env rne = {EMU_RNE, false, false, false, 0, 0};

/* x rounded to fp32 (RNE), as a double. */
static double to_fp32(double x)
{
	const emu_format *f = emu_format_by_name("fp32");
	return emu_decode(f, emu_from_double(f, x, &rne).bits);
}

/* The fractions of g's elements (an output of be) that are zero, subnormal,
 * lost and overflowed in its format; with t (the same output of tbe, the
 * truth) lost and overflowed are judged against it, else lost is 0. */
static void fractions(const emu_be *be, const emu_kout_item *g, const emu_be *tbe,
                      const emu_kout_item *t, double out[4])
{
	const emu_format *S = g->fmt;
	size_t k[4] = {0, 0, 0, 0};
	for (size_t i = 0; i < g->n; i++) {
		double v = emu_kout_d(be, g, i), a = fabs(v);
		bool over = !isfinite(v) || a >= S->max;
		k[0] += v == 0;
		k[1] += v != 0 && a < S->min_normal;
		if (t && tbe) {
			double w = emu_kout_d(tbe, t, i);
			k[2] += v == 0 && w != 0 && isfinite(w);
			over = isfinite(w) && (!isfinite(v) || (over && fabs(w) > S->max));
		}
		k[3] += over;
	}
	for (int j = 0; j < 4; j++)
		out[j] = g->n ? (double)k[j] / (double)g->n : 0;
}

/* The stored gradients of a backward run (its outputs, in order: loss, dW,
 * dX, found_inf, grad), else NULL. */
static const emu_kout_item *grad_item(const emu_run *r)
{
	static const char *const names[] = {"loss", "dW", "dX", "found_inf", "grad"};
	if (r->out.n != 5)
		return NULL;
	for (int i = 0; i < 5; i++)
		if (strcmp(r->out.item[i].name, names[i]) != 0)
			return NULL;
	return &r->out.item[4];
}

int emu_backward_fractions(const emu_run *r, const emu_run *truth, double out[4])
{
	const emu_kout_item *g = grad_item(r);
	const emu_kout_item *t = truth ? grad_item(truth) : NULL;
	if (!g || (truth && (!t || t->n != g->n)))
		return -1;
	fractions(&r->be, g, truth ? &truth->be : NULL, t, out);
	return 0;
}

/* The steps' names of `backward` (the row source declares them with their
 * ids, each one operation site, in kernel order): what reports print. */
static const char *const steps[S_END - EMU_STEP0] = {K_BACKWARD_STEPS(K_STEP_NAME)};

/* x; the weights w (D × C, loaded as x is, its elements after x's): wscale·u,
 * u from SplitMix64 of (seed, d·C + c); the label of each row (`target`):
 * r mod C. */
static int inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                  char *err, size_t errlen)
{
	size_t R = in->rows, D = in->cols;
	emu_kinput *tw, *ty;
	double nc, wscale, *w, *y;

	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	if ((variant && strcmp(variant, "maxsub") != 0) || R == 0 || D == 0)
		return 0; /* the run refuses them */
	if (!emu_kparam_int(in, "backward", "classes", 1, 4096, 8, &nc, err, errlen) ||
	    !emu_kparam_real(in, "backward", "wscale", -INFINITY, INFINITY, 0, 1 / sqrt((double)D),
	                     &wscale, err, errlen))
		return -1;
	size_t K = (size_t)nc;
	if (emu_kinputs_add(ki, in, "backward", "w", D, K, false, &tw, &w, err, errlen) != 0 ||
	    emu_kinputs_add(ki, in, "backward", "target", 1, R, false, &ty, &y, err, errlen) != 0)
		return -1;
	tw->fmt = pol->scale == EMU_SCALE_NONE ? &pol->storage : NULL;
	tw->step = EMU_STEP_INPUT;
	tw->e0 = (uint64_t)R * D;
	for (size_t i = 0; w && i < D * K; i++)
		w[i] = wscale * ((double)(emu_draw64(in->seed, i) >> 11) * 0x1p-52 - 1);
	ty->kind = EMU_KIN_INDEX;
	for (size_t r = 0; y && r < R; r++)
		y[r] = (double)(r % K);
	return emu_kinput_check_index(ty, "backward", K, err, errlen);
}

/* what the loops' parts share (emu_rows) */
typedef struct {
	const emu_format *S, *C, *A;
	size_t R, D, K, np;
	const double *target;
	emu_vec *X, *W, *dl, *la, *t, *grad;
} bw_rows;

/* rows r0 .. r1 − 1 (logits, softmax, loss, dlogits) on be's own scratch
 * (t a copy of the constants; p BW_CHAINS logits' products) */
static int bw_row_part(emu_be *be, size_t r0, size_t r1, void *arg)
{
	const bw_rows *k = arg;
	emu_vec *z = emu_vec_new(be, k->K), *e = emu_vec_new(be, k->K), *ea = emu_vec_new(be, k->K);
	emu_vec *p = emu_vec_new(be, BW_CHAINS * k->D), *t = emu_vec_new(be, BW_NT);
	if (!z || !e || !ea || !p || !t)
		return -1;
	emu_copy(be, emu_row(t, 0), emu_row(k->t, 0), BW_NT);
	for (size_t r = r0; r < r1; r++)
		k_bw_row(be, k->S, k->C, k->A, k->X, k->W, k->D, k->K, r, (size_t)k->target[r], p,
		         z, e, ea, t, k->dl, k->la);
	return 0;
}

/* the gradient's elements i0 .. i1 − 1, after every row (p: BW_CHAINS
 * sums' products) */
static int bw_grad_part(emu_be *be, size_t i0, size_t i1, void *arg)
{
	const bw_rows *k = arg;
	emu_vec *p = emu_vec_new(be, BW_CHAINS * k->np);
	if (!p)
		return -1;
	k_bw_grad(be, k->S, k->C, k->A, k->X, k->W, k->dl, k->R, k->D, k->K, i0, i1 - i0, p,
	          k->grad);
	return 0;
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const emu_format *F32 = emu_format_by_name("fp32");
	if (variant && strcmp(variant, "maxsub") != 0) {
		snprintf(err, errlen, "backward: unknown variant '%s' (maxsub)", variant);
		return -1;
	}
	if (in->cols == 0 || in->rows == 0 || !F32) {
		snprintf(err, errlen, "backward: %s",
		         !F32 ? "the fp32 format is missing" : "empty input");
		return -1;
	}
	double nc, wscale, scale;
	if (!emu_kparam_int(in, "backward", "classes", 1, 4096, 8, &nc, err, errlen) ||
	    !emu_kparam_real(in, "backward", "wscale", -INFINITY, INFINITY, 0,
	                     1 / sqrt((double)in->cols), &wscale, err, errlen) ||
	    !emu_kparam_real(in, "backward", "scale", 0, FLT_MAX, EMU_KP_ABOVE_LO, 1, &scale, err,
	                     errlen))
		return -1;
	size_t R = in->rows, D = in->cols, K = (size_t)nc;
	if (K == 0) { /* emu_kparam_int's bound keeps it out; row r's label is r mod K */
		snprintf(err, errlen, "backward: classes=0 must be at least 1");
		return -1;
	}
	scale = to_fp32(scale); /* the loss scale is an fp32 tensor, as in PyTorch */
	if (!isfinite(scale) || scale == 0) {
		snprintf(err, errlen, "backward: scale=%g is %s in fp32",
		         emu_kparam_get(in, "scale", 1), scale == 0 ? "0" : "infinite");
		return -1;
	}
	emu_kinputs ki;
	if (emu_kinputs_take(&emu_kernel_backward, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	const double *wd = emu_kinputs_find(&ki, "w")->v,
	             *target = emu_kinputs_find(&ki, "target")->v;
	emu_steps(be, steps, S_END - EMU_STEP0);
	size_t np = R > K ? R : K; /* the longest gradient sum: over r (dW) or c (dX) */
	emu_vec *loss = emu_kout_vec(be, out, "loss", 1, A);
	emu_vec *dW = emu_kout_vec(be, out, "dW", D * K, F32);
	emu_vec *dX = emu_kout_vec(be, out, "dX", R * D, F32);
	emu_vec *found = emu_kout_vec(be, out, "found_inf", 1, F32);
	emu_vec *grad = emu_kout_vec(be, out, "grad", D * K + R * D, S);
	bw_rows k = {S, C, A, R, D, K, np, target, NULL, NULL, NULL, NULL, NULL, grad};
	k.X = emu_vec_new(be, R * D);
	k.W = emu_vec_new(be, D * K);
	k.dl = emu_vec_new(be, R * K);
	k.la = emu_vec_new(be, R);
	k.t = emu_vec_new(be, BW_NT);
	emu_vec *t = k.t;
	if (!loss || !dW || !dX || !found || !grad || !k.X || !k.W || !k.dl || !k.la || !t) {
		emu_kinputs_free(&ki);
		snprintf(err, errlen, "backward: out of memory");
		return -1;
	}
	/* the row source, emu/kernels/backward_rows.h: its constants (before
	 * the load, as they always ran), then the rows (one GPU thread each),
	 * the mean over them, the gradient's elements (one GPU thread each)
	 * and unscale_ */
	k_bw_consts(be, C, A, R, scale, t);
	/* X and W loaded as tensors: storage (through the scaling recipe), then
	 * compute */
	if (emu_load(be, pol, in->x, R, D, k.X) != 0 ||
	    emu_load_at(be, pol, wd, D, K, (uint64_t)R * D, k.W) != 0 ||
	    emu_rows(be, R, 3 * (uint64_t)D * K + 12 * K, bw_row_part, &k) != 0) {
		emu_kinputs_free(&ki);
		snprintf(err, errlen, "backward: out of memory");
		return -1;
	}
	k_bw_mean(be, A, k.la, R, t, loss);
	if (emu_rows(be, D * K + R * D, 3 * (uint64_t)(R > K ? R : K), bw_grad_part, &k) != 0) {
		emu_kinputs_free(&ki);
		snprintf(err, errlen, "backward: out of memory");
		return -1;
	}
	/* unscale_: inv = fp32(1/double(S)); the stored dW and dX are elements
	 * 0.. and D·K.. of grad */
	double inv = to_fp32(1 / scale);
	k_bw_unscale(be, F32, grad, 0, D * K, dW, 0, inv, t);
	k_bw_unscale(be, F32, grad, D * K, R * D, dX, 0, inv, t);
	bool bad = false;
	for (size_t i = 0; i < D * K && !bad; i++)
		bad = !isfinite(emu_vget(be, dW, i));
	for (size_t i = 0; i < R * D && !bad; i++)
		bad = !isfinite(emu_vget(be, dX, i));
	emu_fill(be, emu_at(found, 0), bad ? 1 : 0, 1);
	emu_kinputs_free(&ki);
	return 0;
}

const emu_kernel emu_kernel_backward = {
    "backward", variants,          "classes=C (8) wscale=W (1/sqrt(cols)) scale=S (1)", run, inputs,
    steps,      S_END - EMU_STEP0,
};

/* ---- gradscaler ---- */

static const char *const gs_variants[] = {"pytorch", NULL};

/* x alone: the largest |gradient| of each step, used as a double (the
 * simulation stores nothing of it). */
static int gs_inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                     char *err, size_t errlen)
{
	(void)variant;
	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	ki->item[0].fmt = NULL;
	return 0;
}

static int gs_run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
                  emu_kout *out, char *err, size_t errlen)
{
	if (variant && strcmp(variant, "pytorch") != 0) {
		snprintf(err, errlen, "gradscaler: unknown variant '%s' (pytorch)", variant);
		return -1;
	}
	size_t n = in->rows * in->cols;
	if (n == 0) {
		snprintf(err, errlen, "gradscaler: empty input");
		return -1;
	}
	emu_kinputs ki; /* x alone: a tensor given by role is refused */
	if (emu_kinputs_take(&emu_kernel_gradscaler, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	emu_kinputs_free(&ki);
	emu_gs_config c;
	emu_gs_config_default(&c);
	double iv, gf, mf, ne, drift;
	const char *k = "gradscaler";
	if (!emu_kparam_real(in, k, "init", 0, FLT_MAX, EMU_KP_ABOVE_LO, c.init_scale,
	                     &c.init_scale, err, errlen) ||
	    !emu_kparam_real(in, k, "growth", 1, FLT_MAX, EMU_KP_ABOVE_LO, c.growth_factor,
	                     &c.growth_factor, err, errlen) ||
	    !emu_kparam_real(in, k, "backoff", 0, 1, EMU_KP_ABOVE_LO | EMU_KP_BELOW_HI,
	                     c.backoff_factor, &c.backoff_factor, err, errlen) ||
	    !emu_kparam_int(in, k, "interval", 1, 2147483647.0, c.growth_interval, &iv, err,
	                    errlen) ||
	    !emu_kparam_int(in, k, "gfmt", 0, 32, 0, &gf, err, errlen) ||
	    !emu_kparam_int(in, k, "mfmt", 0, 32, 0, &mf, err, errlen) ||
	    !emu_kparam_int(in, k, "elems", 1, 1e6, 1, &ne, err, errlen) ||
	    !emu_kparam_real(in, k, "spread", 0, INFINITY, 0, c.spread, &c.spread, err, errlen) ||
	    !emu_kparam_real(in, k, "drift", 0, 10, 0, 0, &drift, err, errlen))
		return -1;
	c.seed = in->seed;
	if (!(gf == 0 || gf == 16 || gf == 32) || !(mf == 0 || mf == 16 || mf == 32)) {
		snprintf(err, errlen, "gradscaler: %s=%g must be 0, 16 or 32",
		         gf == 0 || gf == 16 || gf == 32 ? "mfmt" : "gfmt",
		         gf == 0 || gf == 16 || gf == 32 ? mf : gf);
		return -1;
	}
	c.growth_interval = (int32_t)iv;
	c.n_elems = (size_t)ne;
	c.grad_format = gf == 16   ? emu_format_by_name("fp16")
	                : gf == 32 ? emu_format_by_name("fp32")
	                           : &pol->storage;
	c.master_format = mf == 16   ? emu_format_by_name("fp16")
	                  : mf == 32 ? emu_format_by_name("fp32")
	                             : NULL;
	const emu_format *F32 = emu_format_by_name("fp32");
	double *g = malloc(n * sizeof *g);
	emu_gs_step *st = malloc(n * sizeof *st);
	emu_vec *sc = emu_kout_vec(be, out, "scale", n, F32);
	emu_vec *sk = emu_kout_vec(be, out, "skipped", n, F32);
	emu_vec *lost = emu_kout_vec(be, out, "lost", n, F32);
	emu_vec *fin = emu_kout_vec(be, out, "final", 1, F32);
	if (!g || !st || !sc || !sk || !lost || !fin || !F32 || !c.grad_format) {
		free(g);
		free(st);
		snprintf(err, errlen, "gradscaler: out of memory");
		return -1;
	}
	/* drift=SIGMA: a drifting gradient distribution, the input times a
	 * log-normal random walk from 1 (emu_gs_traj_fill, seeded by the seed). */
	int rc = 0;
	if (drift > 0) {
		emu_gs_traj tr = {.kind = EMU_GS_DRIFT, .g = 1, .sigma = drift, .seed = in->seed};
		rc = emu_gs_traj_fill(&tr, g, n, err, errlen) == EMU_GS_OK ? 0 : -1;
		for (size_t i = 0; rc == 0 && i < n; i++)
			g[i] *= fabs(in->x[i]);
	} else {
		for (size_t i = 0; i < n; i++)
			g[i] = fabs(in->x[i]);
	}
	if (rc == 0)
		rc = emu_gs_simulate(&c, g, n, st, err, errlen) == EMU_GS_OK ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		emu_fill(be, emu_at(sc, i), emu_gs_value(st[i].scale), 1);
		emu_fill(be, emu_at(sk, i), st[i].skipped ? 1 : 0, 1);
		emu_fill(be, emu_at(lost, i), to_fp32(st[i].frac_underflow), 1);
	}
	if (rc == 0)
		emu_fill(be, emu_at(fin, 0), emu_gs_value(st[n - 1].scale_next), 1);
	free(g);
	free(st);
	return rc;
}

const emu_kernel emu_kernel_gradscaler = {
    "gradscaler",
    gs_variants,
    "init=65536 growth=2 backoff=0.5 interval=2000 gfmt=0|16|32 (0: storage) "
    "mfmt=0|16|32 (0: gfmt) elems=1 spread=6 drift=0 (log sd per step of a random walk "
    "that multiplies the input)",
    gs_run,
    gs_inputs,
    NULL, /* its steps are the scaler's own trajectory, not the engine's */
    0,
};
