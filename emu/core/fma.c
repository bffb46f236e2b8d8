/*
 * fma.c — a × b + c with ONE rounding (not round(round(a·b) + c)).
 * a·b is exact in double (see mul.c); p + c as a double-double (TwoSum) is
 * the exact sum, which the core rounds once. 0·∞ with c a quiet NaN raises
 * what specialize.h says (IEEE 754-2019 §7.2 leaves it optional).
 */
#include "emu/core/internal.h"

double emu_v_fma(const emu_format *f, double a, double b, double c, const emu_env *env,
                 unsigned *fl)
{
	a = emu_v_arg(f, a);
	b = emu_v_arg(f, b);
	c = emu_v_arg(f, c);
	bool pinf = isinf(a) || isinf(b);
	if (pinf && (a == 0 || b == 0)) {
		if (!isnan(c))
			return emu_nan_result(f, true, fl);
		*fl |= EMU_FMA_ZERO_INF_QNAN_FLAGS;
		return emu_nan_result(f, false, fl);
	}
	if (isnan(a) || isnan(b) || isnan(c))
		return emu_nan_result(f, false, fl);
	bool pneg = signbit(a) != signbit(b);
	if (pinf) {
		if (isinf(c) && signbit(c) != pneg)
			return emu_nan_result(f, true, fl);
		return emu_inf_result(f, pneg, false, env, fl);
	}
	if (isinf(c))
		return emu_inf_result(f, signbit(c), false, env, fl);
	double p = a * b;
	if (p == 0) {
		if (c == 0) {
			bool neg = pneg == (bool)signbit(c) ? pneg : emu_zero_sum_neg(env);
			return emu_zero_result(f, neg, fl);
		}
		return emu_round_exact(f, c, env, fl);
	}
	if (c == 0)
		return emu_round_exact(f, p, env, fl);
	double s = p + c;
	double bb = s - p;
	double err = (p - (s - bb)) + (c - bb);
	if (s == 0 && err == 0)
		return emu_zero_result(f, emu_zero_sum_neg(env), fl);
	return emu_round_value(f, s, err, env, fl);
}

emu_result emu_fma(const emu_format *f, emu_bits a, emu_bits b, emu_bits c, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, a) | emu_snan_flag(f, b) | emu_snan_flag(f, c);
	double r = emu_v_fma(f, emu_operand(f, a, env), emu_operand(f, b, env),
	                     emu_operand(f, c, env), env, &fl);
	return emu_pack(f, r, fl);
}
