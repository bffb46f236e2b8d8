/*
 * check_metrics.c — what a run reports against truth (emu/engine/run.c,
 * docs/run.md): NaN and infinite outputs have error inf, errors end to end
 * (the original inputs' truth) and of the arithmetic alone (the stored
 * inputs' truth), the inputs that storing flushed or overflowed, and the
 * status they give. Expectations are computed here from the inputs, not by
 * the code under test.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

enum { S_METRICS = 0x3e7a0001 };

struct mrun {
	emu_run f;
	emu_truth t;
};

static void mrun(struct mrun *m, const char *kernel, const char *spec, const char *variant,
                 const double *x, size_t rows, size_t cols, const emu_kparam *p, size_t np)
{
	emu_policy pol;
	char err[256];
	ck_assert_msg(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK, "%s", err);
	const emu_kernel *k = emu_kernel_by_name(kernel);
	ck_assert(k);
	emu_kin in = {x, rows, cols, p, np, 1, NULL, 0};
	ck_assert_msg(emu_run_kernel(k, &pol, variant, &in, EMU_BE_FAST, &m->f, err, sizeof err) == 0,
	              "%s", err);
	ck_assert_msg(emu_run_truth(k, &pol, variant, &in, &m->t, err, sizeof err) == 0, "%s", err);
	emu_run_compare(&m->f, &m->t);
}

static void mrun_free(struct mrun *m)
{
	emu_run_free(&m->f);
	emu_truth_free(&m->t);
}

static int item(const emu_run *r, const char *name)
{
	for (int i = 0; i < r->out.n; i++)
		if (strcmp(r->out.item[i].name, name) == 0)
			return i;
	ck_abort_msg("no output %s", name);
	return -1;
}

/* fp16 layernorm of a constant row with eps = 1e-8: eps is 0 in fp16, so
 * rsqrt(0) = inf and y = 0·inf = NaN; the truth (eps exact) is y = 0. */
START_TEST(test_nan_output_has_error_inf)
{
	double x[64];
	for (int i = 0; i < 64; i++)
		x[i] = 1;
	emu_kparam p = {"eps", 1e-8};
	struct mrun m;
	mrun(&m, "layernorm", "storage=fp16", NULL, x, 1, 64, &p, 1);
	int y = item(&m.f, "y");
	ck_assert(m.f.status == EMU_ST_NAN);
	ck_assert(isnan(emu_kout_d(&m.f.be, &m.f.out.item[y], 0)));
	ck_assert(mpfr_zero_p(emu_kout_mp(&emu_truth_e2e(&m.t)->out.item[y], 0)));
	ck_assert(isinf(m.f.m[y].rel_err) && isinf(m.f.m[y].max_ulp));
	ck_assert(isinf(m.f.m[y].arith_rel_err) && isinf(m.f.m[y].arith_max_ulp));
	/* var is 0 in both: exact */
	int v = item(&m.f, "var");
	ck_assert(m.f.m[v].rel_err == 0 && m.f.m[v].max_ulp == 0);
	mrun_free(&m);
}
END_TEST

/* An e4m3 sum whose result is NaN (the sum passes 448 in e4m3, which has no
 * inf): relative error inf, never 0. */
START_TEST(test_nan_sum_has_error_inf)
{
	double x[64];
	for (int i = 0; i < 64; i++)
		x[i] = (i % 3 == 0 ? -1 : 1) * (256 + 8 * i);
	struct mrun m;
	mrun(&m, "accum", "storage=e4m3", "sum:seq", x, 1, 64, NULL, 0);
	ck_assert(m.f.status == EMU_ST_NAN);
	ck_assert(isinf(m.f.m[0].rel_err) && isinf(m.f.m[0].max_ulp));
	mrun_free(&m);
}
END_TEST

