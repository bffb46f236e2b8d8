/*
 * convert.c — conversions: from double and float (exact inputs: one
 * rounding; DAZ reads double or float subnormals as zero) and from any
 * format to any format (exact decode of the source, DAZ on the source, then
 * one rounding into the destination). A signaling NaN source (the format's,
 * a binary64's or a binary32's) raises invalid.
 */
#include "emu/core/internal.h"

double emu_v_from_double(const emu_format *f, double x, const emu_env *env, unsigned *fl)
{
	/* a signaling binary64 NaN is a signaling source: invalid (IEEE 754-2019 §7.2(a)) */
	if (emu_is_snan_double(x))
		*fl |= EMU_FLAG_INVALID;
	if (env->daz && fpclassify(x) == FP_SUBNORMAL) /* DAZ reads the source's subnormals */
		x = copysign(0.0, x);
	return emu_round_exact(f, x, env, fl);
}

emu_result emu_from_double(const emu_format *f, double x, const emu_env *env)
{
	unsigned fl = 0;
	double r = emu_v_from_double(f, x, env, &fl);
	return emu_pack(f, r, fl);
}

emu_result emu_from_float(const emu_format *f, float x, const emu_env *env)
{
	if (env->daz && fpclassify(x) == FP_SUBNORMAL)
		x = copysignf(0.0f, x);
	/* (double)x would quiet a signaling NaN (and raise the host's invalid):
	 * decide from the float's bits, bit 22 being its quiet bit */
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) && !(u & 0x00400000u)) {
		emu_result r = emu_from_double(f, NAN, env);
		r.flags |= EMU_FLAG_INVALID;
		return r;
	}
	return emu_from_double(f, (double)x, env);
}

emu_result emu_convert(const emu_format *dst, const emu_format *src, emu_bits a,
                       const emu_env *env)
{
	unsigned fl = emu_snan_flag(src, a);
	double x = emu_operand(src, a, env);
	double r = emu_round_exact(dst, x, env, &fl);
	return emu_pack(dst, r, fl);
}
