/*
 * optimizer.c — SGD with momentum and AdamW over a number of steps, in
 * PyTorch's order of operations (torch.optim.SGD and AdamW, foreach=False:
 * the single-tensor path), from a seeded gradient stream.
 *
 * Why a kernel: a weight update is a sum w + u whose terms differ by orders
 * of magnitude, so the storage of the master weights, the format of the
 * states and where the arithmetic happens decide whether an update lands at
 * all (fp16 drops u below half an ulp of w, eps = 1e-8 is 0 in fp16, and
 * (1 − β2)·g² underflows there for |g| below ~5.5e-3). docs/kernels-
 * optimizer.md writes out every formula and cites PyTorch's sources.
 *
 * Formats: w in the storage format (the master weights), every operation
 * rounded to the compute format (PyTorch's opmath), the gradients stored in
 * the policy's grad format, m and v (and every temporary tensor PyTorch
 * materialises from them, such as denom) stored in its state format; with
 * fused=1 denom is not stored but kept in the compute format, as the fused
 * kernels (PyTorch's fused=True, Apex's FusedAdam) keep it in registers.
 * Python's scalars (1 − lr·wd, the bias corrections, step_size) are
 * binary64, as CPython computes them, and rounded into the compute format
 * where a tensor operation meets them (so eps = 1e-8 is 0 in fp16). A
 * stored tensor an operation reads is converted into the compute format
 * first (step to_compute): exact when compute holds the stored format, as
 * opmath does, and the operands every backend computes on are then values
 * of the operation's format (the exact backend works on its encodings).
 *
 * The gradient of step t (1-based) and element i: r = emu_mix64(emu_mix64(
 * seed) ^ (t·2^40 + i)), u = (r >> 11)·2^-53, g = grad_scale·(2u − 1)
 * (one rounding, into a double), then stored in the grad format. Uniform,
 * not normal, so every platform draws the same bits (no libm).
 *
 * Element (t − 1)·n + i of every step is element i at step t (SR keys and
 * the first failing operation).
 *
 * The order of operations is the row source emu/kernels/optimizer_rows.h's,
 * which the GPU runs too (gpu/rows.h's k_opt_elem, one thread an element
 * over all the steps, compiled by nvcc in gpu/kern.cu and with the
 * emulator's operations in gpu/host_rows.c for the fake device, whose
 * outputs tests/gpu/ compares with this file's; docs/gpu.md). This file
 * draws the gradients, makes Python's scalars (emu_opt_plan_make) and
 * counts the diagnostics.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/core/internal.h"
#include "emu/engine/kernels.h"
#include "emu/engine/krow.h"
#include "emu/kernels/optimizer.h"
#include "emu/kernels/optimizer_rows.h"

static const char *const variants[] = {K_OPT_VARIANTS(K_VARIANT_NAME) NULL};

static const char *const steps[S_END - EMU_STEP0] = {K_OPT_STEPS(K_STEP_NAME)};

/* β^t rounded to nearest in binary64 (what CPython's beta ** step gives
 * from the C library's pow, which is correctly rounded here but need not
 * be everywhere: MPFR makes it the same on every platform). */
double emu_opt_pow(double b, double t)
{
	mpfr_t x, y;
	mpfr_inits2(53, x, y, (mpfr_ptr)0);
	mpfr_set_d(x, b, MPFR_RNDN);
	mpfr_set_d(y, t, MPFR_RNDN);
	mpfr_pow(x, x, y, MPFR_RNDN);
	double r = mpfr_get_d(x, MPFR_RNDN);
	mpfr_clears(x, y, (mpfr_ptr)0);
	return r;
}

/* The gradient stream (the file's comment): step t >= 1, element i. */
static double grad_draw(uint64_t seed, uint64_t t, uint64_t i, double scale)
{
	uint64_t r = emu_mix64(emu_mix64(seed) ^ ((t << 40) + i));
	double u = emu_draw_unit(r);
	return scale * (2 * u - 1);
}

/* Element tests the diagnostics need, on the values each backend holds
 * (TRUTH's exactly, not their nearest doubles). */
