/*
 * check_round.c — conversions from double with known answers (FACTS §1-2,
 * IEEE 754-2019 §4.3 and §7): one row per fact, named on failure.
 */
#include <math.h>

#include "tests/lib.h"

#define OF (EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT)
#define UF (EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT)
#define IX EMU_FLAG_INEXACT

static const struct {
	const char *fmt;
	double x;
	emu_mode mode;
	int sat, ftz;
	emu_bits bits;
	unsigned flags;
} rows[] = {
	{"fp16", 65519.99, EMU_RNE, 0, 0, 0x7bff, IX},
	{"fp16", 65520, EMU_RNE, 0, 0, 0x7c00, OF},
	{"fp16", 65520, EMU_RNE, 1, 0, 0x7bff, OF},
	{"fp16", 65520, EMU_RTZ, 0, 0, 0x7bff, IX},            /* RTZ gives 65504: no overflow */
	{"fp16", 70000, EMU_RTZ, 0, 0, 0x7bff, OF},
	{"fp16", -70000, EMU_UP, 0, 0, 0xfbff, OF},
	{"fp16", -65520, EMU_DOWN, 0, 0, 0xfc00, OF},
	{"fp16", 1 + 0x1p-11, EMU_RNE, 0, 0, 0x3c00, IX},
	{"fp16", 1 + 0x1p-11, EMU_RNA, 0, 0, 0x3c01, IX},
	{"fp16", 1 + 0x1p-11, EMU_UP, 0, 0, 0x3c01, IX},
	{"fp16", 1 + 0x1p-10 + 0x1p-11, EMU_RNE, 0, 0, 0x3c02, IX},
	{"fp16", 0x1p-25, EMU_RNE, 0, 0, 0x0000, UF},
	{"fp16", 0x1.8p-25, EMU_RNE, 0, 0, 0x0001, UF},
	{"fp16", 0x1.8p-24, EMU_RNE, 0, 0, 0x0002, UF},
	{"fp16", 0x1p-24, EMU_RNE, 0, 0, 0x0001, 0},            /* exact subnormal: no flag */
	{"fp16", 0x1p-24, EMU_RNE, 0, 1, 0x0000, UF},           /* ftz */
	{"fp16", 0x1.ff8p-15, EMU_RNE, 0, 0, 0x03ff, 0},
	{"fp16", 0x1.ffcp-15, EMU_RNE, 0, 0, 0x0400, UF},       /* 11 bits: tiny after rounding */
	{"fp16", 0x1.ffep-15, EMU_RNE, 0, 0, 0x0400, IX},       /* rounds to 2^-14: not tiny after rounding */
	{"fp16", 0x1.ffep-15, EMU_RTZ, 0, 0, 0x03ff, UF},
	{"fp16", -0x1p-30, EMU_RNE, 0, 0, 0x8000, UF},
	{"fp16", -0x1p-30, EMU_DOWN, 0, 0, 0x8001, UF},
	{"fp16", 1e-310, EMU_UP, 0, 0, 0x0001, UF},              /* double subnormal input */
	{"fp16", INFINITY, EMU_RNE, 0, 0, 0x7c00, 0},
	{"fp16", INFINITY, EMU_RNE, 1, 0, 0x7bff, OF},
	{"fp16", NAN, EMU_RNE, 0, 0, 0x7e00, 0},
	{"fp16", -0.0, EMU_RNE, 0, 0, 0x8000, 0},
	{"bf16", 1 + 0x1p-8, EMU_RNE, 0, 0, 0x3f80, IX},
	{"bf16", 1 + 0x1p-8 + 0x1p-30, EMU_RNE, 0, 0, 0x3f81, IX},
	{"bf16", 0x1.ffp127, EMU_RNE, 0, 0, 0x7f80, OF},         /* (2-2^-8)·2^127 */
	{"bf16", 0x1.fefffffp127, EMU_RNE, 0, 0, 0x7f7f, IX},
	{"e4m3", 448, EMU_RNE, 0, 0, 0x7e, 0},
	{"e4m3", 464, EMU_RNE, 0, 0, 0x7e, IX},                   /* ties to 448 */
	{"e4m3", 464.0001, EMU_RNE, 0, 0, 0x7f, OF},              /* NaN: no inf in E4M3FN */
	{"e4m3", 465, EMU_RNE, 1, 0, 0x7e, OF},
	{"e4m3", -500, EMU_RNE, 0, 0, 0xff, OF},
	{"e4m3", 470, EMU_RTZ, 0, 0, 0x7e, IX},
	{"e4m3", INFINITY, EMU_RNE, 0, 0, 0x7f, OF},
	{"e4m3", -INFINITY, EMU_RNE, 1, 0, 0xfe, OF},
	{"e4m3", 0x1p-10, EMU_RNE, 0, 0, 0x00, UF},               /* half the min subnormal ties to 0 */
	{"e4m3", 0x1.8p-10, EMU_RNE, 0, 0, 0x01, UF},
	{"e5m2", 57344, EMU_RNE, 0, 0, 0x7b, 0},
	{"e5m2", 61440, EMU_RNE, 0, 0, 0x7c, OF},
	{"e5m2", 61439, EMU_RNE, 0, 0, 0x7b, IX},
	{"e5m2", 61440, EMU_RNE, 1, 0, 0x7b, OF},
	{"e4m3fnuz", -0.0, EMU_RNE, 0, 0, 0x00, 0},               /* no -0 */
	{"e4m3fnuz", 250, EMU_RNE, 0, 0, 0x80, OF},
	{"e4m3fnuz", NAN, EMU_RNE, 0, 0, 0x80, 0},
	{"e2m1", 7, EMU_RNE, 0, 0, 0x7, OF},                      /* no inf, no NaN: saturate */
	{"e2m1", 0.25, EMU_RNE, 0, 0, 0x0, UF},
	{"e2m1", 0.75, EMU_RNE, 0, 0, 0x2, UF},                   /* ties to 1.0; tiny (0.75 has 2 bits) */
	{"e2m1", NAN, EMU_RNE, 0, 0, 0x0, EMU_FLAG_INVALID},
	{"e8m0", 1, EMU_RNE, 0, 0, 0x7f, 0},
	{"e8m0", 3, EMU_RNE, 0, 0, 0x81, IX},                     /* tie 2 vs 4 goes to 4 */
	{"e8m0", 3, EMU_RTZ, 0, 0, 0x80, IX},
	{"e8m0", 0, EMU_RNE, 0, 0, 0x00, UF},                     /* no zero */
	{"e8m0", -1, EMU_RNE, 0, 0, 0xff, EMU_FLAG_INVALID},
	{"e8m0", 0x1p128, EMU_RNE, 0, 0, 0xff, OF},
	{"e8m0", 0x1p128, EMU_RNE, 1, 0, 0xfe, OF},
	{"fp32", 0x1.ffffffp127, EMU_RNE, 0, 0, 0x7f800000, OF},  /* 2^128 - 2^103 */
	{"fp32", 0x1.fffffefffp127, EMU_RNE, 0, 0, 0x7f7fffff, IX},
	{"tf32", 1 + 0x1p-11 + 0x1p-40, EMU_RNE, 0, 0, 0x1fc01, IX},
};

