/*
 * check_thresh.c — emu/sweep/nm_thresh.c on cases whose boundaries are known
 * by hand:
 *   naive fp16 softmax_ce on one logit x: exp(x) overflows fp16 from
 *     x = 11.09375 (the fp16 value after 11.0859375), first op exp@exp, and
 *     the exact exp crosses 65520 = 65504 + ulp/2 at ln 65520 = 11.0901...;
 *   an fp16 sequential sum of four copies of x: 4·16376 rounds to 65504,
 *     4·16384 = 65536 overflows (real boundary 4x = 65520, x = 16380);
 *   a sum of N copies of 1024 in fp16 overflows from N = 64 (integers);
 *   fp32 values summed in an fp16 accumulator underflow to zero up to
 *     x = 2^-25 (a tie, to even), while the exact sum 4x only rounds to zero
 *     in fp16 up to x = 2^-27 (an underflow → ok boundary, read downwards);
 * and determinism: the same bytes whatever the thread count.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"
#include "emu/io/nm_file.h"
#include "emu/sweep/nm_point.h"
#include "emu/sweep/nm_thresh.h"

#define TT_MAX 4

/* A case filled by hand; the nm_case points into the struct, so it must
 * not be copied once built. */
typedef struct {
	nm_case c;
	char *vars[TT_MAX], *specs[TT_MAX];
	char var[TT_MAX][48], spec[TT_MAX][192];
	emu_policy pol[TT_MAX];
	double vals[NM_CASE_MAX_AXES][16];
	emu_run_status grid[1024];
} tcase;

/* variants and policies: ';'-separated lists */
static void mk_case(tcase *t, const char *kernel, const char *variants, const char *policies,
                    nm_gen_dist dist, double scale, size_t cols, bool maxabs)
{
	char err[256] = "", buf[512];
	memset(t, 0, sizeof *t);
	nm_case *c = &t->c;
	snprintf(c->name, sizeof c->name, "t_%s", kernel);
	c->kernel = emu_kernel_by_name(kernel);
	ck_assert_ptr_nonnull(c->kernel);
	snprintf(buf, sizeof buf, "%s", variants);
	for (char *s = strtok(buf, ";"); s && c->nvariants < TT_MAX; s = strtok(NULL, ";")) {
		snprintf(t->var[c->nvariants], sizeof t->var[0], "%s", s);
		t->vars[c->nvariants] = t->var[c->nvariants];
		c->nvariants++;
	}
	snprintf(buf, sizeof buf, "%s", policies);
	for (char *s = strtok(buf, ";"); s && c->npolicies < TT_MAX; s = strtok(NULL, ";")) {
		size_t i = c->npolicies++;
		snprintf(t->spec[i], sizeof t->spec[0], "%s", s);
		t->specs[i] = t->spec[i];
		ck_assert_msg(emu_policy_parse(s, &t->pol[i], err, sizeof err) == EMU_OK, "%s", err);
	}
	c->variants = t->vars;
	c->policy_specs = t->specs;
	c->policies = t->pol;
	c->gen = (nm_gen){dist, scale, 1e-3, 1, 1, 0, 0};
	c->rows = 1;
	c->cols = cols;
	c->maxabs = maxabs;
	c->truth = true;
}

static void add_axis(tcase *t, const char *name, nm_axis_target target, nm_axis_domain dom,
                     const double *vals, size_t n)
{
	nm_axis *a = &t->c.axes[t->c.naxes];
	snprintf(a->name, sizeof a->name, "%s", name);
	a->target = target;
	a->domain = dom;
	a->monotone = true;
	memcpy(t->vals[t->c.naxes], vals, n * sizeof *vals);
	a->values = a->quick = t->vals[t->c.naxes];
	a->nvalues = a->nquick = n;
	t->c.naxes++;
}

