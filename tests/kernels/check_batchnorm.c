/*
 * check_batchnorm.c — the batch-norm kernel's known answers, each worked out
 * here from the formulas and the formats rather than read off the kernel:
 * the running variance takes the unbiased variance (PyTorch's rule), a
 * constant upstream gradient has dx = 0 and dbeta = N, training-mode y stays
 * below sqrt(N − 1) however small a channel's variance (Samuelson's
 * inequality), eval mode overflows fp16 from |x − running_mean| = 208 at
 * eps 1e-5, twopass and welford agree to 1e-6 in fp32, and fp32's
 * forward and backward follow the formulas evaluated in binary64. The
 * fast == exact agreement is check_kernels.c's, which covers every
 * registered kernel.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

enum { Y, DX, MEAN, VAR, RMEAN, RVAR, DGAMMA, DBETA }; /* the kernel's outputs, in order */

static void bn_run(emu_run *r, const char *spec, const char *variant, const double *x, size_t rows,
                   size_t cols, const emu_kparam *p, size_t np)
{
	emu_policy pol;
	char err[200];
	ck_assert_msg(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK, "%s", err);
	emu_kin in = {x, rows, cols, p, np, 1, NULL, 0};
	ck_assert_msg(emu_run_kernel(&emu_kernel_batchnorm, &pol, variant, &in, EMU_BE_FAST, r, err,
	                             sizeof err) == 0,
	              "%s", err);
	ck_assert(r->out.n == 8 && strcmp(r->out.item[RVAR].name, "running_var") == 0 &&
	          strcmp(r->out.item[DBETA].name, "dbeta") == 0);
}

/* Any number of outputs (backward=0 has five). */
static void bn_run_np(emu_run *r, const char *spec, const char *variant, const double *x,
                      size_t rows, size_t cols, const emu_kparam *p, size_t np)
{
	emu_policy pol;
	char err[200];
	ck_assert_msg(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK, "%s", err);
	emu_kin in = {x, rows, cols, p, np, 1, NULL, 0};
	ck_assert_msg(emu_run_kernel(&emu_kernel_batchnorm, &pol, variant, &in, EMU_BE_FAST, r, err,
	                             sizeof err) == 0,
	              "%s", err);
}

static double out_d(const emu_run *r, int item, size_t j)
{
	return emu_kout_d(NULL, &r->out.item[item], j);
}

/* Channel {1, 3, 5, 7}: mean 4, biased var 5, unbiased var 20/3. With
 * momentum 1 the running statistics are the batch's: running_var must be
 * the unbiased 20/3 (fp32-rounded), not var = 5. With the default momentum
 * 0.1 from rvar = 1: 0.1·(20/3) + 0.9·1, each step rounded to fp32. A
 * constant dy = 1 gives dbeta = N = 4 and dx = dgamma = 0 exactly (the
 * centred values sum to 0 exactly, 1/4 is exact). */
START_TEST(test_running_unbiased)
{
	static const double x[8] = {1, -2, 3, -2, 5, -2, 7, -2}; /* channel 1 constant */
	emu_kparam p[2] = {{"momentum", 1}, {"dy", 1}};
	for (int v = 0; v < 2; v++) {
		const char *variant = v ? "welford" : "twopass";
		emu_run r;
		bn_run(&r, "storage=fp32", variant, x, 4, 2, p, 2);
		ck_assert_msg(out_d(&r, MEAN, 0) == 4 && out_d(&r, VAR, 0) == 5,
		              "%s mean %g var %g", variant, out_d(&r, MEAN, 0), out_d(&r, VAR, 0));
		ck_assert_msg(out_d(&r, RVAR, 0) == (double)(float)(20.0 / 3),
		              "%s running_var %.9g, want the unbiased 20/3", variant,
		              out_d(&r, RVAR, 0));
		ck_assert(out_d(&r, RMEAN, 0) == 4 && out_d(&r, RMEAN, 1) == -2);
		ck_assert(out_d(&r, RVAR, 1) == 0 && out_d(&r, VAR, 1) == 0);
		for (size_t c = 0; c < 2; c++) {
			ck_assert(out_d(&r, DBETA, c) == 4 && out_d(&r, DGAMMA, c) == 0);
			for (size_t n = 0; n < 4; n++)
				ck_assert_msg(out_d(&r, DX, n * 2 + c) == 0, "%s dx[%zu] %g",
				              variant, n * 2 + c, out_d(&r, DX, n * 2 + c));
		}
		emu_run_free(&r);
	}
	emu_run r;
	bn_run(&r, "storage=fp32", "twopass", x, 4, 2, NULL, 0);
	float uv = (float)(20.0 / 3), m = 0.1f, omm = 1.0f - m;
	float want = m * uv + omm * 1.0f;
	ck_assert_msg(out_d(&r, RVAR, 0) == (double)want, "running_var %.9g want %.9g",
	              out_d(&r, RVAR, 0), (double)want);
	emu_run_free(&r);
	t_count("batchnorm: running_var unbiased, dy = 1 gives dx = 0 (outputs)", 3 * 2 * 8);
}
END_TEST

