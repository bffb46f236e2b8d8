/*
 * check_bce.c — what the BCE-with-logits kernel's own arithmetic gives where
 * the naive form is known to break, against numbers worked out by hand:
 *   - fp16, x = 100: exp(−100) underflows to 0, p = 1 exactly, so
 *     log(1 − p) = log 0 = −inf (divbyzero, step log_q): y = 0 gives
 *     loss +inf, y = 1 gives 0·(−inf) = NaN. Stable: 100 + log1p(0) = 100
 *     exactly (y = 0) and 100 − 100 + 0 = 0 (y = 1);
 *   - fp16, x = −100: exp(100) overflows (step exp), p = 1/inf = 0,
 *     log p = −inf and y·log p = 0·(−inf) = NaN. Stable: 0;
 *   - `.float()` (compute=fp32) at x = 10: in fp16 1 + e^-10 rounds to 1
 *     (e^-10 ≈ 4.5e-5 < 2^-11), loss inf; in fp32 it does not, and the loss
 *     is log(1 + e^10) = 10.0000454 up to the cancellation in 1 − p
 *     (2^-24/e^-10 ≈ 1.3e-3 absolute). fp32 only moves the cliff: from
 *     x ≥ 11·ln 2 ≈ 7.6 to x ≥ 24·ln 2 ≈ 16.6, so x = 17 is inf again;
 *   - moderate |x| <= 2 in fp32 (130 cases, both targets): both finite;
 *     against the 256-bit truth the stable loss is within 1 ulp (one exact
 *     term plus one correctly rounded log1p, then one rounding; measured
 *     0.72) and the naive one within 6 (four roundings reach p, and log
 *     near 1 turns p's relative error into an absolute one: at x = 1.75,
 *     y = 1, −log p ≈ 0.16 and 1.5 ulps of p become 5.3 ulps of the loss).
 *     So naive and stable agree within 2 ulps in 120 of the 130 cases and
 *     within 5 in all; for x >= 0 their gradients are the same operations,
 *     bit for bit, for x < 0 within 2 ulps;
 *   - the drawn targets are bit 31 of emu_sr_bits(seed, j).
 * The fast == exact agreement is check_kernels.c's (every registered kernel).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

enum { LOSS, GRAD }; /* the kernel's outputs, in order */

/* Run bce on the fast backend (target < 0: drawn from the seed) and compare it
 * with the truth of the stored inputs. */
static void bce_run(emu_run *r, const char *spec, const char *variant, const double *x, size_t n,
                    int target, uint64_t seed)
{
	emu_policy pol;
	char err[200];
	ck_assert_msg(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK, "%s", err);
	emu_kparam p[1] = {{"target", target}};
	emu_kin in = {x, 1, n, p, target >= 0 ? 1 : 0, seed, NULL, 0};
	emu_run t;
	ck_assert_msg(emu_run_kernel(&emu_kernel_bce, &pol, variant, &in, EMU_BE_FAST, r, err,
	                             sizeof err) == 0,
	              "%s", err);
	ck_assert_msg(emu_run_kernel(&emu_kernel_bce, &pol, variant, &in, EMU_BE_TRUTH, &t, err,
	                             sizeof err) == 0,
	              "%s", err);
	ck_assert(r->out.n == 2 && strcmp(r->out.item[LOSS].name, "loss") == 0 &&
	          strcmp(r->out.item[GRAD].name, "grad") == 0);
	emu_run_compare(r, &(emu_truth){.stored = t, .same = true});
	emu_run_free(&t);
}

static double out(const emu_run *r, int item, size_t j)
{
	return emu_kout_d(NULL, &r->out.item[item], j);
}

static const char *first_step(const emu_run *r)
{
	return r->be.st.first_set ? r->be.st.first_step : "-";
}

/* one logit, one target: the loss alone */
static double loss1(const char *spec, const char *variant, double x, int y, emu_run *keep)
{
	emu_run r;
	bce_run(&r, spec, variant, &x, 1, y, 1);
	double l = out(&r, LOSS, 0);
	if (keep)
		*keep = r;
	else
		emu_run_free(&r);
	return l;
}

