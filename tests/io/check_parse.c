/*
 * check_parse.c — the command line's parsers (emu/io/nm_parse.c): table
 * tests of every accepted and refused form, exact rounding of decimals that
 * sit next to a halfway point (where going through double would round
 * twice), stochastic rounding decided on bits a double cannot hold, and a
 * seeded fuzz loop that must only ever see OK or a clean error.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <mpfr.h>

#include "tests/lib.h"
#include "emu/io/nm_parse.h"

#define IX EMU_FLAG_INEXACT
#define OF (EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT)
#define UF (EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT)

/* ---- numbers ---- */

enum { EXACT = 1, INEXACT = 0 };

static const struct {
	const char *s;
	nm_status st;
	nm_kind kind;
	int exact; /* is it exactly a double? */
	double d;  /* that double (when exact) */
} numbers[] = {
    {"0", NM_OK, NM_NUM_FINITE, EXACT, 0.0},
    {"-0", NM_OK, NM_NUM_FINITE, EXACT, -0.0},
    {"+0.000", NM_OK, NM_NUM_FINITE, EXACT, 0.0},
    {"1", NM_OK, NM_NUM_FINITE, EXACT, 1.0},
    {"+1", NM_OK, NM_NUM_FINITE, EXACT, 1.0},
    {"-1.5", NM_OK, NM_NUM_FINITE, EXACT, -1.5},
    {".5", NM_OK, NM_NUM_FINITE, EXACT, 0.5},
    {"5.", NM_OK, NM_NUM_FINITE, EXACT, 5.0},
    {"-.25", NM_OK, NM_NUM_FINITE, EXACT, -0.25},
    {"1e3", NM_OK, NM_NUM_FINITE, EXACT, 1000.0},
    {"1E+3", NM_OK, NM_NUM_FINITE, EXACT, 1000.0},
    {"65504", NM_OK, NM_NUM_FINITE, EXACT, 65504.0},
    {"0x1.8p3", NM_OK, NM_NUM_FINITE, EXACT, 12.0},
    {"0X1P-2", NM_OK, NM_NUM_FINITE, EXACT, 0.25},
    {"0x.8", NM_OK, NM_NUM_FINITE, EXACT, 0.5},
    {"0x1.8", NM_OK, NM_NUM_FINITE, EXACT, 1.5},
    {"0x1.8e3", NM_OK, NM_NUM_FINITE, EXACT, 0x1.8e3p0}, /* e is a hex digit */
    {"-0x1p-1074", NM_OK, NM_NUM_FINITE, EXACT, -0x1p-1074},
    {"0x1.fffffffffffffp1023", NM_OK, NM_NUM_FINITE, EXACT, 0x1.fffffffffffffp1023},
    {"00012.50", NM_OK, NM_NUM_FINITE, EXACT, 12.5},
    {"0.1", NM_OK, NM_NUM_FINITE, INEXACT, 0},
    {"65519.99", NM_OK, NM_NUM_FINITE, INEXACT, 0},
    {"1e400", NM_OK, NM_NUM_FINITE, INEXACT, 0},
    {"-1e-400", NM_OK, NM_NUM_FINITE, INEXACT, 0},
    {"1e99999999999999999999", NM_OK, NM_NUM_FINITE, INEXACT, 0},
    {"1e-99999999999999999999", NM_OK, NM_NUM_FINITE, INEXACT, 0},
    {"0x1.00000000000001p0", NM_OK, NM_NUM_FINITE, INEXACT, 0}, /* 57 bits */
    {"inf", NM_OK, NM_NUM_INF, EXACT, INFINITY},
    {"-INF", NM_OK, NM_NUM_INF, EXACT, -INFINITY},
    {"+Inf", NM_OK, NM_NUM_INF, EXACT, INFINITY},
    {"nan", NM_OK, NM_NUM_NAN, EXACT, NAN},
    {"-NaN", NM_OK, NM_NUM_NAN, EXACT, NAN},
    {"NAN", NM_OK, NM_NUM_NAN, EXACT, NAN},
    {"", NM_ERR_SYNTAX, 0, 0, 0},
    {" ", NM_ERR_SYNTAX, 0, 0, 0},
    {" 1", NM_ERR_SYNTAX, 0, 0, 0},
    {"1 ", NM_ERR_SYNTAX, 0, 0, 0},
    {"1\t", NM_ERR_SYNTAX, 0, 0, 0},
    {"\n1", NM_ERR_SYNTAX, 0, 0, 0},
    {"1.2.3", NM_ERR_SYNTAX, 0, 0, 0},
    {"1e", NM_ERR_SYNTAX, 0, 0, 0},
    {"1e+", NM_ERR_SYNTAX, 0, 0, 0},
    {"0x", NM_ERR_SYNTAX, 0, 0, 0},
    {"0x1p", NM_ERR_SYNTAX, 0, 0, 0},
    {"0x1.8p3x", NM_ERR_SYNTAX, 0, 0, 0},
    {"0b101", NM_ERR_SYNTAX, 0, 0, 0},
    {".", NM_ERR_SYNTAX, 0, 0, 0},
    {"-", NM_ERR_SYNTAX, 0, 0, 0},
    {"+", NM_ERR_SYNTAX, 0, 0, 0},
    {"+-1", NM_ERR_SYNTAX, 0, 0, 0},
    {"--1", NM_ERR_SYNTAX, 0, 0, 0},
    {"1,5", NM_ERR_SYNTAX, 0, 0, 0},
    {"1_000", NM_ERR_SYNTAX, 0, 0, 0},
    {"e5", NM_ERR_SYNTAX, 0, 0, 0},
    {"1@5", NM_ERR_SYNTAX, 0, 0, 0},
    {"@inf@", NM_ERR_SYNTAX, 0, 0, 0},
    {"infinity", NM_ERR_SYNTAX, 0, 0, 0},
    {"-Infinity", NM_ERR_SYNTAX, 0, 0, 0},
    {"inff", NM_ERR_SYNTAX, 0, 0, 0},
    {"in", NM_ERR_SYNTAX, 0, 0, 0},
    {"nan(1)", NM_ERR_SYNTAX, 0, 0, 0},
    {"nan()", NM_ERR_SYNTAX, 0, 0, 0},
    {"++inf", NM_ERR_SYNTAX, 0, 0, 0},
    {"abc", NM_ERR_SYNTAX, 0, 0, 0},
    {"\xd9\xa3", NM_ERR_SYNTAX, 0, 0, 0},    /* Arabic-Indic three */
    {"1e5\xc2\xa0", NM_ERR_SYNTAX, 0, 0, 0}, /* no-break space */
};

