/*
 * check_optimizer.c — the optimizer kernel's known answers:
 *   - eps as stored: 1e-8 is 0 in fp16 (below half of 2^-24) and fp32's
 *     nearest 1e-8 (0x322bcc77) with compute=fp32;
 *   - an fp16 weight of 2048 (ulp 2 above it, 1 below) with an AdamW step
 *     of 0.5 (lr = 0.5: the first step is lr·m̂/(√v̂ + eps) ≈ lr·sign(g)):
 *     2048 ± 0.5 rounds back to 2048, every update lost; fp32 keeps it;
 *   - all fp16 with the defaults: v underflows ((1 − β2)·g² < 2^-25 for
 *     |g| < 5.5e-3), denom = 0 + 0, and the first failing operation is the
 *     division at step_div (divbyzero);
 *   - bf16 master weights at 1 lose every update of ~1e-3 (half an ulp is
 *     2^-8 ≈ 3.9e-3) that fp32 master weights keep; Kahan's compensation
 *     brings them back within a bf16 ulp of the fp32 weights;
 *   - the SR store is unbiased: averaged over many SR seeds the bf16
 *     weights are the fp32 ones, where round-to-nearest bf16 stays at 1;
 *   - with every format fp32, w, m and v are bit for bit an independent
 *     computation of PyTorch's formulas in C floats (binary32 operations,
 *     binary64 scalars as Python's), AdamW and SGD with momentum.
 * The fast == exact agreement is check_kernels.c's (every registered kernel,
 * and its random policies draw grad= and state= for this one).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

enum { W, M, V, LOST, VZERO, EPS, NONFINITE }; /* the kernel's outputs, in order */

/* Run the optimizer on one backend (parameters as NAME, VALUE pairs). The
 * run's output formats point into its policy: each run keeps its own. */
typedef struct {
	emu_run r;
	emu_policy pol;
} opt_result;

static void opt_run(opt_result *o, const char *spec, const char *variant, const double *x, size_t n,
                    const emu_kparam *p, size_t np, emu_be_kind kind)
{
	char err[200];
	emu_run *r = &o->r;
	ck_assert_msg(emu_policy_parse(spec, &o->pol, err, sizeof err) == EMU_OK, "%s", err);
	emu_kin in = {x, 1, n, p, np, 1, NULL, 0};
	ck_assert_msg(emu_run_kernel(&emu_kernel_optimizer, &o->pol, variant, &in, kind, r, err,
	                             sizeof err) == 0,
	              "%s", err);
	ck_assert(r->out.n == 7 && strcmp(r->out.item[W].name, "w") == 0 &&
	          strcmp(r->out.item[NONFINITE].name, "nonfinite") == 0);
}

static double out(const opt_result *o, int item, size_t j)
{
	return emu_kout_d(NULL, &o->r.out.item[item], j);
}

static emu_bits enc(const opt_result *o, int item, size_t j)
{
	const emu_kout_item *it = &o->r.out.item[item];
	return emu_encode(it->fmt, emu_kout_d(NULL, it, j));
}

/* fused=1 keeps denom in the compute format: with fp16 state and gradients
 * too small for (1 − β2)·g² to survive in fp16, the for-each step divides by
 * denom = fp16(1e-8) = 0 (non-finite updates) and the fused one by fp32's
 * 1e-8 (finite); and on a step whose denom is an fp16 value anyway the two
 * agree bit for bit. */
