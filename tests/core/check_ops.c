/*
 * check_ops.c — properties of the operations that hold for every format:
 * the value-domain helpers the kernels use agree with the encoding API,
 * add and mul commute (bits and flags), a − b = a + (−b), and every result
 * of every e4m3/e5m2 pair is a valid encoding of the format; signaling
 * NaNs by a hand-written table (independent of MPFR).
 */
#include <math.h>
#include <string.h>

#include "emu/engine/kern.h"
#include "tests/lib.h"

static double emu_bitsd_t(uint64_t u)
{
	double x;
	memcpy(&x, &u, sizeof x);
	return x;
}

START_TEST(test_value_domain)
{
	const char *names[] = {"e4m3", "e5m2", "e2m1", "e4m3fnuz"};
	const emu_format *f = t_fmt(names[_i]);
	emu_env env = EMU_ENV_DEFAULT;
	uint64_t n = 0;
	for (int m = 0; m < EMU_NMODES; m++) {
		env.mode = (emu_mode)m;
		for (emu_bits a = 0; a < (1u << f->bits); a++)
			for (emu_bits b = 0; b < (1u << f->bits); b++) {
				env.index = (a << 8) | b;
				double x = emu_decode(f, a), y = emu_decode(f, b);
				/* values are never signaling: the encoding API adds that */
				unsigned sn = emu_is_snan(f, a) || emu_is_snan(f, b) ? EMU_FLAG_INVALID : 0;
				unsigned fl = sn;
				emu_result r = emu_add(f, a, b, &env);
				emu_bits v = emu_encode(f, emu_v_add(f, x, y, &env, &fl));
				ck_assert_msg(v == r.bits && fl == r.flags, "%s add 0x%x 0x%x", f->name, a, b);
				fl = sn;
				r = emu_mul(f, a, b, &env);
				v = emu_encode(f, emu_v_mul(f, x, y, &env, &fl));
				ck_assert_msg(v == r.bits && fl == r.flags, "%s mul 0x%x 0x%x", f->name, a, b);
				fl = sn;
				r = emu_div(f, a, b, &env);
				v = emu_encode(f, emu_v_div(f, x, y, &env, &fl));
				ck_assert_msg(v == r.bits && fl == r.flags, "%s div 0x%x 0x%x", f->name, a, b);
				fl = sn;
				r = emu_fma(f, a, b, a, &env);
				v = emu_encode(f, emu_v_fma(f, x, y, x, &env, &fl));
				ck_assert_msg(v == r.bits && fl == r.flags, "%s fma 0x%x 0x%x", f->name, a, b);
				/* commutativity */
				emu_result p = emu_add(f, a, b, &env), q = emu_add(f, b, a, &env);
				ck_assert_msg(p.bits == q.bits && p.flags == q.flags, "%s add commutes", f->name);
				p = emu_mul(f, a, b, &env);
				q = emu_mul(f, b, a, &env);
				ck_assert_msg(p.bits == q.bits && p.flags == q.flags, "%s mul commutes", f->name);
				n += 6;
			}
	}
	t_count("ops: value domain == encodings, commutativity", n);
}
END_TEST

START_TEST(test_neighbours)
{
	/* next_up walks every finite value of fp16 in increasing order */
	const emu_format *f = t_fmt("fp16");
	emu_bits b = 0xfbff; /* -max */
	double prev = emu_decode(f, b);
	int steps = 0;
	for (;;) {
		emu_bits n = emu_next_up(f, b);
		if (n == b || emu_decode(f, n) == INFINITY)
			break;
		double v = emu_decode(f, n);
		ck_assert_msg(v > prev || (v == 0 && prev == 0), "next_up 0x%x -> 0x%x", b, n);
		ck_assert_msg(emu_next_down(f, n) == b || (v == 0 && prev == 0) ||
		                  emu_decode(f, emu_next_down(f, n)) == prev,
		              "next_down(0x%x) != 0x%x", n, b);
		prev = v;
		b = n;
		steps++;
	}
	ck_assert_msg(b == 0x7bff && steps > 60000, "ended at 0x%x after %d", b, steps);
}
END_TEST

