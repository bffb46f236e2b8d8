/*
 * transc.c — exp, log, exp2, 1/√x, log(1+x) correctly rounded to the format in every
 * mode, by Ziv's strategy (Ziv 1991; as in CORE-MATH and CRlibm):
 *   1. evaluate in double (glibc: error well under 4 ulp); the exact value
 *      lies strictly inside y ± 4 ulp. Round both ends of that interval (as
 *      inexact values); rounding is monotone in every mode — stochastic too,
 *      for a fixed draw — so equal results and flags prove the answer;
 *   2. otherwise the same in long double;
 *   3. otherwise ask the MPFR backend (counted: emu_fallback_count()).
 * The exact cases (exp(0), exp2(n), log(1), rsqrt(4^k)) are handled first
 * because an exact result sits on a rounding boundary by definition.
log1p has one exact case, log1p(±0) = ±0; for |x| < 2^-54 its value is x
less a positive amount below x²/2 (x > 0) or x more one below x² (x < 0),
both under a 53-bit ulp of x, so the core rounds "x and a sticky bit"
directly: a subnormal x gives an inexact, tiny (underflowing) result, as
MPFR with mpfr_subnormalize does.
 * With p <= 24 step 1 decides all but about 2^-25 of the inputs.
 */
#include <float.h>
#include <string.h>

#include "emu/core/internal.h"

static uint64_t fallbacks;

uint64_t emu_fallback_count(void)
{
	return __atomic_load_n(&fallbacks, __ATOMIC_RELAXED);
}

/* Round the open interval (lo, hi) known to hold the irrational result; 0 if
 * both ends agree (result in *r, flags in *fl). */
static int round_interval_ld(const emu_format *f, bool neg, long double lo, long double hi,
                             const emu_env *env, double *r, unsigned *fl)
{
	/* lo, hi > 0 finite. M = 64-bit significand; sticky marks "a little
	 * above lo" and "a little below hi" (hi − ε = (M−1) + (1−ε)). */
	int elo, ehi;
	long double flo = frexpl(lo, &elo), fhi = frexpl(hi, &ehi);
	uint64_t mlo = (uint64_t)ldexpl(flo, 64), mhi = (uint64_t)ldexpl(fhi, 64);
	unsigned f1 = 0, f2 = 0;
	double r1 = emu_round_core(f, neg, mlo, elo - 64, true, env, &f1);
	double r2 = emu_round_core(f, neg, mhi - 1, ehi - 64, true, env, &f2);
	if (emu_dbits(r1) != emu_dbits(r2) || f1 != f2)
		return -1;
	*r = r1;
	*fl |= f1;
	return 0;
}

enum fn { FN_EXP, FN_LOG, FN_EXP2, FN_RSQRT, FN_LOG1P };

static long double eval_ld(enum fn fn, long double x)
{
	switch (fn) {
	case FN_EXP:
		return expl(x);
	case FN_LOG:
		return logl(x);
	case FN_EXP2:
		return exp2l(x);
	case FN_LOG1P:
		return log1pl(x);
	default:
		return 1.0L / sqrtl(x);
	}
}

static double eval_d(enum fn fn, double x)
{
	switch (fn) {
	case FN_EXP:
		return exp(x);
	case FN_LOG:
		return log(x);
	case FN_EXP2:
		return exp2(x);
	case FN_LOG1P:
		return log1p(x);
	default:
		return 1.0 / sqrt(x);
	}
}

static const emu_op fn_op[] = {EMU_OP_EXP, EMU_OP_LOG, EMU_OP_EXP2, EMU_OP_RSQRT, EMU_OP_LOG1P};

/* x finite, result finite nonzero and irrational. */
static double ziv(enum fn fn, const emu_format *f, double x, const emu_env *env,
                  unsigned *fl)
{
	bool neg = false;
	double y = eval_d(fn, x);
	if (y < 0) { /* only log of x < 1, log1p of x < 0 */
		neg = true;
		y = -y;
	}
	double r;
	if (isfinite(y) && y > 0x1p-1015 && y < DBL_MAX / 2) {
		/* stage 1 in double: the ends y ∓ 4 ulp as (M << 11) + ε and
		 * ((M' << 11) − 1) + (1 − ε), no long double needed */
		double d = 4 * (nextafter(y, INFINITY) - y);
		double lo = y - d, hi = y + d;
		uint64_t ulo = emu_dbits(lo), uhi = emu_dbits(hi);
		uint64_t mlo = ((ulo & ((1ull << 52) - 1)) | (1ull << 52)) << 11;
		uint64_t mhi = ((uhi & ((1ull << 52) - 1)) | (1ull << 52)) << 11;
		int elo = (int)(ulo >> 52) - 1075 - 11, ehi = (int)(uhi >> 52) - 1075 - 11;
		unsigned f1 = 0, f2 = 0;
		double r1 = emu_round_core(f, neg, mlo, elo, true, env, &f1);
		double r2 = emu_round_core(f, neg, mhi - 1, ehi, true, env, &f2);
		if (emu_dbits(r1) == emu_dbits(r2) && f1 == f2) {
			*fl |= f1;
			return r1;
		}
	}
	long double yl = eval_ld(fn, x);
	if (yl < 0)
		yl = -yl;
	if (isfinite(yl) && yl > 0) {
		long double d = 4 * (nextafterl(yl, INFINITY) - yl);
		unsigned t = 0;
		if (yl - d > 0 && !round_interval_ld(f, neg, yl - d, yl + d, env, &r, &t)) {
			*fl |= t;
			return r;
		}
	}
	__atomic_add_fetch(&fallbacks, 1, __ATOMIC_RELAXED);
	emu_env plain = *env;
	plain.daz = false; /* the operand was already read */
	emu_bits arg = emu_encode(f, x);
	emu_result res = emu_mp_apply(fn_op[fn], f, NULL, &arg, &plain);
	*fl |= res.flags;
	return emu_decode(f, res.bits);
}