/* An infinite output against a finite truth; the same infinity agrees. */
START_TEST(test_inf_output)
{
	double x[2] = {60000, 60000};
	struct mrun m;
	mrun(&m, "accum", "storage=fp16", "sum:seq", x, 1, 2, NULL, 0);
	ck_assert(m.f.status == EMU_ST_INF);
	ck_assert(isinf(m.f.m[0].rel_err) && isinf(m.f.m[0].max_ulp));
	mrun_free(&m);
	double y[2] = {INFINITY, 1};
	mrun(&m, "accum", "storage=fp16", "sum:seq", y, 1, 2, NULL, 0);
	ck_assert(m.f.status == EMU_ST_INF);
	ck_assert(m.f.m[0].rel_err == 0 && m.f.m[0].max_ulp == 0); /* inf against inf */
	mrun_free(&m);
}
END_TEST

/* e4m3 storage of N(0, 1e-3): every |x| ≤ 2^-10 becomes 0 (half the
 * smallest subnormal 2^-9, ties to even); the sum is then far from the
 * original inputs' sum, while the fp32 arithmetic on the stored values
 * is exact. */
START_TEST(test_storage_error_is_reported)
{
	enum { N = 4096 };
	static double x[N];
	uint64_t flushed = 0, changed = 0;
	double sum = 0;
	for (size_t i = 0; i < N; i++) {
		double u = (double)(t_rand(11, i) >> 11) * 0x1p-53 - 0.5;
		x[i] = 4e-3 * u; /* |x| < 2e-3: most below 2^-10 */
		flushed += fabs(x[i]) <= 0x1p-10 && x[i] != 0;
		changed += 1; /* none of these is an e4m3 value... */
		sum += x[i];
	}
	(void)sum;
	struct mrun m;
	mrun(&m, "accum", "storage=e4m3,compute=fp32", "sum:seq", x, 1, N, NULL, 0);
	ck_assert(!m.t.same);
	ck_assert_msg(m.f.be.st.in_n == N, "%llu", (unsigned long long)m.f.be.st.in_n);
	ck_assert_msg(m.f.be.st.in_flushed == flushed, "flushed %llu, expected %llu",
	              (unsigned long long)m.f.be.st.in_flushed, (unsigned long long)flushed);
	ck_assert(m.f.be.st.in_overflow == 0);
	ck_assert(m.f.be.st.in_changed <= changed && m.f.be.st.in_changed >= flushed);
	ck_assert(m.f.status == EMU_ST_UNDERFLOW); /* inputs became zero */
	ck_assert_msg(m.f.m[0].arith_rel_err == 0, "%g", m.f.m[0].arith_rel_err);
	ck_assert_msg(m.f.m[0].rel_err > 0.01, "%g", m.f.m[0].rel_err);
	mrun_free(&m);

	/* all of a tensor flushed: the sum is 0, the truth is not */
	for (size_t i = 0; i < N; i++)
		x[i] = ldexp(1 + (double)(i % 7) / 8, -12);
	mrun(&m, "accum", "storage=e4m3,compute=fp32", "sum:seq", x, 1, N, NULL, 0);
	ck_assert(m.f.be.st.in_flushed == N);
	ck_assert(m.f.status == EMU_ST_UNDERFLOW);
	ck_assert(emu_kout_d(&m.f.be, &m.f.out.item[0], 0) == 0);
	ck_assert(m.f.m[0].rel_err == 1 && m.f.m[0].lost == 1);
	ck_assert(m.f.m[0].arith_rel_err == 0);
	mrun_free(&m);
}
END_TEST

/* Storing 1e5 in fp16 with overflow=sat gives 65504 and raises overflow:
 * status overflow, and the error against 100001 is (100001 − 65505)/100001. */
