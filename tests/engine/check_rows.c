/*
 * check_rows.c — a kernel's rows on several threads (emu/engine/rows.c):
 *  - emu_rows cuts rows 0 .. R − 1 into contiguous parts of at least grain
 *    rows, one per thread, each on a backend of its own, and with one
 *    thread (or inside a parallel region) calls fn on the kernel's backend
 *    itself;
 *  - every kernel that runs its rows through it gives, on 1, 2 and 7
 *    threads, the same run byte for byte on fast, exact and truth: every
 *    output's bits (truth: its 256-bit number), every count per operation
 *    kind and per step, the flags, the inputs stored, the range peak and
 *    the first failing operation. The inputs put large values in two rows
 *    far apart (so the first failure is a middle row's and a later part
 *    fails too), under RNE and SR; layernorm's dy = 1e-9 flushes to zero
 *    in fp16 as each row stores it.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "tests/lib.h"

/* ---- emu_rows itself ---- */

typedef struct {
	size_t r0[16], r1[16];
	emu_be *be[16];
	int n;
} parts_seen;

static int note_part(emu_be *be, size_t r0, size_t r1, void *arg)
{
	parts_seen *s = arg;
	int i;
#pragma omp critical(check_rows)
	i = s->n++;
	if (i < 16) {
		s->r0[i] = r0;
		s->r1[i] = r1;
		s->be[i] = be;
	}
	emu_note(be, EMU_STEP0, EMU_OP_ADD, (r0 == 5 || r0 == 9) ? EMU_FLAG_OVERFLOW : 0, r0);
	return 0;
}

START_TEST(test_parts)
{
	/* a part takes at least ⌈least / per_row⌉ rows */
	static const struct {
		int threads;
		size_t R;
		uint64_t least, per_row;
		int parts;
	} c[] = {{1, 13, 1, 1, 1},
	         {2, 13, 1, 1, 2},
	         {7, 13, 1, 1, 7},
	         {7, 13, 4, 1, 3},
	         {7, 13, 7, 2, 3},
	         {7, 3, 1, 1, 3},
	         {7, 0, 1, 1, 1},
	         {7, 1, 1, 1, 1},
	         {16, 13, 1, 1, 13},
	         {7, 13, 1 << 16, 1, 1},
	         {4, 13, 1 << 16, 1 << 14, 3}};
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		emu_env env = {0};
		emu_be be;
		emu_be_init(&be, EMU_BE_FAST, &env);
		parts_seen s = {0};
		omp_set_num_threads(c[i].threads);
		emu_rows_min_work(c[i].least);
		ck_assert_int_eq(emu_rows(&be, c[i].R, c[i].per_row, note_part, &s), 0);
		ck_assert_msg(s.n == c[i].parts, "case %zu: %d parts", i, s.n);
		/* contiguous parts covering every row, each on its own backend
		 * (one part: the kernel's) */
		bool seen[32] = {0};
		size_t rows = 0;
		for (int p = 0; p < s.n; p++) {
			ck_assert(s.r0[p] <= s.r1[p] && s.r1[p] <= c[i].R);
			ck_assert(s.r1[p] - s.r0[p] >= (c[i].R ? 1 : 0));
			for (size_t r = s.r0[p]; r < s.r1[p]; r++) {
				ck_assert(!seen[r]);
				seen[r] = true;
			}
			rows += s.r1[p] - s.r0[p];
			ck_assert(s.n == 1 ? s.be[p] == &be : s.be[p] != &be);
		}
		ck_assert_uint_eq(rows, c[i].R);
		/* the counts are the parts' sums; the first failure the earliest
		 * part's (a part's first row r0 5 or 9 fails) */
		ck_assert_uint_eq(be.st.ops[EMU_OP_ADD], (uint64_t)s.n);
		bool fails = false;
		size_t first = SIZE_MAX;
		for (int p = 0; p < s.n; p++)
			if (s.r0[p] == 5 || s.r0[p] == 9) {
				fails = true;
				first = s.r0[p] < first ? s.r0[p] : first;
			}
		ck_assert(be.st.first_set == fails);
		if (fails)
			ck_assert_uint_eq(be.st.first_index, first);
		emu_be_free(&be);
	}
	emu_rows_min_work(1);
	omp_set_num_threads(1);
	/* inside a parallel region: the kernel's own backend, one part */
	int parts = 0;
#pragma omp parallel num_threads(2)
	{
		emu_env env = {0};
		emu_be be;
		parts_seen s = {0};
		emu_be_init(&be, EMU_BE_FAST, &env);
		omp_set_num_threads(4);
		if (emu_rows(&be, 13, 1, note_part, &s) == 0 && s.n == 1 && s.be[0] == &be)
#pragma omp atomic
			parts++;
		emu_be_free(&be);
	}
	ck_assert_int_eq(parts, 2);
}
END_TEST

/* ---- kernels: 1, 2 and 7 threads, byte for byte ---- */