/* Training mode: a channel of tiny spread in fp16 (one element 2^-10 above
 * zeros, N = 8) normalises to at most sqrt(N − 1) = 2.65 in magnitude:
 * nothing near 65504, whatever eps; eval with the same channel's tiny
 * running variance overflows instead (next test). */
START_TEST(test_training_bounded)
{
	enum { N = 8 };
	double x[N] = {0x1p-10, 0, 0, 0, 0, 0, 0, 0};
	for (int e = 0; e < 3; e++) {
		emu_kparam p[1] = {{"eps", e == 0 ? 1e-5 : e == 1 ? 1e-8 : 0}};
		emu_run r;
		bn_run(&r, "storage=fp16", "twopass", x, N, 1, p, 1);
		for (size_t n = 0; n < N; n++) {
			double yv = out_d(&r, Y, n);
			ck_assert_msg(isfinite(yv) && fabs(yv) <= sqrt(N - 1) * 1.01,
			              "eps %g: y[%zu] = %g", p[0].value, n, yv);
		}
		emu_run_free(&r);
	}
	t_count("batchnorm: fp16 training y within sqrt(N - 1) (eps x elements)", 3 * N);
}
END_TEST

/* Eval in fp16 with running_var 0 and eps 1e-5: eps becomes 168·2^-24,
 * sqrt of it 0.0031642..., which fp16 holds as 1659·2^-19; 1/that is
 * 316.03, in fp16 316. So y = 316·x: 207 gives 65412, stored as 65408;
 * 208 gives 65728 ≥ 65520, infinite. In fp32 compute, y = 207·316.2 still
 * rounds under 65520 in fp16 and 208 overflows at the store. */
START_TEST(test_eval_overflow)
{
	emu_kparam p[1] = {{"rvar", 0}};
	double x[2] = {207, 208};
	emu_run r;
	bn_run(&r, "storage=fp16", "eval", x, 1, 2, p, 1);
	ck_assert_msg(out_d(&r, Y, 0) == 65408, "y(207) = %g", out_d(&r, Y, 0));
	ck_assert_msg(isinf(out_d(&r, Y, 1)), "y(208) = %g", out_d(&r, Y, 1));
	ck_assert(r.status == EMU_ST_INF);
	ck_assert(r.be.st.first_set && strcmp(r.be.st.first_step, "norm") == 0);
	emu_run_free(&r);
	/* fp32 compute: 208 · 316.2 is finite there and overflows at the store */
	bn_run(&r, "storage=fp16,compute=fp32", "eval", x, 1, 2, p, 1);
	ck_assert(isinf(out_d(&r, Y, 1)) && out_d(&r, Y, 0) == 65472);
	ck_assert(r.be.st.first_set && strcmp(r.be.st.first_step, "store") == 0);
	emu_run_free(&r);
	/* with rvar = 1 the same inputs are y = x / sqrt(1 + eps): fine */
	emu_kparam q[1] = {{"rvar", 1}};
	bn_run(&r, "storage=fp16", "eval", x, 1, 2, q, 1);
	ck_assert(r.status == EMU_ST_OK && out_d(&r, Y, 1) == 208);
	emu_run_free(&r);
	t_count("batchnorm: fp16 eval overflow from 208 at running_var 0", 6);
}
END_TEST

