/*
 * check_aops.c — the array operations (emu/core/aops.c) equal the scalar
 * operations on encodings element for element, bits (through emu_encode)
 * and flags, and the per-array counts equal the sum of the per-element
 * flags: every pair of every <= 8-bit built-in format in every mode, ieee
 * and sat, keep/ftz/daz; random pairs for fp16, bf16, tf32 (the fast path
 * in RNE, the generic one elsewhere); strides 0 and 2, n = 0 and 1, SR
 * keyed by env->index + i; and random elements against MPFR directly.
 */
#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib.h"

static const emu_op binops[] = {EMU_OP_ADD, EMU_OP_SUB, EMU_OP_MUL,
                                EMU_OP_DIV, EMU_OP_MIN, EMU_OP_MAX};
static const emu_op unops[] = {EMU_OP_CVT,   EMU_OP_SQRT, EMU_OP_EXP, EMU_OP_LOG,  EMU_OP_EXP2,
                               EMU_OP_RSQRT, EMU_OP_NEG,  EMU_OP_ABS, EMU_OP_LOG1P};

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);
	ck_assert_ptr_nonnull(p);
	return p;
}

static uint64_t dbits(double x)
{
	uint64_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

/* The value an encoding holds in the value domain (a NaN keeps its sign). */
static double val(const emu_format *f, emu_bits b)
{
	double v = emu_decode(f, b);
	return isnan(v) && f->nan != EMU_NAN_FNUZ && (b & f->sign_mask) ? -v : v;
}

/* Which reference prove() uses: the fast scalar ops or the exact-format
 * MPFR backend (written independently of both). */
static bool against_mpfr;

/* The scalar reference of element i: the encoding API (cvt: emu_from_double). */
static emu_result ref(emu_op op, const emu_format *f, const emu_bits *e, double x,
                      const emu_env *env)
{
	if (against_mpfr)
		return op == EMU_OP_CVT ? emu_mp_from_double(f, x, env)
		                        : emu_mp_apply(op, f, NULL, e, env);
	if (op == EMU_OP_CVT)
		return emu_from_double(f, x, env);
	return emu_apply(op, f, NULL, e, env);
}

/* Run op over n elements (operand k at x[k][i*s[k]], encodings ex[k] likewise)
 * and prove every element and the counts; returns n. */
static uint64_t prove(emu_op op, const emu_format *f, const emu_env *env, double *const *x,
                      emu_bits *const *ex, const size_t *s, size_t n)
{
	double *dst = xcalloc(n, sizeof *dst);
	uint8_t *fl = xcalloc(n, 1);
	const double *args[3] = {x[0], x[1], x[2]};
	emu_a_flags c = emu_a_op(op, f, dst, args, s, n, env, fl);
	emu_a_flags c2 = emu_a_op(op, f, dst, args, s, n, env, NULL); /* counts without flags */
	uint64_t sum[5] = {0, 0, 0, 0, 0};
	unsigned any = 0;
	int ar = emu_op_arity(op);
	emu_env e = *env;
	for (size_t i = 0; i < n; i++) {
		emu_bits args_b[3] = {0, 0, 0};
		for (int k = 0; k < ar; k++)
			args_b[k] = ex[k][i * s[k]];
		e.index = env->index + i;
		emu_result r = ref(op, f, args_b, x[0][i * s[0]], &e);
		emu_bits got = emu_encode(f, dst[i]);
		if (got != r.bits || fl[i] != r.flags) {
			char b1[48], b2[48];
			ck_abort_msg(
			    "%s %s mode %s sat %d ftz %d daz %d i %zu: args 0x%x 0x%x 0x%x "
			    "(%a %a): got 0x%x %s, scalar 0x%x %s",
			    f->name, emu_op_name(op), emu_mode_name(env->mode), env->sat, env->ftz,
			    env->daz, i, args_b[0], args_b[1], args_b[2], x[0][i * s[0]],
			    ar > 1 ? x[1][i * s[1]] : 0.0, got, emu_flags_str(fl[i], b1, sizeof b1),
			    r.bits, emu_flags_str(r.flags, b2, sizeof b2));
		}
		for (int k = 0; k < 5; k++)
			sum[k] += (fl[i] >> k) & 1;
		any |= fl[i];
	}
	for (int k = 0; k < 5; k++) {
		ck_assert_uint_eq(c.count[k], sum[k]);
		ck_assert_uint_eq(c2.count[k], sum[k]);
	}
	ck_assert_uint_eq(c.any, any);
	ck_assert_uint_eq(c2.any, any);
	free(dst);
	free(fl);
	return n;
}

/* The operands a format's proof walks: every encoding that the value
 * domain holds, i.e. all but signaling NaNs and NaNs with another payload
 * than the one the emulator produces (a double carries neither; a NaN keeps
 * its sign). */
static bool is_value(const emu_format *f, emu_bits b)
{
	return !emu_is_snan(f, b) && emu_encode(f, val(f, b)) == b;
}

static size_t operands(const emu_format *f, emu_bits *out)
{
	size_t k = 0;
	for (emu_bits b = 0; b < (1u << f->bits); b++)
		if (is_value(f, b))
			out[k++] = b;
	return k;
}

/* Element i's flags v into the per-flag counts sum and, the first time one
 * of them is overflow, invalid or divbyzero, i into *first */
static void tally_elem(uint64_t *sum, uint64_t *first, unsigned v, uint64_t i)
{
	for (int k = 0; k < 5; k++)
		sum[k] += (v >> k) & 1;
	if (*first == UINT64_MAX &&
	    (v & (EMU_FLAG_OVERFLOW | EMU_FLAG_INVALID | EMU_FLAG_DIVBYZERO)))
		*first = i;
}

static emu_env env_of(int m, int sat, int sub)
{
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = (emu_mode)m;
	env.sat = sat;
	env.ftz = sub == 1;
	env.daz = sub == 2;
	env.seed = t_seed();
	env.index = 12345;
	return env;
}

static const char *const small[] = {"e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz",
                                    "e3m2", "e2m3", "e2m1",     "e8m0"};

START_TEST(test_small_all_pairs)
{
	const emu_format *f = t_fmt(small[_i]);
	emu_bits *ops = xcalloc(256, sizeof *ops);
	size_t m = operands(f, ops);
	size_t step = t_quick() ? 5 : 1; /* quick: every 5th first operand */
	size_t na = (m + step - 1) / step, n = na * m;
	double *xa = xcalloc(n, sizeof(double)), *xb = xcalloc(n, sizeof(double));
	double *xc = xcalloc(n, sizeof(double));
	emu_bits *ea = xcalloc(n, sizeof(emu_bits)), *eb = xcalloc(n, sizeof(emu_bits));
	emu_bits *ec = xcalloc(n, sizeof(emu_bits));
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < m; j++) {
			size_t k = i * m + j;
			ea[k] = ops[i * step];
			eb[k] = ops[j];
			xa[k] = val(f, ea[k]);
			xb[k] = val(f, eb[k]);
		}
	/* fma addends: a sample, with zeros, the largest, a NaN and randoms */
	emu_bits addend[4] = {0, f->max_bits, f->nan_bits, ops[t_rand(7, _i) % m]};
	if (!f->has_zero)
		addend[0] = 1;
	double *x[3] = {xa, xb, xc};
	emu_bits *e[3] = {ea, eb, ec};
	size_t s[3] = {1, 1, 1};
	uint64_t cases = 0, fcases = 0, ucases = 0;
	for (int md = 0; md < EMU_NMODES; md++)
		for (int sat = 0; sat < 2; sat++)
			for (int sub = 0; sub < 3; sub++) {
				emu_env env = env_of(md, sat, sub);
				for (size_t o = 0; o < ARRAY_SIZE(binops); o++)
					cases += prove(binops[o], f, &env, x, e, s, n);
				for (size_t ad = 0; ad < (t_quick() ? 2u : 4u); ad++) {
					for (size_t k = 0; k < n; k++) {
						ec[k] = addend[ad];
						xc[k] = val(f, ec[k]);
					}
					fcases += prove(EMU_OP_FMA, f, &env, x, e, s, n);
				}
				double *ux[3] = {xb, xb, xb};
				emu_bits *ue[3] = {eb, eb, eb};
				for (size_t o = 0; o < ARRAY_SIZE(unops); o++)
					ucases += prove(unops[o], f, &env, ux, ue, s, m);
			}
	t_count("aops: <=8-bit pairs x modes x sat x sub (6 binary ops)", cases);
	t_count("aops: <=8-bit fma triples (4 addends)", fcases);
	t_count("aops: <=8-bit unary elements x envs", ucases);
	free(ops), free(xa), free(xb), free(xc), free(ea), free(eb), free(ec);
}
END_TEST

/* Random operands: uniform encodings, and every other second operand near
 * the first (same exponent range, random low bits) for cancellation and
 * midpoint cases. */
static void fill_random(const emu_format *f, uint64_t stream, size_t n, emu_bits *e, double *x,
                        int which)
{
	emu_bits mask = f->bits >= 32 ? 0xffffffffu : (1u << f->bits) - 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = t_rand(stream, i);
		emu_bits b = (emu_bits)r & mask;
		if (which == 1 && (i & 1))
			b = e[i] ^
			    ((emu_bits)(r >> 32) &
			     (f->man_mask | (f->exp_mask & (f->exp_mask >> 2)) | f->sign_mask));
		e[i] = emu_encode(f, val(f, b & mask));
		x[i] = val(f, e[i]);
	}
}

static const char *const wide[] = {"fp16", "bf16", "tf32", "fp32"};