START_TEST(test_rows)
{
	const emu_format *f = t_fmt(rows[_i].fmt);
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = rows[_i].mode;
	env.sat = rows[_i].sat;
	env.ftz = rows[_i].ftz;
	emu_result r = emu_from_double(f, rows[_i].x, &env);
	char a[48], b[48];
	ck_assert_msg(r.bits == rows[_i].bits && r.flags == rows[_i].flags,
	              "row %d: %s(%a) %s%s = 0x%x %s, want 0x%x %s", _i, f->name, rows[_i].x,
	              emu_mode_name(env.mode), env.sat ? " sat" : "", r.bits,
	              emu_flags_str(r.flags, a, sizeof a), rows[_i].bits,
	              emu_flags_str(rows[_i].flags, b, sizeof b));
}
END_TEST

/* FACTS §7 by operations: sums of ones stall, fp16 x² overflows at 255.97. */
START_TEST(test_ones_stall)
{
	static const struct {
		const char *fmt;
		double stall;
	} st[] = {{"fp16", 2048}, {"bf16", 256}, {"e4m3", 16}, {"e5m2", 8}};
	for (size_t i = 0; i < ARRAY_SIZE(st); i++) {
		const emu_format *f = t_fmt(st[i].fmt);
		emu_env env = EMU_ENV_DEFAULT;
		emu_bits one = emu_from_double(f, 1, &env).bits, s = 0;
		for (int k = 0; k < 5000; k++)
			s = emu_add(f, s, one, &env).bits;
		ck_assert_msg(emu_decode(f, s) == st[i].stall, "%s: sum of ones %g", f->name,
		              emu_decode(f, s));
	}
}
END_TEST

START_TEST(test_square_overflow)
{
	const emu_format *f = t_fmt("fp16");
	emu_env env = EMU_ENV_DEFAULT;
	emu_bits a = emu_from_double(f, 255.875, &env).bits; /* 0x5bff: largest below 256 */
	emu_result r = emu_mul(f, a, a, &env);
	ck_assert_msg(r.bits == 0x7bfe, "255.875^2 = 0x%x", r.bits); /* 65472.02 */
	emu_bits b = emu_from_double(f, 256, &env).bits;
	r = emu_mul(f, b, b, &env);
	ck_assert_msg(r.bits == 0x7c00 && r.flags == OF, "256^2 = 0x%x", r.bits);
	/* Adam's eps 1e-8 rounds to 0 in fp16 */
	ck_assert(emu_from_double(f, 1e-8, &env).bits == 0);
}
END_TEST