START_TEST(test_fp16_x100)
{
	const double x = 100;
	for (int y = 0; y < 2; y++) {
		emu_run r;
		double l = loss1("storage=fp16", "naive", x, y, &r);
		/* y = 0: −(0·0 + 1·(−inf)) = +inf; y = 1: −(1·0 + 0·(−inf)) = NaN */
		ck_assert_msg(y ? isnan(l) : (isinf(l) && l > 0), "naive y=%d: loss %a", y, l);
		ck_assert_int_eq(r.status, y ? EMU_ST_NAN : EMU_ST_INF);
		ck_assert_msg(
		    r.be.st.first_set && r.be.st.first_op == EMU_OP_LOG &&
		        strcmp(r.be.st.first_step, "log_q") == 0 &&
		        r.be.st.first_flags == EMU_FLAG_DIVBYZERO && r.be.st.first_index == 0,
		    "naive y=%d: first %s at %s", y, emu_op_name(r.be.st.first_op), first_step(&r));
		ck_assert(out(&r, GRAD, 0) == 1.0 - y); /* p − y with p = 1 */
		emu_run_free(&r);

		l = loss1("storage=fp16", "stable", x, y, &r);
		ck_assert_msg(l == (y ? 0.0 : 100.0) && !signbit(l), "stable y=%d: loss %a", y, l);
		ck_assert_msg(!r.be.st.first_set, "stable y=%d: first %s", y, first_step(&r));
		ck_assert(out(&r, GRAD, 0) == 1.0 - y);
		emu_run_free(&r);
	}
}
END_TEST

START_TEST(test_fp16_xm100)
{
	const double x = -100;
	emu_run r;
	double l = loss1("storage=fp16", "naive", x, 0, &r);
	ck_assert_msg(isnan(l), "naive: loss %a", l);
	ck_assert_int_eq(r.status, EMU_ST_NAN);
	ck_assert_msg(r.be.st.first_set && r.be.st.first_op == EMU_OP_EXP &&
	                  strcmp(r.be.st.first_step, "exp") == 0 &&
	                  (r.be.st.first_flags & EMU_FLAG_OVERFLOW),
	              "naive: first %s at %s", emu_op_name(r.be.st.first_op), first_step(&r));
	ck_assert(out(&r, GRAD, 0) == 0); /* p = 1/inf = 0, y = 0 */
	emu_run_free(&r);
	for (int y = 0; y < 2; y++) {
		/* max(x,0) − x·y + log1p(e^-100 → 0): 0 for y = 0, 100 for y = 1 */
		l = loss1("storage=fp16", "stable", x, y, &r);
		ck_assert_msg(l == (y ? 100.0 : 0.0), "stable y=%d: loss %a", y, l);
		ck_assert_msg(!r.be.st.first_set, "stable y=%d: first %s", y, first_step(&r));
		emu_run_free(&r);
	}
}
END_TEST

START_TEST(test_float_before_loss)
{
	const double want = 10 + log1p(exp(-10.0)); /* log(1 + e^10) */
	emu_run r;
	double l = loss1("storage=fp16", "naive", 10, 0, &r);
	ck_assert_msg(isinf(l) && strcmp(first_step(&r), "log_q") == 0, "fp16: loss %a at %s", l,
	              first_step(&r));
	emu_run_free(&r);
	l = loss1("storage=fp16,compute=fp32", "naive", 10, 0, &r);
	ck_assert_msg(isfinite(l) && fabs(l - want) < 2e-3 && !r.be.st.first_set,
	              "fp32 compute: loss %.9g, want %.9g", l, want);
	emu_run_free(&r);
	/* stable in fp16: log1p(4.5e-5) is far below half an ulp of 10 */
	ck_assert(loss1("storage=fp16", "stable", 10, 0, NULL) == 10);
	/* fp32 moves the cliff to 24·ln 2 ≈ 16.6 */
	ck_assert(isfinite(loss1("storage=fp32", "naive", 16, 0, NULL)));
	l = loss1("storage=fp32", "naive", 17, 0, &r);
	ck_assert_msg(isinf(l) && strcmp(first_step(&r), "log_q") == 0, "fp32 x=17: loss %a", l);
	emu_run_free(&r);
	ck_assert(isinf(loss1("storage=fp16,compute=fp32", "naive", 100, 0, NULL)));
	ck_assert(loss1("storage=fp32", "stable", 17, 0, NULL) == (float)(17 + log1p(exp(-17.0))));
}
END_TEST