START_TEST(test_fused_denom)
{
	const double x[4] = {0.5, -0.25, 1, -1};
	emu_kparam p[3] = {{"steps", 1}, {"grad_scale", 1e-4}, {"fused", 0}};
	opt_result a, b;
	opt_run(&a, "storage=fp32,state=fp16", "adamw", x, 4, p, 3, EMU_BE_FAST);
	p[2].value = 1;
	opt_run(&b, "storage=fp32,state=fp16", "adamw", x, 4, p, 3, EMU_BE_FAST);
	ck_assert_msg(out(&a, NONFINITE, 0) > 0, "for-each: %g", out(&a, NONFINITE, 0));
	ck_assert_msg(out(&b, NONFINITE, 0) == 0, "fused: %g", out(&b, NONFINITE, 0));
	emu_run_free(&a.r);
	emu_run_free(&b.r);
	/* fp32 state: denom is never narrowed, so fused changes nothing */
	emu_kparam q[2] = {{"fused", 0}, {"steps", 3}};
	opt_run(&a, "storage=fp32", "adamw", x, 4, q, 2, EMU_BE_FAST);
	q[0].value = 1;
	opt_run(&b, "storage=fp32", "adamw", x, 4, q, 2, EMU_BE_FAST);
	for (size_t i = 0; i < 4; i++)
		ck_assert_msg(enc(&a, W, i) == enc(&b, W, i), "w[%zu] 0x%x against 0x%x", i,
		              enc(&a, W, i), enc(&b, W, i));
	emu_run_free(&a.r);
	emu_run_free(&b.r);
	t_count("optimizer: fused denom keeps eps; fp32 state unchanged", 6);
}
END_TEST

START_TEST(test_eps_stored)
{
	const double x[2] = {1, -1};
	opt_result r;
	opt_run(&r, "storage=fp16", "adamw", x, 2, NULL, 0, EMU_BE_FAST);
	ck_assert_msg(enc(&r, EPS, 0) == 0, "fp16: eps 0x%x", enc(&r, EPS, 0));
	emu_run_free(&r.r);
	opt_run(&r, "storage=fp16,compute=fp32", "adamw", x, 2, NULL, 0, EMU_BE_FAST);
	ck_assert_msg(enc(&r, EPS, 0) == 0x322bcc77, "fp32: eps 0x%x", enc(&r, EPS, 0));
	emu_run_free(&r.r);
	/* and bf16 holds it (2^-27 ≈ 7.5e-9 is its exponent range's middle) */
	opt_run(&r, "storage=bf16", "sgd", x, 2, NULL, 0, EMU_BE_FAST);
	ck_assert_msg(enc(&r, EPS, 0) == 0x322c0000, "bf16: eps 0x%x", enc(&r, EPS, 0));
	emu_run_free(&r.r);
}
END_TEST

START_TEST(test_fp16_2048_lost)
{
	enum { N = 16 };
	double x[N];
	for (size_t j = 0; j < N; j++)
		x[j] = 2048;
	const emu_kparam p[] = {{"lr", 0.5}, {"steps", 1}, {"weight_decay", 0}, {"grad_scale", 1}};
	opt_result r;
	opt_run(&r, "storage=fp16,compute=fp32,state=fp32,grad=fp32", "adamw", x, N, p,
	        ARRAY_SIZE(p), EMU_BE_FAST);
	for (size_t j = 0; j < N; j++)
		ck_assert_msg(enc(&r, W, j) == 0x6800, "fp16 w[%zu] = %a", j, out(&r, W, j));
	ck_assert_msg(out(&r, LOST, 0) == 1, "fp16: lost %g", out(&r, LOST, 0));
	emu_run_free(&r.r);
	opt_run(&r, "storage=fp32", "adamw", x, N, p, ARRAY_SIZE(p), EMU_BE_FAST);
	for (size_t j = 0; j < N; j++)
		ck_assert_msg(fabs(fabs(out(&r, W, j) - 2048) - 0.5) < 1e-6, "fp32 w[%zu] = %a", j,
		              out(&r, W, j));
	ck_assert_msg(out(&r, LOST, 0) == 0, "fp32: lost %g", out(&r, LOST, 0));
	emu_run_free(&r.r);
	t_count("optimizer: fp16 2048 ± 0.5 lost, fp32 kept", 2 * N);
}
END_TEST

