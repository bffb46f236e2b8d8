/*
 * round.c — the one rounding core every fast operation ends in.
 *
 * Why an integer core: an exact result is carried as (M + s)·2^E with a
 * 64-bit M and a sticky bit for s != 0. With p <= 24, M keeps >= 34 bits
 * below the last kept bit, so the 32 bits that stochastic rounding compares
 * with its random draw, the round bit and the sticky bit are all known
 * exactly: every mode is decided without double rounding. Adaptors turn
 * exact doubles and double-doubles (TwoSum) into this form; division and
 * square root produce it directly by integer arithmetic (div.c, sqrt.c).
 *
 * Rounding is done twice in concept (docs/numerics.md): to p bits with an
 * unbounded exponent (decides overflow and tininess, after rounding), and to
 * the format's grid; above 2^emin both are the same rounding.
 */
#include <math.h>
#include <string.h>

#include "emu/core/internal.h"

/* SplitMix64's finaliser (Steele, Lea, Flood 2014) on seed ^ index·φ:
 * counter-based, so element i's draw never depends on thread layout. */
uint32_t emu_sr_bits(uint64_t seed, uint64_t index)
{
	return emu_sr_draw(seed, index);
}

/* Round (M + s)·2^E to a multiple of 2^qe; returns the multiple's count and
 * sets *inexact. The discarded part is split into its top 32 bits (f32) and
 * whether anything lies below them (rest). */
static uint64_t round_to(uint64_t M, int E, bool sticky, int qe, emu_mode mode, bool neg,
                         uint32_t u, bool *inexact)
{
	int sh = qe - E;
	if (sh <= 0) { /* nothing discarded (callers guarantee !sticky here) */
		*inexact = sticky;
		return M << -sh;
	}
	uint64_t n = sh >= 64 ? 0 : M >> sh;
	uint32_t f32;
	bool rest;
	if (sh <= 32) {
		f32 = (uint32_t)(((M & ((1ull << sh) - 1)) << (32 - sh)));
		rest = sticky;
	} else {
		int lo = sh - 32; /* bits below the top 32 of the fraction */
		f32 = lo >= 64 ? 0 : (uint32_t)(M >> lo);
		rest = sticky || (lo >= 64 ? M != 0 : (M & ((1ull << lo) - 1)) != 0);
	}
	bool half = f32 >> 31;
	bool below_half = (f32 & 0x7fffffffu) || rest;
	*inexact = f32 || rest;
	bool up;
	switch (mode) {
	case EMU_RNE:
		up = half && (below_half || (n & 1));
		break;
	case EMU_RNA:
		up = half;
		break;
	case EMU_RTZ:
		up = false;
		break;
	case EMU_UP:
		up = *inexact && !neg;
		break;
	case EMU_DOWN:
		up = *inexact && neg;
		break;
	default: /* EMU_SR: away iff frac·2^32 > u */
		up = f32 > u || (f32 == u && rest);
		break;
	}
	return n + up;
}

static int lead_bit(uint64_t M)
{
	return 63 - __builtin_clzll(M);
}

double emu_round_core(const emu_format *f, bool neg, uint64_t M, int E, bool sticky,
                      const emu_env *env, unsigned *flags)
{
	if (neg && !f->has_sign)
		return emu_nan_result(f, true, flags);
	uint32_t u = env->mode == EMU_SR ? emu_sr_bits(env->seed, env->index) : 0;
	int p = f->p;
	int e = lead_bit(M) + E; /* the exact value lies in [2^e, 2^(e+1)) */
	bool inexact, tiny = false;
	double r;
	if (e >= f->emin) {
		int qe = e - p + 1;
		uint64_t n = round_to(M, E, sticky, qe, env->mode, neg, u, &inexact);
		/* n <= 2^p: exact in double; qe within double's normal range here */
		r = (double)n * emu_pow2_any(qe);
		if (r > f->max) {
			*flags |= EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
			bool toward_zero = env->mode == EMU_RTZ || (env->mode == EMU_UP && neg) ||
			                   (env->mode == EMU_DOWN && !neg);
			if (toward_zero || env->sat)
				r = f->max;
			else if (f->has_inf)
				r = INFINITY;
			else if (emu_overflow_is_nan(f, env->sat)) /* e4m3, fnuz */
				return emu_nan_value(EMU_OVERFLOW_NAN_SIGNED && neg);
			else
				r = f->max;
			return neg ? -r : r;
		}
	} else {
		if (EMU_TININESS == EMU_TININESS_AFTER_ROUNDING && e == f->emin - 1) {
			/* after rounding: does the p-bit rounding reach 2^emin? */
			bool ix;
			uint64_t n1 = round_to(M, E, sticky, e - p + 1, env->mode, neg, u, &ix);
			tiny = (n1 >> p) == 0;
		} else {
			tiny = true;
		}
		int qe = f->has_subnormals ? f->emin - p + 1 : f->emin;
		uint64_t n = round_to(M, E, sticky, qe, env->mode, neg, u, &inexact);
		r = (double)n * emu_pow2(qe);
		if (tiny && env->ftz) {
			*flags |= EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT;
			return emu_zero_result(f, neg, flags);
		}
		if (r == 0) {
			*flags |= EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT;
			return emu_zero_result(f, neg, flags);
		}
	}
	if (inexact) {
		*flags |= EMU_FLAG_INEXACT;
		if (tiny)
			*flags |= EMU_FLAG_UNDERFLOW;
	}
	return neg ? -r : r;
}

