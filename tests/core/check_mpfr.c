/*
 * check_mpfr.c — the proof: the fast backend equals the exact-format MPFR
 * backend, encodings and flags, on
 *   - every pair of every format of <= 8 bits, every binary operation, mode
 *     and overflow rule (fma: every pair with a set of addends);
 *   - every 16-bit value, every unary operation and conversion;
 *   - 4·10^6 binary32 log1p arguments where it is hard (tiny, near −1);
 *   - every binary32 within 3 ulps of each rounding boundary and midpoint of
 *     each format, and 10^7 random binary32 and 10^7 binary64 inputs;
 *   - 10^7 random 16-bit pairs per binary operation;
 *   - a sample of custom formats (the smallest of each NaN style, p = 1,
 *     no inf, no subnormals, explicit biases, unsigned formats, one
 *     without zero, and ml_dtypes' float8_e4m3b11fnuz and float8_e5m3fnu
 *     as custom specs): every pair, fma, unary op and conversion, and
 *     binary32 near every boundary and random binary64 converted into
 *     them (with two formats at the edges of the exponent range).
 * e5m2 and the custom ieee formats have signaling NaNs, so the pairs prove
 * both backends tell them apart (invalid) the same way.
 * Encodings are compared exactly: both backends produce the format's one
 * NaN (sign kept only on overflow), so bit equality is the NaN policy too.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kern.h"
#include "tests/lib.h"

typedef struct {
	emu_op op;
	const emu_format *f, *src;
	emu_bits a[3];
	int from_double; /* convert x instead of applying op */
	double x;
	emu_env env;
} tcase;

typedef void (*gen_fn)(uint64_t i, const void *ctx, tcase *c);

static void describe(const tcase *c, emu_result fast, emu_result mp, char *buf, size_t len)
{
	char f1[48], f2[48];
	if (c->from_double)
		snprintf(buf, len, "%s(%a)", c->f->name, c->x);
	else
		snprintf(buf, len, "%s %s(0x%x, 0x%x, 0x%x)%s%s", c->f->name, emu_op_name(c->op),
		         c->a[0], c->a[1], c->a[2], c->src ? " from " : "", c->src ? c->src->name : "");
	size_t n = strlen(buf);
	snprintf(buf + n, len - n, " %s%s%s%s idx %" PRIu64 ": fast 0x%x %s, mpfr 0x%x %s",
	         emu_mode_name(c->env.mode), c->env.sat ? " sat" : "", c->env.ftz ? " ftz" : "",
	         c->env.daz ? " daz" : "", c->env.index, fast.bits,
	         emu_flags_str(fast.flags, f1, sizeof f1), mp.bits, emu_flags_str(mp.flags, f2, sizeof f2));
}

/* Run n cases in parallel; fail with the first mismatches named. */
static void prove(const char *what, uint64_t n, gen_fn gen, const void *ctx)
{
	uint64_t bad = 0;
	char first[3][400] = {"", "", ""};
#pragma omp parallel for schedule(dynamic, 4096) reduction(+ : bad)
	for (uint64_t i = 0; i < n; i++) {
		tcase c;
		memset(&c, 0, sizeof c);
		c.env = EMU_ENV_DEFAULT;
		gen(i, ctx, &c);
		emu_result fast, mp;
		if (c.from_double) {
			fast = emu_from_double(c.f, c.x, &c.env);
			mp = emu_mp_from_double(c.f, c.x, &c.env);
		} else {
			fast = emu_apply(c.op, c.f, c.src, c.a, &c.env);
			mp = emu_mp_apply(c.op, c.f, c.src, c.a, &c.env);
		}
		if (fast.bits != mp.bits || fast.flags != mp.flags) {
			uint64_t k;
#pragma omp atomic capture
			k = bad++;
			if (k < 3) {
				char buf[400];
				describe(&c, fast, mp, buf, sizeof buf);
#pragma omp critical
				snprintf(first[k], sizeof first[k], "%s", buf);
			}
		}
	}
	t_count(what, n);
	ck_assert_msg(bad == 0, "%s: %" PRIu64 " of %" PRIu64 " differ; first: %s | %s | %s", what,
	              bad, n, first[0], first[1], first[2]);
}