START_TEST(test_numbers)
{
	nm_number x;
	double d;
	nm_status st = nm_parse_number(numbers[_i].s, &x);

	ck_assert_msg(st == numbers[_i].st, "'%s': status %d, want %d", numbers[_i].s, st,
	              numbers[_i].st);
	if (st != NM_OK)
		return;
	ck_assert_msg(x.kind == numbers[_i].kind, "'%s': kind %d", numbers[_i].s, x.kind);
	ck_assert_msg(nm_number_to_double(&x, &d) == (numbers[_i].exact == EXACT),
	              "'%s': exactness", numbers[_i].s);
	if (numbers[_i].exact != EXACT)
		return;
	if (isnan(numbers[_i].d)) {
		ck_assert_msg(isnan(d), "'%s': %a", numbers[_i].s, d);
		return;
	}
	ck_assert_msg(d == numbers[_i].d && signbit(d) == signbit(numbers[_i].d),
	              "'%s': %a, want %a", numbers[_i].s, d, numbers[_i].d);
}
END_TEST

START_TEST(test_null_and_compare)
{
	nm_number x;

	ck_assert(nm_parse_number(NULL, &x) == NM_ERR_SYNTAX);
	ck_assert(nm_parse_number("0.1", &x) == NM_OK);
	ck_assert_int_eq(nm_number_cmp(&x, 0.1), -1); /* 0.1 < double(0.1) */
	ck_assert_int_eq(nm_number_cmp(&x, 0x1.9999999999999p-4), 1);
	ck_assert(nm_parse_number("-0.1", &x) == NM_OK);
	ck_assert_int_eq(nm_number_cmp(&x, -0.1), 1);
	ck_assert(nm_parse_number("1", &x) == NM_OK);
	ck_assert_int_eq(nm_number_cmp(&x, 1.0), 0);
	ck_assert_int_eq(nm_number_cmp(&x, NAN), 2);
	ck_assert(nm_parse_number("-inf", &x) == NM_OK);
	ck_assert_int_eq(nm_number_cmp(&x, -INFINITY), 0);
	ck_assert_int_eq(nm_number_cmp(&x, -1e308), -1);
	ck_assert(nm_parse_number("1e-99999", &x) == NM_OK);
	ck_assert_int_eq(nm_number_cmp(&x, 0.0), 1);
	ck_assert_int_eq(nm_number_cmp(&x, 0x1p-1074), -1);
	ck_assert(nm_parse_number("-1e99999", &x) == NM_OK);
	ck_assert_int_eq(nm_number_cmp(&x, -0x1.fffffffffffffp1023), -1);
}
END_TEST

/* ---- exact rounding of decimals ---- */

static const struct {
	const char *fmt, *s;
	emu_mode mode;
	bool sat;
	emu_bits bits;
	unsigned flags;
} rounds[] = {
    {"fp16", "65519.99", EMU_RNE, 0, 0x7bff, IX},
    {"fp16", "65519.999999999999999999999", EMU_RNE, 0, 0x7bff, IX},
    {"fp16", "65520", EMU_RNE, 0, 0x7c00, OF},
    {"fp16", "65520", EMU_RNE, 1, 0x7bff, OF},
    /* below the halfway point 1 + 1.5*2^-10, but its nearest double is it */
    {"fp16", "1.00146484374999999999999", EMU_RNE, 0, 0x3c01, IX},
    {"fp16", "1.00146484375", EMU_RNE, 0, 0x3c02, IX},
    {"fp16", "1.00146484375000000000001", EMU_RNE, 0, 0x3c02, IX},
    {"fp16", "1.00048828125000000000001", EMU_RNE, 0, 0x3c01, IX},
    {"fp16", "1.00048828125", EMU_RNE, 0, 0x3c00, IX},
    {"fp16", "1.00048828125", EMU_RNA, 0, 0x3c01, IX},
    {"fp16", "0.1", EMU_RNE, 0, 0x2e66, IX},
    {"fp16", "0.1", EMU_UP, 0, 0x2e67, IX},
    {"fp16", "-0.1", EMU_DOWN, 0, 0xae67, IX},
    {"fp16", "0x1p-24", EMU_RNE, 0, 0x0001, 0},
    {"fp16", "0x1p-25", EMU_RNE, 0, 0x0000, UF},
    {"fp16", "0x1.0000000000000000001p-25", EMU_RNE, 0, 0x0001, UF},
    {"fp16", "1e-99999", EMU_RNE, 0, 0x0000, UF},
    {"fp16", "1e-99999", EMU_UP, 0, 0x0001, UF},
    {"fp16", "-1e-99999", EMU_DOWN, 0, 0x8001, UF},
    {"fp16", "1e99999", EMU_RTZ, 0, 0x7bff, OF},
    {"fp16", "-1e99999", EMU_RNE, 0, 0xfc00, OF},
    {"fp16", "-0", EMU_RNE, 0, 0x8000, 0},
    {"fp16", "-inf", EMU_RNE, 0, 0xfc00, 0},
    {"fp16", "nan", EMU_RNE, 0, 0x7e00, 0},
    {"bf16", "1.00390625", EMU_RNE, 0, 0x3f80, IX},
    {"bf16", "1.003906250000000000000000001", EMU_RNE, 0, 0x3f81, IX},
    {"bf16", "1.01171875", EMU_RNE, 0, 0x3f82, IX}, /* 1 + 3*2^-8 ties up */
    {"e4m3", "464", EMU_RNE, 0, 0x7e, IX},
    {"e4m3", "464.00000000000000000001", EMU_RNE, 0, 0x7f, OF},
    {"e4m3", "465", EMU_RNE, 1, 0x7e, OF},
    {"e4m3", "inf", EMU_RNE, 0, 0x7f, OF},
    {"e4m3fnuz", "-0", EMU_RNE, 0, 0x00, 0},
    {"e2m1", "nan", EMU_RNE, 0, 0x0, EMU_FLAG_INVALID},
    {"e8m0", "3", EMU_RNE, 0, 0x81, IX},
    {"e8m0", "0", EMU_RNE, 0, 0x00, UF},
    {"e8m0", "-1", EMU_RNE, 0, 0xff, EMU_FLAG_INVALID},
    {"p=4,emax=8,nan=fn", "464", EMU_RNE, 0, 0x7e, IX},
    {"p=4,emax=8,nan=fn", "465", EMU_RNE, 0, 0x7f, OF},
    {"fp32", "0.1", EMU_RNE, 0, 0x3dcccccd, IX},
    {"fp32", "16777217", EMU_RNE, 0, 0x4b800000, IX},
    {"fp32", "16777217.000000000000000001", EMU_RNE, 0, 0x4b800001, IX},
    {"tf32", "1.00048828125000000000000000001", EMU_RNE, 0, 0x1fc01, IX},
};