START_TEST(test_fp16_v_underflow)
{
	const double x[4] = {1, 2048, 0.5, -3};
	opt_result r;
	opt_run(&r, "storage=fp16", "adamw", x, 4, NULL, 0, EMU_BE_FAST);
	ck_assert_msg(out(&r, VZERO, 0) == 1, "vzero %g", out(&r, VZERO, 0));
	ck_assert_msg(out(&r, NONFINITE, 0) == 40, "nonfinite %g", out(&r, NONFINITE, 0));
	ck_assert_msg(r.r.be.st.first_set && r.r.be.st.first_op == EMU_OP_DIV &&
	                  strcmp(r.r.be.st.first_step, "step_div") == 0 &&
	                  r.r.be.st.first_flags == EMU_FLAG_DIVBYZERO,
	              "first %s at %s", emu_op_name(r.r.be.st.first_op),
	              r.r.be.st.first_set ? r.r.be.st.first_step : "-");
	ck_assert_int_eq(r.r.status, EMU_ST_NAN);
	emu_run_free(&r.r);
	/* |g| up to 1: (1 − β2)·g² stays above 2^-25 for |g| >= 5.5e-3 */
	const emu_kparam p[] = {{"grad_scale", 1}};
	opt_run(&r, "storage=fp16", "adamw", x, 4, p, 1, EMU_BE_FAST);
	ck_assert_msg(out(&r, VZERO, 0) < 0.05, "grad_scale 1: vzero %g", out(&r, VZERO, 0));
	emu_run_free(&r.r);
}
END_TEST

/* 64 weights of 1, 400 steps of ~1e-3: largest and rms |w − w_fp32| */
static void dev_from(const opt_result *a, const opt_result *b, size_t n, double *max, double *rms)
{
	double s = 0, m = 0;
	for (size_t j = 0; j < n; j++) {
		double d = fabs(out(a, W, j) - out(b, W, j));
		m = fmax(m, d);
		s += d * d;
	}
	*max = m;
	*rms = sqrt(s / (double)n);
}

START_TEST(test_bf16_lost_kahan)
{
	enum { N = 64 };
	double x[N];
	for (size_t j = 0; j < N; j++)
		x[j] = 1;
	const emu_kparam p[] = {{"steps", 400}, {"weight_decay", 0}, {"grad_scale", 1}};
	opt_result r32, rb, rk;
	opt_run(&r32, "storage=fp32", "adamw", x, N, p, ARRAY_SIZE(p), EMU_BE_FAST);
	opt_run(&rb, "storage=bf16,compute=fp32,state=fp32,grad=fp32", "adamw", x, N, p,
	        ARRAY_SIZE(p), EMU_BE_FAST);
	opt_run(&rk, "storage=bf16,compute=fp32,state=fp32,grad=fp32", "adamw_kahan", x, N, p,
	        ARRAY_SIZE(p), EMU_BE_FAST);
	ck_assert_msg(out(&r32, LOST, 0) < 0.01, "fp32 lost %g", out(&r32, LOST, 0));
	ck_assert_msg(out(&rb, LOST, 0) == 1, "bf16 lost %g", out(&rb, LOST, 0));
	for (size_t j = 0; j < N; j++)
		ck_assert_msg(out(&rb, W, j) == 1, "bf16 w[%zu] = %a", j, out(&rb, W, j));
	double mb, sb, mk, sk;
	dev_from(&rb, &r32, N, &mb, &sb);
	dev_from(&rk, &r32, N, &mk, &sk);
	/* Kahan: within a bf16 ulp of 1 (2^-7) everywhere, and far closer on
	 * average than the weights that never moved */
	ck_assert_msg(mk <= 0x1p-7 && sk * 4 < sb, "kahan max %g rms %g, plain max %g rms %g", mk,
	              sk, mb, sb);
	ck_assert_msg(out(&rk, LOST, 0) < 1, "kahan lost %g", out(&rk, LOST, 0));
	emu_run_free(&r32.r);
	emu_run_free(&rb.r);
	emu_run_free(&rk.r);
	t_count("optimizer: bf16 loses, Kahan recovers (weights x steps)", N * 400);
}
END_TEST

