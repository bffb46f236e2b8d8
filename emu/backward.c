/*
 * backward.c — a linear layer with softmax cross-entropy, forward and
 * backward under loss scaling, as a mixed-precision training step does it;
 * and GradScaler's scale over a run of steps.
 *
 * Kernel `backward` (variant "maxsub", the only one). Input X: rows = batch,
 * cols = features D. Parameters: classes C (8), wscale (1/sqrt(D)),
 * scale S (1). Generated from in->seed:
 *   W[d][c] = wscale·u, u uniform on [−1, 1) (53 bits of SplitMix64 of
 *             seed ⊕ (d·C + c)·φ);
 *   label of row r = r mod C.
 * X and W (D rows of C) are loaded by emu_k_load: stored in the storage
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
 * Kernel `gradscaler`: emu/gradscaler.c's simulation of torch GradScaler.
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
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradscaler.h"
#include "kernels.h"

static const char *const variants[] = {"maxsub", NULL};

/* SplitMix64 of seed ⊕ i·φ. */
static uint64_t mix(uint64_t seed, uint64_t i)
{
	uint64_t z = seed ^ (i * 0x9e3779b97f4a7c15ull);
	z += 0x9e3779b97f4a7c15ull;
	return emu_mix64(z);
}

static const emu_env rne = {EMU_RNE, false, false, false, 0, 0};

/* x rounded to fp32 (RNE), as a double. */
static double to_fp32(double x)
{
	const emu_format *f = emu_format_by_name("fp32");
	return emu_decode(f, emu_from_double(f, x, &rne).bits);
}

/* The fractions of g[0..n) (values of be) that are zero, subnormal, lost
 * and overflowed in the storage format S; with t (values of tbe, the truth)
 * lost and overflowed are judged against it, else lost is 0. */