START_TEST(test_rounds)
{
	emu_format f;
	char err[128], a[48], b[48];
	emu_env env = EMU_ENV_DEFAULT;
	nm_number x;
	emu_result r;

	ck_assert(emu_format_parse(rounds[_i].fmt, &f, err, sizeof(err)) == EMU_OK);
	ck_assert(nm_parse_number(rounds[_i].s, &x) == NM_OK);
	env.mode = rounds[_i].mode;
	env.sat = rounds[_i].sat;
	r = nm_round_number(&f, &x, &env);
	ck_assert_msg(r.bits == rounds[_i].bits && r.flags == rounds[_i].flags,
	              "%s '%s' %s%s: 0x%x %s, want 0x%x %s", f.name, rounds[_i].s,
	              emu_mode_name(env.mode), env.sat ? " sat" : "", r.bits,
	              emu_flags_str(r.flags, a, sizeof(a)), rounds[_i].bits,
	              emu_flags_str(rounds[_i].flags, b, sizeof(b)));
}
END_TEST

/* A random double, most often in or near the small formats' ranges. */
static double rand_double(uint64_t stream, uint64_t i)
{
	uint64_t r = t_rand(stream, i);
	double m = (double)(r >> 11) * 0x1p-53 + 0.5; /* [0.5, 1): 53 bits */
	int e = (int)((r >> 3) % 300) - 150;

	switch (r & 7) {
	case 0:
		return ldexp((double)(t_rand(stream + 1, i) >> 40), e / 4); /* short */
	case 1:
		return (r & 8) ? -0.0 : 0.0;
	default:
		return (r & 16 ? -1 : 1) * ldexp(m, e);
	}
}

/*
 * The decimal path must agree with the library's double path on numbers
 * that are doubles: the hex text "%a" is exact, so nm_round_number and
 * emu_from_double must give the same bits and flags in every mode.
 */
START_TEST(test_agrees_with_from_double)
{
	int n = t_quick() ? 300 : 2000;
	char text[64];
	nm_number x;
	uint64_t cases = 0;

	for (int i = 0; i < n; i++) {
		double d = rand_double(11, (uint64_t)i);

		snprintf(text, sizeof(text), "%a", d);
		ck_assert_msg(nm_parse_number(text, &x) == NM_OK, "'%s'", text);
		for (size_t k = 0; k < emu_format_count(); k++) {
			const emu_format *f = emu_format_at(k);

			for (int m = 0; m < EMU_NMODES; m++) {
				emu_env env = EMU_ENV_DEFAULT;
				emu_result a, b;

				env.mode = (emu_mode)m;
				env.sat = (i & 1) != 0;
				env.ftz = (i & 2) != 0;
				env.seed = t_rand(12, (uint64_t)i);
				env.index = (uint64_t)i;
				a = nm_round_number(f, &x, &env);
				b = emu_from_double(f, d, &env);
				ck_assert_msg(a.bits == b.bits && a.flags == b.flags,
				              "%s %s '%s': 0x%x/%u vs from_double 0x%x/%u", f->name,
				              emu_mode_name(env.mode), text, a.bits, a.flags,
				              b.bits, b.flags);
				cases++;
			}
		}
	}
	t_count("parse: decimal path == emu_from_double", cases);
}
END_TEST

/* text = m * (1 + rel) printed in decimal, far more digits than a double has */
static void decimal_near(double m, double rel, char *buf, size_t len)
{
	mpfr_t t;

	mpfr_init2(t, 400);
	mpfr_set_d(t, rel, MPFR_RNDN);
	mpfr_add_ui(t, t, 1, MPFR_RNDN);
	mpfr_mul_d(t, t, m, MPFR_RNDN);
	mpfr_snprintf(buf, len, "%.60Re", t);
	mpfr_clear(t);
}

/*
 * Halfway points between neighbours a < b of a format, nudged by 1e-40
 * relative: strtod would return the halfway point itself and RNE would then
 * tie to even; the exact decimal must go to a (below) or b (above).
 */
START_TEST(test_no_double_rounding)
{
	static const char *const names[] = {"fp16", "bf16", "e4m3", "e5m2", "tf32", "fp32"};
	const emu_format *f = t_fmt(names[_i]);
	emu_env env = EMU_ENV_DEFAULT;
	int n = t_quick() ? 200 : 1000;
	char text[128];
	nm_number x;
	uint64_t cases = 0;

	for (int i = 0; i < n; i++) {
		uint64_t r = t_rand(20 + (uint64_t)_i, (uint64_t)i);
		emu_bits a = (emu_bits)(r % (f->max_bits - 1)) + 1, b = a + 1;
		double da = emu_decode(f, a), db = emu_decode(f, b), m = (da + db) / 2;
		emu_result lo, hi;

		if (emu_classify(f, a) != EMU_CLASS_NORMAL)
			continue;
		decimal_near(m, -1e-40, text, sizeof(text));
		ck_assert(nm_parse_number(text, &x) == NM_OK);
		ck_assert_msg(strtod(text, NULL) == m, "'%s' is not m in double", text);
		lo = nm_round_number(f, &x, &env);
		decimal_near(m, 1e-40, text, sizeof(text));
		ck_assert(nm_parse_number(text, &x) == NM_OK);
		hi = nm_round_number(f, &x, &env);
		ck_assert_msg(lo.bits == a && hi.bits == b,
		              "%s: around %a: 0x%x 0x%x, want 0x%x 0x%x", f->name, m, lo.bits,
		              hi.bits, a, b);
		cases += 2;
	}
	t_count("parse: decimals beside halfway points", cases);
}
END_TEST

/*
 * SR rounds away iff frac*2^32 > u. For fp32 just above 1 that threshold is
 * 1 + u*2^-55, 56 bits: no double holds it, the 64-bit significand does.
 */