/* The grid's statuses as the sweep computes them: fast, with truth. */
static void fill_grid(tcase *t)
{
	nm_case *c = &t->c;
	size_t n0 = c->axes[0].nvalues, n1 = c->naxes > 1 ? c->axes[1].nvalues : 1, k = 0;
	char err[256] = "";
	for (size_t v = 0; v < c->nvariants; v++)
		for (size_t p = 0; p < c->npolicies; p++)
			for (size_t i0 = 0; i0 < n0; i0++)
				for (size_t i1 = 0; i1 < n1; i1++) {
					nm_point pt = {c, v, p, {c->axes[0].values[i0],
					                         c->naxes > 1 ? c->axes[1].values[i1] : 0}};
					nm_point_result r;
					ck_assert_msg(nm_point_eval(&pt, EMU_BE_FAST, c->truth, &r, err,
					                            sizeof err) == 0,
					              "%s", err);
					ck_assert(k < ARRAY_SIZE(t->grid));
					t->grid[k++] = r.status;
				}
}

static nm_thresh_row *thresholds(tcase *t, size_t *n)
{
	nm_thresh_row *rows;
	char err[256] = "";
	fill_grid(t);
	ck_assert_msg(nm_thresh_case(&t->c, false, t->grid, &rows, n, err, sizeof err) == 0, "%s",
	              err);
	return rows;
}