START_TEST(test_storage_overflow)
{
	double x[2] = {1e5, 1};
	struct mrun m;
	mrun(&m, "accum", "storage=fp16,compute=fp32,overflow=sat", "sum:seq", x, 1, 2, NULL, 0);
	ck_assert(m.f.be.st.in_overflow == 1 && m.f.be.st.in_flushed == 0);
	ck_assert(m.f.be.st.in_changed == 1);
	ck_assert(m.f.status == EMU_ST_OVERFLOW);
	double want = (100001.0 - 65505.0) / 100001.0;
	ck_assert_msg(fabs(m.f.m[0].rel_err - want) < 1e-12, "%.17g", m.f.m[0].rel_err);
	ck_assert(m.f.m[0].arith_rel_err == 0);
	mrun_free(&m);
}
END_TEST

/* The stored-input counts of FAST's array path (emu_input, unit stride)
 * against their definitions applied here to each input x, its stored value
 * v and its flags: changed (v is not x, sign included; NaN stays NaN),
 * overflowed (the flag, or finite to not finite), flushed (a finite nonzero
 * to a zero); on formats with and without infinities, NaN, a sign or zero,
 * saturating, over every kind of input and more than one chunk. */
START_TEST(test_input_counts)
{
	static const struct {
		const char *fmt;
		bool sat;
	} cases[] = {{"fp16", false}, {"fp16", true},  {"bf16", false},    {"e4m3", false},
	             {"e4m3", true},  {"e5m2", false}, {"e8m0", false},    {"e2m1", false},
	             {"e3m2", false}, {"fp32", false}, {"e5m2fnuz", false}};
	enum { N = 5000 };
	static double x[N];
	static uint8_t fl[N];
	const double special[] = {NAN,      -NAN,    INFINITY, -INFINITY, 0.0,      -0.0,
	                          1e-300,   -1e-300, 65504,    65520,     -65520,   1e5,
	                          448,      464,     -1e38,    0x1p-24,   0x1p-25,  0x1p-26,
	                          -0x1p-25, 6e-8,    1,        -1,        0x1p-149, 0x1p-150};
	for (size_t i = 0; i < N; i++) {
		uint64_t r = t_rand(S_METRICS, i);
		x[i] = i < ARRAY_SIZE(special) || r % 5 == 0
		           ? special[(i < ARRAY_SIZE(special) ? i : r >> 8) % ARRAY_SIZE(special)]
		           : ldexp((double)(r >> 11) * 0x1p-53, (int)(r % 80) - 40) *
		                 (r >> 10 & 1 ? -1 : 1);
	}
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		const emu_format *f = t_fmt(cases[c].fmt);
		emu_env env = EMU_ENV_DEFAULT;
		env.sat = cases[c].sat;
		emu_be be;
		emu_be_init(&be, EMU_BE_FAST, &env);
		emu_vec *v = emu_vec_new(&be, N);
		ck_assert(v);
		memset(fl, 0, sizeof fl);
		emu_input(&be, EMU_STEP_INPUT, f, emu_row(v, 0), x, 1, N, 0, fl);
		uint64_t ch = 0, ov = 0, fz = 0;
		for (size_t i = 0; i < N; i++) {
			double y = v->d[i];
			ch +=
			    isnan(x[i]) ? !isnan(y) : !(y == x[i] && !signbit(y) == !signbit(x[i]));
			ov += (fl[i] & EMU_FLAG_OVERFLOW) || (isfinite(x[i]) && !isfinite(y));
			fz += y == 0 && x[i] != 0 && isfinite(x[i]);
		}
		ck_assert_msg(be.st.in_n == N && be.st.in_changed == ch &&
		                  be.st.in_overflow == ov && be.st.in_flushed == fz,
		              "%s%s: n %llu changed %llu/%llu overflow %llu/%llu flushed %llu/%llu",
		              f->name, cases[c].sat ? " sat" : "", (unsigned long long)be.st.in_n,
		              (unsigned long long)be.st.in_changed, (unsigned long long)ch,
		              (unsigned long long)be.st.in_overflow, (unsigned long long)ov,
		              (unsigned long long)be.st.in_flushed, (unsigned long long)fz);
		ck_assert(ch > 0 && fz + ov > 0);
		emu_be_free(&be);
	}
	t_count("stored-input counts checked", ARRAY_SIZE(cases) * N);
}
END_TEST

