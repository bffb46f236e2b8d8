/*
 * minmax.c — the non-computational operations: minimumNumber /
 * maximumNumber (IEEE 754-2019 §9.6; C fmin/fmax, CUDA __hmin/__hmax: a NaN
 * operand is ignored, −0 < +0), neg, abs and the quiet comparison. They
 * return an operand, so they never round and raise no flags (except neg in
 * a format without a sign, which cannot hold the result: NaN, invalid; and
 * min/max with a signaling NaN operand: invalid).
 */
#include "emu/core/internal.h"

/* IEEE 754-2019 §9.6: a signaling NaN operand signals invalid, but unless
 * both operands are NaNs it is otherwise ignored like a quiet one (the
 * number is returned, not a NaN). */
static emu_result pick(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env, bool max)
{
	unsigned fl = emu_snan_flag(f, a) | emu_snan_flag(f, b);
	double x = emu_operand(f, a, env), y = emu_operand(f, b, env);
	if (isnan(x) && isnan(y)) {
		double r = emu_nan_result(f, false, &fl);
		return emu_pack(f, r, fl);
	}
	if (isnan(x))
		return emu_pack(f, y, fl);
	if (isnan(y))
		return emu_pack(f, x, fl);
	bool x_first;
	if (x == y) /* ±0: −0 is the smaller */
		x_first = max ? !signbit(x) : (bool)signbit(x);
	else
		x_first = max ? x > y : x < y;
	return emu_pack(f, x_first ? x : y, fl);
}

emu_result emu_min(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env)
{
	return pick(f, a, b, env, false);
}

emu_result emu_max(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env)
{
	return pick(f, a, b, env, true);
}

/* IEEE 754-2019 §5.5.1: negate and abs are bit operations, NaNs included
 * (the payload and, for abs, the cleared sign survive). Only fnuz, whose one
 * NaN is the would-be −0, keeps that NaN and has no −0 to make. */
emu_result emu_neg(const emu_format *f, emu_bits a, const emu_env *env)
{
	(void)env;
	unsigned fl = 0;
	if (!f->has_sign) {
		if (f->has_zero && a == 0)
			return (emu_result){a, 0}; /* −0 is +0: a zero, not a negative value */
		double r = emu_nan_result(f, !emu_is_nan(f, a), &fl);
		return emu_pack(f, r, fl);
	}
	if (f->nan == EMU_NAN_FNUZ && (a & ~f->sign_mask) == 0)
		return (emu_result){a, 0}; /* NaN stays NaN, 0 stays +0 */
	return (emu_result){a ^ f->sign_mask, 0};
}

emu_result emu_abs(const emu_format *f, emu_bits a, const emu_env *env)
{
	(void)env;
	if (f->nan == EMU_NAN_FNUZ && a == f->sign_mask)
		return (emu_result){a, 0};
	return (emu_result){a & ~f->sign_mask, 0};
}

int emu_compare(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env)
{
	double x = emu_operand(f, a, env), y = emu_operand(f, b, env);
	if (isnan(x) || isnan(y))
		return 2;
	return x < y ? -1 : x > y ? 1 : 0;
}
