/*
 * check_layernorm.c — what the layer-norm kernel's own arithmetic gives
 * where layer norm is known to break: a tiny variance in fp16 with eps 1e-5,
 * 1e-3 and 1e-8 (0 in fp16), onepass's cancellation when the mean is large
 * against the spread, and twopass/welford on benign data with fp32 compute.
 * Every number comes from running the kernel on the fast backend and on the
 * truth backend (emu_run_compare); the fast == exact agreement is
 * check_kernels.c's, which covers every registered kernel.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

static const char *const variants[] = {"twopass", "onepass", "welford"};
enum { Y, DX, RSTD, VAR }; /* the kernel's outputs, in order */

/* Run layernorm on the fast backend and compare it with the truth backend. */
static void ln_run(emu_run *r, const char *spec, const char *variant, const double *x, size_t rows,
                   size_t cols, double eps)
{
	emu_policy pol;
	char err[200];
	ck_assert_msg(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK, "%s", err);
	emu_kparam p[1] = {{"eps", eps}};
	emu_kin in = {x, rows, cols, p, 1, 1, NULL, 0};
	emu_run t;
	ck_assert_msg(emu_run_kernel(&emu_kernel_layernorm, &pol, variant, &in, EMU_BE_FAST, r, err,
	                             sizeof err) == 0,
	              "%s", err);
	ck_assert_msg(emu_run_kernel(&emu_kernel_layernorm, &pol, variant, &in, EMU_BE_TRUTH, &t,
	                             err, sizeof err) == 0,
	              "%s", err);
	ck_assert(r->out.n == 4 && strcmp(r->out.item[VAR].name, "var") == 0);
	emu_run_compare(r, &(emu_truth){.stored = t, .same = true}); /* the stored inputs' truth */
	emu_run_free(&t);
}

/* max |v| over an output, NaN if any is NaN */
static double max_abs(const emu_run *r, int item)
{
	double m = 0;
	for (size_t j = 0; j < r->out.item[item].n; j++) {
		double a = fabs(emu_kout_d(NULL, &r->out.item[item], j));
		if (isnan(a))
			return NAN;
		m = a > m ? a : m;
	}
	return m;
}

static const char *first_step(const emu_run *r)
{
	return r->be.st.first_set ? r->be.st.first_step : "-";
}

enum { N8 = 8 };
/* ±a, alternating: the mean is exactly 0 and the variance is a² (of the stored a) */
static void alternating(double *x, double a)
{
	for (int j = 0; j < N8; j++)
		x[j] = j & 1 ? -a : a;
}

/* fp16 storage and compute, variance ≈ 1e-7: x² = 9.98e-8 lies on the fp16
 * subnormal grid (step 2^-24 = 5.96e-8) and rounds to 2·2^-24; eps dominates
 * var + eps, so rstd and y stay within 0.2% of truth and nothing gets near
 * 65504 (rsqrt, never 1/(var + eps) ≈ 99000, is formed). */
START_TEST(test_fp16_tiny_variance)
{
	double x[N8];
	alternating(x, 3.16e-4);
	const double sub2 = ldexp(1, -23);
	for (int v = 0; v < 3; v++) {
		emu_run r;
		ln_run(&r, "storage=fp16", variants[v], x, 1, N8, 1e-5);
		ck_assert_msg(r.status == EMU_ST_OK && !r.be.st.first_set,
		              "%s eps 1e-5: %s, first %s", variants[v],
		              emu_run_status_name(r.status), first_step(&r));
		ck_assert_msg(emu_kout_d(NULL, &r.out.item[VAR], 0) == sub2, "%s: var %a", variants[v],
		              emu_kout_d(NULL, &r.out.item[VAR], 0));
		ck_assert_msg(r.m[VAR].rel_err > 0.1, "%s: var rel %g", variants[v],
		              r.m[VAR].rel_err);
		ck_assert_msg(r.m[RSTD].rel_err < 2e-3 && r.m[Y].rel_err < 2e-3,
		              "%s: rstd rel %g, y rel %g", variants[v], r.m[RSTD].rel_err,
		              r.m[Y].rel_err);
		double ry = max_abs(&r, Y), rdx = max_abs(&r, DX), rr = max_abs(&r, RSTD);
		ck_assert_msg(ry < 0.1 && rr < 320 && rdx < 500, "%s: |y| %g |dx| %g rstd %g",
		              variants[v], ry, rdx, rr);
		emu_run_free(&r);

		/* eps 1e-3: rstd ≈ 31.6, y ≈ 0.01, error at the fp16 rounding level */
		ln_run(&r, "storage=fp16", variants[v], x, 1, N8, 1e-3);
		ck_assert(r.status == EMU_ST_OK && !r.be.st.first_set);
		ck_assert_msg(r.m[RSTD].rel_err < 1e-3 && r.m[Y].rel_err < 1e-3, "%s: rel %g %g",
		              variants[v], r.m[RSTD].rel_err, r.m[Y].rel_err);
		ck_assert(max_abs(&r, Y) < 0.011 && max_abs(&r, RSTD) < 32);
		emu_run_free(&r);

		/* eps 1e-8 is 0 in fp16, so rstd = rsqrt(2^-23) = 2896 is the
		 * quantised variance's alone: y is 4% low (0.915 for 0.953) */
		ln_run(&r, "storage=fp16", variants[v], x, 1, N8, 1e-8);
		ck_assert(r.status == EMU_ST_OK && !r.be.st.first_set);
		ck_assert_msg(emu_kout_d(NULL, &r.out.item[RSTD], 0) == 2896, "rstd %g", emu_kout_d(NULL, &r.out.item[RSTD], 0));
		ck_assert_msg(r.m[Y].rel_err > 0.03 && r.m[Y].rel_err < 0.05, "%s: y rel %g",
		              variants[v], r.m[Y].rel_err);
		emu_run_free(&r);
	}
}
END_TEST

