/*
 * check_point.c — emu/sweep/nm_point.c and the TRUTH backend with format
 * ranges (emu_be.range, emu_k_range): the input a point builds, its status
 * on the fast and exact-format backends, and the real-valued boundary of
 * naive fp16 softmax_ce, where exp(x) crosses fp16's overflow threshold
 * 65520 = 65504 + ulp/2 at x = ln 65520 = 11.0901...
 */
#include <inttypes.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"
#include "emu/sweep/nm_point.h"

/* A case filled by hand (one variant, one policy, one axis); the nm_case
 * points into the struct, so it must not be copied once built. */
typedef struct {
	nm_case c;
	char *vars[1], *specs[1];
	char var[48], spec[192];
	emu_policy pol;
	double vals[8];
} tcase;

static void mk_case(tcase *t, const char *kernel, const char *variant, const char *policy,
                    nm_gen_dist dist, uint64_t seed, size_t rows, size_t cols, bool maxabs,
                    nm_axis_target target, nm_axis_domain dom)
{
	char err[256] = "";
	memset(t, 0, sizeof *t);
	nm_case *c = &t->c;
	snprintf(c->name, sizeof c->name, "t_%s", kernel);
	c->kernel = emu_kernel_by_name(kernel);
	ck_assert_ptr_nonnull(c->kernel);
	snprintf(t->var, sizeof t->var, "%s", variant);
	snprintf(t->spec, sizeof t->spec, "%s", policy);
	t->vars[0] = t->var;
	t->specs[0] = t->spec;
	c->variants = t->vars;
	c->nvariants = 1;
	ck_assert_msg(emu_policy_parse(policy, &t->pol, err, sizeof err) == EMU_OK, "%s", err);
	c->policy_specs = t->specs;
	c->policies = &t->pol;
	c->npolicies = 1;
	c->gen = (nm_gen){dist, 1, 1e-3, 1, seed, 0, 0};
	c->rows = rows;
	c->cols = cols;
	c->maxabs = maxabs;
	c->naxes = 1;
	nm_axis *a = &c->axes[0];
	snprintf(a->name, sizeof a->name, "x");
	a->target = target;
	a->domain = dom;
	a->monotone = true;
	a->values = t->vals;
	a->nvalues = 1;
	a->quick = t->vals;
	a->nquick = 1;
	c->truth = true;
}

