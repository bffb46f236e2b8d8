/*
 * div.c — a / b with one rounding, by integer long division: the 53-bit
 * significands are normalised to [2^52, 2^53), (A·2^63)/B then lies in
 * (2^62, 2^64) and the remainder says whether anything is left (sticky), so
 * the core sees >= 62 exact quotient bits. No double rounding in any mode.
 */
#include <string.h>

#include "emu/core/internal.h"

static void norm53(double x, uint64_t *m, int *e)
{
	uint64_t b;
	memcpy(&b, &x, sizeof b);
	int be = (int)((b >> 52) & 0x7ff);
	*m = (b & ((1ull << 52) - 1)) | (1ull << 52);
	*e = be - 1075; /* format values are never double-subnormal */
}

double emu_v_div(const emu_format *f, double a, double b, const emu_env *env, unsigned *fl)
{
	a = emu_v_arg(f, a);
	b = emu_v_arg(f, b);
	if (isnan(a) || isnan(b))
		return emu_nan_result(f, false, fl);
	bool neg = signbit(a) != signbit(b);
	if (isinf(a)) {
		if (isinf(b))
			return emu_nan_result(f, true, fl);
		return emu_inf_result(f, neg, false, env, fl);
	}
	if (isinf(b))
		return emu_zero_result(f, neg, fl);
	if (b == 0) {
		if (a == 0)
			return emu_nan_result(f, true, fl);
		return emu_inf_result(f, neg, true, env, fl);
	}
	if (a == 0)
		return emu_zero_result(f, neg, fl);
	uint64_t ma, mb;
	int ea, eb;
	norm53(fabs(a), &ma, &ea);
	norm53(fabs(b), &mb, &eb);
	unsigned __int128 num = (unsigned __int128)ma << 63;
	uint64_t q = (uint64_t)(num / mb);
	bool sticky = (num % mb) != 0;
	return emu_round_core(f, neg, q, ea - eb - 63, sticky, env, fl);
}

emu_result emu_div(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, a) | emu_snan_flag(f, b);
	double r = emu_v_div(f, emu_operand(f, a, env), emu_operand(f, b, env), env, &fl);
	return emu_pack(f, r, fl);
}