START_TEST(test_sr_unbiased)
{
	enum { N = 16, SEEDS = 200 };
	double x[N], mean[N] = {0};
	for (size_t j = 0; j < N; j++)
		x[j] = 1;
	const emu_kparam p[] = {
	    {"steps", 10}, {"weight_decay", 0}, {"lr", 2e-3}, {"grad_scale", 1}};
	opt_result r32, rb;
	opt_run(&r32, "storage=fp32", "adamw", x, N, p, ARRAY_SIZE(p), EMU_BE_FAST);
	opt_run(&rb, "storage=bf16,compute=fp32,state=fp32,grad=fp32", "adamw", x, N, p,
	        ARRAY_SIZE(p), EMU_BE_FAST);
	for (int k = 0; k < SEEDS; k++) {
		char spec[128];
		snprintf(spec, sizeof spec,
		         "storage=bf16,compute=fp32,state=fp32,grad=fp32,seed=%d", 1000 + k);
		opt_result r;
		opt_run(&r, spec, "adamw_sr", x, N, p, ARRAY_SIZE(p), EMU_BE_FAST);
		for (size_t j = 0; j < N; j++)
			mean[j] += out(&r, W, j) / SEEDS;
		emu_run_free(&r.r);
	}
	/* SR's error per store is below an ulp (2^-7), zero-mean; 10 stores,
	 * 200 seeds: the mean's sd is at most 2^-7·√10/2/√200 ≈ 8.7e-4 */
	double sr = 0, rne = 0;
	for (size_t j = 0; j < N; j++) {
		double t = out(&r32, W, j);
		sr += fabs(mean[j] - t) / N;
		rne += fabs(out(&rb, W, j) - t) / N;
	}
	ck_assert_msg(sr < 1.5e-3 && sr * 3 < rne, "mean |SR mean − fp32| %g, RNE %g", sr, rne);
	emu_run_free(&r32.r);
	emu_run_free(&rb.r);
	t_count("optimizer: SR runs averaged (seeds x weights)", SEEDS * N);
}
END_TEST

/* ---- the independent computation: C floats, Python's binary64 scalars ---- */

static float grad_ref(uint64_t seed, uint64_t t, uint64_t i, double scale)
{
	uint64_t r = emu_mix64(emu_mix64(seed) ^ ((t << 40) + i));
	return (float)(scale * (2 * ((double)(r >> 11) * 0x1p-53) - 1));
}