static const emu_op binops[] = {EMU_OP_ADD, EMU_OP_SUB, EMU_OP_MUL, EMU_OP_DIV, EMU_OP_MIN,
                                EMU_OP_MAX};
static const emu_op unops[] = {EMU_OP_SQRT, EMU_OP_EXP, EMU_OP_LOG,  EMU_OP_EXP2,
                               EMU_OP_RSQRT, EMU_OP_NEG, EMU_OP_ABS, EMU_OP_LOG1P};
#define NVARIANT 14 /* 6 modes x {ieee, sat} + {ftz, daz} at rne */

static void set_variant(tcase *c, unsigned v, uint64_t i)
{
	if (v < 12) {
		c->env.mode = (emu_mode)(v % 6);
		c->env.sat = v >= 6;
	} else {
		c->env.ftz = v == 12;
		c->env.daz = v == 13;
		c->env.mode = (emu_mode)(i % 6);
	}
	c->env.seed = t_seed();
	c->env.index = i;
}

/* ---- every pair of small formats ---- */
static const char *const small_fmts[] = {"e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e8m0",
                                         "e3m2", "e2m3", "e2m1"};

static void gen_pairs(uint64_t i, const void *ctx, tcase *c)
{
	const emu_format *f = ctx;
	uint64_t np = 1ull << (2 * f->bits);
	uint64_t pair = i % np, rest = i / np;
	c->f = f;
	c->a[0] = (emu_bits)(pair >> f->bits);
	c->a[1] = (emu_bits)(pair & ((1u << f->bits) - 1));
	c->op = binops[rest % ARRAY_SIZE(binops)];
	set_variant(c, (unsigned)(rest / ARRAY_SIZE(binops)), i);
}

START_TEST(test_small_pairs)
{
	const emu_format *f = t_fmt(small_fmts[_i]);
	uint64_t n = (1ull << (2 * f->bits)) * ARRAY_SIZE(binops) * NVARIANT;
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "%s: all pairs x 6 binary ops x 14 env", f->name);
	prove(what, t_quick() ? n / 97 : n, gen_pairs, f);
}
END_TEST

/* fma on every pair, with addends chosen to hit cancellation, ties, zero
 * signs, overflow and NaN: the c set is every 16th encoding plus specials. */
static void gen_fma_pairs(uint64_t i, const void *ctx, tcase *c)
{
	const emu_format *f = ctx;
	uint64_t np = 1ull << (2 * f->bits);
	uint64_t pair = i % np, rest = i / np;
	unsigned nc = (1u << f->bits) / 16 + 4;
	unsigned ci = (unsigned)(rest % nc);
	c->f = f;
	c->op = EMU_OP_FMA;
	c->a[0] = (emu_bits)(pair >> f->bits);
	c->a[1] = (emu_bits)(pair & ((1u << f->bits) - 1));
	emu_bits sp[4] = {0, f->sign_mask, f->max_bits, f->sign_mask | 1};
	c->a[2] = ci < 4 ? sp[ci] : (emu_bits)((ci - 4) * 16 + (unsigned)(t_rand(7, i / 16) & 15));
	set_variant(c, (unsigned)(rest / nc), i);
}

START_TEST(test_small_fma)
{
	const emu_format *f = t_fmt(small_fmts[_i]);
	uint64_t n = (1ull << (2 * f->bits)) * ((1u << f->bits) / 16 + 4) * NVARIANT;
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "%s: fma all pairs x %u addends x 14 env", f->name,
	         (1u << f->bits) / 16 + 4);
	prove(what, t_quick() ? n / 97 : n, gen_fma_pairs, f);
}
END_TEST

/* ---- every 16-bit value: unary ops and conversions ---- */
static const char *const wide_fmts[] = {"fp16", "bf16"};

static void gen_unary(uint64_t i, const void *ctx, tcase *c)
{
	const emu_format *f = ctx;
	c->f = f;
	c->a[0] = (emu_bits)(i & ((1u << f->bits) - 1));
	uint64_t rest = i >> f->bits;
	c->op = unops[rest % ARRAY_SIZE(unops)];
	set_variant(c, (unsigned)(rest / ARRAY_SIZE(unops)), i);
}