START_TEST(test_sr_beyond_double)
{
	const emu_format *f = t_fmt("fp32");
	int n = t_quick() ? 100 : 500;
	uint64_t cases = 0;

	for (int i = 0; i < n; i++) {
		emu_env env = EMU_ENV_DEFAULT;
		uint32_t u;
		char text[3][64];
		const char *sign = (i & 1) ? "-" : "";
		emu_bits one = (i & 1) ? 0xbf800000u : 0x3f800000u;
		nm_number x;

		env.mode = EMU_SR;
		env.seed = t_rand(30, (uint64_t)i);
		env.index = (uint64_t)i;
		u = emu_sr_bits(env.seed, env.index);
		if (u == 0)
			continue;
		/* fraction bits down to 2^-80: (u << 25) +- 1 over 2^80 */
		snprintf(text[0], sizeof(text[0]), "%s0x1.%020" PRIx64 "p0", sign,
		         ((uint64_t)u << 25) - 1);
		snprintf(text[1], sizeof(text[1]), "%s0x1.%020" PRIx64 "p0", sign,
		         (uint64_t)u << 25);
		snprintf(text[2], sizeof(text[2]), "%s0x1.%020" PRIx64 "p0", sign,
		         ((uint64_t)u << 25) + 1);
		for (int k = 0; k < 3; k++) {
			emu_result r;

			ck_assert(nm_parse_number(text[k], &x) == NM_OK);
			r = nm_round_number(f, &x, &env);
			ck_assert_msg(r.bits == one + (k == 2) && r.flags == IX,
			              "SR u=0x%08x '%s': 0x%08x", u, text[k], r.bits);
			cases++;
		}
	}
	t_count("parse: SR decided beyond double precision", cases);
}
END_TEST

/* ---- encodings, integers ---- */

static const struct {
	const char *fmt, *s;
	nm_status st;
	emu_bits bits;
} encodings[] = {
    {"fp16", "0x3c00", NM_OK, 0x3c00},
    {"fp16", "0X3C00", NM_OK, 0x3c00},
    {"fp16", "0x0", NM_OK, 0},
    {"fp16", "0x000000003c00", NM_OK, 0x3c00},
    {"fp16", "0xffff", NM_OK, 0xffff},
    {"fp16", "0x10000", NM_ERR_RANGE, 0},
    {"fp16", "0xfffffffffffffffffffffff", NM_ERR_RANGE, 0},
    {"fp16", "3c00", NM_ERR_SYNTAX, 0},
    {"fp16", "0x", NM_ERR_SYNTAX, 0},
    {"fp16", "0x3g00", NM_ERR_SYNTAX, 0},
    {"fp16", "-0x1", NM_ERR_SYNTAX, 0},
    {"fp16", "+0x1", NM_ERR_SYNTAX, 0},
    {"fp16", " 0x1", NM_ERR_SYNTAX, 0},
    {"fp16", "0x1 ", NM_ERR_SYNTAX, 0},
    {"fp16", "0x 1", NM_ERR_SYNTAX, 0},
    {"fp16", "", NM_ERR_SYNTAX, 0},
    {"e4m3", "0xff", NM_OK, 0xff},
    {"e4m3", "0x100", NM_ERR_RANGE, 0},
    {"e3m2", "0x3f", NM_OK, 0x3f},
    {"e3m2", "0x40", NM_ERR_RANGE, 0},
    {"e2m1", "0xf", NM_OK, 0xf},
    {"e2m1", "0x10", NM_ERR_RANGE, 0},
    {"tf32", "0x7ffff", NM_OK, 0x7ffff},
    {"tf32", "0x80000", NM_ERR_RANGE, 0},
    {"fp32", "0xffffffff", NM_OK, 0xffffffffu},
    {"fp32", "0x100000000", NM_ERR_RANGE, 0},
};

START_TEST(test_encodings)
{
	const emu_format *f = t_fmt(encodings[_i].fmt);
	emu_bits b = 0xdead;
	nm_status st = nm_parse_bits(encodings[_i].s, f, &b);

	ck_assert_msg(st == encodings[_i].st, "%s '%s': status %d", f->name, encodings[_i].s, st);
	if (st == NM_OK)
		ck_assert_msg(b == encodings[_i].bits, "'%s': 0x%x", encodings[_i].s, b);
}
END_TEST

static const struct {
	const char *s;
	nm_status st;
	uint64_t v;
} integers[] = {
    {"0", NM_OK, 0},
    {"00012", NM_OK, 12},
    {"18446744073709551615", NM_OK, UINT64_MAX},
    {"18446744073709551616", NM_ERR_RANGE, 0},
    {"99999999999999999999999", NM_ERR_RANGE, 0},
    {"0xffffffffffffffff", NM_OK, UINT64_MAX},
    {"0X1f", NM_OK, 31},
    {"0x10000000000000000", NM_ERR_RANGE, 0},
    {"", NM_ERR_SYNTAX, 0},
    {"0x", NM_ERR_SYNTAX, 0},
    {"-1", NM_ERR_SYNTAX, 0},
    {"+1", NM_ERR_SYNTAX, 0},
    {" 1", NM_ERR_SYNTAX, 0},
    {"1 ", NM_ERR_SYNTAX, 0},
    {"1e3", NM_ERR_SYNTAX, 0},
    {"1.0", NM_ERR_SYNTAX, 0},
    {"12a", NM_ERR_SYNTAX, 0},
};

START_TEST(test_integers)
{
	uint64_t v = 42;
	nm_status st = nm_parse_u64(integers[_i].s, &v);

	ck_assert_msg(st == integers[_i].st, "'%s': status %d", integers[_i].s, st);
	if (st == NM_OK)
		ck_assert_msg(v == integers[_i].v, "'%s': %" PRIu64, integers[_i].s, v);
	ck_assert(nm_parse_u64(NULL, &v) == NM_ERR_SYNTAX);
}
END_TEST

/* ---- exactly representable operands ---- */

static const struct {
	const char *fmt, *s;
	nm_status st;
	emu_bits bits;
} exacts[] = {
    {"fp16", "1", NM_OK, 0x3c00},
    {"fp16", "65504", NM_OK, 0x7bff},
    {"fp16", "-0x1p-24", NM_OK, 0x8001},
    {"fp16", "-0", NM_OK, 0x8000},
    {"fp16", "inf", NM_OK, 0x7c00},
    {"fp16", "-inf", NM_OK, 0xfc00},
    {"fp16", "nan", NM_OK, 0x7e00},
    {"fp16", "0.1", NM_ERR_INEXACT, 0},
    {"fp16", "65505", NM_ERR_INEXACT, 0},
    {"fp16", "65520", NM_ERR_INEXACT, 0},
    {"fp16", "0x1p-25", NM_ERR_INEXACT, 0},
    {"fp16", "1.0000000000000000000000001", NM_ERR_INEXACT, 0},
    {"fp16", "1e-99999", NM_ERR_INEXACT, 0},
    {"e4m3", "448", NM_OK, 0x7e},
    {"e4m3", "inf", NM_ERR_INEXACT, 0},
    {"e4m3", "nan", NM_OK, 0x7f},
    {"e4m3fnuz", "-0", NM_OK, 0x00},
    {"e2m1", "nan", NM_ERR_INEXACT, 0},
    {"e2m1", "6", NM_OK, 0x7},
    {"e8m0", "0", NM_ERR_INEXACT, 0},
    {"e8m0", "1", NM_OK, 0x7f},
    {"e8m0", "-1", NM_ERR_INEXACT, 0},
};

