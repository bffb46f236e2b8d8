/*
 * add.c — a + b and a − b with one rounding.
 * Layout: decode (DAZ), NaN and infinity exits, exact-zero sign, then the
 * exact sum as a double-double (TwoSum, Knuth TAOCP 4.2.2) into the core.
 * TwoSum is exact here: both operands have p <= 24 and exponents within
 * [-149, 127], far inside double's range.
 */
#include "emu/core/internal.h"

static double v_add(const emu_format *f, double a, double b, const emu_env *env,
                    unsigned *fl)
{
	if (isnan(a) || isnan(b))
		return emu_nan_result(f, false, fl);
	if (isinf(a) || isinf(b)) {
		if (isinf(a) && isinf(b) && signbit(a) != signbit(b))
			return emu_nan_result(f, true, fl);
		return emu_inf_result(f, signbit(isinf(a) ? a : b), false, env, fl);
	}
	double s = a + b;
	if (s == 0) {
		/* both zeros of one sign keep it; any other exact zero sum is +0
		 * (−0 when rounding down), IEEE 754-2019 §6.3 */
		bool neg;
		if (a == 0 && b == 0 && signbit(a) == signbit(b))
			neg = signbit(a);
		else
			neg = emu_zero_sum_neg(env);
		return emu_zero_result(f, neg, fl);
	}
	double bb = s - a;
	double err = (a - (s - bb)) + (b - bb);
	return emu_round_value(f, s, err, env, fl);
}

double emu_v_add(const emu_format *f, double a, double b, const emu_env *env, unsigned *fl)
{
	return v_add(f, emu_v_arg(f, a), emu_v_arg(f, b), env, fl);
}

/* a − b, not a + (−b) with the negation done by the caller: a constant 0
 * in a format without zero is code 0 = +2^emin before it is negated */
double emu_v_sub(const emu_format *f, double a, double b, const emu_env *env, unsigned *fl)
{
	return v_add(f, emu_v_arg(f, a), -emu_v_arg(f, b), env, fl);
}

emu_result emu_add(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, a) | emu_snan_flag(f, b);
	double r = v_add(f, emu_operand(f, a, env), emu_operand(f, b, env), env, &fl);
	return emu_pack(f, r, fl);
}

emu_result emu_sub(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, a) | emu_snan_flag(f, b);
	double r = v_add(f, emu_operand(f, a, env), -emu_operand(f, b, env), env, &fl);
	return emu_pack(f, r, fl);
}