/* Variance 1e-8 in fp16: x² = 1e-8 is below half the smallest subnormal and
 * the variance underflows to 0. With eps 1e-5 that only costs var (status
 * underflow); with eps 1e-8 (= 0 in fp16) rsqrt(0) = inf, y = ±inf and
 * dx = NaN, first failing at "rsqrt" with divbyzero. fp32 compute is fine. */
START_TEST(test_fp16_variance_underflow)
{
	double x[N8];
	alternating(x, 1e-4);
	for (int v = 0; v < 3; v++) {
		emu_run r;
		ln_run(&r, "storage=fp16", variants[v], x, 1, N8, 1e-8);
		ck_assert_msg(r.status == EMU_ST_NAN, "%s: %s", variants[v],
		              emu_run_status_name(r.status));
		ck_assert_msg(r.be.st.first_set && strcmp(r.be.st.first_step, "rsqrt") == 0 &&
		                  r.be.st.first_op == EMU_OP_RSQRT &&
		                  r.be.st.first_flags == EMU_FLAG_DIVBYZERO,
		              "%s: first %s op %d flags %x", variants[v], first_step(&r),
		              (int)r.be.st.first_op, r.be.st.first_flags);
		ck_assert(emu_kout_d(NULL, &r.out.item[VAR], 0) == 0 && r.m[VAR].lost == 1);
		ck_assert(isinf(emu_kout_d(NULL, &r.out.item[RSTD], 0)) && isinf(emu_kout_d(NULL, &r.out.item[Y], 0)));
		ck_assert(isnan(emu_kout_d(NULL, &r.out.item[DX], 0)));
		emu_run_free(&r);

		ln_run(&r, "storage=fp16", variants[v], x, 1, N8, 1e-5);
		ck_assert_msg(r.status == EMU_ST_UNDERFLOW && !r.be.st.first_set, "%s: %s",
		              variants[v], emu_run_status_name(r.status));
		ck_assert(emu_kout_d(NULL, &r.out.item[VAR], 0) == 0 && r.m[Y].rel_err < 1e-3);
		emu_run_free(&r);

		ln_run(&r, "storage=fp16,compute=fp32", variants[v], x, 1, N8, 1e-8);
		ck_assert_msg(r.status == EMU_ST_OK && r.m[Y].rel_err < 1e-3,
		              "%s fp32: %s, y rel %g", variants[v], emu_run_status_name(r.status),
		              r.m[Y].rel_err);
		emu_run_free(&r);
	}
}
END_TEST

/* onepass in fp32: E[x²] ≈ 1e6 has ulp 0.0625, far above the variance. */
START_TEST(test_onepass_cancellation)
{
	double x[N8];
	for (int j = 0; j < N8; j++) /* 1000 ± 0.01·{1,2,3}: variance 4.1e-4 */
		x[j] = 1000 + (j & 1 ? -1 : 1) * 0.01 * (1 + j % 3);
	emu_run r[3];
	for (int v = 0; v < 3; v++)
		ln_run(&r[v], "storage=fp32", variants[v], x, 1, N8, 1e-5);
	ck_assert(r[0].status == EMU_ST_OK && r[2].status == EMU_ST_OK);
	double one = r[1].m[VAR].rel_err, two = r[0].m[VAR].rel_err, wel = r[2].m[VAR].rel_err;
	ck_assert_msg(one > 100 && one > 1e6 * two && one > 1e4 * wel,
	              "var rel: onepass %g twopass %g welford %g", one, two, wel);
	ck_assert_msg(r[1].m[Y].rel_err > 0.5 && r[1].m[Y].rel_err > 100 * r[0].m[Y].rel_err,
	              "y rel: onepass %g twopass %g", r[1].m[Y].rel_err, r[0].m[Y].rel_err);
	for (int v = 0; v < 3; v++)
		emu_run_free(&r[v]);

	/* 300 ± 300·2^-16·{1,2,3}: E[x²] − E[x]² = −2^-6 < 0, rsqrt of a negative */
	for (int j = 0; j < N8; j++)
		x[j] = 300 + (j & 1 ? -1 : 1) * ldexp(300, -16) * (1 + j % 3);
	for (int v = 0; v < 3; v++) {
		ln_run(&r[v], "storage=fp32", variants[v], x, 1, N8, 1e-5);
		if (v == 1) {
			ck_assert_msg(emu_kout_d(NULL, &r[v].out.item[VAR], 0) < 0 && r[v].status == EMU_ST_NAN,
			              "onepass var %g, %s", emu_kout_d(NULL, &r[v].out.item[VAR], 0),
			              emu_run_status_name(r[v].status));
			ck_assert_msg(strcmp(first_step(&r[v]), "rsqrt") == 0 &&
			                  r[v].be.st.first_flags == EMU_FLAG_INVALID,
			              "first %s", first_step(&r[v]));
		} else {
			ck_assert_msg(r[v].status == EMU_ST_OK && r[v].m[VAR].rel_err < 1e-3,
			              "%s: %s %g", variants[v], emu_run_status_name(r[v].status),
			              r[v].m[VAR].rel_err);
		}
		emu_run_free(&r[v]);
	}
}
END_TEST