/* |a − b| in ulps of binary32 at the larger of the two */
static double ulps32(double a, double b)
{
	double m = fmax(fabs(a), fabs(b));
	int e;
	frexp(m, &e);
	return m == 0 ? 0 : fabs(a - b) / ldexp(1, e - 24);
}

START_TEST(test_moderate_agree)
{
	uint64_t n = 0, beyond2 = 0;
	for (int k = -32; k <= 32; k++) {
		double x = k / 16.0;
		for (int y = 0; y < 2; y++) {
			emu_run a, b;
			double la = loss1("storage=fp32", "naive", x, y, &a);
			double lb = loss1("storage=fp32", "stable", x, y, &b);
			double u = ulps32(la, lb);
			ck_assert_msg(isfinite(la) && isfinite(lb) && u <= 5,
			              "x=%g y=%d: naive %a stable %a (%g ulps)", x, y, la, lb, u);
			ck_assert_msg(a.m[LOSS].max_ulp <= 6 && b.m[LOSS].max_ulp <= 1,
			              "x=%g y=%d: against truth naive %g stable %g ulps", x, y,
			              a.m[LOSS].max_ulp, b.m[LOSS].max_ulp);
			if (x >= 0) /* σ(x) = 1/(1 + e^-x): the same operations */
				ck_assert_msg(out(&a, GRAD, 0) == out(&b, GRAD, 0),
				              "x=%g y=%d: grad %a %a", x, y, out(&a, GRAD, 0),
				              out(&b, GRAD, 0));
			else
				ck_assert(ulps32(out(&a, GRAD, 0), out(&b, GRAD, 0)) <= 2);
			beyond2 += u > 2;
			emu_run_free(&a);
			emu_run_free(&b);
			n++;
		}
	}
	ck_assert_msg(beyond2 <= 10, "%" PRIu64 " of %" PRIu64 " cases beyond 2 ulps", beyond2, n);
	t_count("bce: naive vs stable vs truth, fp32, |x| <= 2", n);
}
END_TEST

/* x = 0: σ = 1/2 exactly, so grad_j = (1/2 − y_j)/64 = ±2^-7 names y_j */
START_TEST(test_drawn_targets)
{
	enum { N = 64 };
	double x[N] = {0};
	const uint64_t seed = 0x5eed;
	emu_run r;
	bce_run(&r, "storage=fp32", "stable", x, N, -1, seed);
	int ones = 0;
	for (size_t j = 0; j < N; j++) {
		int y = (int)(emu_sr_bits(seed, j) >> 31);
		ones += y;
		ck_assert_msg(out(&r, GRAD, j) == (y ? -0x1p-7 : 0x1p-7), "j=%zu: grad %a, y %d", j,
		              out(&r, GRAD, j), y);
	}
	ck_assert_msg(ones > 16 && ones < 48, "%d ones of %d", ones, N);
	/* loss_j = log1p(1) = ln 2 for either target; the mean of 64 of them
	 * through a sequential fp32 sum is within 63 roundings of it */
	ck_assert_msg(ulps32(out(&r, LOSS, 0), log(2.0)) <= 64, "loss %a", out(&r, LOSS, 0));
	emu_run_free(&r);
	t_count("bce: drawn targets", N);
}
END_TEST

Suite *suite_bce(void)
{
	Suite *s = suite_create("bce");
	TCase *tc = tcase_create("bce");
	tcase_add_test(tc, test_fp16_x100);
	tcase_add_test(tc, test_fp16_xm100);
	tcase_add_test(tc, test_float_before_loss);
	tcase_add_test(tc, test_moderate_agree);
	tcase_add_test(tc, test_drawn_targets);
	suite_add_tcase(s, tc);
	return s;
}