START_TEST(test_wide_random)
{
	const emu_format *f = t_fmt(wide[_i]);
	size_t n_rne = t_quick() ? 20000 : 1000000, n_other = t_quick() ? 5000 : 100000;
	size_t n = n_rne;
	double *xa = xcalloc(n, sizeof(double)), *xb = xcalloc(n, sizeof(double));
	double *xc = xcalloc(n, sizeof(double));
	emu_bits *ea = xcalloc(n, sizeof(emu_bits)), *eb = xcalloc(n, sizeof(emu_bits));
	emu_bits *ec = xcalloc(n, sizeof(emu_bits));
	double *x[3] = {xa, xb, xc};
	emu_bits *e[3] = {ea, eb, ec};
	size_t s[3] = {1, 1, 1};
	uint64_t rne = 0, other = 0, un = 0;
	/* envs: RNE plain (fast path), every other mode, and RNE with sat, ftz, daz */
	for (int v = 0; v < EMU_NMODES + 3; v++) {
		emu_env env = env_of(v < EMU_NMODES ? v : EMU_RNE, v == EMU_NMODES,
		                     v > EMU_NMODES ? v - EMU_NMODES : 0);
		size_t cnt = v == 0 ? n_rne : n_other;
		for (size_t o = 0; o < ARRAY_SIZE(binops) + 1; o++) {
			emu_op op = o < ARRAY_SIZE(binops) ? binops[o] : EMU_OP_FMA;
			uint64_t st = (uint64_t)(v * 16 + (int)o) * 3;
			fill_random(f, st, cnt, ea, xa, 0);
			for (size_t i = 0; i < cnt; i++)
				eb[i] = ea[i];
			fill_random(f, st + 1, cnt, eb, xb, 1);
			fill_random(f, st + 2, cnt, ec, xc, 0);
			uint64_t k = prove(op, f, &env, x, e, s, cnt);
			if (v == 0)
				rne += k;
			else
				other += k;
		}
		/* unary ops (sqrt is on the fast path in RNE) */
		for (size_t o = 0; o < ARRAY_SIZE(unops); o++) {
			size_t cu = unops[o] == EMU_OP_SQRT ? cnt : n_other / 2;
			fill_random(f, (uint64_t)(1000 + v * 16 + (int)o), cu, ea, xa, 0);
			if (unops[o] == EMU_OP_CVT) /* any double, near the format's grid */
				for (size_t i = 0; i < cu; i++)
					xa[i] = xa[i] *
					        (1 + ldexp((double)(t_rand(99, i) % 4096) - 2048,
					                   -f->p - 10));
			un += prove(unops[o], f, &env, x, e, s, cu);
		}
	}
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "aops: %s random pairs, RNE (7 ops)", f->name);
	t_count(what, rne);
	snprintf(what, sizeof what, "aops: %s random pairs, other modes and options", f->name);
	t_count(what, other);
	snprintf(what, sizeof what, "aops: %s random unary elements", f->name);
	t_count(what, un);
	free(xa), free(xb), free(xc), free(ea), free(eb), free(ec);
}
END_TEST

/* Stride 2 for the first operand, stride 0 (broadcast) for the second, on
 * the fast path and the generic one. */
START_TEST(test_strides)
{
	const emu_format *f = t_fmt(_i == 2 ? "fp32" : _i ? "fp16" : "e4m3");
	const emu_bits mask = f->bits >= 32 ? 0xffffffffu : (1u << f->bits) - 1;
	const size_t n = 3000;
	double *xa = xcalloc(2 * n, sizeof(double)), *xb = xcalloc(1, sizeof(double));
	emu_bits *ea = xcalloc(2 * n, sizeof(emu_bits)), *eb = xcalloc(1, sizeof(emu_bits));
	fill_random(f, 500, 2 * n, ea, xa, 0);
	uint64_t cases = 0;
	for (int v = 0; v < 3; v++) {
		emu_env env = env_of(v == 0 ? EMU_RNE : v == 1 ? EMU_SR : EMU_UP, 0, 0);
		for (size_t o = 0; o < ARRAY_SIZE(binops); o++)
			for (int bi = 0; bi < 4; bi++) {
				emu_bits bb = bi == 0 ? 0x3c00 & mask
				                      : (emu_bits)t_rand(501, (uint64_t)bi) & mask;
				bb = emu_encode(f, val(f, bb));
				eb[0] = bb;
				xb[0] = val(f, bb);
				double *x[3] = {xa, xb, xb};
				emu_bits *e[3] = {ea, eb, eb};
				size_t s[3] = {2, 0, 0};
				cases += prove(binops[o], f, &env, x, e, s, n);
				double *y[3] = {xb, xa, xa};
				emu_bits *ey[3] = {eb, ea, ea};
				size_t sy[3] = {0, 2, 2};
				cases += prove(binops[o], f, &env, y, ey, sy, n);
				size_t su[3] = {1, 0, 0}; /* a[i] op s: its own loop */
				cases += prove(binops[o], f, &env, x, e, su, n);
			}
		double *x[3] = {xa, xa, xa};
		emu_bits *e[3] = {ea, ea, ea};
		size_t s[3] = {2, 2, 2};
		cases += prove(EMU_OP_SQRT, f, &env, x, e, s, n);
		cases += prove(EMU_OP_FMA, f, &env, x, e, s, n);
	}
	t_count("aops: strided and broadcast elements", cases);
	free(xa), free(xb), free(ea), free(eb);
}
END_TEST

/* n = 0 writes nothing and counts nothing; n = 1 is one scalar op. */
START_TEST(test_empty_and_one)
{
	const emu_format *f = t_fmt("fp16");
	emu_env env = EMU_ENV_DEFAULT;
	double dst[2] = {42.0, 42.0}, a[1] = {1.0}, b[1] = {0x1p-11};
	uint8_t fl[2] = {0xee, 0xee};
	for (int op = 0; op < EMU_NOPS; op++) {
		const double *args[3] = {a, b, b};
		size_t s[3] = {1, 1, 1};
		emu_a_flags c = emu_a_op((emu_op)op, f, dst, args, s, 0, &env, fl);
		ck_assert(emu_encode(f, dst[0]) == emu_encode(f, 42.0) && fl[0] == 0xee);
		ck_assert_uint_eq(c.any, 0);
		for (int k = 0; k < 5; k++)
			ck_assert_uint_eq(c.count[k], 0);
	}
	emu_a_flags c = emu_a_add(f, dst, a, 1, b, 1, 1, &env, fl);
	/* 1 + 2^-11 is a tie in fp16: to even (1.0), inexact */
	ck_assert_uint_eq(emu_encode(f, dst[0]), 0x3c00);
	ck_assert_uint_eq(fl[0], EMU_FLAG_INEXACT);
	ck_assert_uint_eq(fl[1], 0xee);
	ck_assert_uint_eq(c.count[4], 1);
	ck_assert_uint_eq(c.any, EMU_FLAG_INEXACT);
	ck_assert(emu_encode(f, dst[1]) == emu_encode(f, 42.0));
	t_count("aops: n = 0 and n = 1 cases", EMU_NOPS + 1);
}
END_TEST

/* SR: element i draws (seed, env->index + i), so a split array gives the
 * same bits as the whole, and another seed gives other bits. */
START_TEST(test_sr_reproducible)
{
	const emu_format *f = t_fmt("bf16");
	const size_t n = 4096;
	double *a = xcalloc(n, sizeof(double)), *b = xcalloc(n, sizeof(double));
	double *r1 = xcalloc(n, sizeof(double)), *r2 = xcalloc(n, sizeof(double));
	double *r3 = xcalloc(n, sizeof(double));
	for (size_t i = 0; i < n; i++) {
		a[i] = 1.0 + (double)(i % 128) / 128;
		b[i] = ldexp(1.0 + (double)(t_rand(600, i) % 128) / 128, -9 - (int)(i % 5));
	}
	emu_env env = env_of(EMU_SR, 0, 0);
	emu_a_flags c = emu_a_add(f, r1, a, 1, b, 1, n, &env, NULL);
	size_t h = 1000;
	emu_a_flags c1 = emu_a_add(f, r2, a, 1, b, 1, h, &env, NULL);
	emu_env e2 = env;
	e2.index += h;
	emu_a_flags c2 = emu_a_add(f, r2 + h, a + h, 1, b + h, 1, n - h, &e2, NULL);
	for (int k = 0; k < 5; k++)
		ck_assert_uint_eq(c.count[k], c1.count[k] + c2.count[k]);
	size_t differ = 0;
	e2 = env;
	e2.seed ^= 0x5555;
	emu_a_add(f, r3, a, 1, b, 1, n, &e2, NULL);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(emu_encode(f, r1[i]), emu_encode(f, r2[i]));
		differ += emu_encode(f, r1[i]) != emu_encode(f, r3[i]);
	}
	ck_assert_msg(differ > n / 8, "another seed changed only %zu of %zu results", differ, n);
	t_count("aops: SR split-array elements", n);
	free(a), free(b), free(r1), free(r2), free(r3);
}
END_TEST

/* The array ops against MPFR directly (the scalar ops are proven equal to it
 * in suite mpfr): random operands of every <= 8-bit format and of fp16,
 * bf16, tf32, every op, rne (the fast path) and sr. */
START_TEST(test_against_mpfr)
{
	static const char *const names[] = {"e4m3", "e5m2", "e4m3fnuz", "e2m1", "e8m0",
	                                    "fp16", "bf16", "tf32",     "fp32"};
	const emu_format *f = t_fmt(names[_i]);
	size_t n = t_quick() ? 1000 : 8000;
	double *xa = xcalloc(n, sizeof(double)), *xb = xcalloc(n, sizeof(double));
	double *xc = xcalloc(n, sizeof(double));
	emu_bits *ea = xcalloc(n, sizeof(emu_bits)), *eb = xcalloc(n, sizeof(emu_bits));
	emu_bits *ec = xcalloc(n, sizeof(emu_bits));
	double *x[3] = {xa, xb, xc};
	emu_bits *e[3] = {ea, eb, ec};
	size_t s[3] = {1, 1, 1};
	uint64_t cases = 0;
	against_mpfr = true;
	for (int v = 0; v < 2; v++) {
		emu_env env = env_of(v ? EMU_SR : EMU_RNE, 0, 0);
		for (int op = 0; op < EMU_NOPS; op++) {
			uint64_t st = 5000 + (uint64_t)(v * 32 + op) * 3;
			fill_random(f, st, n, ea, xa, 0);
			memcpy(eb, ea, n * sizeof *eb);
			fill_random(f, st + 1, n, eb, xb, 1);
			fill_random(f, st + 2, n, ec, xc, 0);
			cases += prove((emu_op)op, f, &env, x, e, s, n);
		}
	}
	against_mpfr = false;
	t_count("aops: elements against MPFR (every op, rne and sr)", cases);
	free(xa), free(xb), free(xc), free(ea), free(eb), free(ec);
}
END_TEST

/* SR's equal case: the top 32 discarded bits equal the draw u, and then
 * only the bits below them (the sticky rest) decide. Random operands meet
 * it once in 2^32 draws; here an index with 0 < u < 2^10 is searched and
 * fma(u·2^-42, 1 + 2^-10, 1) in tf32 (p = 11) puts u exactly in those 32
 * bits with u again below them (rest != 0: away), or with y = 1 nothing
 * below (rest = 0: toward zero). Both the fast path and the scalar op;
 * then the same below 2^emin. */
