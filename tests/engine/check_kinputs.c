/*
 * check_kinputs.c — the tensors a kernel consumes, by role
 * (emu/engine/kinputs.c):
 *  - a tensor given in emu_kin.tensors replaces the kernel's own draw: the
 *    draw handed back gives the same outputs, bit for bit, on fast and
 *    exact (under SR, but for a constant the kernel converts once for every
 *    element, batchnorm's gamma: given as a tensor, each element is its own
 *    element of the step, with its own draw); another tensor gives others;
 *  - the encodings emu_kinput_bits reports are what the kernel stores, SR
 *    keys included: under round=sr, handing every tensor back as its decoded
 *    encodings (values the store keeps exactly) gives the same outputs,
 *    where a wrong key would change some draw;
 *  - a tensor of the wrong shape, of a role the kernel does not consume,
 *    named x, or a class index out of range is refused with a reason that
 *    names it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

/* Every output of a and b the same number (encodings via the double). */
static bool same_outputs(const emu_run *a, const emu_run *b)
{
	if (a->out.n != b->out.n)
		return false;
	for (int i = 0; i < a->out.n; i++) {
		const emu_kout_item *x = &a->out.item[i], *y = &b->out.item[i];
		if (x->n != y->n || strcmp(x->name, y->name) != 0)
			return false;
		for (size_t j = 0; j < x->n; j++) {
			double u = emu_kout_d(&a->be, x, j), v = emu_kout_d(&b->be, y, j);
			if (isnan(u) ? !isnan(v) : (u != v || signbit(u) != signbit(v)))
				return false;
		}
	}
	return true;
}

/* The random rows × cols input of case k (uniform in ±2). */
static double *rand_x(size_t rows, size_t cols, uint64_t k)
{
	double *x = malloc(rows * cols * sizeof *x);
	ck_assert(x != NULL);
	for (size_t i = 0; i < rows * cols; i++)
		x[i] = ((double)(t_rand(k, i) >> 11) * 0x1p-53 * 2 - 1) * 2;
	return x;
}

static const struct {
	const char *kernel, *variant, *policy;
	size_t rows, cols;
	emu_kparam params[4]; /* the first np */
	size_t np;
} sr_cases[] = {
    {"layernorm", "twopass", "storage=bf16,compute=fp32,round=sr", 3, 16, {{"eps", 1e-5}}, 1},
    {"rmsnorm", "plain", "storage=fp16,compute=fp32,round=sr,seed=7", 3, 16, {{"g", 0.3}}, 1},
    {"backward", "maxsub", "storage=e4m3,compute=fp32,round=sr", 4, 16, {{"classes", 8}}, 1},
    {"accum", "dot:seq", "storage=bf16,compute=fp32,round=sr", 2, 64, {{"k", 32}}, 1},
    {"accum", "dot:tc", "storage=e4m3,compute=fp32,round=sr", 2, 64, {{"k", 0}}, 1},
    {"optimizer", "adamw", "storage=fp16,compute=fp32,round=sr", 2, 16, {{"steps", 3}}, 1},
    {"batchnorm",
     "twopass",
     "storage=fp16,compute=bf16,round=sr",
     8,
     4,
     {{"gamma", 0.1}, {"beta", 0.3}, {"rmean", 0.7}, {"rvar", 1.3}},
     4},
    {"matmul", "seq", "storage=e5m2,compute=fp32,round=sr", 8, 8, {{"fma", 0}}, 1},
    {"attention", "naive:bwd", "storage=bf16,compute=fp32,round=sr", 6, 12, {{"causal", 0}}, 1},
    {"softmax_ce", "lse", "storage=fp16,round=sr", 3, 8, {{"label", 5}}, 1},
    {"bce", "stable", "storage=bf16,compute=fp32,round=sr", 2, 8, {{"target", 1}}, 1},
};