static bool v_zero(const emu_be *be, const emu_vec *v, size_t i)
{
	return be->kind == EMU_BE_TRUTH ? mpfr_zero_p(&v->m[i]) != 0 : v->d[i] == 0;
}
static bool v_finite(const emu_be *be, const emu_vec *v, size_t i)
{
	return be->kind == EMU_BE_TRUTH ? mpfr_number_p(&v->m[i]) != 0 : isfinite(v->d[i]);
}
static bool v_same(const emu_be *be, const emu_vec *a, const emu_vec *b, size_t i)
{
	return be->kind == EMU_BE_TRUTH ? mpfr_equal_p(&a->m[i], &b->m[i]) != 0
	                                : a->d[i] == b->d[i];
}

typedef struct {
	double steps, lr, beta1, beta2, eps, wd, momentum, grad_scale, seed, fused;
} opt_params;

static bool read_params(const emu_kin *in, int v, opt_params *p, char *err, size_t errlen)
{
	const char *k = "optimizer";
	return emu_kparam_int(in, k, "steps", 1, 1e6, 10, &p->steps, err, errlen) &&
	       emu_kparam_real(in, k, "lr", 0, INFINITY, 0, 1e-3, &p->lr, err, errlen) &&
	       emu_kparam_real(in, k, "beta1", 0, 1, EMU_KP_BELOW_HI, 0.9, &p->beta1, err,
	                       errlen) &&
	       emu_kparam_real(in, k, "beta2", 0, 1, EMU_KP_BELOW_HI, 0.999, &p->beta2, err,
	                       errlen) &&
	       emu_kparam_real(in, k, "eps", 0, INFINITY, 0, 1e-8, &p->eps, err, errlen) &&
	       emu_kparam_real(in, k, "weight_decay", 0, INFINITY, 0, v == OPT_SGD ? 0 : 0.01,
	                       &p->wd, err, errlen) &&
	       emu_kparam_real(in, k, "momentum", 0, INFINITY, 0, 0.9, &p->momentum, err, errlen) &&
	       emu_kparam_real(in, k, "grad_scale", 0, INFINITY, 0, 1e-3, &p->grad_scale, err,
	                       errlen) &&
	       emu_kparam_int(in, k, "seed", 0, 0x1p53, -1, &p->seed, err, errlen) &&
	       emu_kparam_int(in, k, "fused", 0, 1, 0, &p->fused, err, errlen);
}

static int parse_variant(const char *variant)
{
	return emu_variant_index(variants, variant);
}