/* Benign rows (mean ~0.3, spread ~2), fp32 compute: twopass and welford are
 * at the storage format's rounding for y and dx, at fp32's for var and rstd. */
START_TEST(test_benign_fp32_compute)
{
	static const char *const specs[] = {"storage=fp16,compute=fp32",
	                                    "storage=bf16,compute=fp32"};
	enum { R = 4, N = 32 };
	double x[R * N];
	for (size_t k = 0; k < R * N; k++)
		x[k] = 0.3 + 4.0 * ((double)(t_rand(70, k) >> 11) / 9007199254740992.0 - 0.5);
	for (size_t s = 0; s < ARRAY_SIZE(specs); s++) {
		emu_policy pol;
		char err[200];
		ck_assert(emu_policy_parse(specs[s], &pol, err, sizeof err) == EMU_OK);
		double us = ldexp(1, -pol.storage.p), uc = ldexp(1, -pol.compute.p);
		for (int v = 0; v < 3; v += 2) { /* twopass, welford */
			emu_run r;
			ln_run(&r, specs[s], variants[v], x, R, N, 1e-5);
			ck_assert(r.status == EMU_ST_OK && !r.be.st.first_set);
			ck_assert_msg(r.m[Y].rel_err < us && r.m[DX].rel_err < 2 * us,
			              "%s %s: y rel %g dx rel %g", specs[s], variants[v],
			              r.m[Y].rel_err, r.m[DX].rel_err);
			ck_assert_msg(r.m[VAR].rel_err < 8 * uc && r.m[RSTD].rel_err < 8 * uc,
			              "%s %s: var rel %g rstd rel %g", specs[s], variants[v],
			              r.m[VAR].rel_err, r.m[RSTD].rel_err);
			emu_run_free(&r);
		}
	}
}
END_TEST

/* dy=1 ("ones"): dy − mean(dy) = 0 and mean(ŷ) ≈ 0, so dx ≈ 0; an unknown
 * variant is an error that names it. */
START_TEST(test_params)
{
	emu_policy pol;
	char err[200];
	ck_assert(emu_policy_parse("storage=fp16,compute=fp32", &pol, err, sizeof err) == EMU_OK);
	double x[N8];
	for (int j = 0; j < N8; j++)
		x[j] = 0.25 * j - 1;
	emu_kparam p[1] = {{"dy", 1}};
	emu_kin in = {x, 1, N8, p, 1, 1, NULL, 0};
	emu_run r;
	ck_assert(emu_run_kernel(&emu_kernel_layernorm, &pol, "welford", &in, EMU_BE_FAST, &r, err,
	                         sizeof err) == 0);
	ck_assert_msg(max_abs(&r, DX) < 1e-6, "dy=1: |dx| %g", max_abs(&r, DX));
	emu_run_free(&r);
	ck_assert(emu_run_kernel(&emu_kernel_layernorm, &pol, "threepass", &in, EMU_BE_FAST, &r,
	                         err, sizeof err) != 0);
	ck_assert_msg(strstr(err, "threepass") != NULL, "%s", err);
	emu_run_free(&r);
}
END_TEST

Suite *suite_layernorm(void)
{
	Suite *s = suite_create("layernorm");
	TCase *tc = tcase_create("numerics");
	tcase_add_test(tc, test_fp16_tiny_variance);
	tcase_add_test(tc, test_fp16_variance_underflow);
	tcase_add_test(tc, test_onepass_cancellation);
	tcase_add_test(tc, test_benign_fp32_compute);
	tcase_add_test(tc, test_params);
	suite_add_tcase(s, tc);
	return s;
}