/* Huge or tiny results beyond double's range: a value known only to be
 * "2^e and a bit", which the core rounds to overflow or underflow. */
static double beyond(const emu_format *f, int e, const emu_env *env, unsigned *fl)
{
	return emu_round_core(f, false, 1, e, true, env, fl);
}

emu_result emu_exp(const emu_format *f, emu_bits ab, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, ab);
	double x = emu_operand(f, ab, env), r;
	if (isnan(x))
		r = emu_nan_result(f, false, &fl);
	else if (isinf(x))
		r = x > 0 ? emu_inf_result(f, false, false, env, &fl) : emu_zero_result(f, false, &fl);
	else if (x == 0)
		r = emu_round_exact(f, 1.0, env, &fl);
	else if (x > 700)
		r = beyond(f, 1009, env, &fl);
	else if (x < -700)
		r = beyond(f, -1100, env, &fl);
	else
		r = ziv(FN_EXP, f, x, env, &fl);
	return emu_pack(f, r, fl);
}

emu_result emu_exp2(const emu_format *f, emu_bits ab, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, ab);
	double x = emu_operand(f, ab, env), r;
	if (isnan(x))
		r = emu_nan_result(f, false, &fl);
	else if (isinf(x))
		r = x > 0 ? emu_inf_result(f, false, false, env, &fl) : emu_zero_result(f, false, &fl);
	else if (x > 1000)
		r = beyond(f, 1009, env, &fl);
	else if (x < -1000)
		r = beyond(f, -1100, env, &fl);
	else if (x == floor(x))
		r = emu_round_core(f, false, 1, (int)x, false, env, &fl); /* exact 2^n */
	else
		r = ziv(FN_EXP2, f, x, env, &fl);
	return emu_pack(f, r, fl);
}

emu_result emu_log(const emu_format *f, emu_bits ab, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, ab);
	double x = emu_operand(f, ab, env), r;
	if (isnan(x))
		r = emu_nan_result(f, false, &fl);
	else if (x == 0)
		r = emu_inf_result(f, true, true, env, &fl);
	else if (x < 0)
		r = emu_nan_result(f, true, &fl);
	else if (isinf(x))
		r = emu_inf_result(f, false, false, env, &fl);
	else if (x == 1)
		r = emu_zero_result(f, false, &fl);
	else
		r = ziv(FN_LOG, f, x, env, &fl);
	return emu_pack(f, r, fl);
}

emu_result emu_rsqrt(const emu_format *f, emu_bits ab, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, ab);
	double x = emu_operand(f, ab, env), r;
	int e;
	if (isnan(x)) {
		r = emu_nan_result(f, false, &fl);
	} else if (x == 0) {
		r = emu_inf_result(f, signbit(x), true, env, &fl);
	} else if (x < 0) {
		r = emu_nan_result(f, true, &fl);
	} else if (isinf(x)) {
		r = emu_zero_result(f, false, &fl);
	} else if (frexp(x, &e) == 0.5 && ((e - 1) & 1) == 0) {
		r = emu_round_core(f, false, 1, -(e - 1) / 2, false, env, &fl); /* x = 4^k */
	} else {
		r = ziv(FN_RSQRT, f, x, env, &fl);
	}
	return emu_pack(f, r, fl);
}

/* log1p(x) for 0 < |x| < 2^-54: x = M·2^E with M's leading one at bit 52.
 * x > 0: the value lies in (x − 2^E, x), i.e. (M − 1 + s)·2^E, 0 < s < 1;
 * x < 0: |value| lies in (|x|, |x| + 2^E), i.e. (M + s)·2^E. */
static double log1p_tiny(const emu_format *f, double x, const emu_env *env, unsigned *fl)
{
	uint64_t u = emu_dbits(fabs(x));
	uint64_t M = (u & ((1ull << 52) - 1)) | (1ull << 52);
	int E = (int)(u >> 52) - 1075;
	if (x > 0)
		return emu_round_core(f, false, M - 1, E, true, env, fl);
	return emu_round_core(f, true, M, E, true, env, fl);
}

emu_result emu_log1p(const emu_format *f, emu_bits ab, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, ab);
	double x = emu_operand(f, ab, env), r;
	if (isnan(x))
		r = emu_nan_result(f, false, &fl);
	else if (x == 0)
		r = emu_zero_result(f, signbit(x), &fl); /* log1p(±0) = ±0, exact */
	else if (x == -1)
		r = emu_inf_result(f, true, true, env, &fl);
	else if (x < -1)
		r = emu_nan_result(f, true, &fl); /* −inf too */
	else if (isinf(x))
		r = emu_inf_result(f, false, false, env, &fl);
	else if (fabs(x) < 0x1p-54)
		r = log1p_tiny(f, x, env, &fl);
	else
		r = ziv(FN_LOG1P, f, x, env, &fl);
	return emu_pack(f, r, fl);
}
