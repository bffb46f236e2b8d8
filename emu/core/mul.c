/*
 * mul.c — a × b with one rounding. The product of two p <= 24 significands
 * has at most 48 bits and an exponent in [-298, 256]: exact in double, so the
 * core rounds the true product.
 */
#include "emu/core/internal.h"

double emu_v_mul(const emu_format *f, double a, double b, const emu_env *env, unsigned *fl)
{
	a = emu_v_arg(f, a);
	b = emu_v_arg(f, b);
	if (isnan(a) || isnan(b))
		return emu_nan_result(f, false, fl);
	bool neg = signbit(a) != signbit(b);
	if (isinf(a) || isinf(b)) {
		if (a == 0 || b == 0)
			return emu_nan_result(f, true, fl);
		return emu_inf_result(f, neg, false, env, fl);
	}
	if (a == 0 || b == 0)
		return emu_zero_result(f, neg, fl);
	return emu_round_exact(f, a * b, env, fl);
}

emu_result emu_mul(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, a) | emu_snan_flag(f, b);
	double r = emu_v_mul(f, emu_operand(f, a, env), emu_operand(f, b, env), env, &fl);
	return emu_pack(f, r, fl);
}