static uint64_t bits(double x)
{
	uint64_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

#define ck_bits_eq(got, want, what)                                                          \
	ck_assert_msg(bits(got) == bits(want), "%s: %a (%.17g), want %a (%.17g)", what, got, got, \
	              want, want)

START_TEST(test_softmax_naive_fp16)
{
	tcase t;
	size_t n;
	mk_case(&t, "softmax_ce", "naive", "storage=fp16", NM_GEN_ONES, 1, 1, true);
	static const double g[] = {0.1, 8, 10, 12, 14, 1e6};
	add_axis(&t, "logit_max", NM_SET_SCALE, NM_DOM_STORAGE, g, ARRAY_SIZE(g));
	nm_thresh_row *r = thresholds(&t, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(r[0].case_name, "t_softmax_ce");
	ck_assert_str_eq(r[0].axis, "logit_max");
	ck_assert_str_eq(r[0].event, "nan");
	ck_bits_eq(r[0].last_ok, 11.0859375, "last_ok");
	ck_bits_eq(r[0].first_bad, 11.09375, "first_bad");
	ck_assert_str_eq(r[0].first_op, "exp@exp");
	ck_assert_str_eq(r[0].last_hex, "fp16 0x498b");
	ck_assert_str_eq(r[0].first_hex, "fp16 0x498c");
	ck_assert(r[0].confirmed);
	ck_assert_msg(r[0].steps >= 1 && r[0].steps <= 16, "%d steps", r[0].steps);
	/* ln 65520 = 11.090110... (MPFR) */
	double want = log(65520.0);
	ck_assert_msg(fabs(r[0].real_boundary - want) <= 1e-11 * want,
	              "real boundary %.17g, want %.17g", r[0].real_boundary, want);
	ck_assert_msg(r[0].truth_steps <= 62, "%d truth steps", r[0].truth_steps);
	t_count("thresholds: naive fp16 softmax bisection steps", (uint64_t)r[0].steps);
	free(r);
	/* --quick: the same pair, the real boundary to 1e-3 */
	char err[256] = "";
	ck_assert_msg(nm_thresh_case(&t.c, true, t.grid, &r, &n, err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(n, 1);
	ck_bits_eq(r[0].last_ok, 11.0859375, "quick last_ok");
	ck_bits_eq(r[0].first_bad, 11.09375, "quick first_bad");
	ck_assert_msg(fabs(r[0].real_boundary - want) <= 1e-3 * want && r[0].real_boundary >= want,
	              "quick real boundary %.17g", r[0].real_boundary);
	free(r);
}
END_TEST

START_TEST(test_sum_overflow_scale)
{
	tcase t;
	size_t n;
	mk_case(&t, "accum", "sum:seq", "storage=fp16", NM_GEN_ONES, 1, 4, false);
	static const double g[] = {1000, 10000, 20000};
	add_axis(&t, "x", NM_SET_SCALE, NM_DOM_STORAGE, g, ARRAY_SIZE(g));
	nm_thresh_row *r = thresholds(&t, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(r[0].event, "inf");
	ck_bits_eq(r[0].last_ok, 16376.0, "last_ok");
	ck_bits_eq(r[0].first_bad, 16384.0, "first_bad");
	ck_assert_str_eq(r[0].first_op, "add@sum");
	ck_assert_msg(fabs(r[0].real_boundary - 16380) <= 1e-11 * 16380, "real boundary %.17g",
	              r[0].real_boundary);
	free(r);
}
END_TEST

START_TEST(test_sum_overflow_length)
{
	tcase t;
	size_t n;
	mk_case(&t, "accum", "sum:seq", "storage=fp16", NM_GEN_ONES, 1024, 0, false);
	static const double g[] = {1, 32, 100};
	add_axis(&t, "N", NM_SET_COLS, NM_DOM_INT, g, ARRAY_SIZE(g));
	nm_thresh_row *r = thresholds(&t, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(r[0].event, "inf");
	ck_bits_eq(r[0].last_ok, 63.0, "last_ok");
	ck_bits_eq(r[0].first_bad, 64.0, "first_bad");
	ck_bits_eq(r[0].real_boundary, 64.0, "real_boundary");
	ck_assert_str_eq(r[0].last_hex, "63");
	free(r);
}
END_TEST

START_TEST(test_underflow_downwards)
{
	tcase t;
	size_t n;
	mk_case(&t, "accum", "sum:seq", "storage=fp32,accum=fp16", NM_GEN_ONES, 1, 4, false);
	static const double g[] = {1e-9, 1e-3};
	add_axis(&t, "x", NM_SET_SCALE, NM_DOM_STORAGE, g, ARRAY_SIZE(g));
	nm_thresh_row *r = thresholds(&t, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(r[0].event, "underflow");
	ck_bits_eq(r[0].first_bad, 0x1p-25, "first_bad");
	ck_bits_eq(r[0].last_ok, nextafterf(0x1p-25f, 1), "last_ok");
	ck_assert_str_eq(r[0].first_op, "-");
	ck_assert_msg(r[0].steps <= 32, "%d steps", r[0].steps);
	ck_assert_msg(fabs(r[0].real_boundary - 0x1p-27) <= 1e-11 * 0x1p-27,
	              "real boundary %a", r[0].real_boundary);
	free(r);
}
END_TEST

/* A 2-D case: along x at every n, along n at every x. */
START_TEST(test_two_axes)
{
	tcase t;
	size_t n;
	mk_case(&t, "accum", "sum:seq", "storage=fp16", NM_GEN_ONES, 1, 0, false);
	static const double gx[] = {1000, 20000}, gn[] = {2, 4};
	add_axis(&t, "x", NM_SET_SCALE, NM_DOM_STORAGE, gx, ARRAY_SIZE(gx));
	add_axis(&t, "n", NM_SET_COLS, NM_DOM_INT, gn, ARRAY_SIZE(gn));
	nm_thresh_row *r = thresholds(&t, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(r[0].axis, "x@n=4");
	ck_bits_eq(r[0].last_ok, 16376.0, "x last_ok");
	ck_bits_eq(r[0].first_bad, 16384.0, "x first_bad");
	ck_assert_str_eq(r[1].axis, "n@x=20000");
	ck_bits_eq(r[1].last_ok, 3.0, "n last_ok");
	ck_bits_eq(r[1].first_bad, 4.0, "n first_bad");
	free(r);
}
END_TEST

/* The whole file (nm_file_read), which must exist. */
static char *slurp(const char *path, size_t *len)
{
	char *s = nm_file_read(path, len);
	ck_assert_msg(s != NULL, "cannot read %s", path);
	return s;
}

/* Several (variant, policy) tasks: one thread and two give the same bytes;
 * the policy column is quoted (it has commas). */
START_TEST(test_deterministic)
{
	static tcase t;
	char err[256] = "", csv[2][256], md[2][256];
	mk_case(&t, "softmax_ce", "naive;maxsub", "storage=fp16;storage=bf16,compute=fp32",
	        NM_GEN_NORMAL, 1, 8, true);
	static const double g[] = {1, 10, 100, 1000, 1e5};
	add_axis(&t, "logit_max", NM_SET_SCALE, NM_DOM_STORAGE, g, ARRAY_SIZE(g));
	fill_grid(&t);
	for (int k = 0; k < 2; k++) {
		nm_thresh_row *rows;
		size_t n;
		omp_set_num_threads(k + 1);
		ck_assert_msg(nm_thresh_case(&t.c, false, t.grid, &rows, &n, err, sizeof err) == 0,
		              "%s", err);
		ck_assert_uint_ge(n, 3);
		snprintf(csv[k], sizeof csv[k], "build/tests/thresh-%ld-%d.csv", (long)getpid(), k);
		snprintf(md[k], sizeof md[k], "build/tests/thresh-%ld-%d.md", (long)getpid(), k);
		ck_assert_msg(nm_thresh_write(rows, n, csv[k], md[k], err, sizeof err) == 0, "%s", err);
		if (k == 0 && getenv("NANMAP_THRESH_KEEP")) /* to look at the table */
			nm_thresh_write(rows, n, "build/tests/thresh-example.csv",
			                "build/tests/thresh-example.md", err, sizeof err);
		free(rows);
	}
	for (int f = 0; f < 2; f++) {
		size_t la, lb;
		char *a = slurp(f ? md[0] : csv[0], &la), *b = slurp(f ? md[1] : csv[1], &lb);
		ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "%s and %s differ",
		              f ? md[0] : csv[0], f ? md[1] : csv[1]);
		if (!f) {
			static const char head[] = "case,kernel,variant,policy,axis,event,last_ok,"
			                           "first_bad,real_boundary,first_failing_op\n";
			ck_assert_msg(strncmp(a, head, strlen(head)) == 0, "header: %.120s", a);
			ck_assert_msg(strstr(a, ",\"storage=bf16,compute=fp32\",") != NULL, "%s", a);
		}
		free(a);
		free(b);
	}
	for (int k = 0; k < 2; k++) {
		remove(csv[k]);
		remove(md[k]);
	}
}
END_TEST

/* thresholds.md prints as many digits as tell last ok from first bad: two
 * adjacent doubles are not both "0.779297" (issue 23), and a pair that 6
 * digits tell apart keeps 6. */
START_TEST(test_md_digits)
{
	nm_thresh_row r[2];
	char err[256] = "", md[256];
	memset(r, 0, sizeof r);
	for (int i = 0; i < 2; i++) {
		snprintf(r[i].case_name, sizeof r[i].case_name, "digits");
		snprintf(r[i].kernel, sizeof r[i].kernel, "softmax_ce");
		snprintf(r[i].variant, sizeof r[i].variant, "online");
		snprintf(r[i].policy, sizeof r[i].policy, "storage=bf16");
		snprintf(r[i].axis, sizeof r[i].axis, "scale");
		snprintf(r[i].event, sizeof r[i].event, "underflow");
		snprintf(r[i].first_op, sizeof r[i].first_op, "-");
		r[i].real_boundary = NAN;
	}
	r[0].first_bad = 0x1.8fp-1;
	r[0].last_ok = nextafter(r[0].first_bad, 0);
	snprintf(r[0].last_hex, sizeof r[0].last_hex, "%a", r[0].last_ok);
	snprintf(r[0].first_hex, sizeof r[0].first_hex, "%a", r[0].first_bad);
	r[1].last_ok = 2753;
	r[1].first_bad = 2754;
	snprintf(md, sizeof md, "build/tests/thresh-digits-%ld.md", (long)getpid());
	ck_assert_msg(nm_thresh_write(r, 2, NULL, md, err, sizeof err) == 0, "%s", err);
	size_t n;
	char *s = slurp(md, &n);
	ck_assert_msg(strstr(s, "| 0.77929687 (0x1.8efffffffffffp-1) | 0.77929688 (0x1.8fp-1) |"),
	              "%s", s);
	ck_assert_msg(strstr(s, "| 2753 () | 2754 () |"), "%s", s);
	free(s);
	remove(md);
}
END_TEST

Suite *suite_thresh(void)
{
	Suite *s = suite_create("thresh");
	TCase *tc = tcase_create("thresh");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_softmax_naive_fp16);
	tcase_add_test(tc, test_sum_overflow_scale);
	tcase_add_test(tc, test_sum_overflow_length);
	tcase_add_test(tc, test_underflow_downwards);
	tcase_add_test(tc, test_two_axes);
	tcase_add_test(tc, test_deterministic);
	tcase_add_test(tc, test_md_digits);
	suite_add_tcase(s, tc);
	return s;
}