START_TEST(test_sr_equal_draw)
{
	const emu_format *f = t_fmt("tf32");
	emu_env env = env_of(EMU_SR, 0, 0);
	uint64_t i = 0;
	uint32_t u = 0;
	for (;; i++) {
		u = emu_sr_bits(env.seed, i);
		if (u > 0 && u < 1024)
			break;
	}
	env.index = i;
	for (int k = 0; k < 2; k++) {
		double a[1] = {ldexp((double)u, -42)}, b[1] = {k ? 1.0 : 1.0 + 0x1p-10},
		       c[1] = {1.0};
		double d[1];
		uint8_t fl[1];
		emu_a_fma(f, d, a, 1, b, 1, c, 1, 1, &env, fl);
		emu_bits args[3] = {emu_encode(f, a[0]), emu_encode(f, b[0]), emu_encode(f, c[0])};
		emu_result r = emu_apply(EMU_OP_FMA, f, NULL, args, &env);
		ck_assert_msg(emu_encode(f, d[0]) == r.bits && fl[0] == r.flags,
		              "u=%u rest %d: got 0x%x, scalar 0x%x", u, !k, emu_encode(f, d[0]),
		              r.bits);
		/* away from zero iff something lies below the 32 bits */
		ck_assert_uint_eq(r.bits, emu_encode(f, k ? 1.0 : 1.0 + 0x1p-10));
	}
	/* the same below 2^emin, where the fraction is taken in units of the
	 * quantum: fp16's subnormal (3 + u·2^-32)·2^-24 goes to 3·2^-24, and
	 * with 2^-45 more below it, away to 4·2^-24 (a conversion: any u) */
	f = t_fmt("fp16");
	env.index = 7;
	u = emu_sr_bits(env.seed, env.index);
	for (int k = 0; k < 2; k++) {
		double x[1] = {ldexp(3.0 + ldexp((double)u, -32) + (k ? 0x1p-45 : 0), -24)}, d[1];
		uint8_t fl[1];
		emu_a_cvt(f, d, x, 1, 1, &env, fl);
		emu_result r = emu_from_double(f, x[0], &env);
		ck_assert_msg(emu_encode(f, d[0]) == r.bits && fl[0] == r.flags,
		              "subnormal u=%u rest %d: got 0x%x, scalar 0x%x", u, k,
		              emu_encode(f, d[0]), r.bits);
		ck_assert_uint_eq(r.bits, k ? 4u : 3u);
	}
	t_count("aops: SR draws equal to the discarded bits", 4);
}
END_TEST

/* ---- exp, log, exp2, rsqrt, log1p (the Ziv check in binary64, rne) ---- */

static const emu_op trops[] = {EMU_OP_EXP, EMU_OP_LOG, EMU_OP_EXP2, EMU_OP_RSQRT, EMU_OP_LOG1P};

/* Every value encoding of fp16, bf16, tf32 and the <= 8-bit formats, every
 * transcendental; every mode for the formats of <= 16 bits (rne is the fast
 * path, the others the generic one), rne for tf32 (2^19 inputs). */
static const char *const trfmts[] = {"fp16",     "bf16", "e4m3", "e5m2", "e4m3fnuz",
                                     "e5m2fnuz", "e3m2", "e2m3", "e2m1", "tf32"};

START_TEST(test_transc_every_input)
{
	const emu_format *f = t_fmt(trfmts[_i]);
	size_t cap = (size_t)1 << f->bits;
	emu_bits *e = xcalloc(cap, sizeof *e);
	double *x = xcalloc(cap, sizeof *x);
	size_t m = 0;
	for (emu_bits b = 0; b < cap; b++)
		if (is_value(f, b)) {
			e[m] = b;
			x[m++] = val(f, b);
		}
	double *xs[3] = {x, x, x};
	emu_bits *es[3] = {e, e, e};
	size_t st[3] = {1, 1, 1};
	uint64_t rne = 0, other = 0;
	int modes = f->bits > 16 || t_quick() ? 1 : EMU_NMODES;
	for (int md = 0; md < modes; md++) {
		emu_env env = env_of(md, 0, 0);
		for (size_t o = 0; o < ARRAY_SIZE(trops); o++) {
			uint64_t k = prove(trops[o], f, &env, xs, es, st, m);
			if (md == EMU_RNE)
				rne += k;
			else
				other += k;
		}
	}
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "aops: %s exp log exp2 rsqrt log1p, every input, rne", f->name);
	t_count(what, rne);
	if (other) {
		snprintf(what, sizeof what, "aops: %s exp log exp2 rsqrt log1p, every input, other modes",
		         f->name);
		t_count(what, other);
	}
	free(e), free(x);
}
END_TEST

/* fp32 (p = 24) in rne: random arguments over each function's interesting
 * range (overflow, underflow, subnormal and exact results included), random
 * encodings of every kind, and the inputs whose binary64 result lies within
 * 2^9 units in the last place of an fp32 midpoint (found here with libm's
 * double functions): the fast path must leave those to the scalar op. */
static double tr_libm(emu_op op, double x)
{
	switch (op) {
	case EMU_OP_EXP:
		return exp(x);
	case EMU_OP_LOG:
		return log(x);
	case EMU_OP_EXP2:
		return exp2(x);
	case EMU_OP_LOG1P:
		return log1p(x);
	default:
		return 1 / sqrt(x);
	}
}

START_TEST(test_transc_fp32)
{
	const emu_format *f = t_fmt("fp32");
	const size_t n = t_quick() ? 20000 : 200000, nhard = 12;
	double *x = xcalloc(n + nhard, sizeof *x);
	emu_bits *e = xcalloc(n + nhard, sizeof *e);
	double *xs[3] = {x, x, x};
	emu_bits *es[3] = {e, e, e};
	size_t st[3] = {1, 1, 1};
	emu_env env = env_of(EMU_RNE, 0, 0), rne = EMU_ENV_DEFAULT;
	uint64_t cases = 0, hard = 0;
	for (size_t o = 0; o < ARRAY_SIZE(trops); o++) {
		emu_op op = trops[o];
		for (size_t i = 0; i < n; i++) {
			uint64_t r = t_rand(9000 + o, i);
			double u = (double)(r >> 11) * 0x1p-53, v;
			if (i % 4 == 3) /* any encoding */
				v = val(f, (emu_bits)r);
			else if (op == EMU_OP_EXP)
				v = -110 + 205 * u;
			else if (op == EMU_OP_EXP2)
				v = i % 4 == 2 ? floor(-160 + 300 * u) : -160 + 300 * u;
			else if (op == EMU_OP_LOG1P && i % 4 == 2) /* in (-1, 0] */
				v = -u;
			else /* any positive encoding */
				v = val(f, (emu_bits)r & 0x7fffffffu);
			e[i] = emu_from_double(f, v, &rne).bits;
			if (emu_is_nan(f, e[i]))
				e[i] = f->nan_bits;
			x[i] = val(f, e[i]);
		}
		/* hard cases: the first nhard in a binade of arguments */
		size_t k = n;
		uint32_t b0 = op == EMU_OP_EXP    ? 0x3c000000u
		              : op == EMU_OP_EXP2 ? 0x3d000000u
		                                  : 0x3f800000u;
		for (uint32_t b = b0; k < n + nhard && b < b0 + 0x04000000u; b++) {
			double xv = val(f, b), y = fabs(tr_libm(op, xv));
			uint64_t d = dbits(y) & ((1ull << 29) - 1); /* 53 - 24 discarded bits */
			if (d > (1ull << 28) - 512 && d < (1ull << 28) + 512) {
				e[k] = b;
				x[k++] = xv;
			}
		}
		ck_assert_msg(k == n + nhard, "%s: found %zu hard cases", emu_op_name(op), k - n);
		cases += prove(op, f, &env, xs, es, st, n + nhard);
		hard += nhard;
	}
	t_count("aops: fp32 exp log exp2 rsqrt log1p, random and hard arguments, rne", cases);
	t_count("aops: of which within 2^9 ulp of an fp32 midpoint", hard);
	free(x), free(e);
}
END_TEST

/* min, max, neg and abs on any doubles, not only the format's values: the
 * array op (its fast path takes finite values of the format, anything else
 * goes to the generic one) against emu_a_element's generic path (operands
 * encoded, then the scalar op), double bits and flags; values of the format,
 * values that are not (between two of them, beyond max, binary64
 * subnormals), ±0 (fnuz has no −0), infinities and NaNs; equal pairs;
 * strides 1, 0 and 3; with and without per-element flags. */
static const char *const pickfmts[] = {"fp32", "fp16", "bf16", "e4m3", "e4m3fnuz", "e5m2fnuz",
                                       "e2m1"};

static double pick_operand(const emu_format *f, uint64_t r)
{
	emu_bits mask = f->bits >= 32 ? 0xffffffffu : (1u << f->bits) - 1;
	double v = emu_decode(f, (emu_bits)(r >> 8) & mask);
	switch (r & 7) {
	case 0: /* between two values of the format, or beyond max */
		return isfinite(v) ? v * (1 + 0x1p-30) + 0x1p-1074 : 1e300;
	case 1:
		return r & 8 ? -0.0 : 0.0;
	case 2:
		return (double)(r >> 40) * (r & 16 ? 0x1p-1074 : 0x1p-1040);
	case 3:
		return r & 8 ? INFINITY : (r & 16 ? -NAN : NAN);
	default:
		return v;
	}
}

START_TEST(test_pick_any_double)
{
	const emu_format *f = t_fmt(pickfmts[_i]);
	static const emu_op ops[] = {EMU_OP_MIN, EMU_OP_MAX, EMU_OP_NEG, EMU_OP_ABS};
	static const emu_mode modes[] = {EMU_RNE, EMU_SR, EMU_RTZ};
	const size_t n = t_quick() ? 1000 : 5000, sa[] = {1, 1, 3}, sb[] = {1, 0, 3};
	double *x = xcalloc(3 * n, sizeof *x), *y = xcalloc(3 * n, sizeof *y);
	double *d = xcalloc(n, sizeof *d), *d2 = xcalloc(n, sizeof *d2);
	uint8_t *fl = xcalloc(n, 1);
	for (size_t i = 0; i < 3 * n; i++) {
		x[i] = pick_operand(f, t_rand(41, i));
		uint64_t r = t_rand(42, i);
		y[i] = r % 5 == 0 ? x[i] : r % 5 == 1 ? -x[i] : pick_operand(f, r);
	}
	uint64_t cases = 0, fast = 0;
	for (size_t o = 0; o < ARRAY_SIZE(ops); o++)
		for (size_t md = 0; md < ARRAY_SIZE(modes); md++)
			for (size_t p = 0; p < ARRAY_SIZE(sa); p++) {
				emu_env env = env_of(modes[md], 0, 0);
				const double *args[3] = {x, y, x};
				size_t st[3] = {sa[p], sb[p], 0};
				emu_a_flags c = emu_a_op(ops[o], f, d, args, st, n, &env, fl);
				emu_a_flags c2 = emu_a_op(ops[o], f, d2, args, st, n, &env, NULL);
				uint64_t sum[5] = {0, 0, 0, 0, 0};
				emu_env e = env;
				for (size_t i = 0; i < n; i++) {
					unsigned v = 0;
					double xv = x[i * sa[p]], yv = y[i * sb[p]];
					e.index = env.index + i;
					double r = emu_a_element(ops[o], f, xv, yv, 0, &e, &v);
					if (dbits(d[i]) != dbits(r) || dbits(d2[i]) != dbits(r) ||
					    fl[i] != v)
						ck_abort_msg("%s %s mode %s stride %zu i %zu: %a %a: "
						             "got %a (no flags: %a) flags 0x%x, "
						             "element %a flags 0x%x",
						             f->name, emu_op_name(ops[o]),
						             emu_mode_name(modes[md]), sa[p], i, xv, yv,
						             d[i], d2[i], fl[i], r, v);
					for (int k = 0; k < 5; k++)
						sum[k] += (v >> k) & 1;
					fast += isfinite(xv) && emu_decode(f, emu_encode(f, xv)) == xv;
				}
				for (int k = 0; k < 5; k++) {
					ck_assert_uint_eq(c.count[k], sum[k]);
					ck_assert_uint_eq(c2.count[k], sum[k]);
				}
				cases += n;
			}
	t_count("aops: min max neg abs on any doubles against the generic path", cases);
	ck_assert_uint_gt(fast, cases / 4); /* the fast path's operands are common */
	free(x), free(y), free(d), free(d2), free(fl);
}
END_TEST