/* FMA is one rounding, not round(round(a·b) + c). */
START_TEST(test_fma_single_rounding)
{
	const emu_format *f = t_fmt("fp32");
	emu_env env = EMU_ENV_DEFAULT;
	/* (1+2^-12)^2 = 1 + 2^-11 + 2^-24: the product alone ties to 1 + 2^-11 */
	emu_bits a = emu_from_double(f, 1 + 0x1p-12, &env).bits;
	emu_bits b = a;
	emu_bits c = emu_from_double(f, -(1 + 0x1p-11), &env).bits;
	emu_result r = emu_fma(f, a, b, c, &env);
	ck_assert_msg(emu_decode(f, r.bits) == 0x1p-24 && r.flags == 0, "fma = %a",
	              emu_decode(f, r.bits));
	emu_result m = emu_mul(f, a, b, &env);
	emu_result s = emu_add(f, m.bits, c, &env);
	ck_assert_msg(emu_decode(f, s.bits) == 0, "two roundings give %a", emu_decode(f, s.bits));
}
END_TEST

START_TEST(test_special_ops)
{
	const emu_format *f = t_fmt("fp16");
	emu_env env = EMU_ENV_DEFAULT;
	emu_bits one = 0x3c00, zero = 0, inf = 0x7c00, ninf = 0xfc00;
	ck_assert(emu_div(f, one, zero, &env).bits == inf);
	ck_assert(emu_div(f, one, zero, &env).flags == EMU_FLAG_DIVBYZERO);
	ck_assert(emu_div(f, zero, zero, &env).flags == EMU_FLAG_INVALID);
	ck_assert(emu_add(f, inf, ninf, &env).flags == EMU_FLAG_INVALID);
	ck_assert(emu_sub(f, one, one, &env).bits == 0x0000);
	env.mode = EMU_DOWN;
	ck_assert(emu_sub(f, one, one, &env).bits == 0x8000);
	env.mode = EMU_RNE;
	ck_assert(emu_add(f, 0x8000, 0x8000, &env).bits == 0x8000);
	ck_assert(emu_sqrt(f, 0x8000, &env).bits == 0x8000);
	ck_assert(emu_sqrt(f, 0xbc00, &env).flags == EMU_FLAG_INVALID);
	ck_assert(emu_log(f, 0, &env).bits == 0xfc00);
	ck_assert(emu_log(f, 0, &env).flags == EMU_FLAG_DIVBYZERO);
	ck_assert(emu_log(f, one, &env).bits == 0 && emu_log(f, one, &env).flags == 0);
	ck_assert(emu_exp(f, 0, &env).bits == one && emu_exp(f, 0, &env).flags == 0);
	ck_assert(emu_rsqrt(f, 0x4400, &env).bits == 0x3800); /* rsqrt(4) = 0.5 exact */
	ck_assert(emu_rsqrt(f, 0x4400, &env).flags == 0);
	ck_assert(emu_min(f, 0x0000, 0x8000, &env).bits == 0x8000);
	ck_assert(emu_max(f, 0x7e00, one, &env).bits == one);
	ck_assert(emu_compare(f, 0x0000, 0x8000, &env) == 0);
	ck_assert(emu_compare(f, 0x7e00, one, &env) == 2);
	/* e4m3: 0·inf is impossible (no inf), 1/0 gives NaN with divbyzero */
	const emu_format *e = t_fmt("e4m3");
	emu_result r = emu_div(e, 0x38, 0x00, &env);
	ck_assert(r.bits == 0x7f && r.flags == EMU_FLAG_DIVBYZERO);
	/* exp overflow boundary in fp16: exp(z) >= 65520 */
	emu_bits z1 = emu_from_double(f, 11.0859375, &env).bits;
	emu_bits z2 = emu_from_double(f, 11.09375, &env).bits;
	ck_assert(emu_exp(f, z1, &env).bits < 0x7c00 && !(emu_exp(f, z1, &env).flags & EMU_FLAG_OVERFLOW));
	ck_assert(emu_exp(f, z2, &env).bits == 0x7c00 && (emu_exp(f, z2, &env).flags & EMU_FLAG_OVERFLOW));
}
END_TEST

Suite *suite_round(void)
{
	Suite *s = suite_create("round");
	TCase *tc = tcase_create("known");
	tcase_add_loop_test(tc, test_rows, 0, ARRAY_SIZE(rows));
	tcase_add_test(tc, test_ones_stall);
	tcase_add_test(tc, test_square_overflow);
	tcase_add_test(tc, test_fma_single_rounding);
	tcase_add_test(tc, test_special_ops);
	suite_add_tcase(s, tc);
	return s;
}