static void fractions(const emu_be *be, const emu_val *g, size_t n, const emu_format *S,
                      const emu_be *tbe, const emu_val *t, double out[4])
{
	size_t k[4] = {0, 0, 0, 0};
	for (size_t i = 0; i < n; i++) {
		double v = emu_k_d(be, &g[i]), a = fabs(v);
		bool over = !isfinite(v) || a >= S->max;
		k[0] += v == 0;
		k[1] += v != 0 && a < S->min_normal;
		if (t && tbe) {
			double w = emu_k_d(tbe, &t[i]);
			k[2] += v == 0 && w != 0 && isfinite(w);
			over = isfinite(w) && (!isfinite(v) || (over && fabs(w) > S->max));
		}
		k[3] += over;
	}
	for (int j = 0; j < 4; j++)
		out[j] = n ? (double)k[j] / (double)n : 0;
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
	fractions(&r->be, g->v, g->n, g->fmt, truth ? &truth->be : NULL, t ? t->v : NULL, out);
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
		snprintf(err, errlen, "backward: scale=%g is %s in fp32", emu_kparam_get(in, "scale", 1),
		         scale == 0 ? "0" : "infinite");
		return -1;
	}
	emu_val *loss = emu_kout_add(be, out, "loss", 1, A);
	emu_val *dW = emu_kout_add(be, out, "dW", D * K, F32);
	emu_val *dX = emu_kout_add(be, out, "dX", R * D, F32);
	emu_val *found = emu_kout_add(be, out, "found_inf", 1, F32);
	emu_val *grad = emu_kout_add(be, out, "grad", D * K + R * D, S);
	emu_val *x = emu_k_vec(be, R * D), *w = emu_k_vec(be, D * K);
	emu_val *z = emu_k_vec(be, K), *e = emu_k_vec(be, K), *dl = emu_k_vec(be, R * K);
	emu_val *t = emu_k_vec(be, 12);
	if (!loss || !dW || !dX || !found || !grad || !x || !w || !z || !e || !dl || !t) {
		snprintf(err, errlen, "backward: out of memory");
		return -1;
	}
	emu_val *m = &t[0], *s = &t[1], *ls = &t[2], *tmp = &t[3], *sumloss = &t[4], *Rc = &t[5],
	        *one = &t[6], *la = &t[7], *Ra = &t[8], *Sc = &t[9], *SR = &t[10], *acc = &t[11];
	emu_k_const(be, sumloss, 0);
	emu_k_const(be, one, 1);
	emu_k_const(be, tmp, (double)R);
	emu_k_op(be, EMU_OP_CVT, Rc, tmp, NULL, NULL, C, "to_compute", 0);
	emu_k_op(be, EMU_OP_CVT, Ra, tmp, NULL, NULL, A, "to_accum", 0);
	emu_k_const(be, tmp, scale);
	emu_k_op(be, EMU_OP_CVT, Sc, tmp, NULL, NULL, C, "to_compute", 1);
	emu_k_op(be, EMU_OP_DIV, SR, Sc, Rc, NULL, C, "scale", 0);
	/* X and W loaded as tensors: storage (through the scaling recipe), then
	 * compute */
	double *wd = malloc(D * K * sizeof *wd);
	if (!wd) {
		snprintf(err, errlen, "backward: out of memory");
		return -1;
	}
	for (size_t i = 0; i < D * K; i++)
		wd[i] = wscale * ((double)(mix(in->seed, i) >> 11) * 0x1p-52 - 1);
	int lx = emu_k_load(be, pol, in->x, R, D, x), lw = emu_k_load(be, pol, wd, D, K, w);
	free(wd);
	if (lx != 0 || lw != 0) {
		snprintf(err, errlen, "backward: out of memory");
		return -1;
	}
	for (size_t r = 0; r < R; r++) {
		size_t y = r % K;
		/* logits z_c = Σ_d x_d·W[d][c], stored, then in compute */
		for (size_t c = 0; c < K; c++) {
			emu_k_const(be, acc, 0);
			for (size_t d = 0; d < D; d++) {
				emu_k_op(be, EMU_OP_MUL, tmp, &x[r * D + d], &w[d * K + c], NULL, C,
				         "mul", r * K + c);
				emu_k_op(be, EMU_OP_CVT, tmp, tmp, NULL, NULL, A, "to_accum",
				         r * K + c);
				emu_k_op(be, EMU_OP_ADD, acc, acc, tmp, NULL, A, "sum", r * K + c);
			}
			emu_k_op(be, EMU_OP_CVT, &z[c], acc, NULL, NULL, S, "store_logit",
			         r * K + c);
			emu_k_op(be, EMU_OP_CVT, &z[c], &z[c], NULL, NULL, C, "to_compute",
			         r * K + c);
		}
		/* softmax and loss (maxsub) */
		emu_k_copy(be, m, &z[0]);
		for (size_t c = 1; c < K; c++)
			emu_k_op(be, EMU_OP_MAX, m, m, &z[c], NULL, C, "max", r * K + c);
		emu_k_const(be, s, 0);
		for (size_t c = 0; c < K; c++) {
			emu_k_op(be, EMU_OP_SUB, &e[c], &z[c], m, NULL, C, "sub_max", r * K + c);
			emu_k_op(be, EMU_OP_EXP, &e[c], &e[c], NULL, NULL, C, "exp", r * K + c);
			emu_k_op(be, EMU_OP_CVT, tmp, &e[c], NULL, NULL, A, "to_accum", r * K + c);
			emu_k_op(be, EMU_OP_ADD, s, s, tmp, NULL, A, "sum_exp", r * K + c);
		}
		emu_k_op(be, EMU_OP_CVT, s, s, NULL, NULL, C, "to_compute", r);
		emu_k_op(be, EMU_OP_LOG, ls, s, NULL, NULL, C, "log", r);
		emu_k_op(be, EMU_OP_SUB, tmp, &z[y], m, NULL, C, "loss", r);
		emu_k_op(be, EMU_OP_SUB, la, ls, tmp, NULL, C, "loss", r);
		emu_k_op(be, EMU_OP_CVT, tmp, la, NULL, NULL, A, "to_accum", r);
		emu_k_op(be, EMU_OP_ADD, sumloss, sumloss, tmp, NULL, A, "mean", r);
		/* dlogits = (p − onehot)·S/R, stored, then in compute */
		for (size_t c = 0; c < K; c++) {
			emu_val *g = &dl[r * K + c];
			emu_k_op(be, EMU_OP_DIV, g, &e[c], s, NULL, C, "div", r * K + c);
			if (c == y)
				emu_k_op(be, EMU_OP_SUB, g, g, one, NULL, C, "onehot", r * K + c);
			emu_k_op(be, EMU_OP_MUL, g, g, SR, NULL, C, "scale", r * K + c);
			emu_k_op(be, EMU_OP_CVT, g, g, NULL, NULL, S, "store_dlogit", r * K + c);
			emu_k_op(be, EMU_OP_CVT, g, g, NULL, NULL, C, "to_compute", r * K + c);
		}
	}
	emu_k_op(be, EMU_OP_DIV, loss, sumloss, Ra, NULL, A, "mean", 0);
	/* dW[d][c] = Σ_r x[r][d]·dl[r][c]; dX[r][d] = Σ_c dl[r][c]·W[d][c]; stored */
	for (size_t d = 0; d < D; d++)
		for (size_t c = 0; c < K; c++) {
			size_t i = d * K + c;
			emu_k_const(be, acc, 0);
			for (size_t r = 0; r < R; r++) {
				emu_k_op(be, EMU_OP_MUL, tmp, &x[r * D + d], &dl[r * K + c], NULL,
				         C, "dW_mul", i);
				emu_k_op(be, EMU_OP_CVT, tmp, tmp, NULL, NULL, A, "to_accum", i);
				emu_k_op(be, EMU_OP_ADD, acc, acc, tmp, NULL, A, "dW_sum", i);
			}
			emu_k_op(be, EMU_OP_CVT, &grad[i], acc, NULL, NULL, S, "store_dW", i);
		}
	for (size_t r = 0; r < R; r++)
		for (size_t d = 0; d < D; d++) {
			size_t i = r * D + d;
			emu_k_const(be, acc, 0);
			for (size_t c = 0; c < K; c++) {
				emu_k_op(be, EMU_OP_MUL, tmp, &dl[r * K + c], &w[d * K + c], NULL,
				         C, "dX_mul", i);
				emu_k_op(be, EMU_OP_CVT, tmp, tmp, NULL, NULL, A, "to_accum", i);
				emu_k_op(be, EMU_OP_ADD, acc, acc, tmp, NULL, A, "dX_sum", i);
			}
			emu_k_op(be, EMU_OP_CVT, &grad[D * K + i], acc, NULL, NULL, S, "store_dX",
			         i);
		}
	/* unscale_: inv = fp32(1/double(S)), the product in fp32; found_inf */
	double inv = to_fp32(1 / scale);
	emu_val *invv = tmp;
	emu_k_const(be, invv, inv);
	bool bad = false;
	for (size_t i = 0; i < D * K + R * D; i++) {
		emu_val *o = i < D * K ? &dW[i] : &dX[i - D * K];
		emu_k_op(be, EMU_OP_CVT, o, &grad[i], NULL, NULL, F32, "to_fp32", i);
		if (inv != 1)
			emu_k_op(be, EMU_OP_MUL, o, o, invv, NULL, F32, "unscale", i);
		bad = bad || !isfinite(emu_k_d(be, o));
	}
	emu_k_const(be, found, bad ? 1 : 0);
	return 0;
}