/* The array path (branch-free RNE) equals element-by-element rounding. */
START_TEST(test_array_paths)
{
	const emu_format *f = emu_format_at(_i);
	enum { N = 4096 };
	static double x[N];
	static emu_bits a[N];
	uint64_t total = 0;
	for (int rep = 0; rep < (t_quick() ? 4 : 64); rep++) {
		for (int i = 0; i < N; i++) {
			uint64_t r = t_rand(50 + rep, (uint64_t)i);
			int e = f->emin - f->p - 3 + (int)((r >> 53) % (uint64_t)(f->emax - f->emin + f->p + 7));
			x[i] = ((r >> 52) & 1 ? -1 : 1) * ldexp(1 + (double)(r & ((1ull << 52) - 1)) * 0x1p-52, e);
			if (r % 97 == 0) /* short significands: exact values and ties */
				x[i] = ldexp(floor(ldexp(x[i], 20 - e)), e - 20 + (int)(r % 3));
		}
		x[0] = INFINITY, x[1] = -INFINITY, x[2] = NAN, x[3] = 0.0, x[4] = -0.0, x[5] = 1e-310;
		x[6] = f->max, x[7] = -f->max * (1 + f->epsilon / 2), x[8] = f->min_normal;
		x[9] = emu_bitsd_t(0x7ff0000000000001ull); /* signaling: invalid on every path */
		for (int v = 0; v < 16; v++) {
			emu_env env = EMU_ENV_DEFAULT;
			env.sat = v & 1;
			env.ftz = (v >> 1) & 1;
			env.daz = (v >> 2) & 1;
			env.mode = v >> 3 ? EMU_SR : EMU_RNE; /* the two vectorised modes */
			env.seed = t_seed();
			env.index = (uint64_t)rep << 20;
			unsigned all = emu_round_array(f, x, a, N, &env), want = 0;
			for (int i = 0; i < N; i++) {
				emu_env e1 = env;
				e1.index = env.index + (uint64_t)i;
				emu_result r = emu_from_double(f, x[i], &e1);
				want |= r.flags;
				ck_assert_msg(r.bits == a[i], "%s x=%a sat=%d ftz=%d: array 0x%x scalar 0x%x",
				              f->name, x[i], env.sat, env.ftz, a[i], r.bits);
			}
			ck_assert_msg(all == want, "%s: array flags %x, scalar %x", f->name, all, want);
			total += N;
		}
	}
	t_count("ops: array rounding path == scalar path", total);
}
END_TEST

/* Signaling NaNs, hand-written (IEEE 754-2019 §6.2, §7.2, §9.6, §5.5.1; the
 * rules in docs/numerics.md): a signaling operand in any position of a
 * computational operation or conversion raises invalid and gives the
 * produced NaN, which is quiet; min/max raise invalid and return the number;
 * neg/abs flip bits and raise nothing; the one NaN of fn/fnuz/e8m0 is quiet.
 * Both backends, every mode: none of these results depends on it. */