/* ---- emu_a_fold ---- */

static const emu_op foldops[] = {EMU_OP_ADD, EMU_OP_SUB, EMU_OP_MUL,
                                 EMU_OP_MIN, EMU_OP_MAX, EMU_OP_FMA};

/* Fold n steps and prove them against two references: the scalar loop of
 * emu_a_element (the accumulator's double bits after the last step, each
 * step's flags) and the encoding API step by step (encodings); counts,
 * any, first_bad and first_flags from the per-step flags, and the counts
 * again without per-step flags. Returns n. */
static uint64_t prove_fold(emu_op op, const emu_format *f, const emu_env *env, double acc0,
                           const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
	uint8_t fl1[1], *fl = n > 1 ? xcalloc(n, 1) : fl1;
	double s = acc0, s2 = acc0;
	emu_a_flags c = emu_a_fold(op, f, &s, a, sa, b, sb, n, env, fl);
	emu_a_flags c2 = emu_a_fold(op, f, &s2, a, sa, b, sb, n, env, NULL);
	double r = acc0;
	emu_bits rb = emu_encode(f, acc0);
	emu_env e = *env;
	uint64_t sum[5] = {0, 0, 0, 0, 0}, first = UINT64_MAX;
	unsigned any = 0, first_fl = 0;
	for (size_t j = 0; j < n; j++) {
		unsigned v = 0;
		double x = a[j * sa], y = op == EMU_OP_FMA ? b[j * sb] : 0.0;
		e.index = env->index + j;
		r = op == EMU_OP_FMA ? emu_a_element(op, f, x, y, r, &e, &v)
		                     : emu_a_element(op, f, r, x, 0, &e, &v);
		emu_bits args[3] = {rb, emu_encode(f, x), 0};
		if (op == EMU_OP_FMA) {
			args[0] = emu_encode(f, x);
			args[1] = emu_encode(f, y);
			args[2] = rb;
		}
		emu_result er = emu_apply(op, f, NULL, args, &e);
		if (fl[j] != v || er.flags != v || er.bits != emu_encode(f, r)) {
			char b1[48], b2[48];
			ck_abort_msg(
			    "fold %s %s mode %s sat %d ftz %d daz %d step %zu of %zu: acc 0x%x "
			    "x %a y %a: flags %s, element %s (0x%x), encodings 0x%x",
			    f->name, emu_op_name(op), emu_mode_name(env->mode), env->sat, env->ftz,
			    env->daz, j, n, rb, x, y, emu_flags_str(fl[j], b1, sizeof b1),
			    emu_flags_str(v, b2, sizeof b2), emu_encode(f, r), er.bits);
		}
		rb = er.bits;
		for (int k = 0; k < 5; k++)
			sum[k] += (v >> k) & 1;
		any |= v;
		if (first == UINT64_MAX &&
		    (v & (EMU_FLAG_OVERFLOW | EMU_FLAG_INVALID | EMU_FLAG_DIVBYZERO))) {
			first = j;
			first_fl = v;
		}
	}
	/* one test per call: each ck_assert records its place (a write) */
	bool same = c.any == any && c2.any == any && c.first_bad == first &&
	            c2.first_bad == first && c.first_flags == first_fl &&
	            c2.first_flags == first_fl;
	for (int k = 0; k < 5; k++)
		same &= c.count[k] == sum[k] && c2.count[k] == sum[k];
	if (dbits(s) != dbits(r) || dbits(s2) != dbits(r) || !same)
		ck_abort_msg(
		    "fold %s %s mode %s sat %d ftz %d daz %d n %zu: acc %a (no flags: %a), "
		    "element loop %a; first_bad %llu/%llu (0x%x), expected %llu (0x%x); "
		    "inexact count %llu, expected %llu",
		    f->name, emu_op_name(op), emu_mode_name(env->mode), env->sat, env->ftz,
		    env->daz, n, s, s2, r, (unsigned long long)c.first_bad,
		    (unsigned long long)c2.first_bad, c.first_flags, (unsigned long long)first,
		    first_fl, (unsigned long long)c.count[4], (unsigned long long)sum[4]);
	if (fl != fl1)
		free(fl);
	return n;
}

/* Every (accumulator, operand) pair of every <= 8-bit format as a fold of
 * one step, in rne and sr (the fast path) and rtz (the generic one); fma
 * with b = 1 and b a random operand (every accumulator, every a). */
START_TEST(test_fold_small_pairs)
{
	const emu_format *f = t_fmt(small[_i]);
	emu_bits *ops = xcalloc(256, sizeof *ops);
	size_t m = operands(f, ops);
	size_t step = t_quick() ? 7 : 1;
	double *x = xcalloc(m, sizeof(double));
	for (size_t j = 0; j < m; j++)
		x[j] = val(f, ops[j]);
	double bs[2] = {1.0, x[t_rand(31, _i) % m]};
	if (!f->has_zero || bs[0] > f->max)
		bs[0] = x[m / 3];
	uint64_t cases = 0;
	static const emu_mode modes[] = {EMU_RNE, EMU_SR, EMU_RTZ};
	for (size_t md = 0; md < ARRAY_SIZE(modes); md++) {
		emu_env env = env_of(modes[md], 0, 0);
		for (size_t o = 0; o < ARRAY_SIZE(foldops); o++)
			for (size_t i = 0; i < m; i += step)
				for (size_t j = 0; j < m; j++)
					for (size_t k = 0; k < (foldops[o] == EMU_OP_FMA ? 2u : 1u);
					     k++) {
						env.index = 12345 + i * m + j;
						cases += prove_fold(foldops[o], f, &env, x[i],
						                    &x[j], 1, &bs[k], 1, 1);
					}
	}
	t_count("aops: fold steps, <=8-bit (acc, operand) pairs in rne, sr, rtz", cases);
	free(ops), free(x);
}
END_TEST

/* Sequences: random encodings (NaN, infinities, overflow and cancellation
 * mid-fold), small values of random sign (long runs on the fast path),
 * subnormals and large values of one sign (overflow mid-fold, then the
 * non-finite accumulator); every mode x {ieee, sat} x {keep, ftz, daz} for
 * every <= 8-bit format and fp16, bf16, tf32; strides 1, 2 and 0, n = 0 and 1. */
static const char *const foldfmts[] = {"e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m2", "e2m3",
                                       "e2m1", "e8m0", "fp16",     "bf16",     "tf32", "fp32"};

static void fill_fold(const emu_format *f, uint64_t stream, int kind, size_t n, double *x)
{
	emu_env rne = EMU_ENV_DEFAULT;
	emu_bits mask = f->bits >= 32 ? 0xffffffffu : (1u << f->bits) - 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = t_rand(stream, i);
		double m = 1.0 + (double)(r >> 12) * 0x1p-52;
		double sg = (r >> 7) & 1 ? -1.0 : 1.0;
		switch (kind) {
		case 0: /* any encoding */
			x[i] = val(f, emu_encode(f, val(f, (emu_bits)r & mask)));
			continue;
		case 1: /* |x| in [2^-3, 2^2), random sign */
			x[i] = sg * ldexp(m, (int)(r % 5) - 3);
			break;
		case 2: /* around and below 2^emin, random sign */
			x[i] = sg * ldexp(m, f->emin - (int)(r % (unsigned)f->p) + 1);
			break;
		default: /* large, positive: overflows */
			x[i] = ldexp(m, f->emax - 2 - (int)(r % 3));
			break;
		}
		x[i] = emu_decode(f, emu_from_double(f, x[i], &rne).bits);
		if (isnan(x[i]) || (!f->has_sign && x[i] < 0))
			x[i] = fabs(val(f, f->max_bits));
	}
}

START_TEST(test_fold_sequences)
{
	const emu_format *f = t_fmt(foldfmts[_i]);
	const size_t n = t_quick() ? 120 : 600;
	double *xa = xcalloc(2 * n, sizeof(double)), *xb = xcalloc(2 * n, sizeof(double));
	uint64_t cases = 0;
	for (int md = 0; md < EMU_NMODES; md++)
		for (int sat = 0; sat < 2; sat++)
			for (int sub = 0; sub < 3; sub++) {
				emu_env env = env_of(md, sat, sub);
				/* the rne fast path (and sr's) gets every data kind; the
				 * other envs, the generic path, two */
				bool fast_env = (md == EMU_RNE || md == EMU_SR) && !sat && !sub;
				for (int kind = 0; kind < 4; kind++) {
					if (!fast_env && (kind == 1 || kind == 2))
						continue;
					uint64_t st =
					    7000 +
					    (uint64_t)(_i * 64 + md * 8 + sat * 4 + sub) * 8 +
					    (uint64_t)kind;
					fill_fold(f, st, kind, 2 * n, xa);
					fill_fold(f, st + 4000, kind == 3 ? 1 : kind, 2 * n, xb);
					for (size_t o = 0; o < ARRAY_SIZE(foldops); o++) {
						double acc0 = kind == 3 ? 0.0 : xa[2 * n - 1];
						cases += prove_fold(foldops[o], f, &env, acc0, xa,
						                    1, xb, 1, n);
						if (fast_env && kind == 1) {
							cases += prove_fold(foldops[o], f, &env,
							                    acc0, xa, 2, xb, 2, n);
							cases += prove_fold(foldops[o], f, &env,
							                    acc0, xa, 0, xb, 1, n);
							cases += prove_fold(foldops[o], f, &env,
							                    acc0, xa, 1, xb, 0, 1);
							cases += prove_fold(foldops[o], f, &env,
							                    acc0, xa, 1, xb, 1, 0);
						}
					}
				}
			}
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "aops: fold steps, %s sequences x envs", f->name);
	t_count(what, cases);
	free(xa), free(xb);
}
END_TEST

