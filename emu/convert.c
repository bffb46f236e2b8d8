/*
 * convert.c — conversions: from double and float (exact inputs: one
 * rounding; DAZ reads double or float subnormals as zero) and from any format to any format (exact decode of the source,
 * DAZ on the source, then one rounding into the destination).
 */
#include "internal.h"

emu_result emu_from_double(const emu_format *f, double x, const emu_env *env)
{
	unsigned fl = 0;
	if (env->daz && fpclassify(x) == FP_SUBNORMAL) /* DAZ reads the source's subnormals */
		x = copysign(0.0, x);
	double r = emu_round_exact(f, x, env, &fl);
	return emu_pack(f, r, fl);
}

emu_result emu_from_float(const emu_format *f, float x, const emu_env *env)
{
	if (env->daz && fpclassify(x) == FP_SUBNORMAL)
		x = copysignf(0.0f, x);
	return emu_from_double(f, (double)x, env);
}

emu_result emu_convert(const emu_format *dst, const emu_format *src, emu_bits a,
                       const emu_env *env)
{
	unsigned fl = 0;
	double x = emu_operand(src, a, env);
	double r = emu_round_exact(dst, x, env, &fl);
	return emu_pack(dst, r, fl);
}