#define I EMU_FLAG_INVALID
static const struct snan_case {
	const char *fmt, *src; /* src: cvt's source format */
	emu_op op;
	emu_bits a[3];
	emu_bits want;
	unsigned flags;
} snan_cases[] = {
	/* fp16: sNaN 0x7c1b, 0xfc01, 0x7dff; qNaN 0x7e00, 0xfe01; 1 = 0x3c00 */
	{"fp16", NULL, EMU_OP_ADD, {0x7c1b, 0x3c00}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_ADD, {0x3c00, 0x7c1b}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_ADD, {0x7e00, 0x3c00}, 0x7e00, 0},
	{"fp16", NULL, EMU_OP_ADD, {0xfe01, 0x7c01}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_ADD, {0x7c00, 0xfc01}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_SUB, {0x7dff, 0x3c00}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_SUB, {0x3c00, 0xfc01}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_MUL, {0x7c1b, 0x0000}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_MUL, {0x7c00, 0x7c1b}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_MUL, {0x3c00, 0xfe01}, 0x7e00, 0},
	{"fp16", NULL, EMU_OP_DIV, {0x7c1b, 0x3c00}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_DIV, {0x0000, 0x7c1b}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_FMA, {0x7c1b, 0x3c00, 0x3c00}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_FMA, {0x3c00, 0xfc01, 0x3c00}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_FMA, {0x3c00, 0x3c00, 0x7c1b}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_FMA, {0x0000, 0x7c00, 0x7c1b}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_FMA, {0x3c00, 0x3c00, 0x7e00}, 0x7e00, 0},
	{"fp16", NULL, EMU_OP_SQRT, {0x7c1b}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_SQRT, {0xfc01}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_SQRT, {0x7e00}, 0x7e00, 0},
	{"fp16", NULL, EMU_OP_EXP, {0x7c1b}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_LOG, {0xfc01}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_EXP2, {0x7dff}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_RSQRT, {0x7c1b}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_MIN, {0x7c1b, 0x3c00}, 0x3c00, I},
	{"fp16", NULL, EMU_OP_MIN, {0x3c00, 0xfc01}, 0x3c00, I},
	{"fp16", NULL, EMU_OP_MAX, {0x7c1b, 0xbc00}, 0xbc00, I},
	{"fp16", NULL, EMU_OP_MAX, {0x7e00, 0x7c1b}, 0x7e00, I},
	{"fp16", NULL, EMU_OP_MIN, {0x7e00, 0x3c00}, 0x3c00, 0},
	{"fp16", NULL, EMU_OP_NEG, {0x7c1b}, 0xfc1b, 0},
	{"fp16", NULL, EMU_OP_ABS, {0xfc01}, 0x7c01, 0},
	{"fp32", "fp16", EMU_OP_CVT, {0x7c1b}, 0x7fc00000, I},
	{"fp32", "fp16", EMU_OP_CVT, {0x7e00}, 0x7fc00000, 0},
	{"e4m3", "fp16", EMU_OP_CVT, {0xfc01}, 0x7f, I},
	{"e8m0", "fp16", EMU_OP_CVT, {0x7c1b}, 0xff, I},
	{"e2m1", "fp16", EMU_OP_CVT, {0x7e00}, 0x0, I}, /* no NaN: +0, invalid */
	{"fp16", "fp32", EMU_OP_CVT, {0x7f800001}, 0x7e00, I},
	{"fp16", "fp32", EMU_OP_CVT, {0xffbfffff}, 0x7e00, I},
	{"fp16", "fp32", EMU_OP_CVT, {0x7fc00001}, 0x7e00, 0},
	{"bf16", "fp32", EMU_OP_CVT, {0x7f800001}, 0x7fc0, I},
	/* bf16: sNaN 0x7f81, 0xffbf; qNaN 0x7fc0; 1 = 0x3f80 */
	{"bf16", NULL, EMU_OP_ADD, {0x3f80, 0x7f81}, 0x7fc0, I},
	{"bf16", NULL, EMU_OP_MUL, {0xffbf, 0x3f80}, 0x7fc0, I},
	{"bf16", NULL, EMU_OP_DIV, {0x3f80, 0x7fc0}, 0x7fc0, 0},
	{"bf16", NULL, EMU_OP_FMA, {0x3f80, 0x3f80, 0xffbf}, 0x7fc0, I},
	{"bf16", NULL, EMU_OP_SQRT, {0x7f81}, 0x7fc0, I},
	{"bf16", NULL, EMU_OP_MAX, {0x3f80, 0x7f81}, 0x3f80, I},
	{"fp32", "bf16", EMU_OP_CVT, {0x7f81}, 0x7fc00000, I},
	/* e5m2: sNaN 0x7d, 0xfd; qNaN 0x7e, 0x7f; 1 = 0x3c */
	{"e5m2", NULL, EMU_OP_ADD, {0x7d, 0x3c}, 0x7e, I},
	{"e5m2", NULL, EMU_OP_ADD, {0x7f, 0x3c}, 0x7e, 0},
	{"e5m2", NULL, EMU_OP_SUB, {0x3c, 0xfd}, 0x7e, I},
	{"e5m2", NULL, EMU_OP_MUL, {0x7d, 0x7e}, 0x7e, I},
	{"e5m2", NULL, EMU_OP_DIV, {0xfd, 0x00}, 0x7e, I},
	{"e5m2", NULL, EMU_OP_FMA, {0x3c, 0x7d, 0x3c}, 0x7e, I},
	{"e5m2", NULL, EMU_OP_SQRT, {0xfd}, 0x7e, I},
	{"e5m2", NULL, EMU_OP_EXP, {0x7d}, 0x7e, I},
	{"e5m2", NULL, EMU_OP_LOG, {0x7d}, 0x7e, I},
	{"e5m2", NULL, EMU_OP_MIN, {0xfd, 0x3c}, 0x3c, I},
	{"e5m2", NULL, EMU_OP_MAX, {0x7d, 0xfd}, 0x7e, I},
	{"e5m2", NULL, EMU_OP_NEG, {0x7d}, 0xfd, 0},
	{"fp16", "e5m2", EMU_OP_CVT, {0x7d}, 0x7e00, I},
	{"e4m3", "e5m2", EMU_OP_CVT, {0xfd}, 0x7f, I},
	{"e5m2", "fp16", EMU_OP_CVT, {0x7c1b}, 0x7e, I},
	/* fp32: sNaN 0x7f800001, 0xffbfffff; qNaN 0x7fc00000; 1 = 0x3f800000 */
	{"fp32", NULL, EMU_OP_ADD, {0x7f800001, 0x3f800000}, 0x7fc00000, I},
	{"fp32", NULL, EMU_OP_MUL, {0x3f800000, 0xffbfffff}, 0x7fc00000, I},
	{"fp32", NULL, EMU_OP_DIV, {0x7fc00000, 0x3f800000}, 0x7fc00000, 0},
	{"fp32", NULL, EMU_OP_FMA, {0x3f800000, 0x3f800000, 0x7f800001}, 0x7fc00000, I},
	{"fp32", NULL, EMU_OP_SQRT, {0xffbfffff}, 0x7fc00000, I},
	{"fp32", NULL, EMU_OP_LOG, {0x7f800001}, 0x7fc00000, I},
	{"fp32", NULL, EMU_OP_MIN, {0x7f800001, 0x3f800000}, 0x3f800000, I},
	{"fp32", NULL, EMU_OP_ABS, {0xffbfffff}, 0x7fbfffff, 0},
	/* one-NaN formats: the NaN is quiet */
	{"e4m3", NULL, EMU_OP_ADD, {0x7f, 0x38}, 0x7f, 0},
	{"e4m3", NULL, EMU_OP_MIN, {0xff, 0x38}, 0x38, 0},
	{"e4m3fnuz", NULL, EMU_OP_MUL, {0x80, 0x40}, 0x80, 0},
	{"e8m0", NULL, EMU_OP_SQRT, {0xff}, 0xff, 0},
	{"fp16", "e4m3", EMU_OP_CVT, {0x7f}, 0x7e00, 0},
	/* custom ieee format without inf: the quiet bit is still the top
	 * fraction bit (p=3, emax=15: 0x7c is a signaling NaN) */
	{"p=3,emax=15,noinf", NULL, EMU_OP_ADD, {0x7c, 0x3c}, 0x7e, I},
	{"p=3,emax=15,noinf", NULL, EMU_OP_ADD, {0x7e, 0x3c}, 0x7e, 0},
};
#undef I