static const struct {
	const char *kernel, *variant, *policy;
	size_t rows, cols;
	emu_kparam params[2];
	size_t np;
	double big; /* rows 3 and 9 times this */
} cases[] = {
    {"softmax_ce", "naive", "storage=fp16", 13, 24, {{"label", 2}}, 1, 1e3},
    {"softmax_ce",
     "lse",
     "storage=fp16,compute=fp16,accum=fp32,round=sr,seed=5",
     13,
     24,
     {{"label", 2}},
     1,
     1e5},
    {"layernorm", "twopass", "storage=fp16,accum=fp32", 13, 24, {{"dy", 1e-9}}, 1, 300},
    {"layernorm",
     "onepass",
     "storage=e4m3,compute=fp16,scale=mx32:floor",
     13,
     64,
     {{"eps", 1e-5}},
     1,
     1e3},
    {"layernorm", "welford", "storage=bf16,round=sr,seed=9", 13, 24, {{"eps", 1e-5}}, 1, 1e20},
    {"rmsnorm", "plain", "storage=fp16", 13, 24, {{"eps", 1e-6}}, 1, 300},
    {"rmsnorm",
     "fp32stats",
     "storage=bf16,compute=bf16,round=sr,seed=3",
     13,
     24,
     {{"g", 0.3}},
     1,
     1e20},
    {"bce", "naive", "storage=fp16", 13, 24, {{"target", 1}}, 1, 1e5},
    {"bce", "stable", "storage=fp16,round=sr,seed=4", 13, 24, {{"target", 0}}, 1, 1e5},
    {"backward", "maxsub", "storage=fp16", 13, 16, {{"scale", 1024}, {"classes", 8}}, 2, 1e3},
    {"backward", "maxsub", "storage=fp16,round=sr,seed=2", 13, 16, {{"scale", 1024}}, 1, 6e4},
    {"batchnorm", "twopass", "storage=fp16,accum=fp32", 13, 24, {{"dy", 1e-9}}, 1, 300},
    {"batchnorm",
     "welford",
     "storage=bf16,compute=bf16,round=sr,seed=3",
     13,
     24,
     {{"gamma", 3}},
     1,
     1e30},
    {"batchnorm", "eval", "storage=fp16", 13, 24, {{"rvar", 1e-9}}, 1, 1e3},
    {"optimizer", "adamw", "storage=fp16", 13, 24, {{"steps", 3}}, 1, 1e5},
    {"optimizer",
     "adamw_sr",
     "storage=fp16,round=sr,seed=3",
     13,
     24,
     {{"steps", 3}, {"grad_scale", 1e4}},
     2,
     1},
    {"optimizer",
     "adamw_kahan",
     "storage=bf16,compute=bf16,round=sr,seed=4",
     13,
     24,
     {{"steps", 2}, {"grad_scale", 1e22}},
     2,
     1},
    {"optimizer", "sgd", "storage=e5m2,compute=fp16", 13, 24, {{"steps", 3}}, 1, 1e5},
    {"attention", "naive:bwd", "storage=fp16", 13, 24, {{"causal", 1}}, 1, 300},
    {"attention",
     "online",
     "storage=bf16,compute=fp32,round=sr,seed=2",
     13,
     24,
     {{"block_k", 4}},
     1,
     1e20},
    {"attention",
     "fp8",
     "storage=bf16,compute=fp32",
     13,
     24,
     {{"block_k", 4}, {"causal", 1}},
     2,
     1e20},
    {"attention",
     "fp8:bwd",
     "storage=bf16,compute=fp32,round=sr,seed=1",
     13,
     24,
     {{"block_k", 4}},
     1,
     1e20},
    {"attention", "online:tc:h100", "storage=bf16,accum=fp32", 13, 48, {{"block_k", 4}}, 1, 1e30},
    {"matmul", "seq", "storage=fp16", 14, 40, {{"fma", 0}}, 1, 1e3},
    {"matmul", "seq", "storage=bf16,compute=fp32,round=sr,seed=8", 14, 40, {{"fma", 1}}, 1, 1e30},
    {"matmul", "tc:h100", "storage=bf16,accum=fp32", 14, 64, {{"bt", 1}}, 1, 1e30},
    {"matmul", "tc:h100", "storage=e4m3,accum=fp32,round=sr,seed=6", 14, 64, {{"bt", 0}}, 1, 1e3},
};

/* rows × cols draws uniform in [−1, 1), rows 3 and 9 times big */
static double *draw(size_t rows, size_t cols, double big, uint64_t seed)
{
	double *x = malloc(rows * cols * sizeof *x);
	ck_assert(x != NULL);
	for (size_t i = 0; i < rows * cols; i++) {
		size_t r = i / cols;
		x[i] = (2 * emu_draw_unit(emu_draw64(seed, i)) - 1) * (r == 3 || r == 9 ? big : 1);
	}
	return x;
}