START_TEST(test_unary_16)
{
	const emu_format *f = t_fmt(wide_fmts[_i]);
	uint64_t n = 65536ull * ARRAY_SIZE(unops) * NVARIANT;
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "%s: every value x %zu unary ops x 14 env", f->name,
	         ARRAY_SIZE(unops));
	prove(what, t_quick() ? n / 97 : n, gen_unary, f);
}
END_TEST

START_TEST(test_unary_small)
{
	const emu_format *f = t_fmt(small_fmts[_i]);
	uint64_t n = (1ull << f->bits) * ARRAY_SIZE(unops) * NVARIANT;
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "%s: every value x %zu unary ops x 14 env", f->name,
	         ARRAY_SIZE(unops));
	prove(what, t_quick() ? n / 7 : n, gen_unary, f);
}
END_TEST

static void gen_cvt(uint64_t i, const void *ctx, tcase *c)
{
	const emu_format *src = ctx;
	size_t nf = emu_format_count();
	c->src = src;
	c->op = EMU_OP_CVT;
	c->a[0] = (emu_bits)(i & ((1u << src->bits) - 1));
	uint64_t rest = i >> src->bits;
	c->f = emu_format_at(rest % nf);
	set_variant(c, (unsigned)(rest / nf), i);
}

START_TEST(test_convert_all)
{
	/* every 16-bit and smaller source value to every format */
	const emu_format *src = emu_format_at(_i);
	if (src->bits > 16)
		return;
	uint64_t n = (1ull << src->bits) * emu_format_count() * NVARIANT;
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "cvt from every %s value to 12 formats x 14 env", src->name);
	prove(what, t_quick() ? n / 97 : n, gen_cvt, src);
}
END_TEST

/* ---- custom formats: a sample of what the spec parser accepts ---- */
/* The smallest of each NaN style (3-4 bits), without inf or subnormals,
 * p = 1 (nothing but powers of two), a few mid-sized ones, explicit biases
 * (negative: no value below 8; large: nothing above 1), unsigned formats of
 * each NaN style that has one (with inf and a signaling NaN, without NaN,
 * without zero and p > 1), all <= 7 bits so every pair stays cheap; and the
 * two 8-bit formats of ml_dtypes that only an explicit bias or unsigned can
 * express, float8_e4m3b11fnuz and float8_e5m3fnu. (float8_e8m0fnu as a spec,
 * "p=1,ebits=8,bias=127,unsigned,nozero,nan=fn", is e8m0's descriptor field
 * for field, check_format.c, and e8m0 is in small_fmts.) */
static const char *const custom_specs[] = {
    "p=2,emax=1",
    "p=2,emax=1,noinf",
    "p=3,emax=1,noinf,nosub",
    "p=1,emax=2,nan=none",
    "p=1,emax=4,nan=none,nosub",
    "p=1,emax=1,nan=fnuz",
    "p=2,emax=2,nan=fn",
    "p=4,emax=3,nan=fnuz,nosub",
    "p=3,emax=4,nan=fn,nosub",
    "p=4,emax=3",
    "p=2,emax=7,nosub",
    "p=4,emax=2,nan=none",
    "p=2,ebits=3,bias=-3,nan=fnuz,nosub",
    "p=3,ebits=2,bias=9,nan=fn",
    "p=3,ebits=2,bias=0,unsigned",
    "p=2,ebits=2,bias=2,unsigned,noinf",
    "p=3,ebits=2,bias=1,unsigned,nan=none",
    "p=3,ebits=3,bias=2,unsigned,nozero,nan=fn",
    "p=4,ebits=4,bias=11,nan=fnuz",
    "p=4,ebits=5,bias=15,unsigned,nan=fn",
};
/* Too wide for every pair, converted into only: the edges of the exponent
 * range an explicit bias may reach (emin = -127 unsigned; emax = 128 with
 * p = 24 and a negative bias). */
static const char *const custom_wide[] = {
    "p=8,ebits=8,bias=128,unsigned",
    "p=24,ebits=6,bias=-65,nan=fn",
};
#define NCUSTOM (ARRAY_SIZE(custom_specs) + ARRAY_SIZE(custom_wide))