/* Run case i with the tensors given (n of them) on backend kind. */
static void run_with(size_t i, const double *x, const emu_ktensor *kt, size_t n, emu_be_kind kind,
                     emu_run *r)
{
	const emu_kernel *k = emu_kernel_by_name(sr_cases[i].kernel);
	emu_policy pol;
	char err[256];
	ck_assert_msg(emu_policy_parse(sr_cases[i].policy, &pol, err, sizeof err) == EMU_OK, "%s",
	              err);
	emu_kin in = {
	    x, sr_cases[i].rows, sr_cases[i].cols, sr_cases[i].params, sr_cases[i].np, 99, kt, n};
	ck_assert_msg(emu_run_kernel(k, &pol, sr_cases[i].variant, &in, kind, r, err, sizeof err) ==
	                  0,
	              "%s %s: %s", sr_cases[i].kernel, sr_cases[i].variant, err);
}

START_TEST(test_given_replaces_draw)
{
	size_t i = (size_t)_i;
	const emu_kernel *k = emu_kernel_by_name(sr_cases[i].kernel);
	emu_policy pol;
	char err[256];
	emu_kinputs ki;
	ck_assert(k != NULL);
	ck_assert(emu_policy_parse(sr_cases[i].policy, &pol, err, sizeof err) == EMU_OK);
	double *x = rand_x(sr_cases[i].rows, sr_cases[i].cols, 17 + i);
	emu_kin in = {
	    x, sr_cases[i].rows, sr_cases[i].cols, sr_cases[i].params, sr_cases[i].np, 99, NULL, 0};
	ck_assert_msg(emu_kernel_inputs(k, &pol, sr_cases[i].variant, &in, &ki, err, sizeof err) ==
	                  0,
	              "%s", err);
	ck_assert(ki.n >= 1 && !strcmp(ki.item[0].role, "x") && ki.item[0].v == x);
	/* each tensor handed back as its values, then as its decoded encodings */
	emu_ktensor kt[EMU_KINPUTS_MAX];
	double *dec[EMU_KINPUTS_MAX] = {0};
	size_t nt = 0;
	bool bcast = false;
	for (int j = 0; j < ki.n; j++) {
		const emu_kinput *t = &ki.item[j];
		bcast |= t->bcast;
		size_t n = t->rows * t->cols;
		ck_assert_msg(t->v != NULL, "%s: %s has no values", k->name, t->role);
		dec[j] = malloc((n ? n : 1) * sizeof *dec[j]);
		ck_assert(dec[j] != NULL);
		if (t->fmt) {
			uint32_t *bits = malloc((n ? n : 1) * sizeof *bits);
			ck_assert(bits != NULL);
			emu_kinput_bits(&pol, t, bits);
			for (size_t e = 0; e < n; e++)
				dec[j][e] = emu_decode(t->fmt, bits[e]);
			free(bits);
		} else {
			memcpy(dec[j], t->v, n * sizeof *dec[j]);
		}
		if (j > 0)
			kt[nt++] = (emu_ktensor){t->role, t->rows, t->cols, t->v};
	}
	for (emu_be_kind kind = EMU_BE_FAST; kind <= EMU_BE_EXACT; kind++) {
		emu_run a, b, c;
		run_with(i, x, NULL, 0, kind, &a);
		run_with(i, x, kt, nt, kind, &b);
		ck_assert_msg(bcast || same_outputs(&a, &b), "%s %s: the draw handed back differs",
		              k->name, sr_cases[i].variant);
		for (size_t j = 0; j < nt; j++)
			kt[j].v = dec[j + 1];
		run_with(i, dec[0], kt, nt, kind, &c);
		ck_assert_msg(same_outputs(&a, &c),
		              "%s %s: the stored encodings handed back differ (SR keys?)", k->name,
		              sr_cases[i].variant);
		for (size_t j = 0; j < nt; j++)
			kt[j].v = ki.item[j + 1].v;
		emu_run_free(&a);
		emu_run_free(&b);
		emu_run_free(&c);
	}
	/* another tensor gives other outputs */
	if (nt > 0) {
		const emu_kinput *t = &ki.item[1];
		size_t n = t->rows * t->cols;
		double *other = malloc(n * sizeof *other);
		ck_assert(other != NULL);
		for (size_t e = 0; e < n; e++)
			other[e] = t->kind == EMU_KIN_INDEX ? (t->v[e] > 0 ? 0 : 1)
			           : t->v[e] == 0           ? 1
			                                    : -t->v[e] * 0.5;
		if (!strcmp(k->name, "bce")) /* targets stay 0 or 1 */
			for (size_t e = 0; e < n; e++)
				other[e] = 1 - t->v[e];
		kt[0].v = other;
		emu_run a, b;
		run_with(i, x, NULL, 0, EMU_BE_FAST, &a);
		run_with(i, x, kt, nt, EMU_BE_FAST, &b);
		ck_assert_msg(!same_outputs(&a, &b), "%s %s: tensor %s changed nothing", k->name,
		              sr_cases[i].variant, t->role);
		emu_run_free(&a);
		emu_run_free(&b);
		free(other);
	}
	for (int j = 0; j < ki.n; j++)
		free(dec[j]);
	emu_kinputs_free(&ki);
	free(x);
	t_count("kernel tensors handed back, as values and as stored encodings", (uint64_t)nt + 1);
}
END_TEST