/* Inputs exact in the storage format: one truth run, both errors equal. */
START_TEST(test_exact_inputs_one_truth)
{
	double x[4] = {1, 0.5, 0.25, 3};
	struct mrun m;
	mrun(&m, "accum", "storage=fp16", "sum:seq", x, 1, 4, NULL, 0);
	ck_assert(m.t.same && m.f.be.st.in_changed == 0 && m.f.be.st.in_n == 4);
	ck_assert(m.f.status == EMU_ST_OK);
	ck_assert(m.f.m[0].rel_err == 0 && m.f.m[0].arith_rel_err == 0);
	mrun_free(&m);
}
END_TEST

/* With a scaling recipe the stored-input truth starts from exactly what the
 * kernel's load gives: the arithmetic error is the fp32 sum's (below 2^-20),
 * while the end-to-end error is e4m3's quantisation (above 1e-4). */
START_TEST(test_recipe_truths)
{
	static const char *const recipes[] = {"tensor", "mx32:floor", "mx32:rceil", "tile128",
	                                      "delayed:4:0"};
	double x[32];
	for (size_t i = 0; i < 32; i++)
		x[i] = 0.1 + 0.37 * (double)i;
	for (size_t r = 0; r < ARRAY_SIZE(recipes); r++) {
		char spec[96];
		snprintf(spec, sizeof spec, "storage=e4m3,compute=fp32,scale=%s", recipes[r]);
		struct mrun m;
		mrun(&m, "accum", spec, "sum:seq", x, 1, 32, NULL, 0);
		ck_assert_msg(m.f.m[0].arith_rel_err < 0x1p-20, "%s: %g", spec,
		              m.f.m[0].arith_rel_err);
		ck_assert_msg(m.f.m[0].rel_err > 1e-4 && m.f.m[0].rel_err < 0.1, "%s: %g", spec,
		              m.f.m[0].rel_err);
		ck_assert(m.f.be.st.in_n == 32);
		mrun_free(&m);
	}
}
END_TEST

/* Stochastically rounded storage: the stored-input truth replays the very
 * draws the kernel's load made (an fp32 sum of five e4m3 values is exact,
 * so arith_rel_err is 0 for every seed), and the seeds do differ. */
START_TEST(test_sr_storage_replayed)
{
	const double x[5] = {0.3, 0.7, 1.1, 2.3, 0.01};
	double first = NAN;
	bool differ = false;
	for (int seed = 1; seed <= 16; seed++) {
		char spec[96];
		snprintf(spec, sizeof spec, "storage=e4m3,compute=fp32,round=sr,seed=%d", seed);
		struct mrun m;
		mrun(&m, "accum", spec, "sum:seq", x, 1, 5, NULL, 0);
		double v = emu_kout_d(&m.f.be, &m.f.out.item[0], 0);
		if (seed == 1)
			first = v;
		differ |= v != first;
		ck_assert_msg(m.f.m[0].arith_rel_err == 0, "seed %d: %g", seed,
		              m.f.m[0].arith_rel_err);
		ck_assert(m.f.m[0].rel_err > 0);
		mrun_free(&m);
	}
	ck_assert(differ);
}
END_TEST

Suite *suite_metrics(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("truths");
	tcase_add_test(tc, test_nan_output_has_error_inf);
	tcase_add_test(tc, test_nan_sum_has_error_inf);
	tcase_add_test(tc, test_inf_output);
	tcase_add_test(tc, test_storage_error_is_reported);
	tcase_add_test(tc, test_storage_overflow);
	tcase_add_test(tc, test_exact_inputs_one_truth);
	tcase_add_test(tc, test_input_counts);
	tcase_add_test(tc, test_recipe_truths);
	tcase_add_test(tc, test_sr_storage_replayed);
	suite_add_tcase(s, tc);
	return s;
}
