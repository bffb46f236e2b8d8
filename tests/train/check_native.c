/*
 * check_native.c — bench/train_native.c, the native-float trainer that
 * table 11 of the bench times the emulator against, is the same trainer:
 *  - with exp, log and 1/√x evaluated in double and rounded to float (the
 *    correctly rounded values but for rare inputs, as the emulator's), its
 *    losses, gradient norms and parameters after 5 steps equal emu_train's
 *    under the fp32 policy bit for bit, on the default model and on the
 *    bench's ~100k-parameter one;
 *  - with libm's expf, logf and 1/sqrtf (what the bench times) its losses
 *    stay within a relative 1e-5 of those (the figure is printed);
 *  - the settings it does not have are refused.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/train_native.h"
#include "tests/lib.h"

#define STEPS 5

/* STEPS steps of emu_train (fp32) and of the native trainer (cr and libm)
 * on the same batches; returns the largest relative loss difference of the
 * libm trainer; *same counts the parameters compared bit for bit */
static double run(const emu_train_cfg *c, const char *model, uint64_t *same)
{
	char err[300];
	emu_train *ref = emu_train_new(c, err, sizeof err), *e = emu_train_new(c, err, sizeof err);
	ck_assert_msg(ref && e, "%s", err);
	native_train *cr = native_train_new(c, ref, true, err, sizeof err),
	             *lm = native_train_new(c, ref, false, err, sizeof err);
	ck_assert_msg(cr && lm, "%s", err);
	ck_assert(native_train_nparams(cr) == emu_train_nparams(e));
	int *in = malloc(c->batch * c->seq * sizeof *in),
	    *tg = malloc(c->batch * c->seq * sizeof *tg);
	ck_assert(in && tg);
	double worst = 0;
	for (uint64_t s = 0; s < STEPS; s++) {
		emu_train_row r;
		native_row a, b;
		ck_assert(emu_train_step(e, &r) == 0);
		emu_train_batch(ref, false, s, in, tg);
		native_train_step(cr, in, tg, &a);
		native_train_step(lm, in, tg, &b);
		ck_assert_msg(
		    a.loss == r.loss && a.grad_norm == r.grad_norm && a.lr == r.lr,
		    "%s step %llu: native loss %.9g |g| %.9g, emulated fp32 %.9g |g| %.9g", model,
		    (unsigned long long)s + 1, a.loss, a.grad_norm, r.loss, r.grad_norm);
		double rel = fabs(b.loss - r.loss) / fabs(r.loss);
		ck_assert_msg(rel < 1e-5, "%s step %llu: libm loss %.9g, emulated %.9g", model,
		              (unsigned long long)s + 1, b.loss, r.loss);
		if (rel > worst)
			worst = rel;
	}
	size_t n, k = 0;
	const float *p = native_train_params(cr, &n);
	for (size_t i = 0; i < emu_train_ntensors(e); i++) {
		double *v, *g;
		size_t cnt;
		const char *name = emu_train_tensor(e, i, &v, &g, &cnt);
		for (size_t j = 0; j < cnt; j++, k++)
			ck_assert_msg((double)p[k] == v[j] && !signbit(p[k]) == !signbit(v[j]),
			              "%s: %s[%zu] after %d steps: native %.9g, emulated %.9g",
			              model, name, j, STEPS, (double)p[k], v[j]);
	}
	ck_assert(k == n);
	*same += k;
	free(in);
	free(tg);
	native_train_free(cr);
	native_train_free(lm);
	emu_train_free(ref);
	emu_train_free(e);
	return worst;
}

START_TEST(test_native_fp32)
{
	emu_train_cfg c;
	emu_train_cfg_default(&c);
	c.val_every = 0;
	uint64_t same = 0;
	double w1 = run(&c, "default model", &same);
	c.d = 64, c.heads = 4; /* the bench's model: 102,144 parameters */
	double w2 = run(&c, "d 64 model", &same);
	t_count("native trainer's parameters == emulated fp32 after 5 steps", same);
	printf("train native: %d steps, losses with libm's expf/logf/1/sqrtf against the emulated "
	       "fp32 ones: largest relative difference %.3g (default model), %.3g (d 64); with "
	       "exp, log, 1/sqrt in double: identical\n",
	       STEPS, w1, w2);
}
END_TEST

START_TEST(test_native_refuses)
{
	emu_train_cfg c;
	char err[300];
	emu_train_cfg_default(&c);
	emu_train *ref = emu_train_new(&c, err, sizeof err);
	ck_assert_msg(ref != NULL, "%s", err);
	c.micro = 2;
	ck_assert(native_train_new(&c, ref, false, err, sizeof err) == NULL);
	ck_assert(strstr(err, "micro-batch") != NULL);
	c.micro = 1, c.d = 64;
	ck_assert(native_train_new(&c, ref, false, err, sizeof err) == NULL);
	ck_assert(strstr(err, "parameters") != NULL);
	emu_train_free(ref);
}
END_TEST

Suite *suite_native(void)
{
	Suite *s = suite_create("native");
	TCase *tc = tcase_create("native");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_native_fp32);
	tcase_add_test(tc, test_native_refuses);
	suite_add_tcase(s, tc);
	return s;
}