static uint64_t bits(double x)
{
	uint64_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

/* ---- emu_k_range on exact values ---- */

struct range_row {
	const char *fmt;
	emu_mode mode;
	const char *value; /* decimal or hex, parsed by MPFR exactly at 256 bits */
	unsigned want;
};

static const struct range_row range_rows[] = {
	{"fp16", EMU_RNE, "65519.99", 0},
	{"fp16", EMU_RNE, "0x1.ffdfffffffffffffffffffffp+15", 0}, /* 65520 − 2^-81 */
	{"fp16", EMU_RNE, "0x1.ffe000000000000000000001p+15", EMU_FLAG_OVERFLOW},
	{"fp16", EMU_RNE, "65520", EMU_FLAG_OVERFLOW},
	{"fp16", EMU_RNE, "-65520", EMU_FLAG_OVERFLOW},
	{"fp16", EMU_RTZ, "65535.999", 0},
	{"fp16", EMU_RTZ, "65536", EMU_FLAG_OVERFLOW},
	{"fp16", EMU_UP, "65504.001", EMU_FLAG_OVERFLOW},
	{"fp16", EMU_UP, "-65535", 0},
	{"fp16", EMU_DOWN, "-65504.001", EMU_FLAG_OVERFLOW},
	/* 2^-25 is half of fp16's smallest subnormal: a tie, to even (zero) */
	{"fp16", EMU_RNE, "0x1p-25", EMU_FLAG_UNDERFLOW},
	{"fp16", EMU_RNE, "0x1.00000000000000000001p-25", 0},
	{"fp16", EMU_RTZ, "0x1.fffffp-25", EMU_FLAG_UNDERFLOW},
	{"fp16", EMU_UP, "0x1p-200", 0},
	{"fp16", EMU_RNE, "1e-300", EMU_FLAG_UNDERFLOW},
	{"fp16", EMU_RNE, "1e300", EMU_FLAG_OVERFLOW},
	{"fp32", EMU_RNE, "65520", 0},
	{"bf16", EMU_RNE, "1e38", 0},
	{"bf16", EMU_RNE, "3.4e38", EMU_FLAG_OVERFLOW},
	{"e5m2", EMU_RNE, "61439", 0},
	{"e5m2", EMU_RNE, "61440", EMU_FLAG_OVERFLOW},
	{"fp16", EMU_RNE, "0", 0},
};

START_TEST(test_range_flags)
{
	const struct range_row *row = &range_rows[_i];
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = row->mode;
	emu_be be;
	emu_be_init(&be, EMU_BE_TRUTH, &env);
	be.range = true;
	emu_vec *v = emu_vec_new(&be, 1);
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(mpfr_set_str(&v->m[0], row->value, 0, MPFR_RNDN), 0);
	unsigned got = emu_k_range(&be, &v->m[0], t_fmt(row->fmt));
	char a[48], b[48];
	ck_assert_msg(got == row->want, "%s %s %s: flags %s, want %s", row->fmt,
	              emu_mode_name(row->mode), row->value, emu_flags_str(got, a, sizeof a),
	              emu_flags_str(row->want, b, sizeof b));
	emu_be_free(&be);
}
END_TEST

/* The range check's small side against the rounding itself: ±m·2^k for k
 * from 2^-1100 up past each format's smallest values, in every mode, on
 * formats with and without subnormals and zero; 256-bit values and
 * doubles. The flags are emu_round_value's of the value (a double, or its
 * nearest double with the rest's sign as the tail): overflow as it says,
 * underflow when the result is zero. */
START_TEST(test_range_small)
{
	static const char *fmts[] = {"fp16", "bf16", "e4m3", "e5m2", "e2m1", "e8m0", "fp32"};
	uint64_t checked = 0;
	for (size_t fi = 0; fi < ARRAY_SIZE(fmts); fi++) {
		const emu_format *f = t_fmt(fmts[fi]);
		for (int mode = 0; mode < EMU_NMODES; mode++) {
			emu_env env = EMU_ENV_DEFAULT;
			env.mode = (emu_mode)mode;
			emu_be be;
			emu_be_init(&be, EMU_BE_TRUTH, &env);
			be.range = true;
			emu_vec *v = emu_vec_new(&be, 1);
			ck_assert_ptr_nonnull(v);
			for (int k = f->emin - f->p - 8; k <= f->emin + 2; k++)
				for (int q = 0; q < 8; q++) {
					/* 1, 1.5, 1 + 2^-60 (no double), 1.75, their negatives */
					double m = q % 4 == 0 ? 1 : q % 4 == 1 ? 1.5 : q % 4 == 2 ? 1 : 1.75;
					double sg = q < 4 ? 1 : -1;
					mpfr_set_d(&v->m[0], sg * m, MPFR_RNDN);
					if (q % 4 == 2)
						mpfr_add_d(&v->m[0], &v->m[0], sg * 0x1p-60, MPFR_RNDN);
					mpfr_mul_2si(&v->m[0], &v->m[0], k, MPFR_RNDN);
					double x = sg * ldexp(m, k), tail = q % 4 == 2 ? sg * ldexp(1, k - 60) : 0;
					if (k < -1000) /* beyond doubles: the check's clamp */
						continue;
					emu_env e2 = env;
					e2.daz = false;
					unsigned fl = 0;
					double r = emu_round_value(f, x, tail, &e2, &fl);
					unsigned want = (fl & EMU_FLAG_OVERFLOW) | (r == 0 ? EMU_FLAG_UNDERFLOW : 0);
					unsigned got = emu_k_range(&be, &v->m[0], f);
					ck_assert_msg(got == want, "%s %s: %c%g*2^%d: %u, want %u", fmts[fi],
					              emu_mode_name(env.mode), q < 4 ? '+' : '-', m, k, got,
					              want);
					checked++;
				}
			emu_be_free(&be);
		}
	}
	t_count("point: range check of small values == the rounding", checked);
}
END_TEST

/* Without range, TRUTH raises nothing on a value beyond a format. */
START_TEST(test_range_off)
{
	emu_env env = EMU_ENV_DEFAULT;
	emu_be be;
	emu_be_init(&be, EMU_BE_TRUTH, &env);
	emu_vec *v = emu_vec_new(&be, 2);
	ck_assert_ptr_nonnull(v);
	emu_fill(&be, emu_at(v, 0), 12, 1);
	emu_op1(&be, EMU_STEP0, EMU_OP_EXP, t_fmt("fp16"), emu_at(v, 1), emu_at(v, 0), EMU_NOREF, 0);
	ck_assert_uint_eq(be.st.all_flags, 0);
	be.range = true;
	emu_op1(&be, EMU_STEP0, EMU_OP_EXP, t_fmt("fp16"), emu_at(v, 1), emu_at(v, 0), EMU_NOREF, 1);
	ck_assert_uint_eq(be.st.all_flags, EMU_FLAG_OVERFLOW);
	ck_assert(be.st.first_set);
	ck_assert_int_eq(be.st.first_op, EMU_OP_EXP);
	ck_assert_uint_eq(be.st.first_index, 1);
	/* the value stays exact: e^12 = 162754.79... */
	ck_assert_uint_eq(bits(emu_vget(&be, v, 1)), bits(exp(12.0)));
	emu_be_free(&be);
}
END_TEST

/* ---- points ---- */

/* naive fp16 softmax_ce on one logit x: ok at 11.0859375, NaN at the next
 * fp16 value 11.09375 (exp overflows first), the same on both backends. */
START_TEST(test_softmax_fp16_status)
{
	tcase t;
	char err[256] = "";
	mk_case(&t, "softmax_ce", "naive", "storage=fp16", NM_GEN_ONES, 1, 1, 1, true,
	        NM_SET_SCALE, NM_DOM_STORAGE);
	static const struct {
		double x;
		emu_run_status st;
	} rows[] = {{11.0859375, EMU_ST_OK}, {11.09375, EMU_ST_NAN}};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		for (int k = EMU_BE_FAST; k <= EMU_BE_EXACT; k++) {
			nm_point p = {&t.c, 0, 0, {rows[i].x, 0}};
			nm_point_result r;
			ck_assert_msg(nm_point_eval(&p, (emu_be_kind)k, true, &r, err, sizeof err) == 0,
			              "%s", err);
			ck_assert_msg(r.status == rows[i].st, "x=%a %s: status %s, want %s", rows[i].x,
			              emu_be_name((emu_be_kind)k), emu_run_status_name(r.status),
			              emu_run_status_name(rows[i].st));
			ck_assert_int_eq(r.has_first, rows[i].st != EMU_ST_OK);
			if (r.has_first) {
				ck_assert_str_eq(r.first_op, "exp");
				ck_assert_str_eq(r.first_step, "exp");
			}
			ck_assert_uint_eq(r.nout, 2);
			ck_assert_str_eq(r.out[0].name, "loss");
			ck_assert(!isnan(r.out[0].rel_err));
		}
}
END_TEST

/* The truth-range flags flip exactly at ln 65520: the doubles just below
 * and just above it (MPFR's log rounded down and up). */
START_TEST(test_softmax_truth_range_boundary)
{
	tcase t;
	char err[256] = "";
	mk_case(&t, "softmax_ce", "naive", "storage=fp16", NM_GEN_ONES, 1, 1, 1, true,
	        NM_SET_SCALE, NM_DOM_STORAGE);
	mpfr_t l;
	mpfr_init2(l, 256);
	mpfr_set_ui(l, 65520, MPFR_RNDN);
	mpfr_log(l, l, MPFR_RNDN);
	double lo = mpfr_get_d(l, MPFR_RNDD), hi = mpfr_get_d(l, MPFR_RNDU);
	mpfr_clear(l);
	ck_assert(lo < hi && nextafter(lo, 20) == hi);
	nm_point p = {&t.c, 0, 0, {lo, 0}};
	nm_point_range r;
	ck_assert_msg(nm_point_truth_range(&p, &r, err, sizeof err) == 0, "%s", err);
	ck_assert_msg(!(r.flags & EMU_FLAG_OVERFLOW), "overflow at %a", lo);
	ck_assert(!r.has_first && !r.lost);
	p.axis[0] = hi;
	ck_assert_msg(nm_point_truth_range(&p, &r, err, sizeof err) == 0, "%s", err);
	ck_assert_msg(r.flags & EMU_FLAG_OVERFLOW, "no overflow at %a", hi);
	ck_assert(r.has_first);
	ck_assert_str_eq(r.first_op, "exp");
	ck_assert_str_eq(r.first_step, "exp");
	/* the input itself is exact: 11.09 is no fp16 value, and TRUTH without
	 * range would have stored it as 11.09375 (overflowing at 11.0898...) */
	p.axis[0] = 11.0899;
	ck_assert_msg(nm_point_truth_range(&p, &r, err, sizeof err) == 0, "%s", err);
	ck_assert(!(r.flags & EMU_FLAG_OVERFLOW));
}
END_TEST

/* An output nonzero in truth that rounds to zero in its format: softmax's
 * gradient of a two-class row whose probability is below fp16's range. */
START_TEST(test_truth_range_lost)
{
	tcase t;
	char err[256] = "";
	mk_case(&t, "softmax_ce", "lse", "storage=fp16,compute=fp32", NM_GEN_NORMAL, 3, 1, 2,
	        true, NM_SET_SCALE, NM_DOM_REAL);
	/* the label on the larger logit: both gradients are ±p_small */
	snprintf(t.c.param_names[0], sizeof t.c.param_names[0], "label");
	t.c.params[0] = (emu_kparam){t.c.param_names[0], 1};
	t.c.nparams = 1;
	nm_point p = {&t.c, 0, 0, {1, 0}};
	nm_point_range r;
	ck_assert_msg(nm_point_truth_range(&p, &r, err, sizeof err) == 0, "%s", err);
	ck_assert(!r.lost);
	p.axis[0] = 40; /* the two logits differ by > 17: p_small < 2^-25 */
	double *x;
	size_t R, N;
	ck_assert_int_eq(nm_point_input(&p, &x, &R, &N, err, sizeof err), 0);
	double gap = fabs(x[0] - x[1]);
	free(x);
	ck_assert_msg(gap > 18, "gap %g", gap);
	ck_assert_msg(nm_point_truth_range(&p, &r, err, sizeof err) == 0, "%s", err);
	ck_assert(r.lost);
}
END_TEST

/* maxabs: the largest |x| is exactly the axis value, the rest scaled. */
START_TEST(test_input_maxabs)
{
	tcase t;
	char err[256] = "";
	mk_case(&t, "softmax_ce", "naive", "storage=fp16", NM_GEN_NORMAL, 42, 3, 100, true,
	        NM_SET_SCALE, NM_DOM_REAL);
	static const double vals[] = {0.1, 1, 11.0859375, 1e6, 0x1.fffffffffffffp+1023 / 4};
	for (size_t i = 0; i < ARRAY_SIZE(vals); i++) {
		nm_point p = {&t.c, 0, 0, {vals[i], 0}};
		double *x, m = 0;
		size_t R, N;
		ck_assert_msg(nm_point_input(&p, &x, &R, &N, err, sizeof err) == 0, "%s", err);
		ck_assert_uint_eq(R, 3);
		ck_assert_uint_eq(N, 100);
		for (size_t j = 0; j < R * N; j++)
			if (fabs(x[j]) > m)
				m = fabs(x[j]);
		ck_assert_msg(bits(m) == bits(vals[i]), "max |x| %a, want %a", m, vals[i]);
		free(x);
	}
	/* without maxabs the axis is the generator's scale: ones → all equal */
	mk_case(&t, "accum", "sum:seq", "storage=fp16", NM_GEN_ONES, 1, 2, 5, false,
	        NM_SET_SCALE, NM_DOM_REAL);
	nm_point p = {&t.c, 0, 0, {3.5, 0}};
	double *x;
	size_t R, N;
	ck_assert_int_eq(nm_point_input(&p, &x, &R, &N, err, sizeof err), 0);
	for (size_t j = 0; j < R * N; j++)
		ck_assert_uint_eq(bits(x[j]), bits(3.5));
	free(x);
}
END_TEST

/* The tensor a thread keeps from its last call: every input, through a
 * sequence of calls that reuse it (the same generator, shorter or longer,
 * another maxabs target) and calls that must not (each of the generator's
 * fields changed), is the generator's own, element for element. */
START_TEST(test_input_kept)
{
	static const struct {
		size_t rows, cols;
		double v;
		int change; /* 0 none, 1 seed, 2 scale, 3 dist, 4 lo, 5 hi, 6 outlier_k, 7 frac */
	} seq[] = {{2, 50, 1, 0}, {2, 50, 8, 0}, {1, 30, 2, 0}, {4, 50, 3, 0}, {4, 50, 3, 1},
	           {4, 50, 3, 0}, {4, 50, 3, 2}, {4, 50, 3, 0}, {4, 50, 3, 3}, {4, 50, 3, 0},
	           {4, 50, 3, 4}, {4, 50, 3, 0}, {4, 50, 3, 5}, {4, 50, 3, 0}, {4, 50, 3, 6},
	           {4, 50, 3, 0}, {4, 50, 3, 7}, {4, 50, 3, 0}, {1, 1, 5, 0}};
	/* each changed generator between two calls of the base one, so that it
	 * differs from the kept tensor's in that one field */
	char err[256] = "";
	for (size_t i = 0; i < ARRAY_SIZE(seq); i++) {
		tcase t;
		mk_case(&t, "softmax_ce", "naive", "storage=fp16", NM_GEN_LOGSPACE, 7, seq[i].rows,
		        seq[i].cols, true, NM_SET_SCALE, NM_DOM_REAL);
		nm_gen *g = &t.c.gen;
		g->lo = 1e-3, g->hi = 10, g->outlier_k = 4, g->outlier_frac = 0.1;
		switch (seq[i].change) {
		case 1: g->seed++; break;
		case 2: g->scale = 2; t.c.maxabs = false; break;
		case 3: g->dist = NM_GEN_NORMAL; break;
		case 4: g->lo = 1e-2; break;
		case 5: g->hi = 20; break;
		case 6: g->outlier_k = 8; break;
		case 7: g->outlier_frac = 0.2; break;
		default: break;
		}
		nm_point p = {&t.c, 0, 0, {seq[i].v, 0}};
		double *x;
		size_t R, N, n = seq[i].rows * seq[i].cols;
		ck_assert_msg(nm_point_input(&p, &x, &R, &N, err, sizeof err) == 0, "%s", err);
		nm_gen ref = *g;
		if (t.c.maxabs)
			ref.scale = 1;
		else
			ref.scale = seq[i].v;
		double *y = malloc(n * sizeof *y), m = 0;
		ck_assert_ptr_nonnull(y);
		nm_gen_fill(&ref, y, n);
		for (size_t j = 0; j < n && t.c.maxabs; j++)
			m = fabs(y[j]) > m ? fabs(y[j]) : m;
		for (size_t j = 0; j < n; j++) {
			double want = !t.c.maxabs         ? y[j]
			              : fabs(y[j]) == m ? copysign(seq[i].v, y[j])
			                                : y[j] / m * seq[i].v;
			ck_assert_msg(bits(x[j]) == bits(want), "call %zu, element %zu: %a, want %a", i,
			              j, x[j], want);
		}
		free(x);
		free(y);
	}
}
END_TEST

/* Output name of p on FAST, through nm_point_eval_series. */
static int one_series(const nm_point *p, const char *name, double **v, size_t *n, char *err,
                      size_t errlen)
{
	nm_point_result r;
	const char *names[1] = {name};
	return nm_point_eval_series(p, EMU_BE_FAST, false, &r, names, 1, v, n, err, errlen);
}

/* Shape axes, parameter axes, the series, and the errors. */
START_TEST(test_axes_and_series)
{
	tcase t;
	char err[256] = "";
	mk_case(&t, "accum", "sum:seq", "storage=fp16", NM_GEN_ONES, 1, 1, 0, false, NM_SET_COLS,
	        NM_DOM_INT);
	/* fp16 sums of ones stall at 2048 = 2^11 */
	static const struct {
		double n, sum;
	} rows[] = {{1, 1}, {2047, 2047}, {2048, 2048}, {2049, 2048}, {5000, 2048}};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		nm_point p = {&t.c, 0, 0, {rows[i].n, 0}};
		double *v;
		size_t n;
		ck_assert_msg(one_series(&p, "result", &v, &n, err, sizeof err) == 0, "%s", err);
		ck_assert_uint_eq(n, 1);
		ck_assert_msg(bits(v[0]) == bits(rows[i].sum), "N=%g: sum %a, want %a", rows[i].n,
		              v[0], rows[i].sum);
		free(v);
	}
	nm_point p = {&t.c, 0, 0, {2.5, 0}};
	nm_point_result r;
	ck_assert_int_eq(nm_point_eval(&p, EMU_BE_FAST, false, &r, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "integer") != NULL, "%s", err);
	double *v;
	size_t n;
	p.axis[0] = 4;
	ck_assert_int_eq(one_series(&p, "nope", &v, &n, err, sizeof err), -1);
	ck_assert_ptr_null(v);
	/* a parameter axis: gradacc's m micro-batches, each x/m, added m times */
	mk_case(&t, "accum", "gradacc", "storage=fp16", NM_GEN_ONES, 1, 1, 1, false, NM_SET_PARAM,
	        NM_DOM_INT);
	snprintf(t.c.axes[0].param, sizeof t.c.axes[0].param, "m");
	t.c.gen.scale = 3;
	p = (nm_point){&t.c, 0, 0, {4, 0}};
	ck_assert_msg(one_series(&p, "grad", &v, &n, err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(bits(v[0]), bits(3.0)); /* 4 × 0.75 */
	free(v);
	ck_assert_int_eq(nm_point_eval(&p, EMU_BE_FAST, false, &r, err, sizeof err), 0);
	ck_assert(isnan(r.out[0].max_ulp)); /* no truth, no metrics */
	ck_assert_uint_eq(r.status, EMU_ST_OK);
}
END_TEST

/* nm_point_eval_series: the result nm_point_eval gives and, as series, the
 * outputs of the kernel run on the point's input, from one run on each
 * backend, with and without truth; a missing output fails the whole call
 * and leaves no series. */
START_TEST(test_eval_series)
{
	tcase t;
	char err[256] = "";
	mk_case(&t, "softmax_ce", "maxsub", "storage=fp16", NM_GEN_NORMAL, 9, 3, 40, true,
	        NM_SET_SCALE, NM_DOM_REAL);
	static const emu_be_kind kinds[] = {EMU_BE_FAST, EMU_BE_EXACT};
	const char *names[] = {"grad", "loss"};
	for (size_t q = 0; q < 2 * ARRAY_SIZE(kinds); q++) {
		bool truth = q / 2;
		nm_point p = {&t.c, 0, 0, {q % 2 ? 12.0 : 3.0, 0}};
		nm_point_result r1, r2;
		double *v[2];
		size_t n[2];
		emu_be_kind kind = kinds[q % ARRAY_SIZE(kinds)];
		ck_assert_msg(nm_point_eval(&p, kind, truth, &r1, err, sizeof err) == 0, "%s", err);
		ck_assert_msg(nm_point_eval_series(&p, kind, truth, &r2, names, 2, v, n, err,
		                                   sizeof err) == 0,
		              "%s", err);
		ck_assert(r1.status == r2.status && r1.nout == r2.nout);
		for (size_t i = 0; i < r1.nout; i++)
			ck_assert(bits(r1.out[i].maxabs) == bits(r2.out[i].maxabs) &&
			          bits(r1.out[i].max_ulp) == bits(r2.out[i].max_ulp) &&
			          bits(r1.out[i].rel_err) == bits(r2.out[i].rel_err));
		/* the outputs of the kernel run by hand on the point's input */
		double *x;
		size_t R, N;
		ck_assert_msg(nm_point_input(&p, &x, &R, &N, err, sizeof err) == 0, "%s", err);
		emu_kin in = {x, R, N, NULL, 0, t.c.gen.seed, NULL, 0};
		emu_run run;
		ck_assert_msg(emu_run_kernel(t.c.kernel, &t.pol, "maxsub", &in, kind, &run, err,
		                             sizeof err) == 0,
		              "%s", err);
		for (size_t i = 0; i < 2; i++) {
			const emu_kout_item *it = NULL;
			for (int o = 0; o < run.out.n; o++)
				if (!strcmp(run.out.item[o].name, names[i]))
					it = &run.out.item[o];
			ck_assert_ptr_nonnull(it);
			ck_assert_uint_eq(it->n, n[i]);
			ck_assert_uint_eq(n[i], i == 0 ? 120 : 1);
			for (size_t j = 0; j < n[i]; j++)
				ck_assert(bits(emu_kout_d(&run.be, it, j)) == bits(v[i][j]));
			free(v[i]);
		}
		emu_run_free(&run);
		free(x);
	}
	nm_point p = {&t.c, 0, 0, {3.0, 0}};
	nm_point_result r;
	const char *bad[] = {"grad", "nope"};
	double *v[2] = {NULL, NULL};
	size_t n[2];
	ck_assert_int_eq(nm_point_eval_series(&p, EMU_BE_FAST, false, &r, bad, 2, v, n, err,
	                                      sizeof err),
	                 -1);
	ck_assert_msg(strstr(err, "no output 'nope'") != NULL, "%s", err);
	ck_assert(v[0] == NULL && v[1] == NULL);
}
END_TEST

/* backward: the gradient fractions come with the result. */
START_TEST(test_backward_fractions)
{
	tcase t;
	char err[256] = "";
	mk_case(&t, "backward", "maxsub", "storage=fp16,compute=fp32", NM_GEN_NORMAL, 5, 4, 8,
	        false, NM_SET_PARAM, NM_DOM_POW2);
	snprintf(t.c.axes[0].param, sizeof t.c.axes[0].param, "scale");
	nm_point p = {&t.c, 0, 0, {0x1p40, 0}};
	nm_point_result r;
	ck_assert_msg(nm_point_eval(&p, EMU_BE_FAST, true, &r, err, sizeof err) == 0, "%s", err);
	ck_assert(r.has_fractions);
	ck_assert_msg(r.fractions[3] > 0, "overflowed fraction %g", r.fractions[3]);
	ck_assert(r.status >= EMU_ST_OVERFLOW);
}
END_TEST

Suite *suite_point(void)
{
	Suite *s = suite_create("point");
	TCase *tc = tcase_create("point");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_range_flags, 0, (int)ARRAY_SIZE(range_rows));
	tcase_add_test(tc, test_range_small);
	tcase_add_test(tc, test_range_off);
	tcase_add_test(tc, test_softmax_fp16_status);
	tcase_add_test(tc, test_softmax_truth_range_boundary);
	tcase_add_test(tc, test_truth_range_lost);
	tcase_add_test(tc, test_input_maxabs);
	tcase_add_test(tc, test_input_kept);
	tcase_add_test(tc, test_eval_series);
	tcase_add_test(tc, test_axes_and_series);
	tcase_add_test(tc, test_backward_fractions);
	suite_add_tcase(s, tc);
	return s;
}
