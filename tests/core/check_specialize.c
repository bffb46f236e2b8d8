/*
 * check_specialize.c — emu/core/specialize.h: each implementation-defined choice
 * it names, seen in the results of both backends (the fast operations and
 * the MPFR reference), so a change of a choice shows here by name before it
 * shows in a golden file. Bits and flags are compared, never values.
 */
#include <math.h>
#include <string.h>

#include "tests/lib.h"
#include "emu/core/specialize.h"

struct sp_row {
	const char *fmt;
	emu_op op;
	emu_bits a, b, c; /* operands (cvt: unused; see x) */
	double x;         /* the binary64 source of a cvt row */
	emu_bits bits;    /* the result both backends must give */
	unsigned flags;
	const char *what;
};

static emu_result sp_fast(const emu_format *f, const struct sp_row *r, const emu_env *env)
{
	const emu_bits args[3] = {r->a, r->b, r->c};

	return r->op == EMU_OP_CVT ? emu_from_double(f, r->x, env)
	                           : emu_apply(r->op, f, NULL, args, env);
}

static emu_result sp_exact(const emu_format *f, const struct sp_row *r, const emu_env *env)
{
	const emu_bits args[3] = {r->a, r->b, r->c};

	return r->op == EMU_OP_CVT ? emu_mp_from_double(f, r->x, env)
	                           : emu_mp_apply(r->op, f, NULL, args, env);
}

/* The rows' results in f, or (f NULL) in each row's built-in format. */
static void sp_check_in(const emu_format *in, const struct sp_row *rows, size_t n,
                        const emu_env *env)
{
	for (size_t i = 0; i < n; i++) {
		const struct sp_row *r = &rows[i];
		const emu_format *f = in ? in : t_fmt(r->fmt);
		emu_result got[2] = {sp_fast(f, r, env), sp_exact(f, r, env)};

		for (int k = 0; k < 2; k++)
			ck_assert_msg(
			    got[k].bits == r->bits && got[k].flags == r->flags,
			    "%s (%s, %s backend): got 0x%x flags 0x%x, want 0x%x flags 0x%x",
			    r->what, r->fmt, k ? "exact" : "fast", got[k].bits, got[k].flags,
			    r->bits, r->flags);
	}
}

static void sp_check(const struct sp_row *rows, size_t n, const emu_env *env)
{
	sp_check_in(NULL, rows, n, env);
}

/* The produced NaN of every built-in format: positive, payload zero, quiet. */
START_TEST(test_default_nan)
{
	static const struct {
		const char *fmt;
		emu_bits nan;
	} rows[] = {
	    {"fp32", 0x7fc00000},     {"fp16", 0x7e00},         {"bf16", 0x7fc0},
	    {"e4m3", 0x7f},           {"e5m2", 0x7e},           {"e4m3fnuz", 0x80},
	    {"e5m2fnuz", 0x80},       {"e3m2", EMU_NONAN_BITS}, {"e2m3", EMU_NONAN_BITS},
	    {"e2m1", EMU_NONAN_BITS}, {"e8m0", 0xff},
	};
	const emu_env env = EMU_ENV_DEFAULT;

	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const emu_format *f = t_fmt(rows[i].fmt);
		ck_assert_msg(f->nan_bits == rows[i].nan, "%s: nan_bits 0x%x, want 0x%x",
		              rows[i].fmt, f->nan_bits, rows[i].nan);
		if (f->nan != EMU_NAN_IEEE)
			continue;
		ck_assert(!emu_is_snan(f, f->nan_bits));
		/* inf - inf, and a NaN operand of either sign: never its payload */
		const struct sp_row ops[] = {
		    {rows[i].fmt, EMU_OP_SUB, f->inf_bits, f->inf_bits, 0, 0, f->nan_bits,
		     EMU_FLAG_INVALID, "inf - inf"},
		    {rows[i].fmt, EMU_OP_ADD, f->nan_bits | f->sign_mask | 1, 0, 0, 0, f->nan_bits,
		     0, "-NaN with a payload + 0"},
		    {rows[i].fmt, EMU_OP_CVT, 0, 0, 0, -NAN, f->nan_bits, 0, "-NaN converted"},
		};
		sp_check(ops, ARRAY_SIZE(ops), &env);
	}
}
END_TEST