START_TEST(test_exact_bits)
{
	const emu_format *f = t_fmt(exacts[_i].fmt);
	emu_bits b = 0xdead;
	nm_number x;
	nm_status st;

	ck_assert(nm_parse_number(exacts[_i].s, &x) == NM_OK);
	st = nm_exact_bits(f, &x, &b);
	ck_assert_msg(st == exacts[_i].st, "%s '%s': status %d", f->name, exacts[_i].s, st);
	if (st == NM_OK)
		ck_assert_msg(b == exacts[_i].bits, "%s '%s': 0x%x", f->name, exacts[_i].s, b);
}
END_TEST

/* ---- lists, lines, text forms ---- */

static const struct {
	const char *list;
	nm_status st;
	size_t n;
	const char *items[4];
} lists[] = {
    {"fp16", NM_OK, 1, {"fp16"}},
    {"fp16,bf16,e4m3,e5m2", NM_OK, 4, {"fp16", "bf16", "e4m3", "e5m2"}},
    {"fp16,p=5,emax=16,nan=fn,nosub,bf16", NM_OK, 3, {"fp16", "p=5,emax=16,nan=fn,nosub", "bf16"}},
    {"p=4,emax=8,nan=fn", NM_OK, 1, {"p=4,emax=8,nan=fn"}},
    {"p=4,emax=8,p=11,emax=15", NM_OK, 2, {"p=4,emax=8", "p=11,emax=15"}},
    {"p=4,emax=8,nan=fn,e4m3", NM_OK, 2, {"p=4,emax=8,nan=fn", "e4m3"}},
    {"fp16,nosub", NM_OK, 2, {"fp16", "nosub"}}, /* refused later: unknown format */
    {"fp17,fp16", NM_OK, 2, {"fp17", "fp16"}},
    {"fp16,fp17", NM_OK, 2, {"fp16", "fp17"}},
    {"bogus,emax=8", NM_OK, 2, {"bogus", "emax=8"}},
    {"p=4,emax=8,bogus", NM_OK, 1, {"p=4,emax=8,bogus"}}, /* the spec parser names it */
    {"", NM_ERR_SYNTAX, 0, {NULL}},
    {",", NM_ERR_SYNTAX, 0, {NULL}},
    {",fp16", NM_ERR_SYNTAX, 0, {NULL}},
    {"fp16,", NM_ERR_SYNTAX, 0, {NULL}},
    {"fp16,,bf16", NM_ERR_SYNTAX, 0, {NULL}},
    {"fp16,bf16,e4m3,e5m2,fp32", NM_ERR_RANGE, 0, {NULL}}, /* max is 4 here */
};

START_TEST(test_format_lists)
{
	char buf[128], *items[4];
	size_t n = 99;
	nm_status st;

	snprintf(buf, sizeof(buf), "%s", lists[_i].list);
	st = nm_split_formats(buf, items, 4, &n);
	ck_assert_msg(st == lists[_i].st, "'%s': status %d", lists[_i].list, st);
	if (st != NM_OK)
		return;
	ck_assert_msg(n == lists[_i].n, "'%s': %zu items", lists[_i].list, n);
	for (size_t k = 0; k < n; k++)
		ck_assert_msg(!strcmp(items[k], lists[_i].items[k]), "'%s' item %zu: '%s'",
		              lists[_i].list, k, items[k]);
}
END_TEST

static const struct {
	const char *line;
	size_t len; /* 0: strlen */
	nm_status st;
	size_t n;
	const char *fields[3];
} lines[] = {
    {"1\n", 0, NM_OK, 1, {"1"}},
    {"1", 0, NM_OK, 1, {"1"}},
    {"1 2\n", 0, NM_OK, 2, {"1", "2"}},
    {"  1\t2   3 \r\n", 0, NM_OK, 3, {"1", "2", "3"}},
    {"", 0, NM_OK, 0, {NULL}},
    {"\n", 0, NM_OK, 0, {NULL}},
    {" \t \r\n", 0, NM_OK, 0, {NULL}},
    {"1\r", 0, NM_OK, 1, {"1"}},
    {"1\r2\n", 0, NM_OK, 1, {"1\r2"}}, /* a lone CR is a character */
    {"1\0 2\n", 5, NM_ERR_SYNTAX, 0, {NULL}},
    {"1 2 3 4\n", 0, NM_ERR_RANGE, 0, {NULL}},
};

START_TEST(test_lines)
{
	char buf[64], *fields[3];
	size_t len = lines[_i].len ? lines[_i].len : strlen(lines[_i].line), n = 99;
	nm_status st;

	memcpy(buf, lines[_i].line, len + 1);
	st = nm_split_fields(buf, len, fields, 3, &n);
	ck_assert_msg(st == lines[_i].st, "line %d: status %d", _i, st);
	if (st != NM_OK)
		return;
	ck_assert_msg(n == lines[_i].n, "line %d: %zu fields", _i, n);
	for (size_t k = 0; k < n; k++)
		ck_assert_msg(!strcmp(fields[k], lines[_i].fields[k]), "line %d field %zu: '%s'",
		              _i, k, fields[k]);
}
END_TEST

START_TEST(test_text_forms)
{
	char buf[NM_NUM_LEN];

	ck_assert_str_eq(nm_fmt_double(NAN, buf, sizeof(buf)), "nan");
	ck_assert_str_eq(nm_fmt_double(-NAN, buf, sizeof(buf)), "nan");
	ck_assert_str_eq(nm_fmt_double(INFINITY, buf, sizeof(buf)), "inf");
	ck_assert_str_eq(nm_fmt_double(-INFINITY, buf, sizeof(buf)), "-inf");
	ck_assert_str_eq(nm_fmt_double(-0.0, buf, sizeof(buf)), "-0");
	ck_assert_str_eq(nm_fmt_double(65504, buf, sizeof(buf)), "65504");
	ck_assert_str_eq(nm_fmt_double(0.1, buf, sizeof(buf)), "0.10000000000000001");
	ck_assert_str_eq(nm_fmt_double(0x1p-149, buf, sizeof(buf)), "1.4012984643248171e-45");
	ck_assert_str_eq(nm_fmt_bits(t_fmt("fp16"), 0x3c00, buf, sizeof(buf)), "0x3c00");
	ck_assert_str_eq(nm_fmt_bits(t_fmt("fp16"), 0x1, buf, sizeof(buf)), "0x0001");
	ck_assert_str_eq(nm_fmt_bits(t_fmt("tf32"), 0x1, buf, sizeof(buf)), "0x00001");
	ck_assert_str_eq(nm_fmt_bits(t_fmt("e4m3"), 0x7e, buf, sizeof(buf)), "0x7e");
	ck_assert_str_eq(nm_fmt_bits(t_fmt("e3m2"), 0x3f, buf, sizeof(buf)), "0x3f");
	ck_assert_str_eq(nm_fmt_bits(t_fmt("e2m1"), 0x7, buf, sizeof(buf)), "0x7");
	ck_assert_str_eq(nm_fmt_bits(t_fmt("fp32"), 0x3f800000, buf, sizeof(buf)), "0x3f800000");
}
END_TEST