/* binary32 add and sub folds longer than the blocks fold_f32 chains (256
 * steps): every step against emu_a_element and emu_apply (prove_fold), with a
 * NaN, an infinity or an overflow placed at a block's first step, its last,
 * the next block's first and inside a later one, so that a block runs again
 * step by step from its start and the chain goes on after it; exact sums
 * (no inexact) and random ones, strides 1 and 2. */
/* emu_a_fold_n's binary32 add and sub chains (sixteen as two vectors of
 * lanes, then eight as one): an operand that is no float value in one
 * chain, a sum that overflows in another, in either vector, each chain as
 * emu_a_fold gives it alone, counts and the first failing step too. */
START_TEST(test_fold_n_f32_lanes)
{
	const emu_format *f = t_fmt("fp32");
	enum { N = 70, M = 27 };
	static double xa[M * N];
	emu_env env = EMU_ENV_DEFAULT;
	uint64_t cases = 0;
	for (int sub = 0; sub < 2; sub++)
		for (int odd = 0; odd < 3; odd++) {
			fill_fold(f, 9700 + (uint64_t)(sub * 4 + odd), 1, M * N, xa);
			/* chains 0-15 run as two vectors of lanes, 16-23 as one */
			if (odd == 1) { /* chain 13 or 21: 1 + (2^-24 + 2^-50) at steps 39, 40 */
				size_t ch = sub ? 21 : 13;
				for (size_t j = 0; j < N; j++)
					xa[ch * N + j] = j == 40 ? 0x1p-24 + 0x1p-50 : j == 39 ? 1.0 : 0;
			} else if (odd == 2) { /* chain 2 or 10 overflows at step 33 */
				size_t ch = sub ? 10 : 2;
				xa[ch * N + 32] = xa[ch * N + 33] = sub ? -0x1.fffffep127 : 0x1.fffffep127;
			}
			emu_op op = sub ? EMU_OP_SUB : EMU_OP_ADD;
			double acc[M], ref[M];
			emu_a_flags want = {{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
			for (size_t c = 0; c < M; c++) {
				acc[c] = ref[c] = 0.25;
				emu_env e = env;
				e.index = env.index + c * N;
				emu_a_flags r = emu_a_fold(op, f, &ref[c], xa + c * N, 1, NULL, 0, N,
				                           &e, NULL);
				for (int k = 0; k < 5; k++)
					want.count[k] += r.count[k];
				want.any |= r.any;
				if (want.first_bad == UINT64_MAX && r.first_bad != UINT64_MAX) {
					want.first_bad = c * N + r.first_bad;
					want.first_flags = r.first_flags;
				}
			}
			emu_a_flags got =
			    emu_a_fold_n(op, f, acc, 1, xa, 1, N, NULL, 0, 0, N, M, &env, N);
			for (size_t c = 0; c < M; c++)
				ck_assert_msg(dbits(acc[c]) == dbits(ref[c]), "sub %d odd %d chain %zu: %a, want %a",
				              sub, odd, c, acc[c], ref[c]);
			ck_assert(memcmp(got.count, want.count, sizeof got.count) == 0);
			ck_assert_uint_eq(got.any, want.any);
			ck_assert_uint_eq(got.first_bad, want.first_bad);
			ck_assert_uint_eq(got.first_flags, want.first_flags);
			cases += M * N;
		}
	t_count("aops: binary32 add/sub fold chains in lanes, odd operands", cases);
}
END_TEST

START_TEST(test_fold_f32_blocks)
{
	const emu_format *f = t_fmt("fp32");
	enum { NF = 1100 };
	static double xa[2 * NF];
	const size_t at[] = {0, 255, 256, 511, 700, NF - 1, SIZE_MAX};
	const double bad[] = {NAN, INFINITY, -INFINITY, 0x1.fffffep127};
	emu_env env = EMU_ENV_DEFAULT;
	uint64_t cases = 0;
	for (int exact = 0; exact < 2; exact++)
		for (size_t k = 0; k < ARRAY_SIZE(at); k++)
			for (size_t b = 0; b < (at[k] == SIZE_MAX ? 1 : ARRAY_SIZE(bad)); b++) {
				fill_fold(f, 9100 + (uint64_t)(exact * 64) + k * 8 + b, 1, 2 * NF,
				          xa);
				if (exact) /* small integers: every sum exact */
					for (size_t i = 0; i < 2 * NF; i++)
						xa[i] = floor(xa[i] * 8);
				if (at[k] != SIZE_MAX) {
					xa[at[k]] = xa[2 * at[k]] = bad[b];
					if (b == 3) /* max twice: the sum overflows there */
						xa[at[k] + 1 < NF ? at[k] + 1 : at[k] - 1] = bad[b];
				}
				for (int sub = 0; sub < 2; sub++)
					for (size_t sa = 1; sa <= 2; sa++)
						cases += prove_fold(sub ? EMU_OP_SUB : EMU_OP_ADD,
						                    f, &env, sub ? -0.5 : 0.25, xa,
						                    sa, NULL, 0, NF);
			}
	/* an operand that is no float value is the scalar step's (emu_a_element
	 * rounds the exact sum once: 1 + (2^-24 + 2^-50) is 1 + 2^-23, where
	 * the operand rounded first would tie to 1) */
	for (size_t i = 0; i < NF; i++)
		xa[i] = i == 300 ? 0x1p-24 + 0x1p-50 : i == 299 ? 1.0 : 0.0;
	double got = 0.0, want = 0.0;
	(void)emu_a_fold(EMU_OP_ADD, f, &got, xa, 1, NULL, 0, NF, &env, NULL);
	for (size_t i = 0; i < NF; i++) {
		unsigned v = 0;
		want = emu_a_element(EMU_OP_ADD, f, want, xa[i], 0, &env, &v);
	}
	ck_assert_msg(dbits(got) == dbits(want) && want == 1 + 0x1p-23, "%a, want %a", got, want);
	/* the same through fma folds, the odd operand as x and as y */
	static double yb[NF];
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < NF; i++)
			yb[i] = 1.0;
		if (k) /* swap the roles: x all ones but at 300, y the odd one */
			for (size_t i = 0; i < NF; i++) {
				yb[i] = xa[i];
				xa[i] = 1.0;
			}
		got = want = 0.0;
		(void)emu_a_fold(EMU_OP_FMA, f, &got, xa, 1, yb, 1, NF, &env, NULL);
		for (size_t i = 0; i < NF; i++) {
			unsigned v = 0;
			want = emu_a_element(EMU_OP_FMA, f, xa[i], yb[i], want, &env, &v);
		}
		ck_assert_msg(dbits(got) == dbits(want) && want == 1 + 0x1p-23,
		              "fma %d: %a, want %a", k, got, want);
	}
	t_count("aops: binary32 add/sub fold steps across fold_f32's blocks", cases + NF);
}
END_TEST

/* binary32 fma folds in rne (the CPU's fmaf steps) where its exactness test
 * and the fallback decide: products and accumulators near 2^-126 (tiny,
 * exact or not, rounding up to 2^-126), exact cancellations to zeros of
 * either sign, overflow to inf, NaN and infinite operands; each against
 * emu_a_element and the encodings step by step (prove_fold), and four and
 * eight chains at once against as many folds. */