/* fp32, random inputs: twopass and welford within 1e-6 (relative, and
 * absolute near 0) of each other on y (Welford's mean moves by an ulp,
 * which x − mean magnifies), and both within 1e-5 (relative to the largest value) of the formulas
 * in binary64 — forward, running statistics and backward. */
START_TEST(test_fp32_formula)
{
	enum { N = 16, C = 5 };
	double x[N * C], dy[N * C];
	for (size_t i = 0; i < N * C; i++) {
		x[i] = (double)(float)(3.0 * ((double)(t_rand(81, i) >> 11) * 0x1p-53 - 0.5) +
		                       (double)(i % C));
		dy[i] = emu_sr_bits(1, i) & 1 ? -1.0 : 1.0;
	}
	emu_kparam p[2] = {{"gamma", 1.5}, {"beta", -0.25}};
	emu_run r[2];
	bn_run(&r[0], "storage=fp32", "twopass", x, N, C, p, 2);
	bn_run(&r[1], "storage=fp32", "welford", x, N, C, p, 2);
	uint64_t checked = 0;
	for (size_t c = 0; c < C; c++) {
		double mean = 0, m2 = 0, sdy = 0, sdyx = 0;
		for (size_t n = 0; n < N; n++)
			mean += x[n * C + c] / N;
		for (size_t n = 0; n < N; n++) {
			double d = x[n * C + c] - mean;
			m2 += d * d;
			sdy += dy[n * C + c];
			sdyx += dy[n * C + c] * d;
		}
		double var = m2 / N, invstd = 1 / sqrt(var + 1e-5);
		ck_assert(fabs(out_d(&r[0], RVAR, c) - (0.1 * m2 / (N - 1) + 0.9)) < 1e-5);
		ck_assert(fabs(out_d(&r[0], DGAMMA, c) - sdyx * invstd) < 1e-4 * (1 + fabs(sdyx)));
		ck_assert(out_d(&r[0], DBETA, c) == sdy);
		for (size_t n = 0; n < N; n++) {
			size_t i = n * C + c;
			double d = x[i] - mean;
			double yv = 1.5 * d * invstd - 0.25;
			double dxv =
			    (dy[i] - sdy / N - d * invstd * invstd * sdyx / N) * 1.5 * invstd;
			for (int v = 0; v < 2; v++) {
				ck_assert_msg(fabs(out_d(&r[v], Y, i) - yv) < 1e-5 * 4,
				              "v %d y[%zu] %.9g want %.9g", v, i,
				              out_d(&r[v], Y, i), yv);
				ck_assert_msg(fabs(out_d(&r[v], DX, i) - dxv) < 1e-5 * 4,
				              "v %d dx[%zu] %.9g want %.9g", v, i,
				              out_d(&r[v], DX, i), dxv);
			}
			double a = out_d(&r[0], Y, i), b = out_d(&r[1], Y, i);
			ck_assert_msg(fabs(a - b) <= 1e-6 * (1 + fabs(a)),
			              "twopass %.9g welford %.9g at %zu", a, b, i);
			checked++;
		}
	}
	emu_run_free(&r[0]);
	emu_run_free(&r[1]);
	t_count("batchnorm: fp32 twopass ~ welford ~ binary64 formulas (elements)", checked);
}
END_TEST

/* Recomputation (emu/engine/run.c's emu_recompute_compare): eval run in fp32
 * compute, then recomputed in fp16 compute. y(207) moves from 65472 to
 * 65408 and y(−1) from −316.25 to −316 (fp16's invstd is 316, not 316.2),
 * y(0) stays 0: two differ, both finite; y(208) is inf
 * in both (the fp32 product overflows at the fp16 store), so it is the same
 * number; mean and var are the same values in two formats. Against a run
 * of rvar = 1, y(208) is finite: inf gone. */
