/*
 * codec.c — encodings to values and back, driven only by the descriptor.
 * Decoding is exact: every value of a format with p <= 24 and ebits <= 8 is
 * a double. Encoding expects a representable value (the rounding core makes
 * one) and does no rounding.
 */
#include <math.h>
#include <string.h>

#include "emu/core/internal.h"

static emu_bits mag_of(const emu_format *f, emu_bits b)
{
	return b & ~f->sign_mask & ((f->bits == 32) ? ~0u : (1u << f->bits) - 1);
}

bool emu_is_nan(const emu_format *f, emu_bits b)
{
	emu_bits mag = mag_of(f, b);
	switch (f->nan) {
	case EMU_NAN_IEEE:
		return (mag & f->exp_mask) == f->exp_mask && (!f->has_inf || (mag & f->man_mask));
	case EMU_NAN_FN:
		return mag == (f->exp_mask | f->man_mask);
	case EMU_NAN_FNUZ:
		return b == f->sign_mask;
	case EMU_NAN_NONE:
		return false;
	}
	return false;
}

/* IEEE 754-2019 §6.2.1: the quiet bit is the top fraction bit (set =
 * quiet). Only ieee-style formats have room for both kinds; the one NaN of
 * fn, fnuz and e8m0 is quiet. */
bool emu_is_snan(const emu_format *f, emu_bits b)
{
	return f->nan == EMU_NAN_IEEE && f->p >= 2 && emu_is_nan(f, b) && !(b & emu_quiet_bit(f));
}

bool emu_is_snan_double(double x)
{
	uint64_t u = emu_dbits(x);
	return (u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull &&
	       (u & 0x000fffffffffffffull) != 0 && !(u & EMU_F64_QUIET_BIT);
}

emu_class emu_classify(const emu_format *f, emu_bits b)
{
	if (emu_is_nan(f, b))
		return EMU_CLASS_NAN;
	emu_bits mag = mag_of(f, b);
	if (f->has_inf && mag == f->inf_bits)
		return EMU_CLASS_INF;
	if (!f->has_zero)
		return EMU_CLASS_NORMAL;
	if ((mag & f->exp_mask) == 0) {
		if (mag == 0 || !f->has_subnormals)
			return EMU_CLASS_ZERO;
		return EMU_CLASS_SUBNORMAL;
	}
	return EMU_CLASS_NORMAL;
}

/* Values are built from bits: every format value is a normal double. */
double emu_decode(const emu_format *f, emu_bits b)
{
	int m = f->p - 1;
	bool neg = f->has_sign && (b & f->sign_mask);
	double v;
	switch (emu_classify(f, b)) {
	case EMU_CLASS_NAN:
		return NAN;
	case EMU_CLASS_INF:
		return neg ? -INFINITY : INFINITY;
	case EMU_CLASS_ZERO:
		return neg ? -0.0 : 0.0;
	case EMU_CLASS_SUBNORMAL: {
		union {
			uint64_t u;
			double d;
		} q = {.u = (uint64_t)(f->emin - m + 1023) << 52};
		v = (double)(b & f->man_mask) * q.d; /* exact: a small integer times 2^k */
		break;
	}
	default: {
		emu_bits mag = mag_of(f, b);
		int e = (int)(mag >> m) - f->bias;
		v = emu_bitsd(((uint64_t)(e + 1023) << 52) | ((uint64_t)(mag & f->man_mask) << (52 - m)));
	}
	}
	return neg ? -v : v;
}

emu_bits emu_encode(const emu_format *f, double v)
{
	int m = f->p - 1;
	if (isnan(v)) /* only an overflow or infinity makes a negative NaN (specialize.h) */
		return emu_nan_signed(f, signbit(v));
	emu_bits s = (signbit(v) && f->has_sign) ? f->sign_mask : 0;
	if (isinf(v))
		return s | f->inf_bits;
	if (v == 0)
		return f->nan == EMU_NAN_FNUZ ? 0 : s;
	uint64_t u = emu_dbits(v) & ~(1ull << 63);
	int e = (int)(u >> 52) - 1023; /* v is a normal double */
	if (e < f->emin) /* subnormal: an integer multiple of 2^(emin-m) */
		return s | (emu_bits)ldexp(emu_bitsd(u), m - f->emin);
	emu_bits man = (emu_bits)(u >> (52 - m)) & f->man_mask;
	return s | ((emu_bits)(e + f->bias) << m) | man;
}

emu_bits emu_next_up(const emu_format *f, emu_bits b)
{
	/* Walk encodings in value order; used only for error messages and tests. */
	double v = emu_decode(f, b);
	if (isnan(v) || (isinf(v) && v > 0))
		return b;
	if (v == 0)
		return f->has_zero ? 1u : b; /* smallest positive */
	emu_bits s = b & f->sign_mask;
	emu_bits mag = b & ~f->sign_mask;
	if (!s) {
		emu_bits n = mag + 1;
		return emu_is_nan(f, n) || n > (f->has_inf ? f->inf_bits : f->max_bits) ? b : n;
	}
	if (mag == 1 && f->nan == EMU_NAN_FNUZ)
		return 0;
	return mag == 0 ? 1u : (s | (mag - 1));
}

emu_bits emu_next_down(const emu_format *f, emu_bits b)
{
	if (emu_is_nan(f, b))
		return b;
	if (!f->has_sign)
		return b == 0 ? b : b - 1;
	emu_bits mag = b & ~f->sign_mask;
	if (mag == 0)
		return f->sign_mask | 1u; /* below either zero: -min_subnormal */
	/* mirror image of next_up */
	emu_bits up = emu_next_up(f, b ^ f->sign_mask);
	if (up == (b ^ f->sign_mask))
		return b; /* already the most negative */
	return (up & ~f->sign_mask) == 0 ? 0 : up ^ f->sign_mask;
}