START_TEST(test_fold_fma32_edges)
{
	const emu_format *f = t_fmt("fp32");
	emu_env env = env_of(EMU_RNE, 0, 0);
	enum { N = 400 };
	double xa[N], xb[N];
	uint64_t cases = 0;
	for (int kind = 0; kind < 4; kind++)
		for (int rep = 0; rep < 40; rep++) {
			for (size_t i = 0; i < N; i++) {
				uint64_t r = t_rand(8800 + (uint64_t)kind, (uint64_t)rep * N + i);
				double sg = (r >> 7) & 1 ? -1.0 : 1.0;
				float m1 = 1.0f + (float)(r >> 40) * 0x1p-24f;
				float m2 = 1.0f + (float)((r >> 16) & 0xffffff) * 0x1p-24f;
				switch (kind) {
				case 0: /* products near 2^-126 */
					xa[i] = sg * ldexpf(m1, -63 - (int)(r % 4));
					xb[i] = ldexpf(m2, -62 - (int)((r >> 2) % 4));
					break;
				case 1: /* short mantissas: many exact steps and cancellations */
					xa[i] = sg *
					        ldexp((double)(1 + r % 8), -64 - (int)(r >> 3) % 3);
					xb[i] = ldexp((double)(1 + (r >> 5) % 4), -62);
					break;
				case 2: /* ordinary values with exact cancellations, zeros */
					xa[i] = (r >> 9) % 5 == 0 ? sg * 0.0
					                          : sg * (double)(1 + r % 16);
					xb[i] = (r >> 13) % 7 == 0 ? -xb[i > 0 ? i - 1 : 0] : 0.25;
					break;
				default: /* large: overflow; now and then NaN or inf */
					xa[i] = (r >> 20) % 97 == 0   ? NAN
					        : (r >> 20) % 89 == 0 ? sg * INFINITY
					                              : sg * ldexpf(m1, 100);
					xb[i] = ldexpf(m2, 27 + (int)(r % 3));
					break;
				}
			}
			/* 2^-126 less 0, 1 or 2 of fp32's least subnormals, either sign */
			double acc0 = kind == 0
			                  ? (0x1p-126 - 0x1p-149 * (rep % 3)) * (rep % 2 ? -1 : 1)
			                  : 0.0;
			cases += prove_fold(EMU_OP_FMA, f, &env, acc0, xa, 1, xb, 1, N);
			/* 4, 8 and 16 chains at once (fold_fma32_4, fold_fma32_8's
			 * and fold_fma32_16's lanes) */
			for (size_t m = 4; m <= 16; m *= 2) {
				size_t len = N / m;
				double acc[16], ref[16];
				for (size_t c = 0; c < m; c++)
					acc[c] = ref[c] = c % 3 == 2 ? 0.0 : c % 2 ? -acc0 : acc0;
				emu_a_flags want = {{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
				for (size_t c = 0; c < m; c++) {
					emu_env e = env;
					e.index = env.index + c * len;
					emu_a_flags r =
					    emu_a_fold(EMU_OP_FMA, f, &ref[c], xa + c * len, 1,
					               xb + c * len, 1, len, &e, NULL);
					for (int k = 0; k < 5; k++)
						want.count[k] += r.count[k];
					if (want.first_bad == UINT64_MAX &&
					    r.first_bad != UINT64_MAX)
						want.first_bad = c * len + r.first_bad;
				}
				emu_a_flags got = emu_a_fold_n(EMU_OP_FMA, f, acc, 1, xa, 1, len,
				                               xb, 1, len, len, m, &env, len);
				ck_assert(memcmp(acc, ref, m * sizeof acc[0]) == 0);
				ck_assert(memcmp(got.count, want.count, sizeof got.count) == 0);
				ck_assert_uint_eq(got.first_bad, want.first_bad);
			}
		}
	/* steps whose float result is 2^-126 and inexact: x·y + s = 2^-126 −
	 * 2^-150 + 2^-152 rounds there on the subnormal grid but is tiny after
	 * rounding (underflow); 2^-126 − 2^-152 is not tiny; either sign */
	static const struct {
		double s, x, y;
	} hand[] = {{0x1p-126 - 0x1p-148, 13 * 0x1p-76, 0x1p-76},
	            {0x1p-126 - 0x1p-148, 15 * 0x1p-76, 0x1p-76},
	            {-(0x1p-126 - 0x1p-148), -13 * 0x1p-76, 0x1p-76},
	            {-(0x1p-126 - 0x1p-148), 15 * 0x1p-76, -0x1p-76},
	            {0x1p-126 - 0x1p-149, 0x1p-75, 0x1p-76}};
	for (size_t i = 0; i < ARRAY_SIZE(hand); i++)
		cases +=
		    prove_fold(EMU_OP_FMA, f, &env, hand[i].s, &hand[i].x, 1, &hand[i].y, 1, 1);
	/* the same as lanes of eight chains (with accumulators that are not float
	 * values: their steps are the scalar op's), against eight folds */
	double hx[8], hy[8], hs[8], ref[8];
	uint64_t hcount[5] = {0, 0, 0, 0, 0};
	for (size_t c = 0; c < 8; c++) {
		hx[c] = c < ARRAY_SIZE(hand) ? hand[c].x : 3;
		hy[c] = c < ARRAY_SIZE(hand) ? hand[c].y : 0.5;
		hs[c] = ref[c] = c < ARRAY_SIZE(hand) ? hand[c].s : 1 + 0x1p-40 * (double)c;
		emu_a_flags r1 =
		    emu_a_fold(EMU_OP_FMA, f, &ref[c], &hx[c], 1, &hy[c], 1, 1, &env, NULL);
		for (int k = 0; k < 5; k++)
			hcount[k] += r1.count[k];
	}
	emu_a_flags hr = emu_a_fold_n(EMU_OP_FMA, f, hs, 1, hx, 1, 1, hy, 1, 1, 1, 8, &env, 1);
	for (size_t c = 0; c < 8; c++)
		ck_assert_msg(memcmp(&hs[c], &ref[c], sizeof hs[c]) == 0, "lane %zu: %a, want %a",
		              c, hs[c], ref[c]);
	ck_assert(memcmp(hr.count, hcount, sizeof hcount) == 0);
	/* underflows: two results of 2^-126 and a subnormal; every step inexact */
	ck_assert_uint_eq(hr.count[3], 3);
	ck_assert_uint_eq(hr.count[4], 8);
	t_count("aops: binary32 fma fold steps at its edges", cases);
}
END_TEST

/* emu_a_fold_n: m chains at once are m emu_a_fold calls one after the other,
 * bit for bit: every accumulator, the summed counts and OR, and the first
 * failing step of the first chain that has one (numbered c·cidx + j), for
 * every op, rne and sr, the data kinds of fill_fold (overflowing ones
 * included), m below, at and past the 4 chains stepped together, chains
 * sharing an operand (ca = 0) or not, strided or not */
static const char *const foldnfmts[] = {"e4m3", "e5m2", "e2m1", "fp16", "bf16", "tf32", "fp32"};

START_TEST(test_fold_n)
{
	const emu_format *f = t_fmt(foldnfmts[_i]);
	const size_t N = 40, M = 25;
	double *xa = xcalloc(M * N * 2, sizeof(double)), *xb = xcalloc(M * N * 2, sizeof(double));
	uint64_t cases = 0;
	static const size_t ms[] = {1, 3, 4, 5, 8, 9, 16, 25}, ns[] = {0, 1, 7, 40};
	for (int md = 0; md < 2; md++) {
		emu_env env = env_of(md ? EMU_SR : EMU_RNE, 0, 0);
		env.seed = 77;
		env.index = 1000;
		for (int kind = 0; kind < 4; kind++) {
			fill_fold(f, 9100 + (uint64_t)(_i * 8 + md * 4 + kind), kind, M * N * 2,
			          xa);
			fill_fold(f, 9300 + (uint64_t)(_i * 8 + md * 4 + kind),
			          kind == 3 ? 1 : kind, M * N * 2, xb);
			for (size_t o = 0; o < ARRAY_SIZE(foldops); o++)
				for (size_t mi = 0; mi < ARRAY_SIZE(ms); mi++)
					for (size_t ni = 0; ni < ARRAY_SIZE(ns); ni++)
						for (int shape = 0; shape < 4; shape++) {
							emu_op op = foldops[o];
							size_t m = ms[mi], n = ns[ni];
							/* shape 0: chains apart, unit stride;
							 * 1: a shared (ca = 0), b strided
							 * down columns; 2: both strided;
							 * 3: a shared, b's chains apart */
							size_t sa = shape == 2 ? 2 : 1,
							       ca = shape == 1 || shape == 3
							                ? 0
							                : N * sa,
							       sb =
							           shape == 1 || shape == 2 ? M : 1,
							       cb =
							           shape == 1 || shape == 2 ? 1 : N;
							uint64_t cidx = n + 3;
							double acc[25], ref[25];
							for (size_t c = 0; c < m; c++)
								acc[c] = ref[c] =
								    kind == 3 ? 0.0 : xa[c];
							emu_a_flags want = {
							    {0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
							for (size_t c = 0; c < m; c++) {
								emu_env e = env;
								e.index = env.index + c * cidx;
								emu_a_flags r = emu_a_fold(
								    op, f, &ref[c], xa + c * ca, sa,
								    xb + c * cb, sb, n, &e, NULL);
								for (int k = 0; k < 5; k++)
									want.count[k] += r.count[k];
								want.any |= r.any;
								if (want.first_bad == UINT64_MAX &&
								    r.first_bad != UINT64_MAX) {
									want.first_bad =
									    c * cidx + r.first_bad;
									want.first_flags =
									    r.first_flags;
								}
							}
							emu_a_flags got = emu_a_fold_n(
							    op, f, acc, 1, xa, sa, ca, xb, sb, cb,
							    n, m, &env, cidx);
							for (size_t c = 0; c < m; c++)
								ck_assert_msg(
								    memcmp(&acc[c], &ref[c],
								           sizeof acc[c]) == 0,
								    "%s %s op %d m %zu n %zu shape "
								    "%d "
								    "chain %zu: %a, want %a",
								    f->name, md ? "sr" : "rne",
								    (int)op, m, n, shape, c, acc[c],
								    ref[c]);
							ck_assert(memcmp(got.count, want.count,
							                 sizeof got.count) == 0);
							ck_assert_uint_eq(got.any, want.any);
							ck_assert_uint_eq(got.first_bad,
							                  want.first_bad);
							if (want.first_bad != UINT64_MAX)
								ck_assert_uint_eq(got.first_flags,
								                  want.first_flags);
							cases += m;
						}
		}
	}
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "aops: m folds at once == m folds, %s chains", f->name);
	t_count(what, cases);
	free(xa), free(xb);
}
END_TEST

/* Known answers: a sum of ones stalls at 2^p (FACTS.md §7: 2048 in fp16,
 * 256 in bf16, 16 in e4m3, 8 in e5m2), the fold of a broadcast 1.0. */
START_TEST(test_fold_ones)
{
	static const struct {
		const char *name;
		double stall;
	} rows[] = {{"fp16", 2048}, {"bf16", 256}, {"e4m3", 16}, {"e5m2", 8}};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const emu_format *f = t_fmt(rows[i].name);
		emu_env env = EMU_ENV_DEFAULT;
		double one = 1.0, s = 0.0;
		emu_a_flags c = emu_a_fold(EMU_OP_ADD, f, &s, &one, 0, NULL, 0, 5000, &env, NULL);
		ck_assert_msg(s == rows[i].stall, "%s: sum of ones %g, expected %g", rows[i].name,
		              s, rows[i].stall);
		ck_assert_uint_eq(c.count[4], 5000 - (uint64_t)rows[i].stall);
		ck_assert_uint_eq(c.first_bad, UINT64_MAX);
	}
	t_count("aops: fold known answers (sums of ones)", ARRAY_SIZE(rows));
}
END_TEST

/* The unary ops' second look reads only the operand: with a NaN first
 * element (what the broadcast second operand used to be read from) the
 * elements left to the generic path are still the right ones, with and
 * without per-element flags, in place and not; first_bad is the first. */
START_TEST(test_unary_second_look)
{
	const emu_format *f = t_fmt("fp16");
	const emu_op ops[] = {EMU_OP_CVT, EMU_OP_SQRT, EMU_OP_EXP, EMU_OP_LOG};
	enum { NN = 300 };
	double x[NN], d[NN], w[NN];
	uint8_t fl[NN];
	for (size_t o = 0; o < ARRAY_SIZE(ops); o++)
		for (int inplace = 0; inplace < 2; inplace++)
			for (int flags = 0; flags < 2; flags++) {
				emu_env env = EMU_ENV_DEFAULT;
				for (size_t i = 0; i < NN; i++)
					x[i] = i == 0        ? NAN
					       : i % 37 == 5 ? INFINITY
					       : i % 41 == 7 ? -2.0
					       : i % 43 == 9 ? 32768.0
					                     : ldexp(1.0 + (double)(i % 13) / 16,
					                             (int)(i % 30) - 15);
				emu_a_flags r;
				const double *args[1] = {x};
				size_t st[1] = {1};
				memcpy(d, x, sizeof d);
				r = emu_a_op(ops[o], f, inplace ? d : w,
				             inplace ? (const double *const[]){d} : args, st, NN,
				             &env, flags ? fl : NULL);
				const double *got = inplace ? d : w;
				uint64_t first = UINT64_MAX;
				for (size_t i = 0; i < NN; i++) {
					unsigned v = 0;
					emu_env e = env;
					e.index = i;
					double want = emu_a_element(ops[o], f, x[i], 0, 0, &e, &v);
					ck_assert_msg(
					    emu_encode(f, want) == emu_encode(f, got[i]),
					    "%s inplace %d flags %d i %zu: %a -> %a, want %a",
					    emu_op_name(ops[o]), inplace, flags, i, x[i], got[i],
					    want);
					if (first == UINT64_MAX &&
					    (v & (EMU_FLAG_OVERFLOW | EMU_FLAG_INVALID |
					          EMU_FLAG_DIVBYZERO)))
						first = i;
				}
				ck_assert_uint_eq(r.first_bad, first);
			}
	t_count("aops: unary second look after a NaN first element", 16 * NN);
}
END_TEST

/* The second look's specials (NaN, infinite operands, x/0, sqrt below zero)
 * for IEEE formats, decided a chunk at once: every element's encoding and
 * flags, the counts and first_bad against the scalar reference and, for
 * operands the format holds, the exact-format MPFR backend. Chunks with
 * only divbyzero specials, a signaling binary64 NaN into cvt, unit strides,
 * stride 2 and a broadcast operand, flags and none. */
START_TEST(test_specials_second_look)
{
	const emu_format *f = t_fmt(_i ? "bf16" : "fp16");
	const emu_op ops[] = {EMU_OP_ADD, EMU_OP_SUB,  EMU_OP_MUL,
	                      EMU_OP_DIV, EMU_OP_SQRT, EMU_OP_CVT};
	enum { NN = 5000 };
	static double xa[2 * NN], xb[2 * NN], d[NN];
	static uint8_t fl[NN];
	double snan, snan2;
	memcpy(&snan, &(uint64_t){0x7ff0000000000001ull}, sizeof snan);
	memcpy(&snan2, &(uint64_t){0xfff4000000000000ull}, sizeof snan2);
	uint64_t checked = 0, mp = 0;
	for (size_t o = 0; o < ARRAY_SIZE(ops); o++)
		for (int kind = 0; kind < 3; kind++)      /* 0 mixed, 1 only x/0, 2 none */
			for (int lay = 0; lay < 3; lay++) /* strides 1/1, 2/1, 1/0 */
				for (int flags = 0; flags < 2; flags++) {
					emu_op op = ops[o];
					for (size_t i = 0; i < 2 * NN; i++) {
						uint64_t r =
						    t_rand(700 + o * 10 + (uint64_t)kind, i);
						/* kinds 1 and 2 overflow nowhere: only x/0 is bad
						 */
						int span = kind ? 12 : 40;
						double v = ldexp(1.0 + (double)(r % 256) / 256,
						                 (int)((r >> 8) % (unsigned)span) -
						                     span / 2);
						double w = ldexp(
						    1.0 + (double)((r >> 16) % 256) / 256,
						    (int)((r >> 24) % (unsigned)span) - span / 2);
						v = val(f,
						        emu_from_double(f, (r >> 40) & 1 ? -v : v,
						                        &EMU_ENV_DEFAULT)
						            .bits);
						w = val(f,
						        emu_from_double(f, (r >> 41) & 1 ? -w : w,
						                        &EMU_ENV_DEFAULT)
						            .bits);
						unsigned sel = (unsigned)((r >> 48) % 64);
						if (kind == 0) {
							const double sp[] = {
							    NAN,  -NAN, INFINITY, -INFINITY, 0.0,
							    -0.0, snan, snan2,    f->max,    -1.0};
							if (sel < 10)
								v = sp[sel];
							else if (sel < 20)
								w = sp[sel - 10];
						} else if (kind == 1 && sel < 6) {
							w = sel & 1 ? -0.0
							            : 0.0; /* x/0 for x != 0 */
						}
						if (op != EMU_OP_CVT &&
						    emu_is_snan(f, emu_encode(f, v)))
							v = NAN;
						if (op != EMU_OP_CVT && isnan(v) &&
						    dbits(v) != dbits(NAN) &&
						    dbits(v) != dbits(-NAN))
							v = NAN;
						if (isnan(w) && dbits(w) != dbits(NAN) &&
						    dbits(w) != dbits(-NAN))
							w = -NAN;
						xa[i] = v;
						xb[i] = w;
					}
					const double *args[2] = {xa, xb};
					size_t st[2] = {lay == 1 ? 2 : 1, lay == 2 ? 0 : 1};
					emu_env env = EMU_ENV_DEFAULT;
					emu_a_flags c = emu_a_op(op, f, d, args, st, NN, &env,
					                         flags ? fl : NULL);
					uint64_t sum[5] = {0}, first = UINT64_MAX;
					for (size_t i = 0; i < NN; i++) {
						double x = xa[i * st[0]], y = xb[i * st[1]];
						unsigned v = 0;
						emu_env e = env;
						e.index = i;
						double want = emu_a_element(op, f, x, y, 0, &e, &v);
						ck_assert_msg(
						    emu_encode(f, want) == emu_encode(f, d[i]) &&
						        (!flags || fl[i] == v),
						    "%s %s kind %d lay %d i %zu: %a %a -> %a (fl "
						    "0x%x), want "
						    "%a (0x%x)",
						    f->name, emu_op_name(op), kind, lay, i, x, y,
						    d[i], flags ? fl[i] : 0, want, v);
						tally_elem(sum, &first, v, i);
						if (!(dbits(x) & 0x0008000000000000ull) && isnan(x))
							continue; /* a signaling binary64 NaN: no
							             encoding */
						emu_bits eb[2] = {emu_encode(f, x),
						                  emu_encode(f, y)};
						emu_result m =
						    op == EMU_OP_CVT
						        ? emu_mp_from_double(f, x, &e)
						        : emu_mp_apply(op, f, NULL, eb, &e);
						ck_assert_msg(
						    m.bits == emu_encode(f, d[i]) && m.flags == v,
						    "%s %s i %zu: %a %a -> 0x%x, MPFR 0x%x flags "
						    "0x%x/0x%x",
						    f->name, emu_op_name(op), i, x, y,
						    emu_encode(f, d[i]), m.bits, v, m.flags);
						mp++;
					}
					for (int k = 0; k < 5; k++)
						ck_assert_uint_eq(c.count[k], sum[k]);
					ck_assert_uint_eq(c.first_bad, first);
					checked += NN;
				}
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "aops: %s specials decided a chunk at once", f->name);
	t_count(what, checked);
	snprintf(what, sizeof what, "aops: %s specials decided a chunk at once, vs MPFR", f->name);
	t_count(what, mp);
}
END_TEST

/* The fast paths let the CPU round (x + magic): under another rounding
 * direction every array op must still give the elements' own results,
 * bits and flags (the fast paths step aside). */
START_TEST(test_fpu_modes)
{
	static const int dirs[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
	static const emu_op ops[] = {EMU_OP_CVT, EMU_OP_ADD, EMU_OP_MUL, EMU_OP_FMA, EMU_OP_DIV};
	enum { NF = 3000 };
	static double a[NF], b[NF], c[NF], r[NF];
	static uint8_t fl[NF];
	const emu_format *f = t_fmt("fp16");
	uint64_t checked = 0;
	for (size_t i = 0; i < NF; i++) {
		uint64_t u = t_rand(97, i);
		a[i] = ldexp((double)(u >> 11) * 0x1p-53 - 0.5, (int)(u % 40) - 26);
		b[i] = ldexp((double)(t_rand(98, i) >> 11) * 0x1p-53 - 0.5, (int)(u % 23) - 8);
		c[i] = ldexp((double)(t_rand(99, i) >> 11) * 0x1p-53, -(int)(u % 30));
	}
	for (int d = 0; d < 3; d++)
		for (size_t o = 0; o < ARRAY_SIZE(ops); o++) {
			const double *args[3] = {a, b, c};
			size_t st[3] = {1, 1, 1};
			emu_env env = EMU_ENV_DEFAULT;
			fesetround(dirs[d]);
			emu_a_op(ops[o], f, r, args, st, NF, &env, fl);
			fesetround(FE_TONEAREST);
			for (size_t i = 0; i < NF; i++) {
				unsigned v = 0;
				double w = emu_a_element(ops[o], f, a[i], b[i], c[i], &env, &v);
				ck_assert_msg(emu_encode(f, w) == emu_encode(f, r[i]) && v == fl[i],
				              "mode %d, %s, element %zu: %a %a %a -> %a (%x), want %a (%x)",
				              d, emu_op_name(ops[o]), i, a[i], b[i], c[i], r[i], fl[i], w,
				              v);
				checked++;
			}
		}
	t_count("aops: array ops under other FPU modes == elements", checked);
}
END_TEST

/* A conversion into binary32 of values that all are binary32 values is
 * their copy with no flag (emu_a_op's first look): against the elements, in
 * every mode, with sat, ftz and daz, blocks of such values (normal;
 * subnormal and zero; infinite) and blocks with one value that is not
 * (inexact, NaN, beyond FLT_MAX), the result written elsewhere, in place and
 * one element on (overlapping), with and without per-element flags. */
START_TEST(test_cvt_f32_same)
{
	enum { NB = 600, KINDS = 6 };
	const emu_format *f = t_fmt("fp32");
	static double src[NB], buf[NB + 1], r[NB + 1];
	static uint8_t fl[NB];
	uint64_t checked = 0, copies = 0;
	for (int kind = 0; kind < KINDS; kind++) {
		for (size_t i = 0; i < NB; i++) {
			uint64_t u = t_rand(101 + (uint64_t)kind, i);
			uint32_t fb = (uint32_t)u & 0x7f7fffffu; /* finite: exponent below 255 */
			if (kind == 1 && i % 3 == 0)
				fb &= 0x807fffffu; /* subnormal or zero */
			float v;
			memcpy(&v, &fb, sizeof v);
			src[i] = (u >> 40) & 1 ? -(double)v : (double)v;
			if (kind == 2 && i % 50 == 7)
				src[i] = (u >> 41) & 1 ? -INFINITY : INFINITY;
		}
		size_t at = (size_t)(t_rand(111, (uint64_t)kind) % NB);
		if (kind == 3)
			src[at] = 1.0 + 0x1p-30; /* not a binary32 value */
		if (kind == 4)
			src[at] = NAN;
		if (kind == 5)
			src[at] = 0x1p128;
		for (int m = 0; m < EMU_NMODES; m++)
			for (int sat = 0; sat < 2; sat++)
				for (int sub = 0; sub < 3; sub++)
					for (int place = 0; place < 3; place++)
						for (int wf = 0; wf < 2; wf++) {
							emu_env env = env_of(m, sat, sub);
							memcpy(buf, src, sizeof src);
							const double *a = place == 0 ? src : buf;
							double *d = place == 0   ? r
							            : place == 1 ? buf
							                         : buf + 1;
							const double *args[1] = {a};
							size_t st[1] = {1};
							emu_a_flags c = emu_a_op(EMU_OP_CVT, f, d, args, st,
							                         NB, &env, wf ? fl : NULL);
							uint64_t sum[5] = {0, 0, 0, 0, 0}, first = UINT64_MAX;
							emu_env e = env;
							bool same = true;
							for (size_t i = 0; i < NB; i++) {
								unsigned v = 0;
								e.index = env.index + i;
								double w = emu_a_element(EMU_OP_CVT, f, src[i], 0,
								                         0, &e, &v);
								ck_assert_msg(
								    emu_encode(f, w) == emu_encode(f, d[i]) &&
								        (!wf || v == fl[i]),
								    "kind %d mode %s sat %d sub %d place %d: "
								    "element %zu: %a -> %a (%x), want %a (%x)",
								    kind, emu_mode_name((emu_mode)m), sat, sub,
								    place, i, src[i], d[i], wf ? fl[i] : 0u, w,
								    v);
								tally_elem(sum, &first, v, i);
								same &= v == 0 && dbits(w) == dbits(src[i]);
								checked++;
							}
							for (int k = 0; k < 5; k++)
								ck_assert_uint_eq(c.count[k], sum[k]);
							ck_assert_uint_eq(c.first_bad, first);
							copies += same;
						}
	}
	/* the copies (kinds 0 to 2 but under ftz, daz and sat's infinities) */
	ck_assert_uint_gt(copies, 200);
	t_count("aops: cvt into fp32 of its own values == elements", checked);
}
END_TEST

/* binary32 products next to 2^-126 (the fast path's tininess test there,
 * round_f32): a·b = 2^47 − 2k² puts x·y = (1 − 2k²·2^-47)·2^-126 for
 * x = a·2^-23, y = b·2^-150, between the largest product that is tiny
 * (its 24-bit rounding with unbounded exponent below 2^-126: k > 1448)
 * and the smallest that is not (k ≤ 1448: it rounds to 2^-126), three
 * products exactly on the midpoint 2^-126 − 2^-151 (not tiny: ties to the
 * even 2^-126); both signs. Against the elements, without per-element
 * flags (the loop the fast path takes for binary32). */
START_TEST(test_f32_tiny_boundary)
{
	enum { K = 3000, NM = 3, N = 2 * (K + NM) };
	static const int64_t mids[NM][2] = {
	    {8659208, 16252928}, {9539072, 14753792}, {9846784, 14292736}};
	const emu_format *f = t_fmt("fp32");
	static double x[N], y[N], d[N];
	for (size_t i = 0; i < K + NM; i++) {
		int64_t k = (int64_t)i + 1;
		int64_t a = i < K ? (1 << 24) - 2 * k : mids[i - K][0];
		int64_t b = i < K ? (1 << 23) + k : mids[i - K][1];
		x[2 * i] = ldexp((double)a, -23), y[2 * i] = ldexp((double)b, -150);
		x[2 * i + 1] = -x[2 * i], y[2 * i + 1] = y[2 * i];
	}
	emu_env env = env_of(EMU_RNE, 0, 0);
	const double *args[3] = {x, y, x};
	size_t st[3] = {1, 1, 1};
	emu_a_flags c = emu_a_op(EMU_OP_MUL, f, d, args, st, N, &env, NULL);
	uint64_t sum[5] = {0, 0, 0, 0, 0}, tiny = 0;
	emu_env e = env;
	for (size_t i = 0; i < N; i++) {
		unsigned v = 0;
		e.index = env.index + i;
		double w = emu_a_element(EMU_OP_MUL, f, x[i], y[i], 0, &e, &v);
		ck_assert_msg(dbits(w) == dbits(d[i]), "%a * %a: %a, want %a", x[i], y[i], d[i], w);
		for (int k = 0; k < 5; k++)
			sum[k] += (v >> k) & 1;
		tiny += (v & EMU_FLAG_UNDERFLOW) != 0;
	}
	for (int k = 0; k < 5; k++)
		ck_assert_uint_eq(c.count[k], sum[k]);
	/* both sides of the boundary are there: k > 1448 tiny, k <= 1448 not */
	ck_assert_uint_eq(tiny, 2 * (K - 1448));
	t_count("aops: fp32 products next to 2^-126 == elements", N);
}
END_TEST

/* binary32 under MXCSR's FTZ and DAZ (a process built with -ffast-math, or
 * a framework told to flush denormals): the float paths (round_f32, the
 * float folds, the copy check) would flush binary32's subnormals, so the
 * array ops and folds must give what they give with both clear; and the
 * float add fold under the three other rounding directions. x86-64. */
START_TEST(test_fpu_ftz_daz)
{
#if defined(__x86_64__) && defined(__SSE2__)
	static const emu_op ops[] = {EMU_OP_CVT, EMU_OP_ADD, EMU_OP_MUL, EMU_OP_FMA, EMU_OP_DIV};
	enum { NF = 3000 };
	static double a[NF], b[NF], c[NF], r[NF], w[NF];
	static uint8_t fl[NF], wl[NF];
	const emu_format *f = t_fmt("fp32");
	uint64_t checked = 0, subs = 0;
	for (size_t i = 0; i < NF; i++) { /* results about 2^-126, many subnormal */
		uint64_t u = t_rand(131, i);
		a[i] = ldexp((double)((u >> 11) & 0xffffff) * 0x1p-24 + 0.5, (int)(u % 24) - 80);
		b[i] = ldexp((double)((t_rand(132, i) >> 11) & 0xffffff) * 0x1p-24 - 0.5,
		             -(int)(u % 30) - 40);
		c[i] = ldexp((double)((t_rand(133, i) >> 11) & 0xffffff), -149);
		if (i % 3 == 0) /* a binary32 subnormal operand */
			a[i] = ldexp((double)(t_rand(134, i) & 0x7fffff), -149);
	}
	unsigned csr = __builtin_ia32_stmxcsr();
	for (size_t o = 0; o < ARRAY_SIZE(ops); o++) {
		const double *args[3] = {a, b, c};
		size_t st[3] = {1, 1, 1};
		emu_env env = EMU_ENV_DEFAULT;
		emu_a_flags want = emu_a_op(ops[o], f, w, args, st, NF, &env, wl);
		__builtin_ia32_ldmxcsr(csr | 0x8040u);
		emu_a_flags got = emu_a_op(ops[o], f, r, args, st, NF, &env, NULL);
		emu_a_flags gotf = emu_a_op(ops[o], f, r, args, st, NF, &env, fl);
		__builtin_ia32_ldmxcsr(csr);
		for (size_t i = 0; i < NF; i++) {
			ck_assert_msg(dbits(r[i]) == dbits(w[i]) && fl[i] == wl[i],
			              "%s element %zu: %a %a %a -> %a (%x), want %a (%x)",
			              emu_op_name(ops[o]), i, a[i], b[i], c[i], r[i], fl[i], w[i],
			              wl[i]);
			subs += w[i] != 0 && fabs(w[i]) < 0x1p-126;
			checked++;
		}
		for (int k = 0; k < 5; k++)
			ck_assert_uint_eq(got.count[k], want.count[k]);
		ck_assert_uint_eq(gotf.count[3], want.count[3]);
	}
	/* and the float folds: add and fma chains whose sums are subnormal */
	double s0 = 0, s1 = 0, t0 = 0, t1 = 0;
	emu_env env = EMU_ENV_DEFAULT;
	emu_a_flags fw = emu_a_fold(EMU_OP_ADD, f, &s0, c, 1, NULL, 0, NF, &env, NULL);
	emu_a_flags gw = emu_a_fold(EMU_OP_FMA, f, &t0, a, 1, b, 1, NF, &env, NULL);
	__builtin_ia32_ldmxcsr(csr | 0x8040u);
	emu_a_flags fg = emu_a_fold(EMU_OP_ADD, f, &s1, c, 1, NULL, 0, NF, &env, NULL);
	emu_a_flags gg = emu_a_fold(EMU_OP_FMA, f, &t1, a, 1, b, 1, NF, &env, NULL);
	__builtin_ia32_ldmxcsr(csr);
	ck_assert_msg(dbits(s0) == dbits(s1) && dbits(t0) == dbits(t1),
	              "folds: %a %a, want %a %a", s1, t1, s0, t0);
	for (int k = 0; k < 5; k++) {
		ck_assert_uint_eq(fg.count[k], fw.count[k]);
		ck_assert_uint_eq(gg.count[k], gw.count[k]);
	}
	ck_assert_uint_gt(subs, NF / 10); /* the subnormal results are there */
	/* the float folds under the other rounding directions (inexact sums) */
	static const int dirs[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
	double u0 = 0;
	emu_a_flags uw = emu_a_fold(EMU_OP_ADD, f, &u0, a, 1, NULL, 0, NF, &env, NULL);
	for (int d = 0; d < 3; d++) {
		double u1 = 0;
		fesetround(dirs[d]);
		emu_a_flags ug = emu_a_fold(EMU_OP_ADD, f, &u1, a, 1, NULL, 0, NF, &env, NULL);
		fesetround(FE_TONEAREST);
		ck_assert_msg(dbits(u1) == dbits(u0), "fold under direction %d: %a, want %a", d, u1,
		              u0);
		for (int k = 0; k < 5; k++)
			ck_assert_uint_eq(ug.count[k], uw.count[k]);
	}
	ck_assert_uint_gt(uw.count[4], NF / 2); /* inexact sums */
	t_count("aops: fp32 under FTZ and DAZ == without", checked + 5 * NF);
#else
	t_skip("aops", "fp32 under FTZ and DAZ: MXCSR is x86-64's");
#endif
}
END_TEST

Suite *suite_aops(void)
{
	Suite *s = suite_create("aops");
	TCase *tc = tcase_create("arrays");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_small_all_pairs, 0, (int)ARRAY_SIZE(small));
	tcase_add_loop_test(tc, test_wide_random, 0, (int)ARRAY_SIZE(wide));
	tcase_add_loop_test(tc, test_strides, 0, 3);
	tcase_add_test(tc, test_empty_and_one);
	tcase_add_test(tc, test_sr_reproducible);
	tcase_add_test(tc, test_sr_equal_draw);
	tcase_add_loop_test(tc, test_against_mpfr, 0, 9);
	tcase_add_loop_test(tc, test_transc_every_input, 0, (int)ARRAY_SIZE(trfmts));
	tcase_add_test(tc, test_transc_fp32);
	tcase_add_loop_test(tc, test_fold_small_pairs, 0, (int)ARRAY_SIZE(small));
	tcase_add_loop_test(tc, test_fold_sequences, 0, (int)ARRAY_SIZE(foldfmts));
	tcase_add_test(tc, test_fold_ones);
	tcase_add_test(tc, test_fold_fma32_edges);
	tcase_add_test(tc, test_fold_f32_blocks);
	tcase_add_test(tc, test_fold_n_f32_lanes);
	tcase_add_loop_test(tc, test_fold_n, 0, (int)ARRAY_SIZE(foldnfmts));
	tcase_add_test(tc, test_unary_second_look);
	tcase_add_test(tc, test_fpu_modes);
	tcase_add_test(tc, test_cvt_f32_same);
	tcase_add_test(tc, test_f32_tiny_boundary);
	tcase_add_test(tc, test_fpu_ftz_daz);
	tcase_add_loop_test(tc, test_pick_any_double, 0, (int)ARRAY_SIZE(pickfmts));
	tcase_add_loop_test(tc, test_specials_second_look, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