/* custom_specs, then custom_wide */
static const emu_format *custom_fmt(int i)
{
	static emu_format f[NCUSTOM];
	const char *spec = (size_t)i < ARRAY_SIZE(custom_specs)
	                       ? custom_specs[i]
	                       : custom_wide[(size_t)i - ARRAY_SIZE(custom_specs)];
	char err[200];
	ck_assert_msg(emu_format_parse(spec, &f[i], err, sizeof err) == EMU_OK, "%s: %s", spec,
	              err);
	return &f[i];
}

START_TEST(test_custom_pairs)
{
	const emu_format *f = custom_fmt(_i);
	uint64_t n = (1ull << (2 * f->bits)) * ARRAY_SIZE(binops) * NVARIANT;
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "%s: all pairs x 6 binary ops x 14 env", f->name);
	prove(what, t_quick() ? n / 7 : n, gen_pairs, f);
	n = (1ull << (2 * f->bits)) * ((1u << f->bits) / 16 + 4) * NVARIANT;
	snprintf(what, sizeof what, "%s: fma all pairs x addends x 14 env", f->name);
	prove(what, t_quick() ? n / 7 : n, gen_fma_pairs, f);
	n = (1ull << f->bits) * ARRAY_SIZE(unops) * NVARIANT;
	snprintf(what, sizeof what, "%s: every value x %zu unary ops x 14 env", f->name,
	         ARRAY_SIZE(unops));
	prove(what, t_quick() ? n / 7 : n, gen_unary, f);
	/* to every built-in format */
	n = (1ull << f->bits) * emu_format_count() * NVARIANT;
	snprintf(what, sizeof what, "cvt from every %s value to 12 formats x 14 env", f->name);
	prove(what, t_quick() ? n / 7 : n, gen_cvt, f);
}
END_TEST

/* into the custom format: every value of every built-in of <= 16 bits
 * (fp16 and bf16 by a prime stride) */
typedef struct {
	const emu_format *dst;
	uint64_t per_src;
} cvt_in_ctx;

static void gen_cvt_in(uint64_t i, const void *ctx, tcase *c)
{
	const cvt_in_ctx *x = ctx;
	uint64_t k = i % x->per_src, rest = i / x->per_src;
	const emu_format *src = emu_format_at(rest % emu_format_count());
	c->f = x->dst;
	c->op = EMU_OP_CVT;
	c->src = src;
	c->a[0] = (emu_bits)((k * (src->bits > 8 ? 61u : 1u)) & ((1ull << src->bits) - 1));
	set_variant(c, (unsigned)(rest / emu_format_count()), i);
}

START_TEST(test_custom_cvt_in)
{
	cvt_in_ctx x = {custom_fmt(_i), 1u << 10};
	uint64_t n = x.per_src * emu_format_count() * NVARIANT;
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "cvt into %s from 1024 values of 12 formats x 14 env",
	         x.dst->name);
	prove(what, t_quick() ? n / 7 : n, gen_cvt_in, &x);
}
END_TEST

/* ---- the kernel backends on a format without zero ---- */
/* The fast and exact kernel backends (emu_map), which a kernel feeds
 * values, not encodings: every pair of e8m0 values and the kernel constant
 * 0 (an accumulator's start, not a value of e8m0), each operation with
 * rounding, every mode and overflow rule. Results and flag counts must
 * agree after every operation. */