const emu_kernel emu_kernel_backward = {
	"backward", variants, "classes=C (8) wscale=W (1/sqrt(cols)) scale=S (1)", run,
};

/* ---- gradscaler ---- */

static const char *const gs_variants[] = {"pytorch", NULL};

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
	c.master_format = mf == 16 ? emu_format_by_name("fp16")
	                  : mf == 32 ? emu_format_by_name("fp32")
	                             : NULL;
	const emu_format *F32 = emu_format_by_name("fp32");
	double *g = malloc(n * sizeof *g);
	emu_gs_step *st = malloc(n * sizeof *st);
	emu_val *sc = emu_kout_add(be, out, "scale", n, F32);
	emu_val *sk = emu_kout_add(be, out, "skipped", n, F32);
	emu_val *lost = emu_kout_add(be, out, "lost", n, F32);
	emu_val *fin = emu_kout_add(be, out, "final", 1, F32);
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
		emu_k_const(be, &sc[i], emu_gs_value(st[i].scale));
		emu_k_const(be, &sk[i], st[i].skipped ? 1 : 0);
		emu_k_const(be, &lost[i], to_fp32(st[i].frac_underflow));
	}
	if (rc == 0)
		emu_k_const(be, fin, emu_gs_value(st[n - 1].scale_next));
	free(g);
	free(st);
	return rc;
}

const emu_kernel emu_kernel_gradscaler = {
	"gradscaler", gs_variants,
	"init=65536 growth=2 backoff=0.5 interval=2000 gfmt=0|16|32 (0: storage) "
	"mfmt=0|16|32 (0: gfmt) elems=1 spread=6 drift=0 (log sd per step of a random walk "
	"that multiplies the input)",
	gs_run,
};