/* Split a finite nonzero double into its integer significand and exponent. */
static void split(double x, uint64_t *m, int *e)
{
	uint64_t b;
	memcpy(&b, &x, sizeof b);
	int be = (int)((b >> 52) & 0x7ff);
	*m = b & ((1ull << 52) - 1);
	if (be) {
		*m |= 1ull << 52;
		*e = be - 1075;
	} else {
		*e = -1074;
	}
}

double emu_round_value(const emu_format *f, double x, double tail, const emu_env *env,
                       unsigned *flags)
{
	if (isnan(x))
		return emu_nan_result(f, false, flags);
	if (isinf(x))
		return emu_inf_result(f, signbit(x), false, env, flags);
	if (x == 0)
		return emu_zero_result(f, signbit(x), flags);
	bool neg = signbit(x);
	uint64_t m;
	int e;
	split(fabs(x), &m, &e);
	if (tail == 0) {
		/* Already a normal value of f (the common case: a conversion to a
		 * wider format, an exact sum): nothing to round, no flag. */
		int ex = e + 52;
		if (m >> 52 && ex >= f->emin && ex <= f->emax && (m & ((1ull << (53 - f->p)) - 1)) == 0 &&
		    (neg ? f->has_sign : true) && (ex < f->emax || fabs(x) <= f->max))
			return x;
		return emu_round_core(f, neg, m, e, false, env, flags);
	}
	/* Put the leading bit at 63 so that subtracting the tail leaves >= 62
	 * bits; then add the tail in units of 2^E, keeping what falls below as
	 * a sticky bit. |tail| <= ulp(x)/2 bounds the correction by 2^(sh-1). */
	int sh = 63 - lead_bit(m);
	uint64_t M = m << sh;
	int E = e - sh;
	uint64_t tm;
	int te;
	split(fabs(tail), &tm, &te);
	int d = te - E;
	uint64_t t;
	bool st = false;
	if (d >= 0) {
		t = tm << d;
	} else if (d > -64) {
		t = tm >> -d;
		st = (tm & ((1ull << -d) - 1)) != 0;
	} else {
		t = 0;
		st = true;
	}
	if (signbit(tail) == neg) {
		M += t;
	} else {
		M -= t;
		if (st)
			M -= 1; /* (M - t - δ) = (M - t - 1) + (1 - δ) */
	}
	return emu_round_core(f, neg, M, E, st, env, flags);
}

double emu_round_exact(const emu_format *f, double x, const emu_env *env, unsigned *flags)
{
	return emu_round_value(f, x, 0.0, env, flags);
}

double emu_nan_result(const emu_format *f, bool invalid, unsigned *flags)
{
	if (invalid || f->nan == EMU_NAN_NONE)
		*flags |= EMU_FLAG_INVALID;
	return f->nan == EMU_NAN_NONE ? EMU_NONAN_VALUE : emu_nan_value(false);
}

double emu_inf_result(const emu_format *f, bool neg, bool dbz, const emu_env *env,
                      unsigned *flags)
{
	if (neg && !f->has_sign) { /* log 0 unsigned: the pole, then no −inf */
		if (dbz)
			*flags |= EMU_FLAG_DIVBYZERO;
		return emu_nan_result(f, true, flags);
	}
	if (f->has_inf && !env->sat) {
		if (dbz)
			*flags |= EMU_FLAG_DIVBYZERO;
		return neg ? -INFINITY : INFINITY;
	}
	*flags |= dbz ? EMU_FLAG_DIVBYZERO : (EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT);
	if (emu_overflow_is_nan(f, env->sat)) /* as an overflow */
		return emu_nan_value(EMU_OVERFLOW_NAN_SIGNED && neg);
	return neg ? -f->max : f->max;
}

double emu_zero_result(const emu_format *f, bool neg, unsigned *flags)
{
	if (!f->has_zero) {
		*flags |= EMU_NOZERO_FLAGS;
		return f->min_normal;
	}
	if (f->nan == EMU_NAN_FNUZ || !f->has_sign)
		return 0.0; /* no −0: fnuz's pattern is the NaN, unsigned has no sign bit */
	return neg ? -0.0 : 0.0;
}

double emu_operand(const emu_format *f, emu_bits b, const emu_env *env)
{
	if (env->daz && emu_classify(f, b) == EMU_CLASS_SUBNORMAL)
		return (f->has_sign && (b & f->sign_mask)) ? -0.0 : 0.0;
	return emu_decode(f, b);
}
