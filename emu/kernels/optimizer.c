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
 * GPU counterpart: gpu/rows.h's `k_opt_elem`, `k_adam_denom`, `k_adamw_ext_elem` and `k_sr`
 * (stochastic rounding), compiled by nvcc in gpu/kern.cu and with the emulator's operations
 * in gpu/host_rows.c for the fake device, whose outputs tests/gpu/ compares with this file's
 * (docs/gpu.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "emu/kernels/optimizer.h"

static const char *const variants[] = {"adamw", "adamw_kahan", "adamw_sr", "sgd", NULL};

enum { ADAMW, ADAMW_KAHAN, ADAMW_SR, SGD };

/* The steps, each one operation site of the kernel. */
enum {
	S_GRAD = EMU_STEP0,
	S_DECAY_FACTOR,
	S_LERP_W,
	S_BETA2,
	S_ONE_MINUS_BETA2,
	S_EPS,
	S_NEG_LR,
	S_WD,
	S_NEG_LR_WD,
	S_STEP_SIZE,
	S_BC2_SQRT,
	S_MOMENTUM,
	/* SGD */
	S_WD_MUL,
	S_WD_ADD,
	S_WD_STORE,
	S_BUF_INIT,
	S_BUF_MUL,
	S_BUF_MUL_STORE,
	S_BUF_ADD,
	S_BUF_STORE,
	S_LR_MUL,
	/* AdamW */
	S_DECAY,
	S_DECAY_STORE,
	S_LERP_SUB,
	S_LERP_MUL,
	S_LERP_ADD,
	S_M_STORE,
	S_V_MUL,
	S_V_MUL_STORE,
	S_G2_SCALE,
	S_G2,
	S_V_ADD,
	S_V_STORE,
	S_SQRT,
	S_SQRT_STORE,
	S_BC2_DIV,
	S_BC2_STORE,
	S_ADD_EPS,
	S_DENOM_STORE,
	S_STEP_MUL,
	S_STEP_DIV,
	/* Kahan */
	S_KAHAN_DECAY,
	S_KAHAN_INC,
	S_COMP_ADD,
	S_COMP_STORE,
	S_COMP_DIFF,
	S_COMP_FIX,
	S_COMP_FIX_STORE,
	/* the weight */
	S_UPDATE,
	S_STORE,
	S_DIAG,
	/* stored tensors read back into the compute format */
	S_GRAD_C,
	S_W_C,
	S_W_C2,
	S_W_C3,
	S_WD_C,
	S_M_C,
	S_M_C2,
	S_M_C3,
	S_V_C,
	S_V_C2,
	S_V_C3,
	S_D_C,
	S_D_C2,
	S_D_C3,
	S_C_C,
	S_C_C2,
	/* initial states given by role (emu_kin.tensors): stored; by default
	 * they are +0 and nothing is stored */
	S_M_IN,
	S_V_IN,
	S_C_IN,
	S_END
};
static const char *const steps[S_END - EMU_STEP0] = {
    [S_GRAD - EMU_STEP0] = "grad",
    [S_DECAY_FACTOR - EMU_STEP0] = "decay_factor",
    [S_LERP_W - EMU_STEP0] = "beta1",
    [S_BETA2 - EMU_STEP0] = "beta2",
    [S_ONE_MINUS_BETA2 - EMU_STEP0] = "one_minus_beta2",
    [S_EPS - EMU_STEP0] = "eps",
    [S_NEG_LR - EMU_STEP0] = "lr",
    [S_WD - EMU_STEP0] = "weight_decay",
    [S_NEG_LR_WD - EMU_STEP0] = "neg_lr_wd",
    [S_STEP_SIZE - EMU_STEP0] = "step_size",
    [S_BC2_SQRT - EMU_STEP0] = "bc2_sqrt",
    [S_MOMENTUM - EMU_STEP0] = "momentum",
    [S_WD_MUL - EMU_STEP0] = "wd_mul",
    [S_WD_ADD - EMU_STEP0] = "wd_add",
    [S_WD_STORE - EMU_STEP0] = "wd_store",
    [S_BUF_INIT - EMU_STEP0] = "buf_init",
    [S_BUF_MUL - EMU_STEP0] = "buf_mul",
    [S_BUF_MUL_STORE - EMU_STEP0] = "buf_mul_store",
    [S_BUF_ADD - EMU_STEP0] = "buf_add",
    [S_BUF_STORE - EMU_STEP0] = "buf_store",
    [S_LR_MUL - EMU_STEP0] = "lr_mul",
    [S_DECAY - EMU_STEP0] = "decay",
    [S_DECAY_STORE - EMU_STEP0] = "decay_store",
    [S_LERP_SUB - EMU_STEP0] = "m_lerp",
    [S_LERP_MUL - EMU_STEP0] = "m_lerp_mul",
    [S_LERP_ADD - EMU_STEP0] = "m_lerp_add",
    [S_M_STORE - EMU_STEP0] = "m_store",
    [S_V_MUL - EMU_STEP0] = "v_mul",
    [S_V_MUL_STORE - EMU_STEP0] = "v_mul_store",
    [S_G2_SCALE - EMU_STEP0] = "g2_scale",
    [S_G2 - EMU_STEP0] = "g2",
    [S_V_ADD - EMU_STEP0] = "v_add",
    [S_V_STORE - EMU_STEP0] = "v_store",
    [S_SQRT - EMU_STEP0] = "sqrt",
    [S_SQRT_STORE - EMU_STEP0] = "sqrt_store",
    [S_BC2_DIV - EMU_STEP0] = "bc2_div",
    [S_BC2_STORE - EMU_STEP0] = "bc2_store",
    [S_ADD_EPS - EMU_STEP0] = "add_eps",
    [S_DENOM_STORE - EMU_STEP0] = "denom_store",
    [S_STEP_MUL - EMU_STEP0] = "step_mul",
    [S_STEP_DIV - EMU_STEP0] = "step_div",
    [S_KAHAN_DECAY - EMU_STEP0] = "kahan_decay",
    [S_KAHAN_INC - EMU_STEP0] = "increment",
    [S_COMP_ADD - EMU_STEP0] = "comp_add",
    [S_COMP_STORE - EMU_STEP0] = "comp_store",
    [S_COMP_DIFF - EMU_STEP0] = "comp_diff",
    [S_COMP_FIX - EMU_STEP0] = "comp_fix",
    [S_COMP_FIX_STORE - EMU_STEP0] = "comp_fix_store",
    [S_UPDATE - EMU_STEP0] = "update",
    [S_STORE - EMU_STEP0] = "store",
    [S_DIAG - EMU_STEP0] = "diag",
    [S_GRAD_C - EMU_STEP0] = "grad_to_compute",
    [S_W_C - EMU_STEP0] = "w_to_compute",
    [S_W_C2 - EMU_STEP0] = "w_to_compute_2",
    [S_W_C3 - EMU_STEP0] = "w_to_compute_3",
    [S_WD_C - EMU_STEP0] = "wd_to_compute",
    [S_M_C - EMU_STEP0] = "m_to_compute",
    [S_M_C2 - EMU_STEP0] = "m_to_compute_2",
    [S_M_C3 - EMU_STEP0] = "m_to_compute_3",
    [S_V_C - EMU_STEP0] = "v_to_compute",
    [S_V_C2 - EMU_STEP0] = "v_to_compute_2",
    [S_V_C3 - EMU_STEP0] = "v_to_compute_3",
    [S_D_C - EMU_STEP0] = "d_to_compute",
    [S_D_C2 - EMU_STEP0] = "d_to_compute_2",
    [S_D_C3 - EMU_STEP0] = "d_to_compute_3",
    [S_C_C - EMU_STEP0] = "c_to_compute",
    [S_C_C2 - EMU_STEP0] = "c_to_compute_2",
    [S_M_IN - EMU_STEP0] = "m",
    [S_V_IN - EMU_STEP0] = "v",
    [S_C_IN - EMU_STEP0] = "c",
};

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

void emu_opt_store_steps(unsigned *decay_store, unsigned *store)
{
	*decay_store = S_DECAY_STORE;
	*store = S_STORE;
}

/* The gradient stream (the file's comment): step t >= 1, element i. */
static double grad_draw(uint64_t seed, uint64_t t, uint64_t i, double scale)
{
	uint64_t r = emu_mix64(emu_mix64(seed) ^ ((t << 40) + i));
	double u = (double)(r >> 11) * 0x1p-53;
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
	       emu_kparam_real(in, k, "weight_decay", 0, INFINITY, 0, v == SGD ? 0 : 0.01, &p->wd,
	                       err, errlen) &&
	       emu_kparam_real(in, k, "momentum", 0, INFINITY, 0, 0.9, &p->momentum, err, errlen) &&
	       emu_kparam_real(in, k, "grad_scale", 0, INFINITY, 0, 1e-3, &p->grad_scale, err,
	                       errlen) &&
	       emu_kparam_int(in, k, "seed", 0, 0x1p53, -1, &p->seed, err, errlen) &&
	       emu_kparam_int(in, k, "fused", 0, 1, 0, &p->fused, err, errlen);
}

static int parse_variant(const char *variant)
{
	return !variant                          ? ADAMW
	       : !strcmp(variant, "adamw")       ? ADAMW
	       : !strcmp(variant, "adamw_kahan") ? ADAMW_KAHAN
	       : !strcmp(variant, "adamw_sr")    ? ADAMW_SR
	       : !strcmp(variant, "sgd")         ? SGD
	                                         : -1;
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
	int nstates = v == SGD ? 0 : v == ADAMW_KAHAN ? 3 : 2;
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

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *G = &pol->grad, *T = &pol->state,
	                 *F = emu_format_by_name("fp32");
	int v = parse_variant(variant);
	if (v < 0 || in->cols == 0 || in->rows == 0 || !F) {
		snprintf(err, errlen,
		         v < 0 ? "optimizer: unknown variant '%s' (adamw adamw_kahan adamw_sr sgd)"
		         : !F  ? "optimizer: no fp32 format%s"
		               : "optimizer: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	opt_params P;
	if (!read_params(in, v, &P, err, errlen))
		return -1;
	size_t n = in->rows * in->cols;
	if (n >= (1ull << 40) / 2 || (double)n * P.steps >= 0x1p42) {
		snprintf(err, errlen, "optimizer: rows·cols·steps must stay below 2^42");
		return -1;
	}
	uint64_t seed = P.seed < 0 ? in->seed : (uint64_t)P.seed;
	unsigned nsteps = (unsigned)P.steps;
	emu_kinputs ki;
	if (emu_kinputs_take(&emu_kernel_optimizer, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
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
	emu_vec *u = v == ADAMW_KAHAN ? emu_vec_new(be, n) : w;
	emu_vec *c = v == ADAMW_KAHAN ? emu_vec_new(be, n) : w;
	emu_vec *t = emu_vec_new(be, 16);
	double *raw = malloc(n * sizeof *raw);
	if (!w || !m || !vv || !lost || !vzero || !eps_out || !nonfinite || !g || !gc || !wc ||
	    !xc || !a || !d || !w_old || !u || !c || !t || !raw ||
	    emu_load(be, pol, in->x, in->rows, in->cols, w) != 0) {
		free(raw);
		emu_kinputs_free(&ki);
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
	/* the scalars, each rounded into the compute format where PyTorch's
	 * tensor operation meets it */
	enum {
		TMP,
		DECAY_F,
		LERP_W,
		BETA2,
		OM_BETA2,
		EPS,
		NEG_LR,
		WD,
		NEG_LR_WD,
		NEG_SS,
		BC2S,
		MU
	};
	emu_ref tmp = emu_at(t, TMP), decay_f = emu_at(t, DECAY_F), lerp_w = emu_at(t, LERP_W),
	        beta2 = emu_at(t, BETA2), om_beta2 = emu_at(t, OM_BETA2), epsc = emu_at(t, EPS),
	        neg_lr = emu_at(t, NEG_LR), wdc = emu_at(t, WD), neg_lr_wd = emu_at(t, NEG_LR_WD),
	        neg_ss = emu_at(t, NEG_SS), bc2s = emu_at(t, BC2S), mu = emu_at(t, MU);
#define SCALAR(step, dst, x)                                                                       \
	do {                                                                                       \
		emu_fill(be, tmp, (x), 1);                                                         \
		emu_op1(be, (step), EMU_OP_CVT, C, (dst), tmp, EMU_NOREF, 0);                      \
	} while (0)
	/* lerp's weight 1 − β1; its second form's 1 − weight is opmath's own
	 * subtraction (ATen's Lerp.h) */
	bool lerp_small = 1 - P.beta1 < 0.5;
	SCALAR(S_EPS, epsc, P.eps);
	if (v == SGD) {
		SCALAR(S_NEG_LR, neg_lr, -P.lr);
		SCALAR(S_WD, wdc, P.wd);
		SCALAR(S_MOMENTUM, mu, P.momentum);
	} else {
		SCALAR(S_DECAY_FACTOR, decay_f, 1 - P.lr * P.wd);
		SCALAR(S_NEG_LR_WD, neg_lr_wd, -(P.lr * P.wd));
		SCALAR(S_LERP_W, lerp_w, 1 - P.beta1);
		if (!lerp_small) {
			emu_fill(be, tmp, 1, 1);
			emu_op1(be, S_LERP_W, EMU_OP_SUB, C, lerp_w, tmp, lerp_w, 0);
		}
		SCALAR(S_BETA2, beta2, P.beta2);
		SCALAR(S_ONE_MINUS_BETA2, om_beta2, 1 - P.beta2);
	}
	emu_ref W = emu_row(w, 0), M = emu_row(m, 0), V = emu_row(vv, 0), Gr = emu_row(g, 0),
	        Gc = emu_row(gc, 0), Wc = emu_row(wc, 0), Xc = emu_row(xc, 0), A = emu_row(a, 0),
	        D = emu_row(d, 0), U = emu_row(u, 0), Wo = emu_row(w_old, 0), Cp = emu_row(c, 0);
	double n_nz = 0, n_lost = 0, n_g = 0, n_vzero = 0, n_bad = 0;
	/* the store of w: the policy's rounding, or SR in adamw_sr */
	emu_mode wmode = v == ADAMW_SR ? EMU_SR : pol->env.mode;
	/* A stored tensor read by an operation: its value in the compute format
	 * (exact when compute holds the stored format, as opmath does). */
#define TO_C(step, dst, src)                                                                       \
	emu_map(be, (step), EMU_OP_CVT, C, (dst), (src), EMU_NOREF, EMU_NOREF, n, e, NULL)
#define OP(step, op, dst, x, y) emu_map(be, (step), (op), C, (dst), (x), (y), EMU_NOREF, n, e, NULL)
#define STORE(step, fmt, dst)                                                                      \
	emu_map(be, (step), EMU_OP_CVT, (fmt), (dst), (dst), EMU_NOREF, EMU_NOREF, n, e, NULL)
	for (unsigned s = 1; s <= nsteps; s++) {
		uint64_t e = (uint64_t)(s - 1) * n;
		const double *gs = gin ? gin + e : raw;
		if (!gin)
			grad_step(seed, s, n, P.grad_scale, raw);
		emu_input(be, S_GRAD, G, Gr, gs, 1, n, e, NULL);
		TO_C(S_GRAD_C, Gc, Gr);
		emu_copy(be, Wo, W, n);
		if (v == SGD) {
			/* torch/optim/sgd.py _single_tensor_sgd: g = g + wd·w (a new
			 * tensor of the gradient's dtype), buf = g at the first step,
			 * else buf·μ + g (dampening 0), w = w + (−lr)·buf */
			emu_ref gs = Gr; /* the gradient as stored */
			if (P.wd != 0) {
				TO_C(S_W_C, Wc, W);
				OP(S_WD_MUL, EMU_OP_MUL, D, wdc, Wc);
				OP(S_WD_ADD, EMU_OP_ADD, D, Gc, D);
				STORE(S_WD_STORE, G, D);
				TO_C(S_WD_C, Gc, D);
				gs = D;
			}
			if (P.momentum != 0) {
				if (s == 1) {
					emu_map(be, S_BUF_INIT, EMU_OP_CVT, T, M, gs, EMU_NOREF,
					        EMU_NOREF, n, e, NULL);
				} else {
					TO_C(S_M_C, Xc, M);
					OP(S_BUF_MUL, EMU_OP_MUL, M, Xc, mu);
					STORE(S_BUF_MUL_STORE, T, M);
					TO_C(S_M_C2, Xc, M);
					OP(S_BUF_ADD, EMU_OP_ADD, M, Xc, Gc);
					STORE(S_BUF_STORE, T, M);
				}
				TO_C(S_M_C3, Gc, M); /* the step's direction */
			}
			OP(S_LR_MUL, EMU_OP_MUL, A, neg_lr, Gc);
			TO_C(S_W_C2, Wc, W);
			OP(S_UPDATE, EMU_OP_ADD, W, Wc, A);
			STORE(S_STORE, S, W);
		} else {
			/* torch/optim/adamw.py _single_tensor_adamw */
			double bc1 = 1 - emu_opt_pow(P.beta1, s), bc2 = 1 - emu_opt_pow(P.beta2, s);
			SCALAR(S_STEP_SIZE, neg_ss, -(P.lr / bc1));
			SCALAR(S_BC2_SQRT, bc2s, sqrt(bc2));
			/* w = w·(1 − lr·wd), stored (adamw_kahan: folded into the
			 * compensated increment below) */
			if (P.wd != 0 && v != ADAMW_KAHAN) {
				TO_C(S_W_C, Wc, W);
				OP(S_DECAY, EMU_OP_MUL, W, Wc, decay_f);
				emu_map_mode(be, S_DECAY_STORE, EMU_OP_CVT, wmode, S, W, W,
				             EMU_NOREF, EMU_NOREF, n, e, NULL);
			}
			/* m = lerp(m, g, 1 − β1) */
			TO_C(S_M_C, Xc, M);
			OP(S_LERP_SUB, EMU_OP_SUB, D, Gc, Xc);
			OP(S_LERP_MUL, EMU_OP_MUL, D, lerp_w, D);
			if (lerp_small)
				OP(S_LERP_ADD, EMU_OP_ADD, M, Xc, D);
			else
				OP(S_LERP_ADD, EMU_OP_SUB, M, Gc, D);
			STORE(S_M_STORE, T, M);
			/* v = v·β2, then v + ((1 − β2)·g)·g */
			TO_C(S_V_C, Xc, V);
			OP(S_V_MUL, EMU_OP_MUL, V, Xc, beta2);
			STORE(S_V_MUL_STORE, T, V);
			TO_C(S_V_C2, Xc, V);
			OP(S_G2_SCALE, EMU_OP_MUL, D, om_beta2, Gc);
			OP(S_G2, EMU_OP_MUL, D, D, Gc);
			OP(S_V_ADD, EMU_OP_ADD, V, Xc, D);
			STORE(S_V_STORE, T, V);
			/* denom = (sqrt(v) / sqrt(bc2)) + eps, each a tensor of v's dtype */
			TO_C(S_V_C3, Xc, V);
			OP(S_SQRT, EMU_OP_SQRT, D, Xc, EMU_NOREF);
			if (!P.fused) /* fused=1: denom stays in registers, the compute format */
				STORE(S_SQRT_STORE, T, D);
			TO_C(S_D_C, D, D);
			OP(S_BC2_DIV, EMU_OP_DIV, D, D, bc2s);
			if (!P.fused)
				STORE(S_BC2_STORE, T, D);
			TO_C(S_D_C2, D, D);
			OP(S_ADD_EPS, EMU_OP_ADD, D, D, epsc);
			if (!P.fused)
				STORE(S_DENOM_STORE, T, D);
			TO_C(S_D_C3, D, D);
			/* addcdiv: a = ((−step_size)·m)/denom, w = w + a */
			TO_C(S_M_C2, Xc, M);
			OP(S_STEP_MUL, EMU_OP_MUL, A, neg_ss, Xc);
			OP(S_STEP_DIV, EMU_OP_DIV, A, A, D);
			TO_C(S_W_C2, Wc, W);
			if (v == ADAMW_KAHAN) {
				/* u = w·(−lr·wd) + a; c = c + u; w' = w + c; c = c + (w − w') */
				if (P.wd != 0) {
					OP(S_KAHAN_DECAY, EMU_OP_MUL, U, Wc, neg_lr_wd);
					OP(S_KAHAN_INC, EMU_OP_ADD, U, U, A);
				} else {
					emu_copy(be, U, A, n);
				}
				TO_C(S_C_C, Xc, Cp);
				OP(S_COMP_ADD, EMU_OP_ADD, Cp, Xc, U);
				STORE(S_COMP_STORE, S, Cp);
				TO_C(S_C_C2, Xc, Cp);
				OP(S_UPDATE, EMU_OP_ADD, W, Wc, Xc);
				STORE(S_STORE, S, W);
				TO_C(S_W_C3, D, W);
				OP(S_COMP_DIFF, EMU_OP_SUB, U, Wc, D);
				OP(S_COMP_FIX, EMU_OP_ADD, Cp, Xc, U);
				STORE(S_COMP_FIX_STORE, S, Cp);
			} else {
				OP(S_UPDATE, EMU_OP_ADD, W, Wc, A);
				emu_map_mode(be, S_STORE, EMU_OP_CVT, wmode, S, W, W, EMU_NOREF,
				             EMU_NOREF, n, e, NULL);
			}
		}
		/* the diagnostics of this step, on the values this backend holds */
		for (size_t i = 0; i < n; i++) {
			if (!v_finite(be, a, i))
				n_bad++;
			else if (!v_zero(be, a, i)) {
				n_nz++;
				n_lost += v_same(be, w, w_old, i);
			}
			if (v != SGD && !v_zero(be, g, i)) {
				n_g++;
				n_vzero += v_zero(be, vv, i);
			}
		}
	}
	emu_fill(be, emu_at(lost, 0), n_nz > 0 ? n_lost / n_nz : 0, 1);
	emu_fill(be, emu_at(vzero, 0), n_g > 0 ? n_vzero / n_g : 0, 1);
	emu_fill(be, emu_at(nonfinite, 0), n_bad, 1);
	emu_op1(be, S_DIAG, EMU_OP_CVT, F, emu_at(lost, 0), emu_at(lost, 0), EMU_NOREF, 0);
	emu_op1(be, S_DIAG, EMU_OP_CVT, F, emu_at(vzero, 0), emu_at(vzero, 0), EMU_NOREF, 1);
	emu_op1(be, S_DIAG, EMU_OP_CVT, F, emu_at(eps_out, 0), epsc, EMU_NOREF, 2);
	emu_op1(be, S_DIAG, EMU_OP_CVT, F, emu_at(nonfinite, 0), emu_at(nonfinite, 0), EMU_NOREF,
	        3);
#undef SCALAR
#undef TO_C
#undef OP
#undef STORE
	free(raw);
	emu_kinputs_free(&ki);
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