START_TEST(test_recompute)
{
	emu_kparam p[2] = {{"rvar", 0}, {"backward", 0}};
	double x[4] = {207, 208, -1, 0};
	emu_run a, b;
	bn_run_np(&a, "storage=fp16,compute=fp32", "eval", x, 2, 2, p, 2);
	bn_run_np(&b, "storage=fp16", "eval", x, 2, 2, p, 2);
	emu_recompute_item it[EMU_KOUT_MAX];
	char err[200];
	ck_assert(emu_recompute_compare(&a, &b, it, err, sizeof err) == 0);
	ck_assert_msg(it[0].n == 4 && it[0].differ == 2 && it[0].first_differ == 0 &&
	                  it[0].new_nonfinite == 0 && it[0].gone_nonfinite == 0,
	              "y: differ %zu first %zu", it[0].differ, it[0].first_differ);
	ck_assert(it[1].differ == 0 && it[2].differ == 0);
	emu_run c;
	emu_kparam q[2] = {{"rvar", 1}, {"backward", 0}};
	bn_run_np(&c, "storage=fp16", "eval", x, 2, 2, q, 2);
	ck_assert(emu_recompute_compare(&b, &c, it, err, sizeof err) == 0);
	ck_assert(it[0].gone_nonfinite == 1 && it[0].new_nonfinite == 0);
	ck_assert(emu_recompute_compare(&c, &b, it, err, sizeof err) == 0);
	ck_assert(it[0].new_nonfinite == 1);
	/* a run with other outputs (backward on: dx, dgamma, dbeta) is refused */
	emu_run d;
	bn_run_np(&d, "storage=fp16", "eval", x, 2, 2, p, 1);
	ck_assert(emu_recompute_compare(&b, &d, it, err, sizeof err) != 0);
	emu_run_free(&a);
	emu_run_free(&b);
	emu_run_free(&c);
	emu_run_free(&d);
	t_count("batchnorm: recompute comparisons (differ, inf gone, new inf, refused)", 4);
}
END_TEST

/* N = 1 is refused in training (the unbiased variance divides by 0), as
 * PyTorch refuses it; eval takes it. */
START_TEST(test_refusals)
{
	emu_policy pol;
	char err[200];
	ck_assert(emu_policy_parse("storage=fp32", &pol, err, sizeof err) == EMU_OK);
	double x[3] = {1, 2, 3};
	emu_kin in = {x, 1, 3, NULL, 0, 1, NULL, 0};
	emu_run r;
	ck_assert(emu_run_kernel(&emu_kernel_batchnorm, &pol, "twopass", &in, EMU_BE_FAST, &r, err,
	                         sizeof err) != 0);
	ck_assert_msg(strstr(err, "at least 2 rows") != NULL, "%s", err);
	emu_run_free(&r);
	ck_assert(emu_run_kernel(&emu_kernel_batchnorm, &pol, "eval", &in, EMU_BE_FAST, &r, err,
	                         sizeof err) == 0);
	emu_run_free(&r);
	emu_kparam p[1] = {{"momentum", 2}};
	in.rows = 3, in.cols = 1, in.params = p, in.nparams = 1;
	ck_assert(emu_run_kernel(&emu_kernel_batchnorm, &pol, "twopass", &in, EMU_BE_FAST, &r, err,
	                         sizeof err) != 0);
	ck_assert_msg(strstr(err, "momentum") != NULL, "%s", err);
	emu_run_free(&r);
	t_count("batchnorm: refusals (N = 1 in training, momentum out of range)", 3);
}
END_TEST

Suite *suite_batchnorm(void)
{
	Suite *s = suite_create("batchnorm");
	TCase *tc = tcase_create("batchnorm");
	tcase_add_test(tc, test_running_unbiased);
	tcase_add_test(tc, test_training_bounded);
	tcase_add_test(tc, test_eval_overflow);
	tcase_add_test(tc, test_fp32_formula);
	tcase_add_test(tc, test_recompute);
	tcase_add_test(tc, test_refusals);
	suite_add_tcase(s, tc);
	return s;
}