/* ---- fuzz ---- */

static const char fuzz_alphabet[] = "0123456789.eEpPxX+-infaINFA \t,@_()";

static const char *const fuzz_seeds[] = {
    "0",
    "-0",
    "1.5",
    "65519.99",
    "0x1.8p3",
    "-0x1p-1074",
    "1e400",
    "1e-400",
    ".5",
    "5.",
    "inf",
    "-nan",
    "0x3c00",
    "18446744073709551615",
    "p=5,emax=16,nan=fn,nosub",
    "fp16,bf16,e4m3",
    "1.00146484374999999999999",
};

static size_t fuzz_random(uint64_t i, char *buf, size_t cap)
{
	uint64_t r = t_rand(40, i);
	size_t len = (size_t)(r % 24);

	for (size_t k = 0; k < len && k + 1 < cap; k++) {
		uint64_t c = t_rand(41, i * 32 + k);

		buf[k] = (c & 3) ? fuzz_alphabet[(c >> 2) % (sizeof(fuzz_alphabet) - 1)]
		                 : (char)(c >> 8);
	}
	return len;
}

static size_t fuzz_mutate(uint64_t i, char *buf, size_t cap)
{
	uint64_t r = t_rand(42, i);
	const char *seed = fuzz_seeds[r % ARRAY_SIZE(fuzz_seeds)];
	size_t len = strlen(seed), pos;
	char c = fuzz_alphabet[(r >> 16) % (sizeof(fuzz_alphabet) - 1)];

	memcpy(buf, seed, len);
	pos = (size_t)((r >> 24) % (len + 1));
	switch ((r >> 40) % 4) {
	case 0: /* insert */
		if (len + 2 < cap) {
			memmove(buf + pos + 1, buf + pos, len - pos);
			buf[pos] = c;
			len++;
		}
		break;
	case 1: /* delete */
		if (pos < len) {
			memmove(buf + pos, buf + pos + 1, len - pos - 1);
			len--;
		}
		break;
	case 2: /* replace, sometimes by a byte from anywhere */
		if (pos < len)
			buf[pos] = (r >> 50) & 1 ? (char)(r >> 52) : c;
		break;
	default: /* unchanged */
		break;
	}
	return len;
}

/* The language nm_parse_number promises, restated from strtod. */
static bool fuzz_expect_number(const char *s)
{
	const char *p = s + (*s == '+' || *s == '-');
	char *end;

	if (!strcasecmp(p, "inf") || !strcasecmp(p, "nan"))
		return true;
	if (!((*p >= '0' && *p <= '9') || *p == '.'))
		return false;
	(void)strtod(s, &end);
	return end != s && *end == '\0';
}

/* A parsed finite number must lie within one ulp of strtod's double. */
static void fuzz_check_value(const char *s, const nm_number *x)
{
	double d = strtod(s, NULL), e;
	int c;

	if (x->kind != NM_NUM_FINITE)
		return;
	c = nm_number_cmp(x, d);
	ck_assert_msg(c != 2, "'%s'", s);
	if (c == 0 || isinf(d))
		return;
	e = nextafter(d, c > 0 ? INFINITY : -INFINITY);
	ck_assert_msg(nm_number_cmp(x, e) == -c || nm_number_cmp(x, e) == 0 || isinf(e),
	              "'%s': strtod %a is not its nearest double", s, d);
}

static void fuzz_one(char *buf, size_t len)
{
	const emu_format *f16 = t_fmt("fp16");
	char copy[64], *fields[4], *items[4];
	nm_number x;
	emu_bits b;
	uint64_t v;
	size_t n;
	nm_status st;
	bool has_nul = memchr(buf, '\0', len) != NULL;

	memcpy(copy, buf, len + 1);
	st = nm_split_fields(copy, len, fields, 4, &n);
	ck_assert(st == NM_OK || st == NM_ERR_SYNTAX || st == NM_ERR_RANGE);
	ck_assert(has_nul == (st == NM_ERR_SYNTAX));
	if (has_nul)
		return; /* C strings end at the NUL: the rest is the line reader's job */
	st = nm_parse_number(buf, &x);
	ck_assert(st == NM_OK || st == NM_ERR_SYNTAX);
	ck_assert_msg((st == NM_OK) == fuzz_expect_number(buf), "'%s': status %d", buf, st);
	if (st == NM_OK) {
		fuzz_check_value(buf, &x);
		(void)nm_round_number(f16, &x, &(emu_env){EMU_SR, 0, 0, 0, 1, 2});
	}
	st = nm_parse_bits(buf, f16, &b);
	ck_assert(st == NM_OK || st == NM_ERR_SYNTAX || st == NM_ERR_RANGE);
	if (st == NM_OK)
		ck_assert(b <= 0xffff && strtoul(buf, NULL, 16) == b);
	st = nm_parse_u64(buf, &v);
	ck_assert(st == NM_OK || st == NM_ERR_SYNTAX || st == NM_ERR_RANGE);
	if (st == NM_OK) {
		bool hex = buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X');

		ck_assert(strtoull(buf + (hex ? 2 : 0), NULL, hex ? 16 : 10) == v);
	}
	memcpy(copy, buf, len + 1);
	st = nm_split_formats(copy, items, 4, &n);
	ck_assert(st == NM_OK || st == NM_ERR_SYNTAX || st == NM_ERR_RANGE);
}

/* nm_fail's line is formatted whole, then written once: "nanmap: ", the
 * message and one newline in one buffer, a long message cut, still one line. */