START_TEST(test_snan_table)
{
	uint64_t n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(snan_cases); i++) {
		const struct snan_case *c = &snan_cases[i];
		emu_format f, src;
		char err[160];
		ck_assert_msg(emu_format_parse(c->fmt, &f, err, sizeof err) == EMU_OK, "%s", err);
		if (c->src)
			ck_assert(emu_format_parse(c->src, &src, err, sizeof err) == EMU_OK);
		for (int m = 0; m < EMU_NMODES; m++)
			for (int sat = 0; sat < 2; sat++) {
				emu_env env = EMU_ENV_DEFAULT;
				env.mode = (emu_mode)m;
				env.sat = sat;
				const emu_format *s = c->src ? &src : NULL;
				emu_result r[2] = {emu_apply(c->op, &f, s, c->a, &env),
				                   emu_mp_apply(c->op, &f, s, c->a, &env)};
				for (int b = 0; b < 2; b++)
					ck_assert_msg(r[b].bits == c->want && r[b].flags == c->flags,
					              "row %zu: %s %s(0x%x, 0x%x, 0x%x)%s%s %s: %s 0x%x flags %x, "
					              "want 0x%x flags %x",
					              i, c->fmt, emu_op_name(c->op), c->a[0], c->a[1], c->a[2],
					              c->src ? " from " : "", c->src ? c->src : "",
					              emu_mode_name(env.mode), b ? "mpfr" : "fast", r[b].bits,
					              r[b].flags, c->want, c->flags);
				n += 2;
			}
	}
	t_count("ops: signaling NaN table, both backends", n);
}
END_TEST