/* 2^-14 - 2^-26 in fp16: below 2^emin, but its 11-bit rounding is 2^-14, so
 * it is not tiny after rounding: inexact without underflow. */
START_TEST(test_tininess)
{
	const struct sp_row rows[] = {
	    {"fp16", EMU_OP_CVT, 0, 0, 0, 0x1p-14 - 0x1p-26, 0x0400, EMU_FLAG_INEXACT,
	     "2^-14 - 2^-26 rounds up to 2^-14"},
	    {"fp16", EMU_OP_CVT, 0, 0, 0, 0x1p-14 - 0x1p-25, 0x0400,
	     EMU_FLAG_INEXACT | EMU_FLAG_UNDERFLOW, "2^-14 - 2^-25 is tiny (a tie below 2^-14)"},
	};
	const emu_env env = EMU_ENV_DEFAULT;

	ck_assert_int_eq(EMU_TININESS, EMU_TININESS_AFTER_ROUNDING);
	sp_check(rows, ARRAY_SIZE(rows), &env);
}
END_TEST

/* fma(0, inf, qNaN) and fma(inf, 0, qNaN): the produced NaN with invalid. */
START_TEST(test_fma_zero_inf_nan)
{
	const struct sp_row rows[] = {
	    {"fp16", EMU_OP_FMA, 0x0000, 0x7c00, 0x7e01, 0, 0x7e00, EMU_FMA_ZERO_INF_QNAN_FLAGS,
	     "fma(0, inf, qNaN)"},
	    {"fp16", EMU_OP_FMA, 0xfc00, 0x8000, 0xfe00, 0, 0x7e00, EMU_FMA_ZERO_INF_QNAN_FLAGS,
	     "fma(-inf, -0, -qNaN)"},
	    {"bf16", EMU_OP_FMA, 0x7f80, 0x0000, 0x7fc0, 0, 0x7fc0, EMU_FMA_ZERO_INF_QNAN_FLAGS,
	     "fma(inf, 0, qNaN)"},
	    {"fp16", EMU_OP_FMA, 0x3c00, 0x7c00, 0x7e00, 0, 0x7e00, 0, "fma(1, inf, qNaN)"},
	};
	const emu_env env = EMU_ENV_DEFAULT;

	ck_assert_uint_eq(EMU_FMA_ZERO_INF_QNAN_FLAGS, EMU_FLAG_INVALID);
	sp_check(rows, ARRAY_SIZE(rows), &env);
}
END_TEST

/* Overflow and infinities where the format has no infinity. */
START_TEST(test_overflow)
{
	const struct sp_row rows[] = {
	    {"e4m3", EMU_OP_CVT, 0, 0, 0, 1e6, 0x7f, EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT,
	     "e4m3 overflow: the NaN"},
	    {"e4m3", EMU_OP_CVT, 0, 0, 0, -1e6, 0xff, EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT,
	     "e4m3 negative overflow: the NaN with its sign"},
	    {"e4m3", EMU_OP_CVT, 0, 0, 0, -INFINITY, 0xff, EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT,
	     "e4m3 -inf: the NaN with its sign"},
	    {"e4m3fnuz", EMU_OP_CVT, 0, 0, 0, -1e6, 0x80, EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT,
	     "fnuz negative overflow: its one NaN"},
	    {"e2m1", EMU_OP_CVT, 0, 0, 0, 100, 0x7, EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT,
	     "e2m1 (no NaN) overflow: max"},
	    {"e2m1", EMU_OP_CVT, 0, 0, 0, -INFINITY, 0xf, EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT,
	     "e2m1 -inf: -max"},
	};
	const emu_env env = EMU_ENV_DEFAULT;

	ck_assert(EMU_OVERFLOW_NAN_SIGNED);
	ck_assert(emu_overflow_is_nan(t_fmt("e4m3"), false));
	ck_assert(!emu_overflow_is_nan(t_fmt("e4m3"), true));
	ck_assert(!emu_overflow_is_nan(t_fmt("e2m1"), false));
	sp_check(rows, ARRAY_SIZE(rows), &env);
}
END_TEST