static size_t fail_line(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = nm_fail_format(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

START_TEST(test_fail_line)
{
	char buf[64], big[200];

	ck_assert_uint_eq(fail_line(buf, sizeof(buf), "bad --n '%s'", "x"), 20);
	ck_assert_str_eq(buf, "nanmap: bad --n 'x'\n");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_uint_eq(fail_line(buf, sizeof(buf), "%s", big), sizeof(buf) - 1);
	ck_assert(strncmp(buf, "nanmap: aaa", 11) == 0);
	ck_assert(buf[sizeof(buf) - 2] == '\n' && strchr(buf, '\n') == &buf[sizeof(buf) - 2]);
}
END_TEST

/* ---- nm_number_from_double: the same number the exact %a text gives ---- */

START_TEST(test_number_from_double)
{
	static const double special[] = {0.0, -0.0, 0x1p-1074, -0x1p-1074, 0x1.fffffffffffffp1023,
	                                 1.0, INFINITY, -INFINITY, NAN};
	int n = t_quick() ? 300 : 3000;
	char text[64];
	nm_number x, y;

	for (int i = 0; i < n + (int)ARRAY_SIZE(special); i++) {
		double d = i < (int)ARRAY_SIZE(special) ? special[i] : rand_double(21, (uint64_t)i);
		double back;

		if (isnan(d))
			snprintf(text, sizeof(text), "nan");
		else if (isinf(d))
			snprintf(text, sizeof(text), "%s", d < 0 ? "-inf" : "inf");
		else
			snprintf(text, sizeof(text), "%a", d);
		ck_assert_msg(nm_parse_number(text, &y) == NM_OK, "'%s'", text);
		nm_number_from_double(d, &x);
		ck_assert_msg(x.kind == y.kind && (x.neg == y.neg || x.kind == NM_NUM_NAN) &&
		                  (x.kind != NM_NUM_FINITE ||
		                   (x.man == y.man && (x.man == 0 || x.exp == y.exp) && !x.sticky &&
		                    !y.sticky)),
		              "%s: man %016" PRIx64 " exp %d, want %016" PRIx64 " exp %d", text, x.man,
		              x.exp, y.man, y.exp);
		ck_assert(nm_number_to_double(&x, &back));
		ck_assert_msg(isnan(d) ? isnan(back) : memcmp(&back, &d, sizeof(d)) == 0, "%s", text);
	}
}
END_TEST

/* ---- nm_parse_count: one integer parser, one line saying what is wrong ---- */

/* Run fn with stderr sent to a temporary file; the line it wrote in line. */
static int with_stderr(char *line, size_t len, int (*fn)(void *), void *arg)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO), rc;

	ck_assert(tmp && saved >= 0);
	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	rc = fn(arg);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	line[0] = '\0';
	if (!fgets(line, (int)len, tmp))
		line[0] = '\0';
	line[strcspn(line, "\n")] = '\0';
	fclose(tmp);
	return rc;
}

static const struct {
	const char *text;
	uint64_t lo, hi, want; /* want: the value, when msg is NULL */
	const char *msg;
} counts[] = {
    {"7", 1, 10, 7, NULL},
    {"1e3", 0, UINT64_MAX, 1000, NULL},
    {"0x10", 0, 100, 16, NULL},
    {"-0", 0, 5, 0, NULL},
    {"2147483648", 1, UINT64_C(1) << 31, UINT64_C(1) << 31, NULL},
    {"18446744073709551615", 0, UINT64_MAX, UINT64_MAX, NULL},
    {"1e12", 1, UINT64_C(1) << 31, 0, "nanmap: bad --n '1e12': too large (at most 2147483648)"},
    {"1e30", 1, 9, 0, "nanmap: bad --n '1e30': too large (at most 9)"},
    {"18446744073709551616", 0, UINT64_MAX, 0,
     "nanmap: bad --n '18446744073709551616': too large (at most 18446744073709551615)"},
    {"0", 1, 9, 0, "nanmap: bad --n '0': too small (at least 1)"},
    {"-1", 0, 9, 0, "nanmap: bad --n '-1': too small (at least 0)"},
    {"-1e30", 0, 9, 0, "nanmap: bad --n '-1e30': too small (at least 0)"},
    {"2.5", 1, 9, 0, "nanmap: bad --n '2.5': not an integer (want an integer in [1, 9])"},
    {"1e-300", 0, 9, 0, "nanmap: bad --n '1e-300': not an integer (want an integer in [0, 9])"},
    {"inf", 0, 9, 0, "nanmap: bad --n 'inf': not an integer (want an integer in [0, 9])"},
    {"nan", 0, 9, 0, "nanmap: bad --n 'nan': not an integer (want an integer in [0, 9])"},
    {"x", 0, 9, 0, "nanmap: bad --n 'x': not a number (want an integer in [0, 9])"},
    {"", 0, 9, 0, "nanmap: bad --n '': not a number (want an integer in [0, 9])"},
    {" 1", 0, 9, 0, "nanmap: bad --n ' 1': not a number (want an integer in [0, 9])"},
};

static int count_row;
static uint64_t count_got;

static int parse_count_row(void *arg)
{
	(void)arg;
	return nm_parse_count("--n", counts[count_row].text, counts[count_row].lo,
	                      counts[count_row].hi, &count_got);
}

START_TEST(test_counts)
{
	char line[256];
	int rc;

	count_row = _i;
	count_got = 12345;
	rc = with_stderr(line, sizeof(line), parse_count_row, NULL);
	if (!counts[_i].msg) {
		ck_assert_msg(rc == 0 && line[0] == '\0', "'%s': %s", counts[_i].text, line);
		ck_assert_msg(count_got == counts[_i].want, "'%s': %" PRIu64, counts[_i].text,
		              count_got);
	} else {
		ck_assert_msg(rc == NM_EXIT_ERR, "'%s' accepted", counts[_i].text);
		ck_assert_str_eq(line, counts[_i].msg);
		ck_assert_msg(count_got == 12345, "'%s' wrote its output", counts[_i].text);
	}
}
END_TEST

/* ---- nm_opt_parse: the one option rule ---- */

enum { O_ONE, O_MANY, O_FLAG, O_CSV, O_JSON };

static const nm_opt opt_defs[] = {
    {"-o", "--one", O_ONE, NM_OPTF_VALUE, 0},   {NULL, "--many", O_MANY, NM_OPTF_VALUE | NM_OPTF_REPEAT, 0},
    {NULL, "--flag", O_FLAG, 0, 0},             {NULL, "--csv", O_CSV, 0, 1},
    {NULL, "--json", O_JSON, 0, 1},
};

struct opt_seen {
	char log[256];
};

static int opt_take(void *ctx, const nm_opt *d, const char *val)
{
	struct opt_seen *s = ctx;
	size_t n = strlen(s->log);

	snprintf(s->log + n, sizeof(s->log) - n, "%d=%s;", d->id, val ? val : "-");
	return 0;
}