/* log1p's special cases and a few values, by hand (docs/numerics.md): the
 * values are log1p in binary64 rounded to the format by Python's struct
 * ('e', 'f': round to nearest even), which no tie can fool here. Tiny
 * arguments: log1p(x) lies just below x for either sign, so x's own
 * encoding in rne, toward −inf's neighbour in down (and rtz for x > 0),
 * underflow|inexact when subnormal. Both backends. */
#define X EMU_FLAG_INEXACT
#define UX (EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT)
static const struct log1p_case {
	const char *fmt;
	emu_mode mode;
	emu_bits a, want;
	unsigned flags;
} log1p_cases[] = {
	{"fp16", EMU_RNE, 0x0000, 0x0000, 0},     /* +0 exact */
	{"fp16", EMU_DOWN, 0x8000, 0x8000, 0},    /* −0 exact */
	{"fp16", EMU_RNE, 0xbc00, 0xfc00, EMU_FLAG_DIVBYZERO}, /* −1 */
	{"fp16", EMU_RNE, 0xc000, 0x7e00, EMU_FLAG_INVALID},   /* −2 */
	{"fp16", EMU_RNE, 0xfc00, 0x7e00, EMU_FLAG_INVALID},   /* −inf */
	{"fp16", EMU_RNE, 0x7c00, 0x7c00, 0},                  /* +inf */
	{"fp16", EMU_RNE, 0x7c1b, 0x7e00, EMU_FLAG_INVALID},   /* sNaN */
	{"fp16", EMU_RNE, 0x3c00, 0x398c, X},     /* ln 2 */
	{"fp16", EMU_RNE, 0xb800, 0xb98c, X},     /* log1p(−1/2) = −ln 2 */
	{"fp16", EMU_RNE, 0x1400, 0x13ff, X},     /* 2^-10 − 2^-21 + … */
	{"fp16", EMU_RNE, 0x7bff, 0x498c, X},     /* log1p(65504) */
	{"fp16", EMU_RNE, 0xbbff, 0xc7a0, X},     /* log1p(−1 + 2^-11) */
	{"fp16", EMU_RNE, 0x0001, 0x0001, UX},    /* 2^-24 */
	{"fp16", EMU_RTZ, 0x0001, 0x0000, UX},
	{"fp16", EMU_UP, 0x0001, 0x0001, UX},
	{"fp16", EMU_RNE, 0x8001, 0x8001, UX},    /* −2^-24 */
	{"fp16", EMU_DOWN, 0x8001, 0x8002, UX},
	{"fp16", EMU_RTZ, 0x8001, 0x8001, UX},
	{"fp32", EMU_RNE, 0x00000001, 0x00000001, UX}, /* 2^-149: the |x| < 2^-54 branch */
	{"fp32", EMU_DOWN, 0x00000001, 0x00000000, UX},
	{"fp32", EMU_RNE, 0x7f7fffff, 0x42b17218, X},  /* log1p(max) */
};
#undef X
#undef UX

START_TEST(test_log1p_table)
{
	uint64_t n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(log1p_cases); i++) {
		const struct log1p_case *c = &log1p_cases[i];
		const emu_format *f = t_fmt(c->fmt);
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = c->mode;
		emu_result r[2] = {emu_apply(EMU_OP_LOG1P, f, NULL, &c->a, &env),
		                   emu_mp_apply(EMU_OP_LOG1P, f, NULL, &c->a, &env)};
		for (int b = 0; b < 2; b++)
			ck_assert_msg(r[b].bits == c->want && r[b].flags == c->flags,
			              "row %zu: %s log1p(0x%x) %s: %s 0x%x flags %x, want 0x%x flags %x", i,
			              c->fmt, c->a, emu_mode_name(c->mode), b ? "mpfr" : "fast", r[b].bits,
			              r[b].flags, c->want, c->flags);
		n += 2;
	}
	ck_assert_str_eq(emu_op_name(EMU_OP_LOG1P), "log1p");
	ck_assert_int_eq(emu_op_by_name("log1p"), EMU_OP_LOG1P);
	ck_assert_int_eq(emu_op_arity(EMU_OP_LOG1P), 1);
	t_count("ops: log1p table, both backends", n);
}
END_TEST