/* A format without NaN where a NaN would come: +0 and invalid. */
START_TEST(test_no_nan)
{
	const struct sp_row rows[] = {
	    {"e2m1", EMU_OP_CVT, 0, 0, 0, NAN, EMU_NONAN_BITS, EMU_FLAG_INVALID, "e2m1 <- qNaN"},
	    {"e3m2", EMU_OP_CVT, 0, 0, 0, -NAN, EMU_NONAN_BITS, EMU_FLAG_INVALID, "e3m2 <- -qNaN"},
	    {"e2m3", EMU_OP_SQRT, 0x28, 0, 0, 0, EMU_NONAN_BITS, EMU_FLAG_INVALID,
	     "sqrt(-1) in e2m3"},
	};
	const emu_env env = EMU_ENV_DEFAULT;

	sp_check(rows, ARRAY_SIZE(rows), &env);
}
END_TEST

/* e8m0 has no zero: a zero result is code 0 = 2^-127 with underflow|inexact;
 * a value-domain 0 is read as that code. */
START_TEST(test_no_zero)
{
	const emu_format *f = t_fmt("e8m0");
	const struct sp_row rows[] = {
	    {"e8m0", EMU_OP_CVT, 0, 0, 0, 0.0, 0x00, EMU_NOZERO_FLAGS, "e8m0 <- 0"},
	    {"e8m0", EMU_OP_CVT, 0, 0, 0, -0.0, 0x00, EMU_NOZERO_FLAGS, "e8m0 <- -0"},
	    {"e8m0", EMU_OP_SUB, 0x7f, 0x7f, 0, 0, 0x00, EMU_NOZERO_FLAGS, "1 - 1 in e8m0"},
	    {"e8m0", EMU_OP_CVT, 0, 0, 0, -1.0, 0xff, EMU_FLAG_INVALID, "e8m0 <- -1: the NaN"},
	};
	const emu_env env = EMU_ENV_DEFAULT;

	ck_assert_uint_eq(EMU_NOZERO_FLAGS, EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT);
	ck_assert(emu_v_arg(f, 0.0) == f->min_normal);
	ck_assert(emu_v_arg(f, 2.0) == 2.0);
	sp_check(rows, ARRAY_SIZE(rows), &env);
}
END_TEST

/* Without a sign bit (float8_e5m3fnu's shape: a zero, subnormals, fn's
 * NaN 0xff): negative values, also those that would round to zero, and
 * -inf are the NaN with invalid (log 0 adds divbyzero, the pole's flag); -0
 * and an exact zero of either sign are +0, a zero in the value domain too,
 * and neg(0) is 0 with no flag. */