static int opt_arg(void *ctx, const char *a)
{
	struct opt_seen *s = ctx;
	size_t n = strlen(s->log);

	snprintf(s->log + n, sizeof(s->log) - n, "[%s];", a);
	return 0;
}

static const struct {
	const char *args; /* blank-separated */
	const char *log, *msg; /* msg NULL: accepted, with this log */
} opt_rows[] = {
    {"-o 1 a --many=2 --many 3 --flag --flag", "0=1;[a];1=2;1=3;2=-;2=-;", NULL},
    {"--one=x -- --one -", "0=x;[--one];[-];", NULL},
    {"--csv --csv", "3=-;3=-;", NULL},
    {"-o 1 -o 2", NULL, "nanmap: option '-o' given twice"},
    {"-o 1 --one=2", NULL, "nanmap: option '--one' given twice"},
    {"--csv --json", NULL, "nanmap: --csv and --json exclude each other (give one)"},
    {"--json x --csv", NULL, "nanmap: --json and --csv exclude each other (give one)"},
    {"--flag=1", NULL, "nanmap: unknown option '--flag=1' for t (try: nanmap t --help)"},
    {"--on 1", NULL, "nanmap: unknown option '--on' for t (try: nanmap t --help)"},
    {"a --one", NULL, "nanmap: option '--one' needs a value"},
};

static int opt_row;
static struct opt_seen opt_log;

static int parse_opt_row(void *arg)
{
	char buf[128], *argv[16];
	int argc = 0;

	(void)arg;
	snprintf(buf, sizeof(buf), "%s", opt_rows[opt_row].args);
	for (char *t = strtok(buf, " "); t && argc < 16; t = strtok(NULL, " "))
		argv[argc++] = t;
	memset(&opt_log, 0, sizeof(opt_log));
	return nm_opt_parse(&(nm_optparser){.cmd = "t",
	                                    .defs = opt_defs,
	                                    .ndefs = ARRAY_SIZE(opt_defs),
	                                    .take = opt_take,
	                                    .arg = opt_arg,
	                                    .ctx = &opt_log},
	                    argc, argv);
}

static char *opt_parse_argv[2];
static int opt_parse_p(void *arg)
{
	return nm_opt_parse(arg, 1, opt_parse_argv);
}

START_TEST(test_options)
{
	char line[256];
	int rc;

	opt_row = _i;
	rc = with_stderr(line, sizeof(line), parse_opt_row, NULL);
	if (!opt_rows[_i].msg) {
		ck_assert_msg(rc == 0, "'%s': %s", opt_rows[_i].args, line);
		ck_assert_str_eq(opt_log.log, opt_rows[_i].log);
	} else {
		ck_assert_msg(rc == NM_EXIT_ERR, "'%s' accepted", opt_rows[_i].args);
		ck_assert_str_eq(line, opt_rows[_i].msg);
	}
}
END_TEST

/* Another program's command line: the help hint names it, and with err
 * the parser's error comes back in the buffer, nothing on stderr; without
 * an argument callback a word is refused */
START_TEST(test_options_prog)
{
	static const struct {
		const char *arg, *msg;
	} rows[] = {
	    {"--on", "unknown option '--on' (try: nanmap-x --help)"},
	    {"--one", "option '--one' needs a value"},
	    {"word", "unexpected argument 'word' for nanmap-x"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		char err[128] = "", line[256] = "", a[16];
		char *argv[] = {a};
		snprintf(a, sizeof a, "%s", rows[i].arg);
		memset(&opt_log, 0, sizeof(opt_log));
		nm_optparser p = {.cmd = "nanmap-x",
		                  .defs = opt_defs,
		                  .ndefs = ARRAY_SIZE(opt_defs),
		                  .take = opt_take,
		                  .ctx = &opt_log,
		                  .prog = "nanmap-x",
		                  .err = err,
		                  .errlen = sizeof err};
		ck_assert_int_eq(nm_opt_parse(&p, 1, argv), NM_EXIT_ERR);
		ck_assert_str_eq(err, rows[i].msg);
		p.err = NULL; /* the same line on stderr, with the prefix */
		opt_parse_argv[0] = a;
		ck_assert_int_eq(with_stderr(line, sizeof line, opt_parse_p, &p), NM_EXIT_ERR);
		ck_assert_str_eq(line + strlen("nanmap: "), rows[i].msg);
	}
}
END_TEST

START_TEST(test_fuzz)
{
	uint64_t n = t_quick() ? 20000 : 100000;
	char buf[64];
	size_t len;

	for (uint64_t i = 0; i < n; i++) {
		len = (i & 1) ? fuzz_random(i, buf, sizeof(buf)) : fuzz_mutate(i, buf, sizeof(buf));
		buf[len] = '\0';
		fuzz_one(buf, len);
	}
	t_count("parse: fuzzed strings", n);
}
END_TEST

Suite *suite_parse(void)
{
	Suite *s = suite_create("parse");
	TCase *tc = tcase_create("tables");
	TCase *tx = tcase_create("exact");
	TCase *tf = tcase_create("fuzz");

	tcase_add_loop_test(tc, test_numbers, 0, ARRAY_SIZE(numbers));
	tcase_add_test(tc, test_null_and_compare);
	tcase_add_loop_test(tc, test_encodings, 0, ARRAY_SIZE(encodings));
	tcase_add_loop_test(tc, test_integers, 0, ARRAY_SIZE(integers));
	tcase_add_loop_test(tc, test_exact_bits, 0, ARRAY_SIZE(exacts));
	tcase_add_loop_test(tc, test_format_lists, 0, ARRAY_SIZE(lists));
	tcase_add_loop_test(tc, test_lines, 0, ARRAY_SIZE(lines));
	tcase_add_test(tc, test_text_forms);
	tcase_add_test(tc, test_fail_line);
	tcase_add_test(tc, test_number_from_double);
	tcase_add_loop_test(tc, test_counts, 0, ARRAY_SIZE(counts));
	tcase_add_loop_test(tc, test_options, 0, ARRAY_SIZE(opt_rows));
	tcase_add_test(tc, test_options_prog);
	suite_add_tcase(s, tc);
	tcase_add_loop_test(tx, test_rounds, 0, ARRAY_SIZE(rounds));
	tcase_add_test(tx, test_agrees_with_from_double);
	tcase_add_loop_test(tx, test_no_double_rounding, 0, 6);
	tcase_add_test(tx, test_sr_beyond_double);
	suite_add_tcase(s, tx);
	tcase_add_test(tf, test_fuzz);
	suite_add_tcase(s, tf);
	return s;
}