/* A signaling binary64 (or binary32) source: invalid, a quiet NaN out, on
 * every path: emu_from_double, the MPFR backend, emu_from_float, and each
 * array path (the vector RNE/SR loops and the scalar one). */
START_TEST(test_snan_double)
{
	const char *names[] = {"fp16", "bf16", "e4m3", "e5m2", "e8m0", "e2m1", "fp32"};
	const double snan = emu_bitsd_t(0x7ff0000000000001ull), nsnan = emu_bitsd_t(0xfff4000000000000ull);
	const double qnan = emu_bitsd_t(0x7ff8000000000001ull);
	float fsnan;
	uint32_t fu = 0x7f800001u;
	memcpy(&fsnan, &fu, sizeof fsnan);
	uint64_t n = 0;
	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		const emu_format *f = t_fmt(names[k]);
		unsigned nanfl = f->nan == EMU_NAN_NONE ? EMU_FLAG_INVALID : 0;
		for (int m = 0; m < EMU_NMODES; m++) {
			emu_env env = EMU_ENV_DEFAULT;
			env.mode = (emu_mode)m;
			emu_result r[5] = {emu_from_double(f, snan, &env), emu_mp_from_double(f, snan, &env),
			                   emu_from_double(f, nsnan, &env),
			                   emu_mp_from_double(f, nsnan, &env), emu_from_float(f, fsnan, &env)};
			for (int i = 0; i < 5; i++)
				ck_assert_msg(r[i].bits == f->nan_bits && r[i].flags == EMU_FLAG_INVALID,
				              "%s %s path %d: 0x%x flags %x", f->name, emu_mode_name(env.mode),
				              i, r[i].bits, r[i].flags);
			/* a kernel's input: both kernel backends count the invalid */
			emu_be be[2];
			for (int k = 0; k < 2; k++) {
				emu_be_init(&be[k], k ? EMU_BE_EXACT : EMU_BE_FAST, &env);
				emu_vec *x = emu_vec_new(&be[k], 1);
				ck_assert(x != NULL);
				emu_input(&be[k], EMU_STEP_INPUT, f, emu_row(x, 0), &snan, 1, 1, 0, NULL);
				ck_assert_msg(be[k].st.flags[EMU_OP_CVT][0] == 1 &&
				                  emu_encode(f, x->d[0]) == f->nan_bits,
				              "%s kernel input, %s backend: invalid counted %d times", f->name,
				              k ? "exact" : "fast", (int)be[k].st.flags[EMU_OP_CVT][0]);
				emu_be_free(&be[k]);
			}
			emu_result q = emu_from_double(f, qnan, &env);
			ck_assert_msg(q.bits == f->nan_bits && q.flags == nanfl, "%s qnan: 0x%x %x", f->name,
			              q.bits, q.flags);
			double in[64];
			emu_bits out[64];
			for (int i = 0; i < 64; i++)
				in[i] = 1.0;
			for (size_t len = 1; len <= 64; len *= 4) {
				in[len - 1] = snan;
				unsigned fl = emu_round_array(f, in, out, len, &env);
				ck_assert_msg((fl & EMU_FLAG_INVALID) && out[len - 1] == f->nan_bits,
				              "%s %s array of %zu: 0x%x flags %x", f->name,
				              emu_mode_name(env.mode), len, out[len - 1], fl);
				in[len - 1] = qnan;
				fl = emu_round_array(f, in, out, len, &env);
				ck_assert_msg((fl & EMU_FLAG_INVALID) == nanfl, "%s array qnan: flags %x",
				              f->name, fl);
				in[len - 1] = 1.0;
				n += 2;
			}
			n += 6;
		}
	}
	t_count("ops: signaling binary64/binary32 sources", n);
}
END_TEST

Suite *suite_ops(void)
{
	Suite *s = suite_create("ops");
	TCase *tc = tcase_create("properties");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_value_domain, 0, 4);
	tcase_add_test(tc, test_neighbours);
	tcase_add_test(tc, test_snan_table);
	tcase_add_test(tc, test_log1p_table);
	tcase_add_test(tc, test_snan_double);
	tcase_add_loop_test(tc, test_array_paths, 0, (int)emu_format_count());
	suite_add_tcase(s, tc);
	return s;
}