/* Refusals: KERNEL, a tensor, and what the message must contain. */
static const struct {
	const char *kernel;
	emu_ktensor t;
	const char *want;
} refusals[] = {
    {"layernorm", {"dy", 3, 16, NULL}, "tensor dy is 3 x 16, the kernel takes 2 x 16"},
    {"layernorm", {"w", 2, 16, NULL}, "no tensor 'w' (its tensors: dy; x is its input)"},
    {"layernorm", {"x", 2, 16, NULL}, "no tensor 'x'"},
    {"accum", {"b", 2, 16, NULL}, "no tensor 'b' (its tensors: none"},
    {"softmax_ce", {"target", 1, 2, NULL}, "target[1] = 16 must be an integer in [0, 16)"},
    {"bce", {"target", 2, 16, NULL}, "target[1] = 16 must be an integer in [0, 2)"},
};

START_TEST(test_refusals)
{
	const emu_kernel *k = emu_kernel_by_name(refusals[_i].kernel);
	emu_policy pol;
	emu_kinputs ki;
	emu_run r;
	char err[256] = "";
	double x[32], v[48];
	for (size_t i = 0; i < 48; i++)
		v[i] = i < 32 ? (double)(i % 2) : 0;
	v[1] = 16; /* out of every index range here */
	for (size_t i = 0; i < 32; i++)
		x[i] = (double)i / 8 - 2;
	emu_ktensor t = refusals[_i].t;
	t.v = v;
	ck_assert(emu_policy_parse("storage=fp16", &pol, err, sizeof err) == EMU_OK);
	emu_kin in = {x, 2, 16, NULL, 0, 1, &t, 1};
	ck_assert(emu_kernel_inputs(k, &pol, NULL, &in, &ki, err, sizeof err) != 0);
	ck_assert_msg(strstr(err, refusals[_i].want) != NULL, "'%s' lacks '%s'", err,
	              refusals[_i].want);
	ck_assert(ki.n == 0);
	err[0] = '\0';
	ck_assert(emu_run_kernel(k, &pol, NULL, &in, EMU_BE_FAST, &r, err, sizeof err) != 0);
	ck_assert_msg(strstr(err, refusals[_i].want) != NULL, "run: '%s' lacks '%s'", err,
	              refusals[_i].want);
	emu_run_free(&r);
}
END_TEST

Suite *suite_kinputs(void)
{
	Suite *s = suite_create("kinputs");
	TCase *tc = tcase_create("roles");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_given_replaces_draw, 0, ARRAY_SIZE(sr_cases));
	tcase_add_loop_test(tc, test_refusals, 0, ARRAY_SIZE(refusals));
	suite_add_tcase(s, tc);
	return s;
}