START_TEST(test_kernel_no_zero)
{
	const emu_format *f = t_fmt("e8m0");
	static const emu_op ops[] = {EMU_OP_ADD, EMU_OP_SUB, EMU_OP_MUL, EMU_OP_DIV, EMU_OP_FMA};
	const unsigned nv = (1u << f->bits) + 1; /* the last one is the constant 0 */
	const unsigned step = t_quick() ? 7 : 1;
	uint64_t n = 0, bad = 0;
	char first[300] = "";
	for (unsigned v = 0; v < 12; v++) {
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = (emu_mode)(v % 6);
		env.sat = v >= 6;
		env.seed = t_seed();
		emu_be be[2];
		emu_be_init(&be[0], EMU_BE_FAST, &env);
		emu_be_init(&be[1], EMU_BE_EXACT, &env);
		emu_vec *x[2] = {emu_vec_new(&be[0], 3), emu_vec_new(&be[1], 3)};
		ck_assert(x[0] && x[1]);
		for (size_t o = 0; o < ARRAY_SIZE(ops); o++)
			for (unsigned a = 0; a < nv; a++)
				for (unsigned b = a % step; b < nv; b += step) {
					for (int k = 0; k < 2; k++) {
						emu_fill(&be[k], emu_at(x[k], 0),
						         a + 1 < nv ? emu_decode(f, a) : 0.0, 1);
						emu_fill(&be[k], emu_at(x[k], 1),
						         b + 1 < nv ? emu_decode(f, b) : 0.0, 1);
						emu_map(&be[k], EMU_STEP0, ops[o], f, emu_at(x[k], 2),
						        emu_at(x[k], 0), emu_at(x[k], 1), emu_at(x[k], 0), 1,
						        0, NULL);
					}
					n++;
					bool same = emu_encode(f, x[0]->d[2]) == emu_encode(f, x[1]->d[2]) &&
					            memcmp(be[0].st.flags[ops[o]], be[1].st.flags[ops[o]],
					                   sizeof be[0].st.flags[0]) == 0;
					if (!same && !bad++)
						snprintf(first, sizeof first,
						         "%s %s(%s, %s) %s%s: fast %a, exact %a (flag counts differ: %d)",
						         f->name, emu_op_name(ops[o]),
						         a + 1 < nv ? "code" : "const 0", b + 1 < nv ? "code" : "const 0",
						         emu_mode_name(env.mode), env.sat ? " sat" : "", x[0]->d[2],
						         x[1]->d[2],
						         memcmp(be[0].st.flags[ops[o]], be[1].st.flags[ops[o]],
						                sizeof be[0].st.flags[0]) != 0);
					if (!same) /* realign the counts so later cases are judged alone */
						memcpy(be[1].st.flags[ops[o]], be[0].st.flags[ops[o]],
						       sizeof be[0].st.flags[0]);
				}
		emu_be_free(&be[0]);
		emu_be_free(&be[1]);
	}
	t_count("e8m0: kernel backends fast == exact, pairs and the constant 0", n);
	ck_assert_msg(bad == 0, "%" PRIu64 " of %" PRIu64 " differ; first: %s", bad, n, first);
}
END_TEST

/* ---- binary32 near every boundary and midpoint of each format ---- */
typedef struct {
	const emu_format *f;
	uint64_t npoints; /* positive finite encodings used, each giving 2 boundaries */
	uint64_t stride;  /* 1, or a prime stride through a 19-bit format */
} bctx;

static void gen_boundary(uint64_t i, const void *ctx, tcase *c)
{
	const bctx *b = ctx;
	const emu_format *f = b->f;
	/* i -> (encoding k, value or midpoint, offset -3..3 ulps of binary32, variant) */
	uint64_t k = (i % b->npoints) * b->stride, r = i / b->npoints;
	int mid = (int)(r & 1);
	int off = (int)((r >> 1) % 7) - 3;
	unsigned variant = (unsigned)((r >> 1) / 7);
	double v = emu_decode(f, (emu_bits)k);
	if (mid) {
		double nx = emu_decode(f, emu_next_up(f, (emu_bits)k));
		v = isfinite(nx) && nx != v ? (v + nx) / 2 : v + f->max * f->epsilon / 2;
	}
	float x = (float)v; /* exact except above binary32's range */
	for (; off > 0; off--)
		x = nextafterf(x, INFINITY);
	for (; off < 0; off++)
		x = nextafterf(x, -INFINITY);
	if (t_rand(3, i) & 1)
		x = -x;
	c->f = f;
	c->from_double = 1;
	c->x = x;
	set_variant(c, variant, i);
}

START_TEST(test_boundaries)
{
	const emu_format *f = emu_format_at(_i);
	if (f->p >= 24)
		return; /* binary32 inputs are exact in fp32 */
	uint64_t all = (uint64_t)f->max_bits + 1;
	bctx b = {f, all, 1};
	if (all > 65536) { /* tf32: every 7th encoding */
		b.stride = 7;
		b.npoints = all / 7;
	}
	uint64_t n = b.npoints * 2 * 7 * NVARIANT;
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "%s: binary32 within 3 ulps of each boundary x 14 env", f->name);
	prove(what, t_quick() ? n / 97 : n, gen_boundary, &b);
}
END_TEST