START_TEST(test_no_sign)
{
	emu_format f = {.name = "e5m3fnu",
	                .p = 4,
	                .ebits = 5,
	                .bias = 15,
	                .has_sign = false,
	                .has_inf = false,
	                .has_subnormals = true,
	                .has_zero = true,
	                .nan = EMU_NAN_FN};
	ck_assert(emu_format_init(&f) == EMU_OK);
	ck_assert(f.bits == 8 && f.sign_mask == 0 && f.nan_bits == 0xff && f.max == 114688);
	const struct sp_row rows[] = {
	    {"", EMU_OP_CVT, 0, 0, 0, -0.0, 0x00, 0, "<- -0"},
	    {"", EMU_OP_CVT, 0, 0, 0, -1.0, 0xff, EMU_FLAG_INVALID, "<- -1"},
	    {"", EMU_OP_CVT, 0, 0, 0, -0x1p-30, 0xff, EMU_FLAG_INVALID, "<- -2^-30 (rounds to -0)"},
	    {"", EMU_OP_CVT, 0, 0, 0, -INFINITY, 0xff, EMU_FLAG_INVALID, "<- -inf"},
	    {"", EMU_OP_CVT, 0, 0, 0, -NAN, 0xff, 0, "<- -qNaN"},
	    {"", EMU_OP_NEG, 0x00, 0, 0, 0, 0x00, 0, "neg(0)"},
	    {"", EMU_OP_NEG, 0x01, 0, 0, 0, 0xff, EMU_FLAG_INVALID, "neg(min subnormal)"},
	    {"", EMU_OP_ABS, 0x38, 0, 0, 0, 0x38, 0, "abs(1)"},
	    {"", EMU_OP_SUB, 0x78, 0x78, 0, 0, 0x00, 0, "1 - 1"},
	    {"", EMU_OP_SUB, 0x78, 0x80, 0, 0, 0xff, EMU_FLAG_INVALID, "1 - 2"},
	    {"", EMU_OP_LOG, 0x70, 0, 0, 0, 0xff, EMU_FLAG_INVALID, "log(0.5) < 0"},
	    {"", EMU_OP_LOG, 0x00, 0, 0, 0, 0xff, EMU_FLAG_INVALID | EMU_FLAG_DIVBYZERO,
	     "log(0) = -inf: divbyzero, and no -inf"},
	};
	const struct sp_row rne_rows[] = {
	    {"", EMU_OP_MUL, 0x01, 0x01, 0, 0, 0x00, EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT,
	     "min subnormal squared"},
	    {"", EMU_OP_CVT, 0, 0, 0, 0x1p-18, 0x00, EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT,
	     "<- half the min subnormal: ties to +0"},
	};
	const emu_env rne = EMU_ENV_DEFAULT;
	sp_check_in(&f, rne_rows, ARRAY_SIZE(rne_rows), &rne);
	for (int m = 0; m < EMU_NMODES; m++) {
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = (emu_mode)m;
		sp_check_in(&f, rows, ARRAY_SIZE(rows), &env);
		/* the value domain has no -0 to hand on either */
		unsigned fl = 0;
		ck_assert(!signbit(emu_round_value(&f, -0.0, 0, &env, &fl)) && fl == 0);
		double one = 1.0, z;
		emu_a_flags af = emu_a_sub(&f, &z, &one, 0, &one, 0, 1, &env, NULL);
		ck_assert_msg(z == 0 && !signbit(z) && af.any == 0, "%s: 1 - 1 = %a",
		              emu_mode_name(env.mode), z);
	}
}
END_TEST

/* An exact zero sum is -0 only in mode down; SR gives +0. */
START_TEST(test_zero_sum_sign)
{
	static const struct {
		emu_mode mode;
		emu_bits want;
	} modes[] = {{EMU_RNE, 0x0000}, {EMU_DOWN, 0x8000}, {EMU_UP, 0x0000}, {EMU_SR, 0x0000}};

	for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = modes[i].mode;
		const struct sp_row rows[] = {
		    {"fp16", EMU_OP_SUB, 0x3c00, 0x3c00, 0, 0, modes[i].want, 0, "1 - 1"},
		};
		ck_assert(emu_zero_sum_neg(&env) == (modes[i].want != 0));
		sp_check(rows, ARRAY_SIZE(rows), &env);
	}
}
END_TEST

Suite *suite_specialize(void)
{
	Suite *s = suite_create("specialize");
	TCase *tc = tcase_create("specialize");

	tcase_add_test(tc, test_default_nan);
	tcase_add_test(tc, test_tininess);
	tcase_add_test(tc, test_fma_zero_inf_nan);
	tcase_add_test(tc, test_overflow);
	tcase_add_test(tc, test_no_nan);
	tcase_add_test(tc, test_no_zero);
	tcase_add_test(tc, test_no_sign);
	tcase_add_test(tc, test_zero_sum_sign);
	suite_add_tcase(s, tc);
	return s;
}