static uint32_t bits32(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

START_TEST(test_adamw_fp32_reference)
{
	enum { N = 24, STEPS = 30 };
	const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01, gs = 1e-2;
	double x[N];
	float w[N], m[N] = {0}, v[N] = {0};
	for (size_t j = 0; j < N; j++)
		w[j] = (float)(x[j] = (double)(t_rand(90, j) >> 11) * 0x1p-53 * 4 - 2);
	const emu_kparam p[] = {{"steps", STEPS}, {"grad_scale", gs}};
	opt_result r;
	opt_run(&r, "storage=fp32", "adamw", x, N, p, ARRAY_SIZE(p), EMU_BE_FAST);
	const float decay = (float)(1 - lr * wd), lw = (float)(1 - b1), fb2 = (float)b2,
	            ob2 = (float)(1 - b2), feps = (float)eps;
	for (int t = 1; t <= STEPS; t++) {
		double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
		const float neg_ss = (float)-(lr / bc1), bc2s = (float)sqrt(bc2);
		for (size_t i = 0; i < N; i++) {
			float g = grad_ref(1, (uint64_t)t, i, gs);
			w[i] = w[i] * decay;
			m[i] = m[i] + lw * (g - m[i]);
			v[i] = v[i] * fb2;
			v[i] = v[i] + ob2 * g * g;
			float denom = sqrtf(v[i]) / bc2s + feps;
			w[i] = w[i] + neg_ss * m[i] / denom;
		}
	}
	for (size_t i = 0; i < N; i++) {
		ck_assert_msg(enc(&r, W, i) == bits32(w[i]), "w[%zu]: kernel 0x%x, reference 0x%x",
		              i, enc(&r, W, i), bits32(w[i]));
		ck_assert_msg(enc(&r, M, i) == bits32(m[i]), "m[%zu]: kernel 0x%x, reference 0x%x",
		              i, enc(&r, M, i), bits32(m[i]));
		ck_assert_msg(enc(&r, V, i) == bits32(v[i]), "v[%zu]: kernel 0x%x, reference 0x%x",
		              i, enc(&r, V, i), bits32(v[i]));
	}
	emu_run_free(&r.r);
	t_count("optimizer: adamw fp32 == C floats (w, m, v bits)", 3 * N);
}
END_TEST

START_TEST(test_sgd_fp32_reference)
{
	enum { N = 24, STEPS = 30 };
	const double lr = 1e-2, mu = 0.9, wd = 1e-3, gs = 1;
	double x[N];
	float w[N], buf[N] = {0};
	for (size_t j = 0; j < N; j++)
		w[j] = (float)(x[j] = (double)(t_rand(91, j) >> 11) * 0x1p-53 * 4 - 2);
	const emu_kparam p[] = {
	    {"steps", STEPS}, {"lr", lr}, {"weight_decay", wd}, {"grad_scale", gs}};
	opt_result r;
	opt_run(&r, "storage=fp32", "sgd", x, N, p, ARRAY_SIZE(p), EMU_BE_FAST);
	for (int t = 1; t <= STEPS; t++)
		for (size_t i = 0; i < N; i++) {
			float g = grad_ref(1, (uint64_t)t, i, gs);
			g = g + (float)wd * w[i];
			buf[i] = t == 1 ? g : buf[i] * (float)mu + g;
			w[i] = w[i] + (float)-lr * buf[i];
		}
	for (size_t i = 0; i < N; i++) {
		ck_assert_msg(enc(&r, W, i) == bits32(w[i]), "w[%zu]: kernel 0x%x, reference 0x%x",
		              i, enc(&r, W, i), bits32(w[i]));
		ck_assert_msg(enc(&r, M, i) == bits32(buf[i]),
		              "buf[%zu]: kernel 0x%x, reference 0x%x", i, enc(&r, M, i),
		              bits32(buf[i]));
	}
	emu_run_free(&r.r);
	t_count("optimizer: sgd fp32 == C floats (w, buf bits)", 2 * N);
}
END_TEST

/* Against its own truth: fp32 everywhere stays close, and truth loses
 * nothing (exact sums never drop an update). */
START_TEST(test_truth)
{
	const double x[4] = {1, 2048, 0.5, -3};
	const emu_kparam p[] = {{"grad_scale", 1}};
	opt_result r, t;
	opt_run(&r, "storage=fp32", "adamw", x, 4, p, 1, EMU_BE_FAST);
	opt_run(&t, "storage=fp32", "adamw", x, 4, p, 1, EMU_BE_TRUTH);
	emu_run_compare(&r.r, &(emu_truth){.stored = t.r, .same = true});
	ck_assert_msg(r.r.m[W].max_ulp <= 4, "w: %g ulps", r.r.m[W].max_ulp);
	ck_assert(out(&t, LOST, 0) == 0 && out(&t, NONFINITE, 0) == 0 && out(&t, EPS, 0) == 1e-8);
	emu_run_free(&r.r);
	emu_run_free(&t.r);
}
END_TEST

Suite *suite_optimizer(void)
{
	Suite *s = suite_create("optimizer");
	TCase *tc = tcase_create("optimizer");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_eps_stored);
	tcase_add_test(tc, test_fp16_2048_lost);
	tcase_add_test(tc, test_fp16_v_underflow);
	tcase_add_test(tc, test_bf16_lost_kahan);
	tcase_add_test(tc, test_sr_unbiased);
	tcase_add_test(tc, test_adamw_fp32_reference);
	tcase_add_test(tc, test_sgd_fp32_reference);
	tcase_add_test(tc, test_truth);
	tcase_add_test(tc, test_fused_denom);
	suite_add_tcase(s, tc);
	return s;
}