/* ---- random binary32 and binary64 over the whole exponent range ---- */
static void gen_random_float(uint64_t i, const void *ctx, tcase *c)
{
	int is64 = *(const int *)ctx;
	uint64_t r = t_rand(is64 ? 11 : 10, i);
	c->f = emu_format_at(i % emu_format_count());
	c->from_double = 1;
	if (is64) {
		memcpy(&c->x, &r, sizeof c->x);
	} else {
		uint32_t u = (uint32_t)r;
		float x;
		memcpy(&x, &u, sizeof x);
		c->x = x;
	}
	set_variant(c, (unsigned)((r >> 40) % NVARIANT), i);
}

START_TEST(test_random_floats)
{
	static const int is64[] = {0, 1};
	uint64_t n = t_quick() ? 100000 : 10000000;
	prove(_i ? "random binary64 bit patterns -> every format" :
	           "random binary32 bit patterns -> every format",
	      n, gen_random_float, &is64[_i]);
}
END_TEST

/* binary64 bit patterns cluster at huge/tiny exponents; also draw values
 * log-uniform over each format's own range, where the rounding happens. */
static void gen_random_inrange(uint64_t i, const void *ctx, tcase *c)
{
	/* ctx: one format, or NULL for every built-in in turn */
	uint64_t r = t_rand(12, i);
	const emu_format *f = ctx ? ctx : emu_format_at(i % emu_format_count());
	int lo = f->emin - f->p - 2, hi = f->emax + 2;
	int e = lo + (int)((r >> 53) % (uint64_t)(hi - lo + 1));
	double m = 1 + (double)(r & ((1ull << 52) - 1)) * 0x1p-52;
	c->f = f;
	c->from_double = 1;
	c->x = ((r >> 52) & 1 ? -1 : 1) * ldexp(m, e);
	set_variant(c, (unsigned)(t_rand(13, i) % NVARIANT), i);
}

START_TEST(test_random_inrange)
{
	prove("random binary64 in each format's range", t_quick() ? 100000 : 10000000,
	      gen_random_inrange, NULL);
}
END_TEST

/* Into the custom formats from binary32 near every boundary and midpoint
 * (a prime stride through the wide ones) and from random binary64 over
 * each one's range, signs drawn at random (negative values are the NaN of
 * an unsigned format). */
START_TEST(test_custom_from_double)
{
	const emu_format *f = custom_fmt(_i);
	uint64_t all = (uint64_t)f->max_bits + 1;
	bctx b = {f, all, 1};
	if (all > 65536) {
		b.stride = 65537; /* prime, and > 2^16 so p = 24's steps differ */
		b.npoints = all / b.stride + 1;
		while ((b.npoints - 1) * b.stride > f->max_bits)
			b.npoints--;
	}
	uint64_t n = b.npoints * 2 * 7 * NVARIANT;
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "%s: binary32 within 3 ulps of each boundary x 14 env",
	         f->name);
	prove(what, t_quick() ? n / 7 : n, gen_boundary, &b);
	snprintf(what, sizeof what, "%s: random binary64 in its range x 14 env", f->name);
	prove(what, t_quick() ? 10000 : 200000, gen_random_inrange, f);
}
END_TEST

/* ---- log1p on binary32: where its Ziv check and its tiny branch meet ----
 * fp32's 2^32 values are too many to walk; draw them where log1p is hard:
 * a quarter uniform bit patterns, a quarter log-uniform over the whole
 * range, a quarter within 2^-40..2^-70 (the |x| < 2^-54 branch and the
 * arguments just above it, where x − x²/2 is within a few binary64 ulps of
 * x), a quarter within 2^-10 of −1 (results near −inf's side). */