/* a and b the same run: values bit for bit, every count */
static void same_run(const emu_run *a, const emu_run *b, const char *what)
{
	ck_assert_int_eq(a->out.n, b->out.n);
	for (int i = 0; i < a->out.n; i++) {
		const emu_kout_item *x = &a->out.item[i], *y = &b->out.item[i];
		ck_assert_uint_eq(x->n, y->n);
		for (size_t j = 0; j < x->n; j++) {
			bool eq;
			if (x->vec->m) {
				mpfr_srcptr u = &x->vec->m[j], v = &y->vec->m[j];
				eq = mpfr_nan_p(u) ? mpfr_nan_p(v)
				                   : !mpfr_nan_p(v) && mpfr_equal_p(u, v) &&
				                         mpfr_signbit(u) == mpfr_signbit(v);
			} else {
				eq = memcmp(&x->vec->d[j], &y->vec->d[j], sizeof(double)) == 0;
			}
			ck_assert_msg(eq, "%s: %s[%zu] differs", what, x->name, j);
		}
	}
	const emu_be_stats *s = &a->be.st, *t = &b->be.st;
	ck_assert_msg(memcmp(s->ops, t->ops, sizeof s->ops) == 0, "%s: op counts", what);
	ck_assert_msg(memcmp(s->flags, t->flags, sizeof s->flags) == 0, "%s: flag counts", what);
	ck_assert_uint_eq(s->all_flags, t->all_flags);
	ck_assert_msg(s->first_set == t->first_set, "%s: first failure", what);
	if (s->first_set) {
		ck_assert_msg(s->first_op == t->first_op && s->first_flags == t->first_flags &&
		                  s->first_index == t->first_index &&
		                  strcmp(s->first_step, t->first_step) == 0,
		              "%s: first failure %s[%llu] against %s[%llu]", what, s->first_step,
		              (unsigned long long)s->first_index, t->first_step,
		              (unsigned long long)t->first_index);
	}
	ck_assert(s->in_n == t->in_n && s->in_changed == t->in_changed &&
	          s->in_overflow == t->in_overflow && s->in_flushed == t->in_flushed);
	ck_assert(memcmp(&a->be.range_peak, &b->be.range_peak, sizeof(double)) == 0);
	size_t ns = s->nsteps > t->nsteps ? s->nsteps : t->nsteps;
	for (size_t k = 0; k < ns; k++) {
		uint64_t oa = k < s->nsteps ? s->step_ops[k] : 0,
		         ob = k < t->nsteps ? t->step_ops[k] : 0;
		ck_assert_msg(oa == ob, "%s: step %zu counts %llu against %llu", what, k,
		              (unsigned long long)oa, (unsigned long long)ob);
		for (int f = 0; f < EMU_NFLAGS; f++)
			ck_assert((k < s->nsteps ? s->step_flags[k][f] : 0) ==
			          (k < t->nsteps ? t->step_flags[k][f] : 0));
	}
}

START_TEST(test_threads_same_bits)
{
	size_t i = (size_t)_i;
	const emu_kernel *k = emu_kernel_by_name(cases[i].kernel);
	ck_assert(k != NULL);
	emu_policy pol;
	char err[256], what[160];
	ck_assert_msg(emu_policy_parse(cases[i].policy, &pol, err, sizeof err) == EMU_OK, "%s",
	              err);
	double *x = draw(cases[i].rows, cases[i].cols, cases[i].big, 31 + i);
	emu_kin in = {x, cases[i].rows, cases[i].cols, cases[i].params, cases[i].np, 7, NULL, 0};
	bool failed = false;
	emu_rows_min_work(1); /* every row a part of its own where threads allow */
	for (int kind = 0; kind < EMU_NBE; kind++) {
		emu_run r[3];
		static const int threads[3] = {1, 2, 7};
		for (int t = 0; t < 3; t++) {
			omp_set_num_threads(threads[t]);
			ck_assert_msg(emu_run_kernel(k, &pol, cases[i].variant, &in,
			                             (emu_be_kind)kind, &r[t], err,
			                             sizeof err) == 0,
			              "%s %s: %s", cases[i].kernel, cases[i].variant, err);
		}
		failed |= r[0].be.st.first_set;
		if (getenv("CHECK_ROWS_VERBOSE") && r[0].be.st.first_set)
			printf("%s %s on %s: first failure %s[%llu]\n", cases[i].kernel,
			       cases[i].variant, emu_be_name((emu_be_kind)kind),
			       r[0].be.st.first_step, (unsigned long long)r[0].be.st.first_index);
		for (int t = 1; t < 3; t++) {
			snprintf(what, sizeof what, "%s %s %s on %s, %d threads against 1",
			         cases[i].kernel, cases[i].variant, cases[i].policy,
			         emu_be_name((emu_be_kind)kind), threads[t]);
			same_run(&r[0], &r[t], what);
		}
		for (int t = 0; t < 3; t++)
			emu_run_free(&r[t]);
	}
	omp_set_num_threads(1);
	/* the inputs make the run fail somewhere, so the first failure is
	 * compared too */
	ck_assert_msg(failed, "%s %s: nothing failed", cases[i].kernel, cases[i].variant);
	free(x);
}
END_TEST

Suite *suite_rows(void)
{
	Suite *s = suite_create("rows");
	TCase *tc = tcase_create("rows");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_parts);
	tcase_add_loop_test(tc, test_threads_same_bits, 0, ARRAY_SIZE(cases));
	suite_add_tcase(s, tc);
	return s;
}
