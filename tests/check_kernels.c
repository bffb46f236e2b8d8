/*
 * check_kernels.c — every kernel, variant and policy: the fast and the
 * exact-format backends agree bit for bit and flag for flag (per operation
 * kind, and on the first operation that failed) on >= 1000 random inputs,
 * with magnitudes spread from tiny to overflowing; and the facts the kernels
 * must reproduce from their own arithmetic.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "lib.h"

static const char *const policies[] = {
	"storage=fp16",
	"storage=fp16,compute=fp32",
	"storage=bf16",
	"storage=bf16,compute=fp32",
	"storage=e4m3,compute=fp32",
	"storage=e5m2,compute=fp16,accum=fp32",
	"storage=e4m3,overflow=sat",
	"storage=fp16,round=sr,seed=7",
	"storage=bf16,round=rtz,subnormals=ftzdaz",
	"storage=e4m3,compute=fp32,scale=tensor",
	"storage=e5m2,compute=fp32,scale=delayed:4:1",
	"storage=e4m3,compute=fp32,scale=mx32:floor",
	"storage=e4m3,compute=bf16,scale=mx32:rceil",
	"storage=e4m3,compute=fp32,scale=tile128",
};

static bool same_stats(const emu_be_stats *a, const emu_be_stats *b)
{
	return memcmp(a->ops, b->ops, sizeof a->ops) == 0 &&
	       memcmp(a->flags, b->flags, sizeof a->flags) == 0 && a->all_flags == b->all_flags &&
	       a->first_set == b->first_set &&
	       (!a->first_set || (a->first_op == b->first_op && a->first_flags == b->first_flags &&
	                          a->first_index == b->first_index &&
	                          strcmp(a->first_step, b->first_step) == 0));
}

/* Random input: row r's magnitudes are 2^u with u uniform over a range that
 * runs from far below the format's smallest value to above its largest. */
static void make_input(const emu_policy *p, uint64_t k, double *x, size_t n)
{
	int lo = p->storage.emin - p->storage.p - 2, hi = p->storage.emax + 3;
	uint64_t r0 = t_rand(60, k);
	int center = lo + (int)(r0 % (uint64_t)(hi - lo + 1));
	for (size_t j = 0; j < n; j++) {
		uint64_t r = t_rand(61 + k, j);
		double u = center - 6 + (double)(r % 1200) / 100.0;
		x[j] = ((r >> 40) & 1 ? -1 : 1) * exp2(u);
	}
}

START_TEST(test_fast_equals_exact)
{
	const emu_kernel *k = emu_kernel_at((size_t)_i / ARRAY_SIZE(policies));
	const char *spec = policies[(size_t)_i % ARRAY_SIZE(policies)];
	emu_policy pol;
	char err[200];
	ck_assert_msg(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK, "%s", err);
	const int ninputs = t_quick() ? 40 : 1000;
	enum { ROWS = 2, COLS = 6 };
	double x[ROWS * COLS];
	uint64_t cases = 0;
	for (const char *const *v = k->variants; *v; v++) {
		for (int c = 0; c < ninputs; c++) {
			make_input(&pol, (uint64_t)c, x, ROWS * COLS);
			emu_kin in = {x, ROWS, COLS, NULL, 0, t_seed()};
			emu_run a, b;
			ck_assert(emu_run_kernel(k, &pol, *v, &in, EMU_BE_FAST, &a, err, sizeof err) == 0);
			ck_assert(emu_run_kernel(k, &pol, *v, &in, EMU_BE_EXACT, &b, err, sizeof err) == 0);
			ck_assert_msg(a.out.n == b.out.n, "%s: output counts", k->name);
			for (int i = 0; i < a.out.n; i++)
				for (size_t j = 0; j < a.out.item[i].n; j++) {
					const emu_format *f = a.out.item[i].fmt;
					emu_bits ea = emu_encode(f, a.out.item[i].v[j].d);
					emu_bits eb = emu_encode(f, b.out.item[i].v[j].d);
					ck_assert_msg(ea == eb, "%s %s [%s] input %d %s[%zu]: fast 0x%x exact 0x%x",
					              k->name, *v, spec, c, a.out.item[i].name, j, ea, eb);
				}
			ck_assert_msg(same_stats(&a.be.st, &b.be.st), "%s %s [%s] input %d: flags differ",
			              k->name, *v, spec, c);
			ck_assert(a.status == b.status);
			emu_run_free(&a);
			emu_run_free(&b);
			cases++;
		}
	}
	char what[160];
	snprintf(what, sizeof what, "kernels: %s fast == exact (bits, flags per op)", k->name);
	t_count(what, cases);
}
END_TEST

/* Run softmax_ce on one row and return its status and first failing step. */
static emu_run_status softmax_row(const char *spec, const char *variant, double z0, double z1,
                                  const char **first)
{
	emu_policy pol;
	char err[200];
	ck_assert(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK);
	double x[2] = {z0, z1};
	emu_kin in = {x, 1, 2, NULL, 0, 1};
	emu_run r;
	ck_assert(emu_run_kernel(&emu_kernel_softmax_ce, &pol, variant, &in, EMU_BE_FAST, &r, err,
	                         sizeof err) == 0);
	emu_run_status st = r.status;
	*first = r.be.st.first_set ? r.be.st.first_step : "-";
	emu_run_free(&r);
	return st;
}

START_TEST(test_softmax_overflow_boundary)
{
	const char *first;
	/* exp(11.0859375) = 65247.1 < 65520: no overflow; exp(11.09375) = 65758 */
	ck_assert(softmax_row("storage=fp16", "naive", 11.0859375, 0, &first) == EMU_ST_OK);
	emu_run_status st = softmax_row("storage=fp16", "naive", 11.09375, 0, &first);
	ck_assert_msg(st != EMU_ST_OK && strcmp(first, "exp") == 0, "status %s, first %s",
	              emu_run_status_name(st), first);
	/* lse stays finite far beyond, (60000, 0) included */
	ck_assert(softmax_row("storage=fp16", "lse", 11.09375, 0, &first) == EMU_ST_OK);
	st = softmax_row("storage=fp16", "lse", 60000, 0, &first);
	ck_assert_msg(st == EMU_ST_OK || st == EMU_ST_UNDERFLOW, "lse (60000,0): %s",
	              emu_run_status_name(st));
	ck_assert(softmax_row("storage=fp16", "maxsub", 60000, 0, &first) != EMU_ST_NAN);
}
END_TEST

Suite *suite_kernels(void)
{
	Suite *s = suite_create("kernels");
	TCase *tc = tcase_create("backends");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_fast_equals_exact, 0,
	                    (int)(emu_kernel_count() * ARRAY_SIZE(policies)));
	tcase_add_test(tc, test_softmax_overflow_boundary);
	suite_add_tcase(s, tc);
	return s;
}
