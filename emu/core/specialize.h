/*
 * specialize.h — the host emulator's implementation-defined choices, in one
 * place, as Berkeley SoftFloat keeps them in one specialize.h per target.
 *
 * IEEE 754-2019, the OCP 8-bit formats (OFP8, 2023) and the OCP MX formats
 * (v1.0) leave these to the implementation. Each backend that makes one of
 * them reads it here: the fast operations (codec.c, round.c, fma.c, and
 * array.c and round_simd.c, whose vector paths stand aside when a choice
 * is not theirs), the MPFR references (mpref.c, tc_mp.c), and format.c,
 * which derives each format's produced NaN (emu_format.nan_bits). The CUDA
 * side keeps its own (gpu/). docs/numerics.md states the same rules for
 * readers; a change here changes golden files, so it is a new golden format.
 *
 * Needs only emu.h: the MPFR backend, which is independent of the fast one
 * by construction, includes it too — the choices are a specification both
 * implement, not code they share.
 */
#ifndef NANMAP_EMU_SPECIALIZE_H
#define NANMAP_EMU_SPECIALIZE_H

#include <math.h>
#include <stdbool.h>

#include "emu/core/emu.h"

/* ---- tininess (IEEE 754-2019 §7.5: before or after rounding) ---- */

#define EMU_TININESS_BEFORE_ROUNDING 0
#define EMU_TININESS_AFTER_ROUNDING 1
/* After rounding, as x86 SSE/AVX and RISC-V detect it: a result is tiny when
 * it is nonzero and rounding it to p bits with an unbounded exponent gives
 * a magnitude below 2^emin. (ARM detects it before rounding.) */
#define EMU_TININESS EMU_TININESS_AFTER_ROUNDING

/* ---- the NaN produced ---- */

/*
 * An operation never passes on an operand's payload: every NaN result is
 * the format's one produced NaN (IEEE 754-2019 §6.2.3 only says a payload
 * "should" be preserved). It is positive with payload zero:
 *  - ieee style: the quiet bit (the top fraction bit) set, all else zero,
 *    as ARM's default NaN and RISC-V's canonical NaN (fp32 0x7fc00000, fp16
 *    0x7e00, bf16 0x7fc0, e5m2 0x7e); x86's default NaN is negative;
 *  - fn (e4m3, e8m0): the one NaN pattern S.1111.111 with S = 0 (0x7f, 0xff);
 *  - fnuz: the only NaN, the would-be −0 (0x80);
 *  - none (MX FP6/FP4): no NaN, see EMU_NONAN_BITS.
 * format.c stores it in emu_format.nan_bits; m = p − 1 fraction bits.
 */
static inline emu_bits emu_default_nan(emu_nan_style nan, emu_bits exp_mask, emu_bits man_mask,
                                       emu_bits sign_mask, int m)
{
	switch (nan) {
	case EMU_NAN_IEEE:
		return exp_mask | (m > 0 ? 1u << (m - 1) : 0);
	case EMU_NAN_FN:
		return exp_mask | man_mask;
	case EMU_NAN_FNUZ:
		return sign_mask;
	case EMU_NAN_NONE:
		break;
	}
	return 0; /* EMU_NONAN_BITS */
}

/* The quiet bit of an ieee-style NaN: the top fraction bit, set = quiet
 * (IEEE 754-2019 §6.2.1); 0 for p = 1. The one NaN of fn, fnuz and e8m0 is
 * quiet. binary64's is bit 51. */
static inline emu_bits emu_quiet_bit(const emu_format *f)
{
	return f->p >= 2 ? 1u << (f->p - 2) : 0;
}
#define EMU_F64_QUIET_BIT (1ull << 51)

/* A NaN of sign neg in f: the produced NaN, its sign bit set when neg and
 * the format has one (fnuz's one NaN is 0x80 either way). */
static inline emu_bits emu_nan_signed(const emu_format *f, bool neg)
{
	return f->nan_bits | (neg ? f->sign_mask : 0);
}

/* ---- overflow and infinities where the format has no infinity ---- */

/*
 * An overflowing or infinite result that cannot be ±inf (the format has no
 * infinity, or sat is set): under sat, and in a format without NaN (MX
 * FP6/FP4: the OCP MX spec leaves it to the implementation), ±max with
 * overflow|inexact; otherwise the NaN (e4m3, fnuz, e8m0), as CUDA's
 * __NV_NOSAT conversions do.
 */
static inline bool emu_overflow_is_nan(const emu_format *f, bool sat)
{
	return !sat && f->nan != EMU_NAN_NONE;
}
/* That NaN keeps the result's sign where the format's NaN has one: e4m3
 * 0x7f / 0xff (CUDA also maps −inf to 0xff). */
#define EMU_OVERFLOW_NAN_SIGNED true

/* In the value domain (a double), the NaN that encodes as
 * emu_nan_signed(f, neg): emu_encode keeps a NaN's sign bit. */
static inline double emu_nan_value(bool neg)
{
	return neg ? -NAN : NAN;
}

/* ---- formats without NaN ---- */

/* Where such a format would produce a NaN (an invalid operation, a NaN
 * source converted in) the result is +0, encoding 0, and invalid is raised
 * even when the source was a quiet NaN: the result is not a NaN. */
#define EMU_NONAN_BITS ((emu_bits)0)
#define EMU_NONAN_VALUE 0.0

/* ---- fma(0, ∞, qNaN) ---- */

/* fma(0, ∞, c) and fma(∞, 0, c) with c a quiet NaN: IEEE 754-2019 §7.2(c)
 * lets the implementation choose whether invalid is signaled; nanmap
 * signals it (as ARM's FPMulAdd does). The result is the produced NaN, not
 * c. The flags that case raises: */
#define EMU_FMA_ZERO_INF_QNAN_FLAGS EMU_FLAG_INVALID

/* ---- formats without a sign (e8m0, custom "unsigned") ---- */

/*
 * A negative nonzero result, also one that would round to zero, and −inf
 * give the NaN with invalid (+0 with invalid without a NaN, as above; an
 * exact −inf, log 0, keeps its divbyzero beside invalid); −0 is a zero, not
 * a negative value, so it gives +0 (code 0 = 2^emin without a zero).
 * ml_dtypes' unsigned types (float8_e8m0fnu, float8_e5m3fnu) read negative
 * values the same way: as the NaN. round.c and mpref.c implement it.
 */

/* ---- formats without zero (e8m0, custom "nozero") ---- */

/*
 * A zero result (an exact zero, x − x, log 1, an underflow to zero, ftz) is
 * code 0 = 2^emin with these flags, as converting 0 is. (ml_dtypes'
 * float8_e8m0fnu converts 0 to its NaN instead: docs/numerics.md.)
 */
#define EMU_NOZERO_FLAGS (EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT)
/* A value-domain operand that is not a value of f because f has no zero (a
 * kernel's constant 0, an accumulator's start) is read as what emu_encode
 * makes of it, code 0 = 2^emin, so the value helpers and the encoding API
 * (and the MPFR backend, which sees encodings) agree. */
static inline double emu_v_arg(const emu_format *f, double x)
{
	return !f->has_zero && x == 0 ? f->min_normal : x;
}

/* ---- the sign of an exact zero sum ---- */

/* −0 only in mode down (IEEE 754-2019 §6.3); SR, which IEEE does not
 * define, gives +0 as the modes to nearest do. */
static inline bool emu_zero_sum_neg(const emu_env *env)
{
	return env->mode == EMU_DOWN;
}

#endif