static void gen_log1p32(uint64_t i, const void *ctx, tcase *c)
{
	(void)ctx;
	uint64_t r = t_rand(14, i);
	uint32_t u = (uint32_t)r, sign = (uint32_t)(r >> 63) << 31;
	switch ((r >> 32) & 3) {
	case 0:
		break;
	case 1: /* exponent field 0..254, any fraction */
		u = sign | ((uint32_t)((r >> 34) % 255) << 23) | (u & 0x7fffffu);
		break;
	case 2: /* biased exponents 57..87: 2^-70 .. 2^-40 */
		u = sign | ((uint32_t)(57 + (r >> 34) % 31) << 23) | (u & 0x7fffffu);
		break;
	default: /* −1 + k·2^-24 and −1 − k·2^-23, |k| < 2^14 */
		u = (r >> 34) & 1 ? 0xbf800000u - (u & 0x3fffu) : 0xbf800000u + (u & 0x3fffu);
		break;
	}
	c->f = t_fmt("fp32");
	c->op = EMU_OP_LOG1P;
	c->a[0] = u;
	set_variant(c, (unsigned)((r >> 40) % NVARIANT), i);
}

START_TEST(test_log1p32)
{
	prove("fp32 log1p: random, tiny, near -1 x 14 env", t_quick() ? 100000 : 4000000,
	      gen_log1p32, NULL);
}
END_TEST

/* ---- random 16-bit pairs per binary operation ---- */
static const emu_op pair_ops[] = {EMU_OP_ADD, EMU_OP_SUB, EMU_OP_MUL, EMU_OP_DIV,
                                  EMU_OP_FMA, EMU_OP_MIN, EMU_OP_MAX};

static void gen_pairs16(uint64_t i, const void *ctx, tcase *c)
{
	emu_op op = *(const emu_op *)ctx;
	uint64_t r = t_rand(20 + op, i);
	c->f = t_fmt(wide_fmts[i & 1]);
	c->op = op;
	c->a[0] = (emu_bits)(r & 0xffff);
	c->a[1] = (emu_bits)((r >> 16) & 0xffff);
	c->a[2] = (emu_bits)((r >> 32) & 0xffff);
	if (op == EMU_OP_FMA && (r >> 48) % 4 == 0) {
		/* steer a quarter of the addends near -a·b to exercise cancellation */
		emu_env e = EMU_ENV_DEFAULT;
		emu_result p = emu_mul(c->f, c->a[0], c->a[1], &e);
		c->a[2] = (p.bits ^ c->f->sign_mask) + (emu_bits)((r >> 50) % 5) - 2;
		c->a[2] &= 0xffff;
	}
	set_variant(c, (unsigned)((r >> 56) % NVARIANT), i);
}

START_TEST(test_pairs16)
{
	uint64_t n = t_quick() ? 100000 : 10000000;
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "random fp16/bf16 pairs: %s", emu_op_name(pair_ops[_i]));
	prove(what, n, gen_pairs16, &pair_ops[_i]);
}
END_TEST

Suite *suite_mpfr(void)
{
	Suite *s = suite_create("mpfr");
	TCase *tc = tcase_create("fast==mpfr");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_small_pairs, 0, ARRAY_SIZE(small_fmts));
	tcase_add_loop_test(tc, test_small_fma, 0, ARRAY_SIZE(small_fmts));
	tcase_add_loop_test(tc, test_unary_16, 0, ARRAY_SIZE(wide_fmts));
	tcase_add_loop_test(tc, test_unary_small, 0, ARRAY_SIZE(small_fmts));
	tcase_add_loop_test(tc, test_convert_all, 0, (int)emu_format_count());
	tcase_add_loop_test(tc, test_boundaries, 0, (int)emu_format_count());
	tcase_add_loop_test(tc, test_random_floats, 0, 2);
	tcase_add_test(tc, test_random_inrange);
	tcase_add_loop_test(tc, test_pairs16, 0, ARRAY_SIZE(pair_ops));
	tcase_add_test(tc, test_log1p32);
	tcase_add_loop_test(tc, test_custom_pairs, 0, ARRAY_SIZE(custom_specs));
	tcase_add_test(tc, test_kernel_no_zero);
	tcase_add_loop_test(tc, test_custom_cvt_in, 0, ARRAY_SIZE(custom_specs));
	tcase_add_loop_test(tc, test_custom_from_double, 0, (int)NCUSTOM);
	suite_add_tcase(s, tc);
	return s;
}