int emu_opt_plan_make(const emu_kin *in, const char *variant, emu_opt_plan *p, char *err,
                      size_t errlen)
{
	opt_params P;
	int v = parse_variant(variant);
	size_t n = in->rows * in->cols;
	memset(p, 0, sizeof *p);
	if (v < 0 || n == 0) {
		snprintf(err, errlen,
		         v < 0 ? "optimizer: unknown variant '%s' (adamw adamw_kahan adamw_sr sgd)"
		               : "optimizer: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	if (!read_params(in, v, &P, err, errlen))
		return -1;
	if (n >= (1ull << 40) / 2 || (double)n * P.steps >= 0x1p42) {
		snprintf(err, errlen, "optimizer: rows·cols·steps must stay below 2^42");
		return -1;
	}
	p->variant = v;
	p->flags = (P.wd != 0 ? OPT_F_WD : 0u) | (P.momentum != 0 ? OPT_F_MOMENTUM : 0u) |
	           (1 - P.beta1 < 0.5 ? OPT_F_LERP_SMALL : 0u) | (P.fused ? OPT_F_FUSED : 0u);
	p->steps = (unsigned)P.steps;
	p->seed = P.seed < 0 ? in->seed : (uint64_t)P.seed;
	p->grad_scale = P.grad_scale;
	p->npy = OPT_NPY + 2 * (size_t)p->steps;
	p->py = malloc(p->npy * sizeof *p->py);
	if (!p->py) {
		snprintf(err, errlen, "optimizer: out of memory");
		return -1;
	}
	/* Python's scalars, binary64 as CPython computes them */
	double *py = p->py;
	py[OPT_EPS] = P.eps;
	py[OPT_NEG_LR] = -P.lr;
	py[OPT_WD] = P.wd;
	py[OPT_MU] = P.momentum;
	py[OPT_DECAY_F] = 1 - P.lr * P.wd;
	py[OPT_NEG_LR_WD] = -(P.lr * P.wd);
	py[OPT_LERP_W] = 1 - P.beta1;
	py[OPT_BETA2] = P.beta2;
	py[OPT_OM_BETA2] = 1 - P.beta2;
	for (unsigned s = 1; s <= p->steps; s++) {
		double bc1 = 1 - emu_opt_pow(P.beta1, s), bc2 = 1 - emu_opt_pow(P.beta2, s);
		py[OPT_NPY + 2 * (s - 1)] = -(P.lr / bc1);
		py[OPT_NPY + 2 * (s - 1) + 1] = sqrt(bc2);
	}
	return 0;
}

void emu_opt_plan_free(emu_opt_plan *p)
{
	free(p->py);
	p->py = NULL;
}

/* Step t's gradients (n of them), as the file's comment draws them. */
static void grad_step(uint64_t seed, uint64_t t, size_t n, double scale, double *g)
{
	for (size_t i = 0; i < n; i++)
		g[i] = grad_draw(seed, t, i, scale);
}

/* x (the initial weights w); the gradient stream `grad` (steps × n, row t − 1
 * step t's, stored in the grad format at step "grad", element (t − 1)·n + i;
 * a kernel's own run draws it step by step); AdamW's states m and v (the
 * state format) and adamw_kahan's compensation c (the storage format), +0
 * at the first step, as PyTorch initialises them. */
static int inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                  char *err, size_t errlen)
{
	int v = parse_variant(variant);
	size_t n = in->rows * in->cols;
	opt_params P;
	emu_kinput *t;
	double *g;

	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	if (v < 0 || n == 0 || !emu_format_by_name("fp32"))
		return 0; /* the run refuses them */
	if (!read_params(in, v, &P, err, errlen))
		return -1;
	if (n >= (1ull << 40) / 2 || (double)n * P.steps >= 0x1p42)
		return 0; /* the run refuses it */
	uint64_t seed = P.seed < 0 ? in->seed : (uint64_t)P.seed, ns = (uint64_t)P.steps;
	if (emu_kinputs_add(ki, in, "optimizer", "grad", (size_t)ns, n, true, &t, &g, err,
	                    errlen) != 0)
		return -1;
	t->fmt = &pol->grad;
	t->step = S_GRAD;
	for (uint64_t s = 1; g && s <= ns; s++)
		grad_step(seed, s, n, P.grad_scale, g + (s - 1) * n);
	static const struct {
		const char *role;
		unsigned step;
	} states[] = {{"m", S_M_IN}, {"v", S_V_IN}, {"c", S_C_IN}};
	int nstates = v == OPT_SGD ? 0 : v == OPT_ADAMW_KAHAN ? 3 : 2;
	for (int k = 0; k < nstates; k++) {
		if (emu_kinputs_add(ki, in, "optimizer", states[k].role, in->rows, in->cols, true,
		                    &t, &g, err, errlen) != 0)
			return -1;
		t->fmt = k < 2 ? &pol->state : &pol->storage;
		t->step = states[k].step;
		for (size_t i = 0; g && i < n; i++)
			g[i] = 0;
	}
	return 0;
}

/* the diagnostics of one step, on the values this backend holds: the
 * increments a that are not finite, those that are nonzero and of them the
 * ones that left w as it was (w_old), and for AdamW the nonzero gradients g
 * whose v is zero */
typedef struct {
	double nz, lost, g, vzero, bad;
} opt_tally;

/* tally_step on doubles: the same tests, counted as integers in loops
 * the clones make vector ones (t: bad, nz, lost, g, vzero) */
EMU_VEC_CLONES static void tally_doubles(bool sgd, size_t n, const double *a, const double *w,
                                         const double *w_old, const double *g,
                                         const double *vv, uint64_t *t)
{
	uint64_t bad = 0, nz = 0, lost = 0, ng = 0, vz = 0;
	for (size_t i = 0; i < n; i++) {
		double ai = a[i];
		uint64_t fin = fabs(ai) <= DBL_MAX, nzi = fin & (ai != 0);
		bad += fin ^ 1;
		nz += nzi;
		lost += nzi & (w[i] == w_old[i]);
	}
	for (size_t i = 0; !sgd && i < n; i++) {
		uint64_t gi = g[i] != 0;
		ng += gi;
		vz += gi & (vv[i] == 0);
	}
	t[0] = bad, t[1] = nz, t[2] = lost, t[3] = ng, t[4] = vz;
}

static void tally_step(const emu_be *be, int v, size_t n, const emu_vec *a, const emu_vec *w,
                       const emu_vec *w_old, const emu_vec *g, const emu_vec *vv, opt_tally *c)
{
	if (be->kind != EMU_BE_TRUTH) {
		uint64_t t[5];
		tally_doubles(v == OPT_SGD, n, a->d, w->d, w_old->d, v == OPT_SGD ? NULL : g->d,
		              v == OPT_SGD ? NULL : vv->d, t);
		c->bad += (double)t[0], c->nz += (double)t[1], c->lost += (double)t[2];
		c->g += (double)t[3], c->vzero += (double)t[4];
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!v_finite(be, a, i))
			c->bad++;
		else if (!v_zero(be, a, i)) {
			c->nz++;
			c->lost += v_same(be, w, w_old, i);
		}
		if (v != OPT_SGD && !v_zero(be, g, i)) {
			c->g++;
			c->vzero += v_zero(be, vv, i);
		}
	}
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *G = &pol->grad, *T = &pol->state,
	                 *F = emu_format_by_name("fp32");
	emu_opt_plan P;
	if (!F) {
		snprintf(err, errlen, "optimizer: no fp32 format");
		return -1;
	}
	if (emu_opt_plan_make(in, variant, &P, err, errlen) != 0)
		return -1;
	size_t n = in->rows * in->cols;
	emu_kinputs ki;
	if (emu_kinputs_take(&emu_kernel_optimizer, pol, variant, in, &ki, err, errlen) != 0) {
		emu_opt_plan_free(&P);
		return -1;
	}
	const double *gin = emu_kinputs_find(&ki, "grad")->v; /* NULL: drawn step by step */
	emu_steps(be, steps, S_END - EMU_STEP0);
	emu_vec *w = emu_kout_vec(be, out, "w", n, S);
	emu_vec *m = emu_kout_vec(be, out, "m", n, T);
	emu_vec *vv = emu_kout_vec(be, out, "v", n, T);
	emu_vec *lost = emu_kout_vec(be, out, "lost", 1, F);
	emu_vec *vzero = emu_kout_vec(be, out, "vzero", 1, F);
	emu_vec *eps_out = emu_kout_vec(be, out, "eps", 1, F);
	emu_vec *nonfinite = emu_kout_vec(be, out, "nonfinite", 1, F);
	emu_vec *g = emu_vec_new(be, n), *gc = emu_vec_new(be, n), *wc = emu_vec_new(be, n);
	emu_vec *xc = emu_vec_new(be, n), *a = emu_vec_new(be, n), *d = emu_vec_new(be, n);
	emu_vec *w_old = emu_vec_new(be, n);
	bool kahan = P.variant == OPT_ADAMW_KAHAN; /* u and c exist only there */
	emu_vec *u = kahan ? emu_vec_new(be, n) : w, *c = kahan ? emu_vec_new(be, n) : w;
	emu_vec *t = emu_vec_new(be, OPT_NT);
	double *raw = malloc(n * sizeof *raw);
	if (!w || !m || !vv || !lost || !vzero || !eps_out || !nonfinite || !g || !gc || !wc ||
	    !xc || !a || !d || !w_old || !u || !c || !t || !raw ||
	    emu_load(be, pol, in->x, in->rows, in->cols, w) != 0) {
		free(raw);
		emu_kinputs_free(&ki);
		emu_opt_plan_free(&P);
		snprintf(err, errlen, "optimizer: out of memory");
		return -1;
	}
	/* the initial states, where given: stored (by default +0, nothing stored) */
	const struct {
		const char *role;
		unsigned step;
		const emu_format *f;
		emu_vec *dst;
	} given[] = {{"m", S_M_IN, T, m}, {"v", S_V_IN, T, vv}, {"c", S_C_IN, S, c}};
	for (int k = 0; k < 3; k++) {
		const emu_kinput *st = emu_kinputs_find(&ki, given[k].role);
		if (st && st->given)
			emu_input(be, given[k].step, given[k].f, emu_row(given[k].dst, 0), st->v, 1,
			          n, 0, NULL);
	}
	k_opt_cfg cfg = {P.variant, P.flags};
	k_opt_refs r = {emu_row(w, 0), emu_row(m, 0),  emu_row(vv, 0), emu_row(c, 0),
	                emu_row(g, 0), emu_row(gc, 0), emu_row(wc, 0), emu_row(xc, 0),
	                emu_row(a, 0), emu_row(d, 0),  emu_row(u, 0)};
	opt_tally tl = {0, 0, 0, 0, 0};
	k_opt_consts(be, cfg, C, P.py, t);
	for (unsigned s = 1; s <= P.steps; s++) {
		uint64_t e = (uint64_t)(s - 1) * n;
		if (!gin)
			grad_step(P.seed, s, n, P.grad_scale, raw);
		emu_input(be, S_GRAD, G, r.g, gin ? gin + e : raw, 1, n, e, NULL);
		emu_copy(be, emu_row(w_old, 0), r.w, n);
		k_opt_step_consts(be, cfg, C, P.py, s, t);
		k_opt_step(be, cfg, S, C, G, T, s, r, t, be->env.seed, n, e);
		tally_step(be, P.variant, n, a, w, w_old, g, vv, &tl);
	}
	emu_fill(be, emu_at(lost, 0), tl.nz > 0 ? tl.lost / tl.nz : 0, 1);
	emu_fill(be, emu_at(vzero, 0), tl.g > 0 ? tl.vzero / tl.g : 0, 1);
	emu_fill(be, emu_at(nonfinite, 0), tl.bad, 1);
	emu_op1(be, S_DIAG, EMU_OP_CVT, F, emu_at(lost, 0), emu_at(lost, 0), EMU_NOREF, 0);
	emu_op1(be, S_DIAG, EMU_OP_CVT, F, emu_at(vzero, 0), emu_at(vzero, 0), EMU_NOREF, 1);
	emu_op1(be, S_DIAG, EMU_OP_CVT, F, emu_at(eps_out, 0), emu_at(t, OPT_EPS), EMU_NOREF, 2);
	emu_op1(be, S_DIAG, EMU_OP_CVT, F, emu_at(nonfinite, 0), emu_at(nonfinite, 0), EMU_NOREF,
	        3);
	free(raw);
	emu_kinputs_free(&ki);
	emu_opt_plan_free(&P);
	return 0;
}

const emu_kernel emu_kernel_optimizer = {
    "optimizer",
    variants,
    "steps=N (default 10); lr=L (1e-3); beta1=B1 (0.9); beta2=B2 (0.999); eps=E (1e-8, "
    "rounded into the compute format); weight_decay=WD (0.01 adamw, 0 sgd); momentum=MU (0.9, "
    "sgd); grad_scale=X (1e-3: gradients uniform on [-X, X)); seed=S (the gradient stream's; "
    "default the run's seed); fused=0|1 (adamw: 1 keeps denom in the compute format, as "
    "PyTorch's fused=True and Apex's FusedAdam do, instead of a tensor of the state's dtype)",
    run,
    inputs,
    steps,
    S_END - EMU_STEP0,
};
